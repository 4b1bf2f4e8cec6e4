"""Where a cached call's host time goes on a real GPU (run by tools/gpu_check.sh).

Per-call times of the four seed operators on tiny inputs (where the kernel takes microseconds
and the host's work is all there is), with launches on the lean path and on Numba's
(``adaptive_pool.cuda.launch``), alternated; PyTorch's CUDA calls for scale; the parts of a call
timed alone; and a profile of the lean calls.
"""

from __future__ import annotations

import cProfile
import io
import pstats
import statistics
import time

import numpy as np
from numba import cuda

import adaptive_pool as ap
from adaptive_pool.cuda import backend
from adaptive_pool.cuda import launch as L
from adaptive_pool.cuda.arrays import device_view, flat, resolve_stream


def per_call(f, n: int = 200, rounds: int = 5) -> float:
    """Median over ``rounds`` of the time of ``n`` calls then one synchronisation, per call."""
    f()
    cuda.synchronize()
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(n):
            f()
        cuda.synchronize()
        times.append((time.perf_counter() - t) / n)
    return statistics.median(times)


def calls():
    rng = np.random.default_rng(0)
    x2 = cuda.to_device(rng.standard_normal((1, 1, 4, 4)).astype(np.float32))
    g2 = cuda.to_device(rng.standard_normal((1, 1, 2, 2)).astype(np.float32))
    x3 = cuda.to_device(rng.standard_normal((1, 1, 4, 4, 4)).astype(np.float32))
    g3 = cuda.to_device(rng.standard_normal((1, 1, 2, 2, 2)).astype(np.float32))
    _, i3 = ap.adaptive_max_pool3d(x3, 2)
    y2 = cuda.device_array((1, 1, 2, 2), np.float32)
    return {
        "avg2d fwd": lambda: ap.adaptive_avg_pool2d(x2, 2),
        "avg2d fwd out=": lambda: ap.adaptive_avg_pool2d(x2, 2, out=y2),
        "avg2d bwd": lambda: ap.adaptive_avg_pool2d_backward(g2, x2),
        "max3d fwd": lambda: ap.adaptive_max_pool3d(x3, 2),
        "max3d bwd": lambda: ap.adaptive_max_pool3d_backward(g3, x3, i3),
    }


def tensors():
    """Tiny PyTorch CUDA tensors ``(x2, g2, x3, g3)``, or None where PyTorch has no GPU."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    shapes = ((1, 1, 4, 4), (1, 1, 2, 2), (1, 1, 4, 4, 4), (1, 1, 2, 2, 2))
    return [torch.randn(s, device="cuda") for s in shapes]


def torch_calls(t):
    """PyTorch's own calls on ``tensors()``."""
    import torch
    import torch.nn.functional as F

    x2, g2, x3, g3 = t
    _, i3 = F.adaptive_max_pool3d(x3, 2, return_indices=True)
    aten = torch.ops.aten
    return {
        "avg2d fwd": lambda: F.adaptive_avg_pool2d(x2, 2),
        "avg2d bwd": lambda: aten._adaptive_avg_pool2d_backward(g2, x2),
        "max3d fwd": lambda: F.adaptive_max_pool3d(x3, 2, return_indices=True),
        "max3d bwd": lambda: aten.adaptive_max_pool3d_backward(g3, x3, i3),
    }


def ours_on_tensors(t):
    """Our calls on ``tensors()`` (the PyTorch layer, its stream and allocator)."""
    x2, g2, x3, g3 = t
    _, i3 = ap.adaptive_max_pool3d(x3, 2)
    return {
        "avg2d fwd": lambda: ap.adaptive_avg_pool2d(x2, 2),
        "avg2d bwd": lambda: ap.adaptive_avg_pool2d_backward(g2, x2),
        "max3d fwd": lambda: ap.adaptive_max_pool3d(x3, 2),
        "max3d bwd": lambda: ap.adaptive_max_pool3d_backward(g3, x3, i3),
    }


