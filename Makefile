# hydrofeed front door. `make help` lists the targets.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
export CARGO_TARGET_DIR ?= $(CURDIR)/target
export CARGO_BUILD_JOBS ?= 2
# .cargo/config.toml builds for x86-64-v3 (AVX2, BMI2, FMA, ...). On a host whose CPU lacks one
# of them (an old CPU, or a VM that masks AVX2) make builds for baseline x86-64 instead, so that
# the demo and the tests run there; set it yourself to choose (`-C target-cpu=...`).
V3_FLAGS := avx avx2 bmi1 bmi2 fma f16c abm movbe
ifeq ($(shell uname -m),x86_64)
ifneq ($(words $(filter $(V3_FLAGS),$(shell grep -m1 '^flags' /proc/cpuinfo 2>/dev/null))),$(words $(V3_FLAGS)))
export CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUSTFLAGS ?= -C target-cpu=x86-64
endif
endif
VENV := $(CURDIR)/.venv
PY := $(VENV)/bin/python
CARGO := cargo

PHONY_EXTRA := ci-free-disk venv-wait krb5-tools build-tools test-secure develop-debug valgrind check-rust check-python
.PHONY: help venv venv-demo build develop demo wheel $(PHONY_EXTRA) test test-rust test-python test-hdfs fuzz-diff fuzz check bench clean
BIN := $(CARGO_TARGET_DIR)/release/hydrofeed

include mk/check-python.mk
include mk/bench-peers.mk

help: ## List the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

# Two layers: what the demo needs (the build, the package, TensorFlow for its Keras trainers),
# then everything the tests and benchmarks add (torch, JAX, Spark, ...).
$(VENV)/.demo-stamp: requirements-demo.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements-demo.txt
	touch $@

$(VENV)/.stamp: requirements-dev.txt $(VENV)/.demo-stamp
	$(PY) -m pip install -q -r requirements-dev.txt
	touch $@

venv-demo: build-tools $(VENV)/.demo-stamp ## Create .venv with what `make demo` needs only (no torch, JAX or Spark)

venv: build-tools $(VENV)/.stamp ## Create .venv with the Python tools the build and tests use

build: build-tools ## Build the hydrofeed binary (release) and link it into .venv/bin, so `hydrofeed` is on the venv's PATH
	$(CARGO) build --release -p hydrofeed-cli --bin hydrofeed
	test ! -d $(VENV)/bin || ln -sf $(BIN) $(VENV)/bin/hydrofeed

develop: venv-demo ## Build the Python extension into .venv (release)
	mkdir -p python/hydrofeed.data  # the wheel's data directory (empty here: see `wheel`)
	VIRTUAL_ENV=$(VENV) PATH=$(VENV)/bin:$$PATH $(VENV)/bin/maturin develop --release -q -m python/Cargo.toml

develop-debug: venv-demo ## Debug build of the extension into .venv (replaces a release one: `make develop` restores it)
	mkdir -p python/hydrofeed.data
	VIRTUAL_ENV=$(VENV) PATH=$(VENV)/bin:$$PATH $(VENV)/bin/maturin develop -q -m python/Cargo.toml

