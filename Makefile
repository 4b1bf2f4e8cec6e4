# Quick start: `make demo` (install + run the demo) and `make test` (install + run every test).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip --disable-pip-version-check -q

.PHONY: demo test test-fast bench clean

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
	$(PY) -m adaptive_pool demo

# The CUDA simulator must be enabled before numba is imported, so it gets its own process.
test: $(VENV)/.installed-test
	$(PY) -m pytest -q -m "not cudasim"
	NUMBA_ENABLE_CUDASIM=1 $(PY) -m pytest -q -m cudasim

# The benchmark's peer is PyTorch, which the test extras install.
bench: $(VENV)/.installed-test
	$(PY) -m adaptive_pool bench

clean:
	rm -rf $(VENV) build *.egg-info
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
