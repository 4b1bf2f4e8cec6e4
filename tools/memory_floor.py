"""What the memory allows the NaN-skipping average backward, against the plain one.

The plain backward writes a result as large as ``x`` and reads only ``grad_output``; with
``skipna=True`` it must also read ``x`` (to count each window's numbers and to give NaN
inputs zero). This times, for the backward shapes of ``bench skipna`` (float32, a tenth NaN),
both calls and two plain parallel loops over the same number of elements: one that writes
only, and one that reads ``x`` and writes (``out[i] = s if x[i] == x[i] else 0``). Their
ratio is what the memory system charges for the extra stream; every loop writes into the same
preallocated array, so no page faults are timed.

    python tools/memory_floor.py
"""
import time

import numba
import numpy as np
from numba import prange

import adaptive_pool as ap

SHAPES = [((64, 512, 49), (1,)), ((32, 256, 1024), (64,)), ((16, 512, 999), (50,)),
          ((32, 256, 56, 56), (7, 7)), ((8, 64, 224, 224), (6, 6)), ((32, 256, 28, 28), (1, None)),
          ((4, 64, 16, 56, 56), (4, 7, 7)), ((8, 128, 8, 14, 14), (3, 5, 5)),
          ((1, 16, 64, 64, 64), (7, 9, 11))]


@numba.njit(parallel=True)
def _write(out, s):
    for i in prange(out.size):
        out[i] = s


@numba.njit(parallel=True)
def _read_write(x, out, s):
    for i in prange(x.size):
        v = x[i]
        out[i] = s if v == v else np.float32(0)


def _median_ms(f, n=40):
    f()
    f()
    times = []
    for _ in range(n):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return float(np.median(times)) * 1e3


def main() -> None:
    rng = np.random.default_rng(0)
    print(f"{'shape':<28} {'plain':>8} {'skipna':>8} {'write':>8} {'read+write':>10}  "
          "skipna/plain  read+write/write")
    for shape, out in SHAPES:
        x = rng.standard_normal(shape).astype(np.float32)
        x[rng.random(shape) < 0.1] = np.nan
        rank = len(out)
        fwd = getattr(ap, f"adaptive_avg_pool{rank}d")
        bwd = getattr(ap, f"adaptive_avg_pool{rank}d_backward")
        g = np.ones_like(fwd(x, out))
        flat, res, s = x.reshape(-1), np.empty(x.size, np.float32), np.float32(1)
        plain = _median_ms(lambda: bwd(g, x))
        skip = _median_ms(lambda: bwd(g, x, skipna=True))
        w = _median_ms(lambda: _write(res, s))
        rw = _median_ms(lambda: _read_write(flat, res, s))
        label = "x".join(map(str, shape)) + "->" + "x".join("_" if o is None else str(o)
                                                          for o in out)
        print(f"{label:<28} {plain:8.3f} {skip:8.3f} {w:8.3f} {rw:10.3f}  {skip / plain:12.2f}"
              f"  {rw / w:16.2f}")


if __name__ == "__main__":
    main()