# The wheel carries the `hydrofeed` binary as a script (maturin's data directory,
# python/hydrofeed.data/scripts/): pip installs it beside the environment's `python`. It is
# staged only while the wheel builds (the directory stays, empty), so `make develop` never
# installs a stale copy. The extension is stripped inside the built wheel (`wheel unpack` /
# `pack`, which rewrites RECORD): maturin's --strip changes RUSTFLAGS, so every crate would be
# compiled again instead of reusing the release build of `make develop`.
WHEEL_TAG ?= manylinux_2_34
WHEEL_TMP := $(CARGO_TARGET_DIR)/wheel-build
wheel: venv ## Release wheel (extension + the hydrofeed binary, stripped, abi3, manylinux) in target/wheels
	$(CARGO) build --release -p hydrofeed-cli --bin hydrofeed
	rm -rf python/hydrofeed.data/scripts $(WHEEL_TMP) && mkdir -p python/hydrofeed.data/scripts
	strip -o python/hydrofeed.data/scripts/hydrofeed $(BIN)
	VIRTUAL_ENV=$(VENV) PATH=$(VENV)/bin:$$PATH $(VENV)/bin/maturin build --release \
	  --compatibility $(WHEEL_TAG) -m python/Cargo.toml -o $(WHEEL_TMP); \
	  rc=$$?; rm -rf python/hydrofeed.data/scripts; test $$rc = 0
	cd $(WHEEL_TMP) && $(PY) -m wheel unpack -d tree *.whl && strip tree/*/hydrofeed/_native.abi3.so
	mkdir -p $(CARGO_TARGET_DIR)/wheels && $(PY) -m wheel pack -d $(CARGO_TARGET_DIR)/wheels $(WHEEL_TMP)/tree/*
	rm -rf $(WHEEL_TMP)
	@echo "hydrofeed wheel: $$(ls -t $(CARGO_TARGET_DIR)/wheels/hydrofeed-*.whl | head -1)"

demo: venv-demo build develop ## Set up, generate a small dataset, feed it to a trainer process, print throughput
	HYDROFEED_BIN=$(BIN) PATH=$(VENV)/bin:$$PATH $(PY) -m hydrofeed.demo

test-rust: venv ## Rust tests (unit, conformance, multi-process, loom)
	HYDROFEED_PYTHON=$(PY) $(CARGO) test --workspace --exclude hydrofeed-python
	CARGO_TARGET_DIR=$(CARGO_TARGET_DIR)/vendor $(CARGO) test -q --manifest-path vendor/orc-rust/Cargo.toml --lib --no-default-features -- encoding::timestamp arrow_writer::tests::test_roundtrip_write_lists schema::type_tree_tests compression::tests encoding::float::tests
	CARGO_TARGET_DIR=$(CARGO_TARGET_DIR)/vendor $(CARGO) test -q --manifest-path vendor/arrow-avro/Cargo.toml --lib -- reader::record compression::tests
	RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=$(CARGO_TARGET_DIR)/loom CARGO_BUILD_BUILD_DIR=$(CARGO_TARGET_DIR)/loom $(CARGO) test -p hydrofeed-ipc --release --test loom_ring

# The release extension and binary: the ones `make demo` and `make bench` use (a debug build
# here would replace the release extension in .venv).
test-python: venv build develop krb5-tools ## Python tests against the release build (pytest, strict; exit code 5, no tests collected, fails)
	HYDROFEED_BIN=$(BIN) PATH=$(VENV)/bin:$$PATH $(PY) -m pytest --durations=25 python/tests tests

# On CI the Rust test builds (debug, loom, vendored crates, integration tests' scratch) are
# removed once they have run: the Python tests need only the release build, and several GB of
# test binaries would otherwise sit beside the venvs and Spark work dirs those tests make.
ci-free-disk:
	rm -rf $(CARGO_TARGET_DIR)/debug $(CARGO_TARGET_DIR)/loom $(CARGO_TARGET_DIR)/vendor $(CARGO_TARGET_DIR)/tmp
	df -h $(CARGO_TARGET_DIR) | tail -1

# Kerberos client tools (kinit) and the GSSAPI library hdfs-native loads at run time, for the
# kerberized MiniDFS tests; installed from Debian's packages when missing and running as root.
krb5-tools:
	@command -v kinit >/dev/null && ldconfig -p | grep -q libgssapi_krb5.so.2 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq krb5-user libgssapi-krb5-2 >/dev/null; \
	  else echo "install kinit and libgssapi_krb5 (Debian: krb5-user libgssapi-krb5-2)" >&2; exit 1; fi; }

# cmake and nasm, which the turbojpeg crate's build of libjpeg-turbo (the JPEG decoder of image
# columns, with its SIMD code) needs; installed from Debian's packages when missing and running
# as root.
build-tools:
	@command -v cmake >/dev/null && command -v nasm >/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq cmake nasm >/dev/null; \
	  else echo "install cmake and nasm (Debian: cmake nasm), which libjpeg-turbo's build needs" >&2; exit 1; fi; }

test-secure: venv build develop krb5-tools ## Secure HDFS (MiniKdc, privacy, tokens, HA failover) and coordinator TLS, real processes
	$(CARGO) test -p hydrofeed-cli --test coord_tls
	HYDROFEED_REQUIRE_MINIDFS=1 HYDROFEED_BIN=$(BIN) PATH=$(VENV)/bin:$$PATH $(PY) -m pytest -m secure tests

test-hdfs: venv ## HDFS tests against a real MiniDFS (Maven; fails rather than skips)
	HYDROFEED_REQUIRE_MINIDFS=1 $(CARGO) test -p hydrofeed-format --test hdfs
	HYDROFEED_REQUIRE_MINIDFS=1 PATH=$(VENV)/bin:$$PATH $(PY) -m pytest -m hdfs tests

fuzz-diff: venv build develop ## Differential suite, long run: 5000 random files per format against the reference readers
	HYPOTHESIS_PROFILE=fuzz HYDROFEED_BIN=$(BIN) PATH=$(VENV)/bin:$$PATH $(PY) -m pytest python/tests/test_differential_*.py

# Coverage-guided fuzzing on stable Rust: the sancov passes instrument every crate for the
# libFuzzer that libfuzzer-sys builds (no nightly, no cargo-fuzz); `--target` keeps the flags off
# build scripts and proc macros. Each target runs FUZZ_SECONDS from its corpus in
# fuzz/corpus/<target> (seeded by the target itself), crashes land in fuzz/artifacts/<target>/
# with the log of the last run; a crash ends that target's run unless
# FUZZ_FLAGS="-fork=1 -ignore_crashes=1". See fuzz/README.md.
FUZZ_TARGETS ?= frame ring tfrecord parquet orc avro
FUZZ_SECONDS ?= 120
FUZZ_FLAGS ?=
FUZZ_TARGET_DIR := $(CURDIR)/fuzz/target
FUZZ_TRIPLE := $(shell rustc -vV 2>/dev/null | sed -n 's/^host: //p')
FUZZ_RUSTFLAGS := -Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
  -Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
  -Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing

fuzz: ## Coverage-guided fuzzing (stable): each of FUZZ_TARGETS for FUZZ_SECONDS (120) s; fails on a crash
	cd fuzz && CARGO_TARGET_DIR=$(FUZZ_TARGET_DIR) RUSTFLAGS="$(FUZZ_RUSTFLAGS)" \
	  $(CARGO) build --release --target $(FUZZ_TRIPLE) $(addprefix --bin ,$(FUZZ_TARGETS))
	fail=0; for t in $(FUZZ_TARGETS); do \
	  mkdir -p fuzz/corpus/$$t fuzz/artifacts/$$t; log=fuzz/artifacts/$$t/last-run.log; rc=0; \
	  HYDROFEED_FUZZ_SEEDS=fuzz/corpus/$$t $(FUZZ_TARGET_DIR)/$(FUZZ_TRIPLE)/release/$$t \
	    -max_total_time=$(FUZZ_SECONDS) -timeout=30 -print_final_stats=1 \
	    -artifact_prefix=fuzz/artifacts/$$t/ $(FUZZ_FLAGS) fuzz/corpus/$$t >$$log 2>&1 || rc=$$?; \
	  runs=$$(sed -n 's/^Done \([0-9]*\) runs in \([0-9]*\) second.*/\1 runs in \2 s/p' $$log | tail -n1); \
	  [ -n "$$runs" ] || runs=$$(sed -n 's/^#\([0-9]*\): cov: .* time: \([0-9]*\)s.*/\1 runs in \2 s (fork)/p' $$log | tail -n1); \
	  [ -n "$$runs" ] || runs=$$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\)/stopped by a crash after \1 runs/p' $$log | tail -n1); \
	  cov=$$(grep -o 'cov: [0-9]* ft: [0-9]* corp: [0-9]*' $$log | tail -n1 || true); \
	  caught=$$(grep -c '^hydrofeed-fuzz: caught panic' $$log || true); \
	  crashes=$$(find fuzz/artifacts/$$t -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' | wc -l); \
	  echo "$$t: $${runs:-no summary (exit $$rc)}, $${cov:-no coverage line}, panics caught at $$caught location(s), $$crashes crash file(s)"; \
	  if [ $$rc -ne 0 ] || [ $$crashes -ne 0 ]; then fail=1; echo "  see $$log and fuzz/artifacts/$$t/"; fi; \
	done; exit $$fail

