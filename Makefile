# `make demo`: set up .venv (if missing) and run the headline DDA example.
# `make test`: set up .venv with the test extras and run the fast CPU suite.
# `make docs`: build the documentation site into site/ (MkDocs; a broken link fails).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: demo test test-slow lint bench docs clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(VENV)/.installed: pyproject.toml | $(VENV)/bin/python
	$(PY) -m pip install -q -e '.[test]'
	touch $@

demo: $(VENV)/.installed
	$(PY) examples/sphere_vs_mie.py

$(VENV)/.docs-installed: pyproject.toml | $(VENV)/bin/python
	$(PY) -m pip install -q -e '.[docs]'
	touch $@

docs: $(VENV)/.docs-installed
	$(PY) -m mkdocs build --strict

# the fast suite in one worker per core (at most 4: each holds its own JAX and compiles)
test: $(VENV)/.installed
	$(PY) -m pytest -q -n auto --maxprocesses=4 -m "not slow and not gpu"

test-slow: $(VENV)/.installed
	$(PY) -m pytest -q -m "slow"

lint: $(VENV)/.installed
	$(PY) -m ruff check src tests benchmarks examples
	$(PY) -m ruff format --check src tests benchmarks examples

bench: $(VENV)/.installed
	$(VENV)/bin/emjax bench dda --grid 32 --grid 48 --grid 64 --precision double --precision single

clean:
	rm -rf $(VENV) build dist site src/*.egg-info
