"""Fixtures shared by the CPU test files.

* ``warm_kernels`` (session, autouse): compiles every CPU kernel specialisation once (every
  storage dtype, both index dtypes) before the first test, so timings and thread tests do not
  pay compiles and the numba cache is filled once.
* hypothesis profiles: ``default`` (bounded, no deadline: first calls compile), ``ci`` (the same,
  derandomized) and ``thorough`` (more examples, for a manual run:
  ``pytest --hypothesis-profile=thorough``).
* ``torch``: the torch module, or a clean skip when it is not installed.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

_common = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("default", max_examples=40, **_common)
settings.register_profile("ci", max_examples=40, derandomize=True, **_common)
settings.register_profile("thorough", max_examples=1000, **_common)
settings.load_profile("ci" if os.environ.get("CI") else "default")


@pytest.fixture(scope="session", autouse=True)
def warm_kernels(request):
    """Compile each CPU kernel specialisation once per test run (cheap when cached)."""
    # Only for runs that include CPU tests: the CUDA simulator runs in its own process.
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        return
    import adaptive_pool as ap
    from support import ALL_DTYPES, INDEX_DTYPES

    for dt in ALL_DTYPES:
        x2 = np.ones((1, 1, 3, 3), dt)
        y2 = ap.adaptive_avg_pool2d(x2, 2)
        ap.adaptive_avg_pool2d_backward(y2, x2)
        x3 = np.ones((1, 1, 2, 3, 3), dt)
        for idt in INDEX_DTYPES:
            y3, i3 = ap.adaptive_max_pool3d(x3, 2, index_dtype=idt)
            ap.adaptive_max_pool3d_backward(y3, x3, i3)


@pytest.fixture(scope="session")
def torch():
    """The torch module; skips the test when PyTorch is not installed."""
    return pytest.importorskip("torch")
