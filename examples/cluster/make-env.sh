#!/usr/bin/env bash
# Packs a Python environment with hydrofeed (wheel: `make wheel`) for Spark on YARN:
#   examples/cluster/make-env.sh target/wheels/hydrofeed-*.whl [tf|torch|jax|""]
# writes hydrofeed-env.tar.gz, which spark-submit ships with `--archives hydrofeed-env.tar.gz#env`.
# The executors then run ./env/bin/python, and hydrofeed finds its binary at ./env/bin/hydrofeed
# (the wheel installs it there): no HYDROFEED_BIN, nothing installed on the nodes.
set -euo pipefail
wheel=${1:?usage: make-env.sh HYDROFEED_WHEEL [EXTRA]}
extra=${2-tf}
python=${PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$python" -m venv "$work/env"
"$work/env/bin/pip" install -q --upgrade pip
"$work/env/bin/pip" install -q "${wheel}${extra:+[$extra]}" venv-pack
out=${OUT:-hydrofeed-env.tar.gz}
"$work/env/bin/venv-pack" -p "$work/env" -o "$out" --force
echo "$out: $(du -h "$out" | cut -f1)"
