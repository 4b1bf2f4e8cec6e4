"""The first minute on a real GPU: first-call (compile) and cached-call times of the four seed
operators, bitwise agreement with the CPU, and whether repeated backwards give the same bits,
ours against PyTorch's CUDA kernels (which scatter with atomics). Run by tools/gpu_check.sh."""

from __future__ import annotations

import hashlib
import time

import numpy as np
from numba import cuda

import adaptive_pool as ap
from adaptive_pool.cuda.backend import device_name


def digest(a) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()[:12]


def timed(f):
    t = time.perf_counter()
    r = f()
    cuda.synchronize()
    return r, time.perf_counter() - t


def first_calls() -> None:
    rng = np.random.default_rng(0)
    x2 = rng.standard_normal((8, 64, 57, 61)).astype(np.float32)
    x3 = rng.standard_normal((4, 16, 13, 17, 19)).astype(np.float32)
    d2, d3 = cuda.to_device(x2), cuda.to_device(x3)
    go2 = cuda.to_device(rng.standard_normal((8, 64, 7, 9)).astype(np.float32))
    go3 = cuda.to_device(rng.standard_normal((4, 16, 5, 6, 7)).astype(np.float32))
    ind = {}
    calls = {
        "avg2d": (lambda: ap.adaptive_avg_pool2d(d2, (7, 9)),
                  lambda: ap.adaptive_avg_pool2d(x2, (7, 9))),
        "avg2d_backward": (lambda: ap.adaptive_avg_pool2d_backward(go2, d2),
                           lambda: ap.adaptive_avg_pool2d_backward(go2.copy_to_host(), x2)),
        "max3d": (lambda: ind.setdefault("d", ap.adaptive_max_pool3d(d3, (5, 6, 7))),
                  lambda: ind.setdefault("h", ap.adaptive_max_pool3d(x3, (5, 6, 7)))),
        "max3d_backward": (lambda: ap.adaptive_max_pool3d_backward(go3, d3, ind["d"][1]),
                           lambda: ap.adaptive_max_pool3d_backward(go3.copy_to_host(), x3,
                                                                   ind["h"][1])),
    }
    for name, (gpu, cpu) in calls.items():
        r, first = timed(gpu)
        _, second = timed(gpu)
        best = min(timed(gpu)[1] for _ in range(20))
        got = [a.copy_to_host() for a in (r if isinstance(r, tuple) else (r,))]
        want = cpu()
        want = list(want) if isinstance(want, tuple) else [want]
        same = all(digest(g) == digest(w) for g, w in zip(got, want))
        print(f"{name:16s} float32 first call {first * 1e3:8.1f} ms, second "
              f"{second * 1e6:8.1f} us, best of 20 {best * 1e6:8.1f} us; "
              f"bitwise equal to the CPU: {same}")


def determinism(runs: int = 20) -> None:
    import torch  # noqa: PLC0415
    import torch.nn.functional as F  # noqa: PLC0415

    g = torch.Generator(device="cuda").manual_seed(1)
    cases = [("avg2d_backward", (16, 64, 57, 61), (40, 45)),
             ("max2d_backward", (16, 64, 57, 61), (40, 45)),
             ("max3d_backward", (4, 16, 10, 11, 12), (17, 19, 21))]
    for name, shape, out in cases:
        x = torch.randn(shape, device="cuda", generator=g, requires_grad=True)
        if name.startswith("avg"):
            y = F.adaptive_avg_pool2d(x, out)
            ours = lambda go: ap.adaptive_avg_pool2d_backward(go, x.detach())  # noqa: E731
        else:
            f = F.adaptive_max_pool2d if len(out) == 2 else F.adaptive_max_pool3d
            y, ind_t = f(x, out, return_indices=True)
            ours = lambda go: ap.adaptive_max_pool3d_backward(  # noqa: E731
                go, x.detach(), ind_t) if len(out) == 3 else ap.adaptive_max_pool2d_backward(
                go, x.detach(), ind_t)
        go = torch.randn(y.shape, device="cuda", generator=g)
        theirs, mine = set(), set()
        for _ in range(runs):
            (gx,) = torch.autograd.grad(y, x, go, retain_graph=True)
            theirs.add(digest(gx.cpu().numpy()))
            mine.add(digest(ours(go).cpu().numpy()))
        print(f"{name:16s} {shape}->{out}: {runs} runs give {len(theirs)} distinct results "
              f"with PyTorch CUDA, {len(mine)} with adaptive_pool")


if __name__ == "__main__":
    print("device:", device_name())
    first_calls()
    try:
        determinism()
    except Exception as e:  # noqa: BLE001 - a report, not a test
        print("determinism check failed:", type(e).__name__, e)