# `make test`'s steps, each followed by a line saying how long it took (.ci/run repeats them in
# its summary: what to look at when CI nears its time limit).
timed = @s=$$(date +%s); rc=0; $(MAKE) $(1) || rc=$$?; echo "==== make $(1): $$(( $$(date +%s) - s )) s, exit $$rc"; exit $$rc

# The venv's installs (TensorFlow, torch, JAX, PySpark: mostly download and unpacking) run in
# the background while check-rust compiles, which needs no venv; its log is printed once it ends.
VENV_LOG := $(CARGO_TARGET_DIR)/venv-install.log
test: build-tools ## All tests, and the static checks (make check)
	@mkdir -p $(CARGO_TARGET_DIR) && rm -f $(VENV_LOG).rc && \
	  { $(MAKE) venv > $(VENV_LOG) 2>&1; echo $$? > $(VENV_LOG).rc; } </dev/null >/dev/null 2>&1 &
	$(call timed,check-rust)
	$(call timed,venv-wait)
	$(call timed,test-rust)
	$(if $(filter true,$(CI)),$(MAKE) ci-free-disk)
	$(call timed,test-python)
	$(call timed,check-python)

check: venv check-rust check-python ## fmt, clippy -D warnings, docs -D warnings, ring tests under valgrind, mypy --strict, stubtest

# The venv waited for: what `make test` started in the background.
venv-wait:
	@test -f $(VENV_LOG) || { echo "venv-wait: no venv install was started (make test starts one)" >&2; exit 1; }
	@while [ ! -f $(VENV_LOG).rc ]; do sleep 2; done; cat $(VENV_LOG); exit "$$(cat $(VENV_LOG).rc)"

check-rust: build-tools ## fmt, one feature set for the two release builds, clippy -D warnings, docs -D warnings, ring tests under valgrind
	$(CARGO) fmt --all --check
	python3 hack/feature_diff.py
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --workspace --no-deps
	$(MAKE) valgrind

valgrind: ## ipc ring tests under valgrind memcheck
	$(CARGO) test -p hydrofeed-ipc --no-run --message-format=json 2>/dev/null \
	  | python3 -c 'import sys,json;[print(m["executable"]) for m in map(json.loads,sys.stdin) if m.get("executable") and m["target"]["name"] in ("conformance",)]' \
	  | while read -r t; do valgrind --error-exitcode=1 --leak-check=full -q "$$t" --test-threads=1; done

bench: venv build develop ## Benchmarks: ring, decode, feed (release build)
	$(BIN) bench ring --json
	$(BIN) bench decode --json --python $(PY)
	HYDROFEED_BIN=$(BIN) PATH=$(VENV)/bin:$$PATH $(PY) -m hydrofeed.bench feed --json

clean: ## Remove build outputs
	$(CARGO) clean
