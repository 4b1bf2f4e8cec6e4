"""Where a GPU call's time goes: wall time per call (synchronised) against the GPU's own time
per call (CUDA events around a burst of calls, so that launches queue up), ours and PyTorch's,
on large float32 problems. Under Nsight Compute (``ncu --clock-control none --metrics
gpu__time_duration.sum``) pass ``--once`` for one call of each, which ncu times kernel by kernel.
Run by tools/gpu_check.sh."""

from __future__ import annotations

import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

import adaptive_pool as ap

CASES = [  # (input shape, output size)
    ((32, 256, 56, 56), (7, 7)),
    ((8, 64, 224, 224), (6, 6)),
    ((64, 512, 14, 14), (5, 5)),
    ((128, 2048, 7, 7), (1, 1)),
    ((4, 64, 16, 56, 56), (4, 7, 7)),
]
# the forwards again with a thread, then a warp per window (backend.WARP_WINDOW)
WINDOW_CASES = CASES + [
    ((4, 64, 8, 28, 28), (1, 1, 1)),
    ((2, 32, 32, 32, 32), (5, 5, 5)),
    ((16, 64, 64, 64), (9, 11)),
    ((32, 256, 28, 28), (28, 1)),
    ((16, 64, 64, 64), (4, 4)),
    ((8, 256, 32, 32), (2, 2)),
]


def calls(shape, out):
    r = len(out)
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(shape, device="cuda", generator=g)
    xg = x.clone().requires_grad_(True)
    avg, mx = getattr(F, f"adaptive_avg_pool{r}d"), getattr(F, f"adaptive_max_pool{r}d")
    y_t = avg(xg, out)
    ym_t, ind_t = mx(xg, out, return_indices=True)
    go = torch.randn(y_t.shape, device="cuda", generator=g)
    ym, ind = getattr(ap, f"adaptive_max_pool{r}d")(x, out, index_dtype=np.int64)
    ours = {
        "avg": lambda: getattr(ap, f"adaptive_avg_pool{r}d")(x, out),
        "avg_backward": lambda: getattr(ap, f"adaptive_avg_pool{r}d_backward")(go, x),
        "max": lambda: getattr(ap, f"adaptive_max_pool{r}d")(x, out, index_dtype=np.int64),
        "max_backward": lambda: getattr(ap, f"adaptive_max_pool{r}d_backward")(go, x, ind),
    }
    theirs = {
        "avg": lambda: avg(x, out),
        "avg_backward": lambda: torch.autograd.grad(y_t, xg, go, retain_graph=True),
        "max": lambda: mx(x, out, return_indices=True),
        "max_backward": lambda: torch.autograd.grad(ym_t, xg, go, retain_graph=True),
    }
    return ours, theirs


def per_call(f, n=20):
    f()
    torch.cuda.synchronize()
    wall = []
    for _ in range(5):
        t = time.perf_counter()
        f()
        torch.cuda.synchronize()
        wall.append(time.perf_counter() - t)
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(n):
        f()
    b.record()
    torch.cuda.synchronize()
    return min(wall) * 1e6, a.elapsed_time(b) * 1e3 / n


def main() -> None:
    once = "--once" in sys.argv
    print(f"{'case':34s} {'op':13s} {'ours wall':>10s} {'ours burst':>10s} "
          f"{'torch wall':>10s} {'torch burst':>11s}  (us per call)")
    for shape, out in CASES:
        ours, theirs = calls(shape, out)
        for op in ours:
            if once:
                ours[op]()
                theirs[op]()
                torch.cuda.synchronize()
                continue
            ow, ob = per_call(ours[op])
            tw, tb = per_call(theirs[op])
            label = "x".join(map(str, shape)) + "->" + "x".join(map(str, out))
            print(f"{label:34s} {op:13s} {ow:10.1f} {ob:10.1f} {tw:10.1f} {tb:11.1f}")
    windows(once)


def windows(once: bool) -> None:
    """The forwards with a thread per window, then a warp per window."""
    from adaptive_pool.cuda import backend

    saved = backend.WARP_WINDOW
    print(f"\n{'case':34s} {'op':5s} {'volume':>7s} {'thread burst':>12s} {'warp burst':>10s} "
          f"{'torch burst':>11s}  (us per call)")
    for shape, out in WINDOW_CASES:
        ours, theirs = calls(shape, out)
        volume = np.prod(shape[2:]) / np.prod(out)
        label = "x".join(map(str, shape)) + "->" + "x".join(map(str, out))
        for op in ("avg", "max"):
            times = []
            for window in (10**18, 0):
                backend.WARP_WINDOW = window
                if once:
                    ours[op]()
                    torch.cuda.synchronize()
                else:
                    times.append(per_call(ours[op])[1])
            backend.WARP_WINDOW = saved
            if once:
                continue
            tb = per_call(theirs[op])[1]
            print(f"{label:34s} {op:5s} {volume:7.0f} {times[0]:12.1f} {times[1]:10.1f} "
                  f"{tb:11.1f}")


if __name__ == "__main__":
    main()
