"""Tiered compilation: baseline kernels give the tuned kernels' bits, a cold kernel's first calls
run them while the tuned one compiles in a background process, and a warm one runs tuned
kernels straight away.

The rest of the suite runs the tuned kernels (``conftest.py``); ``ADAPTIVE_POOL_KERNELS=baseline
pytest`` runs all of it on the baseline kernels.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import adaptive_pool as ap
import reference as ref
from adaptive_pool.cpu import backend, baseline, tiers
from adaptive_pool.errors import AdaptivePoolIndexError
from support import ALL_DTYPES, DTYPE_IDS, bits, channels_last, rand, tol

ROOT = Path(__file__).resolve().parent.parent

#: (input shape, output size) of each rank; windows that overlap, upsampling, global pooling,
#: windows that are whole rows
CASES = [
    ((2, 9, 23), 5),
    ((1, 3, 4, 40), (None, 1)),
    ((2, 10, 9, 10), (4, 3)),
    ((1, 9, 5, 3), (7, 8)),
    ((2, 8, 7, 7), 1),
    ((1, 2, 5, 9, 10), (2, 4, 3)),
    ((1, 3, 3, 4, 5), (5, 2, 7)),
]


def _nan_some(x: np.ndarray, seed: int) -> np.ndarray:
    """``x`` with about a fifth of its elements NaN and one plane all NaN."""
    x = x.copy()
    rng = np.random.default_rng(seed)
    x[rng.random(x.shape) < 0.2] = np.nan
    x[0, 0] = np.nan
    return x


def _results(x, size, skipna, layout):
    """Every operator of ``x``'s rank on ``x`` (and gradients): forward and backward results."""
    rank = x.ndim - 2
    if layout == "channels_last":
        x = channels_last(x)
    avg = getattr(ap, f"adaptive_avg_pool{rank}d")
    mx = getattr(ap, f"adaptive_max_pool{rank}d")
    y = avg(x, size, skipna=skipna)
    g = rand(y.shape, x.dtype, seed=5)
    gx = getattr(ap, f"adaptive_avg_pool{rank}d_backward")(g, x, skipna=skipna)
    m, i = mx(x, size, skipna=skipna)
    gm = getattr(ap, f"adaptive_max_pool{rank}d_backward")(g, x, i)
    return y, gx, m, i, gm


def _run(mode, monkeypatch, *args):
    monkeypatch.setattr(tiers, "MODE", mode)
    ap.clear_cache()  # prepared calls keep the kernels they were bound to
    try:
        return _results(*args)
    finally:
        ap.clear_cache()


@pytest.mark.parametrize("layout", ["C", "channels_last"])
@pytest.mark.parametrize("skipna", [False, True])
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape,size", CASES)
def test_baseline_kernels_give_the_tuned_kernels_bits(shape, size, dtype, skipna, layout,
                                                       monkeypatch):
    x = rand(shape, dtype, seed=len(shape))
    if skipna:
        x = _nan_some(x, seed=3)
    want = _run("tuned", monkeypatch, x, size, skipna, layout)
    got = _run("baseline", monkeypatch, x, size, skipna, layout)
    for w, g in zip(want, got):
        np.testing.assert_array_equal(bits(g), bits(w))


@pytest.mark.parametrize("skipna", [False, True])
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
def test_baseline_kernels_against_the_reference(dtype, skipna, monkeypatch):
    x = rand((2, 3, 5, 9, 10), dtype, seed=1)
    if skipna:
        x = _nan_some(x, seed=4)
    size = (2, 4, 3)
    y, gx, m, i, gm = _run("baseline", monkeypatch, x, size, skipna, "C")
    np.testing.assert_array_equal(bits(y), bits(ref.avg_pool_in_order(x, size, 3, skipna)))
    rm, ri = ref.max_pool(x, size, 3, skipna)
    np.testing.assert_array_equal(i, ri)
    np.testing.assert_array_equal(bits(m), bits(rm.astype(dtype)))
    g = rand(y.shape, dtype, seed=5)
    rt, at = tol(dtype) if dtype.itemsize > 2 else (1e-2, 1e-2)
    want = ref.avg_pool_backward(g, x.shape, 3, x if skipna else None)
    np.testing.assert_allclose(gx.astype(np.float64), want, rtol=rt, atol=at)
    want = ref.max_pool_backward(g, x.shape, i, 3)
    np.testing.assert_allclose(gm.astype(np.float64), want, rtol=rt, atol=at)


def test_baseline_max_backward_checks_its_indices(monkeypatch):
    x = rand((2, 3, 9, 10), np.float32)
    m, i = ap.adaptive_max_pool2d(x, (4, 3))
    i[1, 2, 3, 1] = 0  # not in that cell's window
    gi = np.full(x.shape, 7.0, np.float32)
    monkeypatch.setattr(tiers, "MODE", "baseline")
    ap.clear_cache()
    with pytest.raises(AdaptivePoolIndexError, match=r"indices\[1, 2, 3, 1\] = 0"):
        ap.adaptive_max_pool2d_backward(m, x, i, out=gi)
    assert (gi == 7.0).all()  # nothing written
    ap.clear_cache()


