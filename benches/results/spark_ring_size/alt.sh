#!/bin/bash
# old/new trees alternated (old: a copy of python/hydrofeed with the earlier build's extension);
# each run an A/B of a feed against its ceiling in one Spark application
cd /work/main; export HYDROFEED_BIN=$PWD/target/release/hydrofeed PATH=$PWD/.venv/bin:$PATH
here=benches/results
for i in $(seq 1 ${PAIRS:-2}); do
  for t in old new; do
    case $t in old) py=/tmp/zab/old;; *) py=/work/main/python;; esac
    for k in np df lists; do
      echo "=== $t $k"
      if [ $k = lists ]; then s=$here/spark_in_get/ab_lists.py; else s=$here/spark_ring_size/ab_feed.py; fi
      KIND=$k HF_PY=$py ROUNDS=${ROUNDS:-2} timeout 900 .venv/bin/python $s 2>&1 | grep -E "^(hf|ceil|ratio)|waited"
    done
  done
done
