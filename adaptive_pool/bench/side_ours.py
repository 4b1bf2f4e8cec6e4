"""The adaptive_pool side of a case, as the worker process of our library builds and runs it.

Loaded by path into the ``ours`` worker only (see :mod:`.worker`); it imports adaptive_pool and
Numba, never PyTorch.
"""

from __future__ import annotations

import functools
import os
import statistics
import time
from typing import Any, Callable

import numpy as np

import adaptive_pool as ap
from adaptive_pool.dtypes import bfloat16

NAME = "ours"


class Side:
    """Arrays, calls and synchronisation of adaptive_pool on one backend (``cpu``/``cuda``)."""

    def __init__(self, backend: str) -> None:
        self.backend = backend
        self._cuda = None
        if backend == "cuda":
            from adaptive_pool.cuda import backend as cuda  # noqa: PLC0415 - the numba.cuda module

            if not cuda.is_available():
                raise RuntimeError("no CUDA GPU is available to adaptive_pool (Numba)")
            self._cuda = cuda

    def settle(self) -> bool:
        """Wait for the tuned kernels that first calls left compiling in the background
        (:mod:`adaptive_pool.cpu.tiers`), so that samples time them; True if there were any."""
        from adaptive_pool.cpu import tiers  # noqa: PLC0415

        return tiers.settle()

    def put(self, a: np.ndarray, dtype: str) -> Any:
        """Storage-form NumPy data -> the array a user of this backend passes."""
        host = a.view(bfloat16) if dtype == "bfloat16" else a
        return self._cuda.to_device(host) if self._cuda else host

    def channels_last(self, a: np.ndarray) -> np.ndarray:
        """The same values stored with the channels (axis 1) innermost, as an NCHW view."""
        return np.moveaxis(np.ascontiguousarray(np.moveaxis(a, 1, -1)), -1, 1)

    def sync(self) -> None:
        if self._cuda is not None:
            self._cuda.synchronize()

    def host(self, a: Any) -> np.ndarray:
        """A result -> NumPy in storage form (bfloat16 as uint16 bits)."""
        h = self._cuda.to_host(a) if self._cuda is not None else np.asarray(a)
        return h.view(np.uint16) if h.dtype == bfloat16 else h

    def build(self, kind: str, rank: int, backward: bool, x: Any, go: Any,
              out_size: tuple, index_dtype: str) -> tuple[Callable[[], Any], Callable[[Any], list]]:
        """The timed call of a case (allocating its outputs, as a user's call does) and a
        function from its result to the arrays that are compared."""
        idt = np.dtype(index_dtype)
        fwd = getattr(ap, f"adaptive_{kind}_pool{rank}d")
        if not backward:
            if kind == "max":
                return (lambda: fwd(x, out_size, index_dtype=idt)), lambda r: [r[0], r[1]]
            return (lambda: fwd(x, out_size)), lambda r: [r]
        bwd = getattr(ap, f"adaptive_{kind}_pool{rank}d_backward")
        if kind == "max":
            _, ind = fwd(x, out_size, index_dtype=idt)
            return (lambda: bwd(go, x, ind)), lambda r: [r]
        return (lambda: bwd(go, x)), lambda r: [r]

    def info(self) -> dict[str, Any]:
        import numba  # noqa: PLC0415

        try:
            layer = numba.threading_layer()
        except ValueError:  # no parallel kernel has run yet
            layer = None
        d = {"library": "adaptive_pool", "version": ap.__version__, "numba": numba.__version__,
             "threads": numba.get_num_threads(), "threading_layer": layer,
             "cpu_count": os.cpu_count()}
        if self._cuda is not None:
            d["device"] = self._cuda.device_name()
        return d

    def copy_bandwidth(self, nbytes: int, repeat: int) -> dict[str, float]:
        """Bytes read + written per second by a parallel copy of a large array on this backend
        (a Numba parallel loop on the CPU, a device-to-device copy on a GPU)."""
        n = nbytes // 8
        if self._cuda is not None:
            src = self._cuda.to_device(np.ones(n, np.float64))
            dst = self._cuda.to_device(np.empty(n, np.float64))

            def copy() -> None:
                dst.copy_to_device(src)
        else:
            src, dst = np.ones(n, np.float64), np.zeros(n, np.float64)
            kernel = copy_kernel()

            def copy() -> None:
                kernel(src, dst)
        copy()
        self.sync()
        samples = []
        for _ in range(max(3, repeat)):
            self.sync()
            t = time.perf_counter()
            copy()
            self.sync()
            samples.append(time.perf_counter() - t)
        return {"bytes_per_s": 2 * n * 8 / statistics.median(samples),
                "best_bytes_per_s": 2 * n * 8 / min(samples), "array_bytes": n * 8}


def cuda_available() -> bool:
    """Whether adaptive_pool can run CUDA arrays here (a GPU, or Numba's simulator)."""
    try:
        from adaptive_pool.cuda import backend  # noqa: PLC0415
    except ImportError:
        return False
    return backend.is_available()


@functools.cache
def copy_kernel() -> Callable[[np.ndarray, np.ndarray], None]:
    """``copy(src, dst)``: ``dst[:] = src`` for flat arrays, in chunks over Numba's threads (the
    kernels' own way of streaming through memory). One dispatcher for the process, so each
    argument type compiles once, not once per case of ``bench skipna``."""
    import numba  # noqa: PLC0415

    @numba.njit(parallel=True, nogil=True, cache=False)
    def copy(src, dst):  # pragma: no cover - compiled
        n = src.size
        chunk = 1 << 16
        for k in numba.prange((n + chunk - 1) // chunk):
            lo, hi = k * chunk, min(n, (k + 1) * chunk)
            dst[lo:hi] = src[lo:hi]  # (vectorised, where a loop of indexed copies was not)

    return copy
