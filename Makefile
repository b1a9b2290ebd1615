# hydrofeed front door. `make help` lists the targets.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
export CARGO_TARGET_DIR ?= $(CURDIR)/target
export CARGO_BUILD_JOBS ?= 2
VENV := $(CURDIR)/.venv
PY := $(VENV)/bin/python
CARGO := cargo

PHONY_EXTRA := develop-debug valgrind
.PHONY: help venv build develop demo wheel $(PHONY_EXTRA) test test-rust test-python test-hdfs fuzz-diff check bench clean
BIN := $(CARGO_TARGET_DIR)/release/hydrofeed

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

$(VENV)/.stamp: requirements-dev.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements-dev.txt
	touch $@

venv: $(VENV)/.stamp ## Create .venv with the Python tools the build and tests use

build: ## Build the hydrofeed binary (release) and link it into .venv/bin, so `hydrofeed` is on the venv's PATH
	$(CARGO) build --release -p hydrofeed-feeder --bin hydrofeed
	test ! -d $(VENV)/bin || ln -sf $(BIN) $(VENV)/bin/hydrofeed

develop: venv ## Build the Python extension into .venv (release)
	VIRTUAL_ENV=$(VENV) PATH=$(VENV)/bin:$$PATH $(VENV)/bin/maturin develop --release -q -m python/Cargo.toml

develop-debug: venv ## Debug build of the extension into .venv (replaces a release one: `make develop` restores it)
	VIRTUAL_ENV=$(VENV) PATH=$(VENV)/bin:$$PATH $(VENV)/bin/maturin develop -q -m python/Cargo.toml

wheel: venv ## Release wheel in target/wheels, debug info stripped (the release profile keeps it for profiling)
	VIRTUAL_ENV=$(VENV) PATH=$(VENV)/bin:$$PATH $(VENV)/bin/maturin build --release --strip -m python/Cargo.toml

demo: venv build develop ## Set up, generate a small dataset, feed it to a trainer process, print throughput
	HYDROFEED_BIN=$(BIN) PATH=$(VENV)/bin:$$PATH $(PY) -m hydrofeed.demo

test-rust: venv ## Rust tests (unit, conformance, multi-process, loom)
	HYDROFEED_PYTHON=$(PY) $(CARGO) test --workspace --exclude hydrofeed-python
	CARGO_TARGET_DIR=$(CARGO_TARGET_DIR)/vendor $(CARGO) test -q --manifest-path vendor/orc-rust/Cargo.toml --lib --no-default-features -- encoding::timestamp arrow_writer::tests::test_roundtrip_write_lists
	RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=$(CARGO_TARGET_DIR)/loom CARGO_BUILD_BUILD_DIR=$(CARGO_TARGET_DIR)/loom $(CARGO) test -p hydrofeed-ipc --release --test loom_ring

# The release extension and binary: the ones `make demo` and `make bench` use (a debug build
# here would replace the release extension in .venv).
test-python: venv build develop ## Python tests against the release build (pytest, strict; exit code 5, no tests collected, fails)
	HYDROFEED_BIN=$(BIN) PATH=$(VENV)/bin:$$PATH $(PY) -m pytest python/tests tests

test-hdfs: venv ## HDFS tests against a real MiniDFS (Maven; fails rather than skips)
	HYDROFEED_REQUIRE_MINIDFS=1 $(CARGO) test -p hydrofeed-feeder --test hdfs
	HYDROFEED_REQUIRE_MINIDFS=1 PATH=$(VENV)/bin:$$PATH $(PY) -m pytest -m hdfs tests

fuzz-diff: venv build develop ## Differential suite, long run: 5000 random files per format against the reference readers
	HYPOTHESIS_PROFILE=fuzz HYDROFEED_BIN=$(BIN) PATH=$(VENV)/bin:$$PATH $(PY) -m pytest python/tests/test_differential.py

test: venv ## All tests
	$(MAKE) test-rust
	$(MAKE) test-python

check: venv ## fmt, clippy -D warnings, docs -D warnings, ring tests under valgrind
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --workspace --no-deps
	$(MAKE) valgrind

valgrind: ## ipc ring tests under valgrind memcheck
	$(CARGO) test -p hydrofeed-ipc --no-run --message-format=json 2>/dev/null \
	  | $(PY) -c 'import sys,json;[print(m["executable"]) for m in map(json.loads,sys.stdin) if m.get("executable") and m["target"]["name"] in ("conformance",)]' \
	  | while read -r t; do valgrind --error-exitcode=1 --leak-check=full -q "$$t" --test-threads=1; done

bench: venv build develop ## Benchmarks: ring, decode, feed (release build)
	$(BIN) bench ring --json
	$(BIN) bench decode --json --python $(PY)
	HYDROFEED_BIN=$(BIN) PATH=$(VENV)/bin:$$PATH $(PY) -m hydrofeed.bench feed --json

clean: ## Remove build outputs
	$(CARGO) clean
