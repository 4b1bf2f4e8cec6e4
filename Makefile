# Quick start: `make demo` (install + run the demo) and `make test` (install + run every test).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip --disable-pip-version-check -q

# The kernels the demo runs (see `python -m adaptive_pool warmup --list`), compiled into
# Numba's cache in parallel before it starts (longest first), instead of one after the other
# inside it.
DEMO_KERNELS := avg_pool_backward_lanes,max_pool,max_pool_backward_sparse,max_pool_channels,avg_pool_lanewise,avg_pool_backward,avg_pool_backward_runs,avg_pool_runs,max_pool_runs

.PHONY: demo test warmup docs bench fuzz clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip

# Stamps re-run an install only when pyproject.toml changes.
$(VENV)/.installed-demo: pyproject.toml | $(PY)
	$(PIP) install -e ".[viz]"
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(PY)
	$(PIP) install -e ".[viz,test,cuda]"
	touch $@ $(VENV)/.installed-demo

demo: $(VENV)/.installed-demo
	$(PY) -m adaptive_pool warmup --kernels $(DEMO_KERNELS) --dtypes float32,bfloat16 \
		--index-dtypes int32 --no-skipna
	$(PY) -m adaptive_pool demo

# Every CPU kernel in every dtype, one process per kernel.
warmup: $(VENV)/.installed-demo
	$(PY) -m adaptive_pool warmup

# The CUDA simulator must be enabled before numba is imported, so it gets its own process.
# The warm-up first fills Numba's cache in parallel; the tests then load every kernel from it,
# one worker per core, an idle worker taking tests queued for another (worksteal: on 2 cores
# 3.7 minutes instead of 4.6-5.0, where one worker was left with the PTX compiles alone).
test: $(VENV)/.installed-test
	$(PY) -m adaptive_pool warmup
	$(PY) -m pytest -q -n auto --dist worksteal -m "not cudasim"
	NUMBA_ENABLE_CUDASIM=1 $(PY) -m pytest -q -n auto --dist worksteal -m cudasim

# The API reference, from the docstrings; any Sphinx warning is an error.
docs: $(VENV)/.installed-test
	$(PY) -m sphinx -W --keep-going -q -b html docs docs/_build/html

# The benchmark's peer is PyTorch, which the test extras install.
bench: $(VENV)/.installed-test
	$(PY) -m adaptive_pool bench

# A differential fuzz campaign of the CPU kernels (docs/fuzzing.md): `make fuzz SEED=7 MINUTES=20`.
SEED    ?= 1
MINUTES ?= 10
fuzz: $(VENV)/.installed-test
	$(PY) -m adaptive_pool warmup
	ADAPTIVE_POOL_KERNELS=tuned PYTHONPATH=$(CURDIR):$(CURDIR)/tests $(PY) tools/fuzz.py \
		--seed $(SEED) --minutes $(MINUTES) --out fuzz-$(SEED).txt

clean:
	rm -rf $(VENV) build *.egg-info docs/_build
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
