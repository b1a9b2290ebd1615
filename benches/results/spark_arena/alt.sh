#!/bin/bash
# The list RDD's feed against its ceiling (ab_lists.py: one Spark application a run, a warm-up of
# both sides, then ROUNDS alternated rounds), with the arena cache off (HYDROFEED_ARENA_CACHE_MB=0)
# and on (the default), the two alternated PAIRS times.
cd "$(dirname "$0")/../../.." || exit 1
export HYDROFEED_BIN=$PWD/target/release/hydrofeed PATH=$PWD/.venv/bin:$PATH
for i in $(seq 1 "${PAIRS:-2}"); do
  for mb in 0 64; do
    echo "=== HYDROFEED_ARENA_CACHE_MB=$mb"
    HYDROFEED_ARENA_CACHE_MB=$mb ROUNDS=${ROUNDS:-2} timeout 900 .venv/bin/python benches/results/spark_in_get/ab_lists.py 2>&1 | grep -E "^(hf|ceil|ratio)"
  done
done
