"""``python -m adaptive_pool demo``: every operator, dtype and backend, checked and timed."""

from __future__ import annotations

import argparse
import time
from typing import Any, Callable

import ml_dtypes
import numpy as np

from . import functional as F
from .dtypes import SUPPORTED

__all__ = ["main"]

# Error allowed against the float64 reference, in units of the dtype's epsilon: one rounding of
# the result plus the float32 accumulation of a few dozen terms.
_EPS_BUDGET = 4.0


def _bounds(o: int, n_in: int, n_out: int) -> tuple[int, int]:
    """An independent statement of the window rule (Python ints), for checking only."""
    return (o * n_in) // n_out, -((-(o + 1) * n_in) // n_out)


def _reference_avg(x: np.ndarray, out_hw: tuple[int, int]) -> np.ndarray:
    H, W = x.shape[-2:]
    OH, OW = out_hw
    y = np.empty(x.shape[:-2] + out_hw)
    for oh in range(OH):
        h0, h1 = _bounds(oh, H, OH)
        for ow in range(OW):
            w0, w1 = _bounds(ow, W, OW)
            y[..., oh, ow] = x[..., h0:h1, w0:w1].mean(axis=(-2, -1))
    return y


def _reference_avg_backward(go: np.ndarray, x_shape: tuple[int, ...]) -> np.ndarray:
    H, W = x_shape[-2:]
    OH, OW = go.shape[-2:]
    gi = np.zeros(x_shape)
    for oh in range(OH):
        h0, h1 = _bounds(oh, H, OH)
        for ow in range(OW):
            w0, w1 = _bounds(ow, W, OW)
            gi[..., h0:h1, w0:w1] += go[..., oh, ow, None, None] / ((h1 - h0) * (w1 - w0))
    return gi


def _reference_max(v: np.ndarray, out_dhw: tuple[int, int, int]) -> np.ndarray:
    D, H, W = v.shape[-3:]
    y = np.empty(v.shape[:-3] + out_dhw)
    for od in range(out_dhw[0]):
        d0, d1 = _bounds(od, D, out_dhw[0])
        for oh in range(out_dhw[1]):
            h0, h1 = _bounds(oh, H, out_dhw[1])
            for ow in range(out_dhw[2]):
                w0, w1 = _bounds(ow, W, out_dhw[2])
                y[..., od, oh, ow] = v[..., d0:d1, h0:h1, w0:w1].max(axis=(-3, -2, -1))
    return y


def _reference_max_backward(go: np.ndarray, idx: np.ndarray, x_shape) -> np.ndarray:
    planes = int(np.prod(x_shape[:-3]))
    gi = np.zeros((planes, int(np.prod(x_shape[-3:]))))
    g2, i2 = go.reshape(planes, -1), idx.reshape(planes, -1)
    for p in range(planes):
        np.add.at(gi[p], i2[p], g2[p])
    return gi.reshape(x_shape)


def _backends() -> list[tuple[str, Callable[[np.ndarray], Any], Callable[[Any], np.ndarray]]]:
    """(name, to_backend, to_numpy) for every backend usable here."""
    found = [("cpu", lambda a: a, lambda a: a)]
    try:
        from .cuda import backend as cuda_backend  # noqa: PLC0415 - optional

        if cuda_backend.is_available():
            found.append(("cuda", cuda_backend.to_device, cuda_backend.to_host))
    except ImportError:
        pass
    return found


def _timed(fn: Callable[[], Any], repeat: int) -> tuple[Any, float]:
    result = fn()  # first call: compiles (or loads from cache) and plans
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t)
    return result, best


def _error(got: np.ndarray, ref: np.ndarray, magnitude: np.ndarray, dtype: np.dtype) -> float:
    """Largest ``|got - ref|`` in units of eps times the magnitude of the summed terms.

    ``magnitude`` is the reference applied to the inputs' absolute values: the natural scale of
    a sum's rounding error, which stays meaningful where terms cancel and ``ref`` is near 0. It
    is floored at the smallest normal number, below which the dtype's steps are absolute.
    """
    got64 = np.asarray(got, dtype=np.float64)
    info = ml_dtypes.finfo(dtype)
    scale = np.maximum(magnitude, float(info.smallest_normal))
    eps = float(info.eps)
    return float(np.max(np.abs(got64 - ref) / scale) / eps) if ref.size else 0.0


