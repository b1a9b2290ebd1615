#!/bin/bash
# The list RDD's feed against its ceiling (ab_lists.py: one Spark application a run, a warm-up of
# both sides, then 3 alternated rounds), this tree against /tmp/fb/big: a copy of python/ whose
# spark/rows.py has the other _FRAME_BYTES (256 KiB against 1 MiB); the two alternated twice.
cd "$(dirname "$0")/../../.." || exit 1
export HYDROFEED_BIN=$PWD/target/release/hydrofeed PATH=$PWD/.venv/bin:$PATH
for i in 1 2; do
  for t in "$PWD/python" /tmp/fb/big; do
    echo "=== $t"
    HF_PY=$t ROUNDS=3 timeout 900 .venv/bin/python benches/results/spark_in_get/ab_lists.py 2>&1 \
      | grep -E "^(hf|ceil|ratio)" | sed -E "s/, 'other[^,]*//g"
  done
done
