# Static checks of the Python package, for `include mk/check-python.mk` in the top-level Makefile
# (or alone: `make -f mk/check-python.mk check-python`), run from the repository root:
#
# - mypy --strict over python/hydrofeed (settings and third-party overrides: python/pyproject.toml);
# - stubtest: python/hydrofeed/_native.pyi against the compiled extension, which must be built
#   first (`make develop`).
#
# VENV: the virtualenv with mypy (requirements-dev.txt); the top-level Makefile sets it.
VENV ?= .venv
CHECK_PYTHON_VENV = $(abspath $(VENV))

# Defining a target here must not make it the includer's default goal (`make` alone).
CHECK_PYTHON_DEFAULT_GOAL := $(.DEFAULT_GOAL)

.PHONY: check-python
check-python: ## mypy --strict on the Python package, stubtest of the extension's stubs
	cd python && $(CHECK_PYTHON_VENV)/bin/mypy --strict hydrofeed
	cd python && $(CHECK_PYTHON_VENV)/bin/python -m mypy.stubtest hydrofeed._native

.DEFAULT_GOAL := $(CHECK_PYTHON_DEFAULT_GOAL)
