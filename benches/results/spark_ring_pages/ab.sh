#!/bin/bash
# The list RDD's feed and its ceiling (lists_vs_ceiling.py, 3 rounds an application), the old
# and the new tree alternated, one Spark application each. OLD: a checkout of the tree before
# (bb0fa7a) whose python/hydrofeed holds its own built extension; REPO: this checkout, built.
# Usage: OLD=/path/to/old REPO=/path/to/repo bash ab.sh > ab.log
set -u
here=$(cd "$(dirname "$0")" && pwd)
export PATH=$REPO/.venv/bin:$PATH HYDROFEED_BIN=$REPO/target/release/hydrofeed
for i in 1 2; do
  for v in old new; do
    if [ $v = old ]; then export PYTHONPATH=$OLD/python; else unset PYTHONPATH; fi
    echo "== $v run $i: $(python -c 'import hydrofeed,os;print(os.path.dirname(hydrofeed.__file__))')"
    ROWS=100000 ROUNDS=3 python "$here/lists_vs_ceiling.py" 2>&1 | grep -v WARN | grep "^ours\|^ceil\|per round" | cut -c1-250
  done
done
