# `make bench-peers`: hydrofeed serve and launch against the other input pipelines (pyarrow,
# tf.data, Petastorm, torch DataLoader, Ray Data, MosaicML Streaming, Grain) on the same data,
# `python -m hydrofeed.bench peers --json` (python/hydrofeed/bench_peers.py). Not part of
# `make test`. Included from the top-level Makefile, run from the repository root.
#
# The peers live in their own venv, PEERS_VENV, made when missing (or when
# benches/peers/requirements.txt changes): it is layered over the dev venv (a .pth file adds
# .venv's site-packages, and its .pth files, after its own), so torch, tensorflow, pyarrow and
# the hydrofeed package come from .venv and are not installed twice. The pinned list is installed
# with --no-deps: a peer's own pins (mosaicml-streaming: numpy<2.2) can neither replace what
# .venv has nor touch .venv itself.
#
# The release binary and extension must be built (`make build develop`): this target does not
# build, so that it measures what is there.
VENV ?= .venv
BIN ?= $(CURDIR)/target/release/hydrofeed
PEERS_VENV ?= $(CURDIR)/target/peers-venv
PEERS_ROWS ?= 200000
PEERS_REPEAT ?= 3
PEERS_PY = $(PEERS_VENV)/bin/python

BENCH_PEERS_DEFAULT_GOAL := $(.DEFAULT_GOAL)

.PHONY: bench-peers

$(PEERS_VENV)/.stamp: benches/peers/requirements.txt
	test -x $(abspath $(VENV))/bin/python || { echo "no dev venv at $(VENV): make venv" >&2; exit 1; }
	test -x $(PEERS_PY) || $(abspath $(VENV))/bin/python -m venv $(PEERS_VENV)
	dev=$$($(abspath $(VENV))/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))');\
	  own=$$($(PEERS_PY) -c 'import sysconfig; print(sysconfig.get_path("purelib"))'); \
	  echo "import site; site.addsitedir('$$dev')" > "$$own/hydrofeed-dev-venv.pth"
	$(PEERS_PY) -m pip install -q --upgrade pip
	$(PEERS_PY) -m pip install -q --no-deps -r benches/peers/requirements.txt
	touch $@

bench-peers: $(PEERS_VENV)/.stamp ## hydrofeed vs Ray Data, Streaming, Grain, ... (own venv); JSON last
	test -x $(BIN) || { echo "no $(BIN): make build develop first" >&2; exit 1; }
	du -sh $(PEERS_VENV) >&2
	HYDROFEED_BIN=$(BIN) PATH=$(PEERS_VENV)/bin:$$PATH $(PEERS_PY) -m hydrofeed.bench peers --json \
	  --rows $(PEERS_ROWS) --repeat $(PEERS_REPEAT)

.DEFAULT_GOAL := $(BENCH_PEERS_DEFAULT_GOAL)
