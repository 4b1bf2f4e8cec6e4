"""``python -m adaptive_pool demo``: the whole family in every dtype and on every backend, checked
and timed."""

from __future__ import annotations

import argparse
import itertools
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


def _cells(in_sp: tuple[int, ...], out_sp: tuple[int, ...]):
    """``(output cell, window slices)`` for every output cell of the trailing axes."""
    for cell in itertools.product(*(range(n) for n in out_sp)):
        yield cell, tuple(slice(*_bounds(o, i, n)) for o, i, n in zip(cell, in_sp, out_sp))


def _reference_avg(x: np.ndarray, out_sp: tuple[int, ...]) -> np.ndarray:
    rank = len(out_sp)
    axes = tuple(range(-rank, 0))
    y = np.empty(x.shape[:-rank] + out_sp)
    for cell, win in _cells(x.shape[-rank:], out_sp):
        y[(...,) + cell] = x[(...,) + win].mean(axis=axes)
    return y


def _reference_avg_backward(go: np.ndarray, x_shape: tuple[int, ...]) -> np.ndarray:
    rank = len(x_shape) - 2
    gi = np.zeros(x_shape)
    for cell, win in _cells(x_shape[-rank:], go.shape[-rank:]):
        volume = np.prod([s.stop - s.start for s in win])
        gi[(...,) + win] += go[(...,) + cell + (None,) * rank] / volume
    return gi


def _reference_max(v: np.ndarray, out_sp: tuple[int, ...]) -> np.ndarray:
    rank = len(out_sp)
    y = np.empty(v.shape[:-rank] + out_sp)
    for cell, win in _cells(v.shape[-rank:], out_sp):
        y[(...,) + cell] = v[(...,) + win].max(axis=tuple(range(-rank, 0)))
    return y


def _reference_max_backward(go: np.ndarray, idx: np.ndarray, x_shape) -> np.ndarray:
    rank = len(x_shape) - 2
    planes = int(np.prod(x_shape[:-rank]))
    gi = np.zeros((planes, int(np.prod(x_shape[-rank:]))))
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


#: One problem per rank, with overlapping windows (no size divides another).
_PROBLEMS = {1: ((4, 16, 371), (50,)), 2: ((4, 16, 37, 53), (7, 9)), 3: ((2, 8, 11, 19, 23), (4, 6, 5))}


def _check_rank(rank, dtype, to_dev, to_host, rng, repeat):
    """The four operators of one rank on one backend and dtype: ``(name, arrow, err, secs)``."""
    shape, out = _PROBLEMS[rank]
    x = rng.standard_normal(shape).astype(dtype)
    go = rng.standard_normal(shape[:2] + out).astype(dtype)
    xd, god = to_dev(x), to_dev(go)
    x64, g64 = x.astype(np.float64), go.astype(np.float64)
    f = {name: getattr(F, f"adaptive_{name}_pool{rank}d") for name in ("avg", "max")}
    b = {name: getattr(F, f"adaptive_{name}_pool{rank}d_backward") for name in ("avg", "max")}
    forward, backward = f"{shape}->{out}", f"{shape[:2] + out}->{shape[2:]}"
    rows = []
    y, t = _timed(lambda: f["avg"](xd, out), repeat)
    err = _error(to_host(y), _reference_avg(x64, out), _reference_avg(np.abs(x64), out), dtype)
    rows.append((f"adaptive_avg_pool{rank}d", forward, err, t))
    gi, t = _timed(lambda: b["avg"](god, xd), repeat)
    err = _error(to_host(gi), _reference_avg_backward(g64, shape),
                 _reference_avg_backward(np.abs(g64), shape), dtype)
    rows.append((f"adaptive_avg_pool{rank}d_backward", backward, err, t))
    (ym, idx), t = _timed(lambda: f["max"](xd, out), repeat)
    ref = _reference_max(x64, out)
    rows.append((f"adaptive_max_pool{rank}d", forward, _error(to_host(ym), ref, np.abs(ref), dtype), t))
    gv, t = _timed(lambda: b["max"](god, xd, idx), repeat)
    i = to_host(idx)
    err = _error(to_host(gv), _reference_max_backward(g64, i, shape),
                 _reference_max_backward(np.abs(g64), i, shape), dtype)
    rows.append((f"adaptive_max_pool{rank}d_backward", backward, err, t))
    return rows


def main(argv: list[str] | None = None) -> int:
    """Run the demo; returns 0 when every result is within its error budget."""
    parser = argparse.ArgumentParser(prog="python -m adaptive_pool demo", description=__doc__)
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per case (best kept)")
    parser.add_argument("--dtypes", default="float32,bfloat16",
                        help="comma-separated dtypes, or 'all' (default: float32,bfloat16: each "
                             "dtype is another compile on a first run)")
    args = parser.parse_args(argv)
    names = [np.dtype(d).name for d in SUPPORTED]
    chosen = names if args.dtypes == "all" else [d for d in args.dtypes.split(",") if d]
    if not set(chosen) <= set(names):
        parser.error(f"unknown dtypes {sorted(set(chosen) - set(names))}; choose from {names}")
    dtypes = [d for d in SUPPORTED if np.dtype(d).name in chosen]

    rng = np.random.default_rng(2026)
    print("adaptive_pool demo: the whole family on every backend, checked against a float64 "
          "NumPy reference.\nEach cell: err/eps, then the time of one call.\n")
    header = f"{'operator':<31} {'problem':<34} {'backend':<7}" + "".join(
        f"{np.dtype(d).name:>18}" for d in dtypes
    )
    print(header)
    print("-" * len(header))
    failures = cases = 0
    for backend, to_dev, to_host in _backends():
        for rank in (1, 2, 3):
            table = [_check_rank(rank, d, to_dev, to_host, rng, args.repeat) for d in dtypes]
            for k, (name, arrow, _, _) in enumerate(table[0]):
                cells = ""
                for per_dtype in table:
                    err, secs = per_dtype[k][2:]
                    ok = err <= _EPS_BUDGET
                    failures += not ok
                    cases += 1
                    cells += f"{err:>7.2f} {_ms(secs):>9} " + (" " if ok else "!")
                print(f"{name:<31} {arrow.replace(' ', ''):<34} {backend:<7}{cells}")
    print(f"\n{cases} cases, {failures} outside the error budget of {_EPS_BUDGET} eps (marked !)."
          "\nerr/eps: largest |ours - reference| over the sum of |terms|, in units of the "
          "dtype's epsilon;\ntime: best of the calls after the first (which compiles and plans).")
    return 1 if failures else 0


def _ms(secs: float) -> str:
    return f"{secs * 1e3:.3f}ms" if secs < 1 else f"{secs:.2f}s"
