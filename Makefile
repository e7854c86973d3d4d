# Two commands for a newcomer: `make demo` and `make test` (`make lint` before a commit).
# Both create .venv and install into it; nothing needs to be installed by hand.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
# CPU build of torch, pinned: an unpinned torch (or a package that pulls one) downloads a
# multi-GB CUDA build. GPU clusters use environment.yml instead.
TORCH  := torch==2.13.0
STAMP  := $(VENV)/.installed

.PHONY: demo test test-blas lint install bench clean

$(STAMP): pyproject.toml Makefile
	@# Chromium for the report's browser tests (tests/analysis/test_report_browser.py), from
	@# Debian: only when missing, apt-get present and we are root; never fails the install.
	-@if ! command -v chromium >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
		echo "installing chromium (apt-get) for the browser tests"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null 2>&1 \
		|| echo "chromium could not be installed: the browser tests will be skipped"; fi
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip setuptools wheel
	$(PIP) install -q "$(TORCH)" -e ".[embed,fast-embed,quality,s3,search,dev]"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/datamask demo demo-output

# Two test processes, each taking whole files (`--dist loadfile`: a file's fixtures, clusters
# and servers stay in one process); `make test TEST_WORKERS=0` runs the suite in one process.
TEST_WORKERS ?= 2
test: $(STAMP)
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile tests

# The optimiser's and the methods' tests under other OpenBLAS kernels (a user's CPU picks its
# own; each sums float32 products in its own order). `make test-blas KERNELS=Haswell` for one.
KERNELS ?= Haswell SkylakeX Prescott
test-blas: $(STAMP)
	for k in $(KERNELS); do echo "OPENBLAS_CORETYPE=$$k"; OPENBLAS_CORETYPE=$$k $(PY) -m pytest -q -p no:cacheprovider tests/core tests/estimator tests/methods || exit 1; done

# ruff's lint rules and its formatter, configured in pyproject.toml ([tool.ruff]).
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

bench: $(STAMP)
	$(PY) benchmarks/optimizer.py

clean:
	rm -rf $(VENV) demo-output .pytest_cache