def main(argv: list[str] | None = None) -> int:
    """Run the demo; returns 0 when every result is within its error budget."""
    parser = argparse.ArgumentParser(prog="python -m adaptive_pool demo", description=__doc__)
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per case (best kept)")
    args = parser.parse_args(argv)

    rng = np.random.default_rng(2026)
    img = rng.standard_normal((4, 16, 37, 53))  # non-divisible: overlapping windows
    vol = rng.standard_normal((2, 8, 11, 19, 23))
    cases = []
    print("adaptive_pool demo: every operator on every backend, checked against a float64 "
          "NumPy reference\n")
    header = f"{'operator':<30} {'shape':<30} {'dtype':<9} {'backend':<7} {'err/eps':>8} " \
             f"{'time':>10}  check"
    print(header)
    print("-" * len(header))
    failures = 0
    for backend, to_dev, to_host in _backends():
        for dtype in SUPPORTED:
            x = img.astype(dtype)
            v = vol.astype(dtype)
            xd, vd = to_dev(x), to_dev(v)
            x64, v64 = x.astype(np.float64), v.astype(np.float64)
            go2 = rng.standard_normal(img.shape[:2] + (7, 9)).astype(dtype)
            go3 = rng.standard_normal(vol.shape[:2] + (4, 6, 5)).astype(dtype)
            go2d, go3d = to_dev(go2), to_dev(go3)

            y, t = _timed(lambda: F.adaptive_avg_pool2d(xd, (7, 9)), args.repeat)
            g2, g3 = go2.astype(np.float64), go3.astype(np.float64)

            y, t = _timed(lambda: F.adaptive_avg_pool2d(xd, (7, 9)), args.repeat)
            err = _error(to_host(y), _reference_avg(x64, (7, 9)),
                         _reference_avg(np.abs(x64), (7, 9)), dtype)
            cases.append(("adaptive_avg_pool2d", x.shape, (7, 9), dtype, backend, err, t))
            gi, t = _timed(lambda: F.adaptive_avg_pool2d_backward(go2d, xd), args.repeat)
            err = _error(to_host(gi), _reference_avg_backward(g2, x.shape),
                         _reference_avg_backward(np.abs(g2), x.shape), dtype)
            cases.append(("adaptive_avg_pool2d_backward", go2.shape, x.shape[-2:], dtype,
                          backend, err, t))
            (ym, idx), t = _timed(lambda: F.adaptive_max_pool3d(vd, (4, 6, 5)), args.repeat)
            ref = _reference_max(v64, (4, 6, 5))
            err = _error(to_host(ym), ref, np.abs(ref), dtype)
            cases.append(("adaptive_max_pool3d", v.shape, (4, 6, 5), dtype, backend, err, t))
            gv, t = _timed(
                lambda: F.adaptive_max_pool3d_backward(go3d, vd, idx), args.repeat
            )
            i3 = to_host(idx)
            err = _error(to_host(gv), _reference_max_backward(g3, i3, v.shape),
                         _reference_max_backward(np.abs(g3), i3, v.shape), dtype)
            cases.append(("adaptive_max_pool3d_backward", go3.shape, v.shape[-3:], dtype,
                          backend, err, t))
            for op, shape, out, dt, be, err, secs in cases[-4:]:
                ok = err <= _EPS_BUDGET
                failures += not ok
                arrow = f"{tuple(shape)}->{tuple(out)}".replace(" ", "")
                print(f"{op:<30} {arrow:<30} {np.dtype(dt).name:<9} {be:<7} {err:>8.3f} "
                      f"{secs * 1e3:>8.3f}ms  {'ok' if ok else 'FAIL'}")
    print(f"\n{len(cases)} cases, {failures} outside the error budget of {_EPS_BUDGET} eps. "
          "err/eps: largest |ours - reference| over the sum of |terms|, in units of the\n"
          "dtype's epsilon; time: best of the calls after the first (which compiles and plans).")
    return 1 if failures else 0