def profile(name: str, f, top: int, order: str) -> None:
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(200):
        f()
    cuda.synchronize()
    prof.disable()
    out = io.StringIO()
    st = pstats.Stats(prof, stream=out)
    print(f"\nprofile of 200 calls of {name}: {st.total_calls / 200:.0f} function calls a call")
    st.sort_stats(order).print_stats(top)
    print("\n".join(out.getvalue().splitlines()[4:]))


@cuda.jit
def _empty_kernel(a, g):
    pass


def parts() -> None:
    from cuda.bindings import driver as drv

    d = cuda.to_device(np.zeros(16, np.float32))
    v = device_view(d)
    f, g = flat(v)
    s = resolve_stream(None, v)
    flag = backend._Flag()
    L.launch(_empty_kernel, 128, 128, s, (f, g))
    L.launch(_empty_kernel, 128, 128, s, (f, g))  # the checked lean launch
    lean = L._LEAN.get(L._key(_empty_kernel, (f, g)))

    def raw_alloc():
        err, ptr = drv.cuMemAlloc(64)
        drv.cuMemFree(ptr)

    def async_alloc():
        err, ptr = drv.cuMemAllocAsync(64, 0)
        drv.cuMemFreeAsync(ptr, 0)

    def check_roundtrip():
        flag.reset(s)
        flag.read(s)

    items = {
        "cuda.device_array(16) (freed as Numba defers)": lambda: cuda.device_array(16, np.float32),
        "cuMemAlloc + cuMemFree (64 B)": raw_alloc,
        "cuMemAllocAsync + cuMemFreeAsync (64 B)": async_alloc,
        "device_view": lambda: device_view(d),
        "flat": lambda: flat(v),
        "resolve_stream(None)": lambda: resolve_stream(None, v),
        "empty kernel, Numba's launch": lambda: _empty_kernel[128, 128, s](f.numba, g),
        "empty kernel, lean launch": (lambda: lean(128, 128, s, (f, g))) if lean else None,
        "index check's reset, read-back and sync": check_roundtrip,
        "stream.synchronize() alone": s.synchronize,
    }
    print("\nparts of a call, us (median of 5 x 200, then a synchronisation)")
    for name, fn in items.items():
        if fn is None:
            print(f"  {name:48s} (no lean launch)")
            continue
        print(f"  {name:48s} {per_call(fn) * 1e6:8.1f}")


def main() -> None:
    ours = calls()
    print("lean launch enabled:", L.LEAN)
    print("per call, us: lean / Numba's launch path (3 alternated rounds), PyTorch CUDA")
    t = tensors()
    th = {k: per_call(f) for k, f in torch_calls(t).items()} if t else {}
    results = {k: ([], []) for k in ours}
    for _ in range(3):
        for k, f in ours.items():
            for mode, store in ((True, results[k][0]), (False, results[k][1])):
                L.LEAN = mode
                store.append(per_call(f))
    L.LEAN = True
    for k, (lean, numba) in results.items():
        t = th.get(k)
        print(f"  {k:16s} {min(lean) * 1e6:8.1f} / {min(numba) * 1e6:8.1f}"
              + (f"   PyTorch {t * 1e6:7.1f}" if t else ""))
    print("lean launches:", L.lean_launches())
    on_tensors = ours_on_tensors(t) if t else {}
    if on_tensors:
        print("ours on PyTorch CUDA tensors, us per call:")
        for k, f in on_tensors.items():
            print(f"  {k:16s} {per_call(f) * 1e6:8.1f}")
    parts()
    for k, f in ours.items():
        profile(k, f, 14, "tottime")
    profile("avg2d fwd", ours["avg2d fwd"], 30, "cumulative")
    if on_tensors:
        profile("avg2d fwd on tensors", on_tensors["avg2d fwd"], 40, "cumulative")


if __name__ == "__main__":
    main()
