#!/bin/bash
# alternate old/new code trees, each a same-command A/B against the ceiling
cd /work/main; export HYDROFEED_BIN=$PWD/target/release/hydrofeed PATH=$PWD/.venv/bin:$PATH
for i in $(seq 1 ${PAIRS:-2}); do
  for t in ${TREES:-old new}; do
    case $t in old) py=/tmp/ab/old/python;; mid) py=/tmp/ab/mid/python;; *) py=/work/main/python;; esac
    echo "=== $t"; HF_PY=$py ROUNDS=${ROUNDS:-2} timeout 600 .venv/bin/python /tmp/ab/ab_lists.py 2>&1 | grep -E "^(hf|ceil|ratio)|waited"
  done
done
