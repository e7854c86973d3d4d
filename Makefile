# Two commands for a newcomer: `make demo` and `make test`.
# Both create .venv and install into it; nothing needs to be installed by hand.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
# CPU build of torch, pinned: an unpinned torch (or a package that pulls one) downloads a
# multi-GB CUDA build. GPU clusters use environment.yml instead.
TORCH  := torch==2.13.0
STAMP  := $(VENV)/.installed

.PHONY: demo test install bench clean

$(STAMP): pyproject.toml Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip setuptools wheel
	$(PIP) install -q "$(TORCH)" -e ".[embed,quality,dev]"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/datamask demo demo-output

test: $(STAMP)
	$(PY) -m pytest -q tests

bench: $(STAMP)
	$(PY) benchmarks/optimizer.py

clean:
	rm -rf $(VENV) demo-output .pytest_cache
