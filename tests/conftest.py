"""Fixtures shared by the CPU test files.

* ``warm_kernels`` (session, autouse): every CPU kernel specialisation (every storage dtype,
  both index dtypes, plain and NaN-skipping), loaded from the cache ``make test``'s warm-up
  filled (or compiled), before the first test.
* hypothesis profiles: ``default`` (bounded, no deadline: first calls compile), ``ci`` (the same,
  derandomized) and ``thorough`` (more examples, for a manual run:
  ``pytest --hypothesis-profile=thorough``).
* ``knobs``: sets the CPU backend's tuning knobs for one test (parallel kernels throughout).
* ``torch``: the torch module, or a clean skip when it is not installed.
* Tests marked ``slow`` are collected first (see :func:`pytest_collection_modifyitems`).

The tests run the tuned kernels, compiled in the foreground as a warm cache would have them,
unless ``ADAPTIVE_POOL_KERNELS`` says otherwise (``baseline`` runs the suite on the baseline
kernels); ``tests/test_tiers.py`` tests the tiers themselves.
"""

from __future__ import annotations

import os

os.environ.setdefault("ADAPTIVE_POOL_KERNELS", "tuned")  # before adaptive_pool is imported

import pytest
from hypothesis import HealthCheck, settings

_common = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("default", max_examples=40, **_common)
settings.register_profile("ci", max_examples=40, derandomize=True, **_common)
settings.register_profile("thorough", max_examples=1000, **_common)
settings.load_profile("ci" if os.environ.get("CI") else "default")


def pytest_collection_modifyitems(config, items):
    """Tests marked ``slow`` (seconds to a minute: cold compiles in subprocesses, two-process
    benchmarks) first: with ``-n auto`` a worker starts them at once rather than one finishing
    them alone at the end (the run's last minute and a half, 2026-12-06)."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture(scope="session", autouse=True)
def warm_kernels(request):
    """Compile each CPU kernel specialisation once per test run (cheap when cached)."""
    # Only for runs that include CPU tests: the CUDA simulator runs in its own process.
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        return
    from adaptive_pool.cpu.warm import kernel_names, warm

    for name in kernel_names():  # every kernel, every dtype: loaded from the warm-up's cache
        warm(name)


@pytest.fixture
def knobs(monkeypatch):
    """Set CPU backend tuning knobs for one test: ``knobs(_FORCE_ORDER="direct")``.

    Every launch of the test runs a parallel kernel in many chunks (small problems would
    otherwise run as one chunk on the calling thread, others as one a thread, and prepared
    calls of tiny ones the baseline kernels), and prepared calls, which bake the knobs in,
    are forgotten whenever a knob changes.
    """
    import adaptive_pool as ap
    from adaptive_pool.cpu import backend

    def set_knobs(**values):
        for name, value in values.items():
            monkeypatch.setattr(backend, name, value)
        ap.clear_cache()

    set_knobs(_SERIAL_WORK=0, _CHUNKS_PER_THREAD=32, _TINY_WORK=-1)
    yield set_knobs
    ap.clear_cache()


@pytest.fixture
def launched(monkeypatch):
    """The names of the kernels the CPU backend plans launches of, in order, while the test
    runs (a list the test may clear)."""
    from adaptive_pool.cpu import backend

    names = []
    runner = backend.BACKEND._runner

    def noting(kernel, work):
        names.append(kernel.__name__)
        return runner(kernel, work)

    monkeypatch.setattr(backend.BACKEND, "_runner", noting)
    return names


@pytest.fixture(scope="session")
def torch():
    """The torch module; skips the test when PyTorch is not installed."""
    return pytest.importorskip("torch")
