#!/bin/bash
# old/new trees alternated; each run an A/B of the feed against its ceiling in one Spark app
cd /work/main; export HYDROFEED_BIN=$PWD/target/release/hydrofeed PATH=$PWD/.venv/bin:$PATH
for i in $(seq 1 ${PAIRS:-2}); do
  for t in old new; do
    case $t in old) py=/tmp/zab/old;; *) py=/work/main/python;; esac
    for s in ${SCRIPTS:-/tmp/np/ab_np.py /tmp/np/ab_lists.py}; do
      echo "=== $t $(basename $s)"; HF_PY=$py ROUNDS=${ROUNDS:-2} timeout 900 .venv/bin/python $s 2>&1 | grep -E "^(hf|ceil|ratio)|waited"
    done
  done
done
