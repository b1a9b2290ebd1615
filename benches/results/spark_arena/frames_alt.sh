#!/bin/bash
cd /work/main; export HYDROFEED_BIN=$PWD/target/release/hydrofeed PATH=$PWD/.venv/bin:$PATH
for i in 1 2; do for t in /work/main/python /tmp/fb/big  # a copy of python/ with _FRAME_BYTES = 1 << 20; do
  echo "=== $t"; HF_PY=$t ROUNDS=3 timeout 900 .venv/bin/python benches/results/spark_in_get/ab_lists.py 2>&1 | grep -E "^(hf|ceil|ratio)" | sed -E "s/, 'other[^,]*//g"
done; done