@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["float32", "float16"])
def test_baseline_max_backward_of_planes_too_large_to_sum(dtype, monkeypatch):
    """Planes above ``baseline.SUMMED_PLANE`` elements take the gather: the same bits."""
    side = int(np.sqrt(baseline.SUMMED_PLANE)) + 8
    x = rand((1, 1, side, side), dtype)
    m, i = ap.adaptive_max_pool2d(x, (7, 9))
    g = rand(m.shape, dtype, seed=2)
    want = ap.adaptive_max_pool2d_backward(g, x, i)
    monkeypatch.setattr(tiers, "MODE", "baseline")
    ap.clear_cache()
    try:
        got = ap.adaptive_max_pool2d_backward(g, x, i)
    finally:
        ap.clear_cache()
    np.testing.assert_array_equal(bits(got), bits(want))


class _Spy:
    """Stands in for :mod:`adaptive_pool.cpu.baseline`, counting the calls of its kernels (its
    other names as they are)."""

    def __init__(self) -> None:
        self.calls = 0

    def __getattr__(self, name):
        kernel = getattr(baseline, name)
        if not callable(kernel):
            return kernel

        def counted(*args):
            self.calls += 1
            return kernel(*args)

        return counted


@pytest.fixture
def tiered(monkeypatch):
    """Tiered mode with a spy on the baseline kernels; prepared calls forgotten before and
    after."""
    spy = _Spy()
    monkeypatch.setattr(tiers, "MODE", "tiered")
    monkeypatch.setattr(backend, "baseline", spy)
    monkeypatch.setattr(tiers, "_READY", set())
    monkeypatch.setattr(tiers, "_FINISHED", set())
    ap.clear_cache()
    yield spy
    tiers.wait(600)
    ap.clear_cache()


@pytest.mark.parametrize("op", ["avg", "avg_skipna", "max", "max_backward"])
def test_kernels_in_the_cache_run_tuned_straight_away(op, tiered):
    x = rand((2, 16, 9, 10), np.float32)
    for _ in range(3):  # the long path, then prepared calls
        if op == "max_backward":
            m, i = ap.adaptive_max_pool2d(x, (4, 3))
            ap.adaptive_max_pool2d_backward(m, x, i)
        elif op == "max":
            ap.adaptive_max_pool2d(x, (4, 3))
        else:
            ap.adaptive_avg_pool2d(x, (4, 3), skipna=op == "avg_skipna")
    assert tiered.calls == 0
    assert tiers.pending() == 0


def test_a_failed_background_compile_falls_back_to_the_foreground(tiered, monkeypatch):
    # the tuned kernels look cold, and the background process fails
    monkeypatch.setattr(tiers._Tiered, "ready", lambda self, arrays: False)
    monkeypatch.setattr(tiers, "_JOB", "raise SystemExit(3)")
    x = rand((2, 3, 9, 10), np.float32)
    g = rand((2, 3, 4, 3), np.float32)
    first = ap.adaptive_avg_pool2d_backward(g, x)
    assert tiered.calls == 1
    assert tiers.wait(120)
    again = ap.adaptive_avg_pool2d_backward(g, x)  # compiled (here: loaded) in the foreground
    assert tiered.calls == 1
    np.testing.assert_array_equal(first, again)


_COLD = r"""
import sys, time
import numpy as np
import adaptive_pool as ap
from adaptive_pool.cpu import baseline, kernels, tiers
x = np.random.default_rng(0).standard_normal((2, 3, 9, 10)).astype(np.float32)
y1 = ap.adaptive_avg_pool2d(x, (4, 3))
assert tiers.pending() == 1, tiers.pending()
assert baseline.avg_pool.signatures and not any(c.signatures for c in kernels.CHUNKS.values())
y2 = ap.adaptive_avg_pool2d(x, (4, 3))
assert tiers.wait(600)
y3 = ap.adaptive_avg_pool2d(x, (4, 3))
used = [c for c in kernels.CHUNKS.values() if c.signatures]
assert used, "the tuned kernel did not run"
for c in used:  # loaded from the cache the background process filled, not compiled here
    assert sum(c.stats.cache_hits.values()) == len(c.signatures), c
    assert not sum(c.stats.cache_misses.values()), c
assert y1.tobytes() == y2.tobytes() == y3.tobytes()
print("ok")
"""


@pytest.mark.slow
def test_a_cold_kernel_runs_the_baseline_while_the_tuned_one_compiles(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NUMBA_CACHE_DIR": str(tmp_path),
           "ADAPTIVE_POOL_KERNELS": "tiered"}
    r = subprocess.run([sys.executable, "-c", _COLD], capture_output=True, text=True, env=env,
                       cwd=ROOT, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split() == ["ok"]


def test_an_unknown_mode_warns_and_tiers():
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ADAPTIVE_POOL_KERNELS": "fastest"}
    r = subprocess.run([sys.executable, "-c", "from adaptive_pool.cpu import tiers; "
                        "print(tiers.MODE)"], capture_output=True, text=True, env=env, cwd=ROOT,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["tiered"]
    assert "ADAPTIVE_POOL_KERNELS='fastest' is not one of" in r.stderr
