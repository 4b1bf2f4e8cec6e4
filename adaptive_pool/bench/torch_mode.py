"""Benchmark of the PyTorch layer: adaptive_pool's registered operators against
``torch.nn.functional`` on the benchmark suite's shapes, and the per-call overhead.

Run as ``python -m adaptive_pool bench torch`` (``--help`` for the options). For each shape both
sides run the same forward (and forward plus backward) on the same tensors; their samples
alternate (ours, theirs, ours, ...) so that load on a shared machine hits both alike, and the
report gives each side's median and the ratio of the medians. The overhead table times a tiny
tensor, where the kernels cost nothing, through each layer: PyTorch's own function, our
``torch.nn.functional`` mirror, the bare registered operator, and the library's NumPy call
(no custom-op dispatch at all).
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Callable, Sequence

from ..cpu import tiers


__all__ = ["main", "SUITE", "QUICK_SUITE"]

# (input shape, output size): 2 output entries -> the 2-D average operators, 3 -> the 3-D max
# ones (the suite of adaptive_pool's benchmark, repeated here to keep this module standalone)
SUITE: list[tuple[tuple[int, ...], tuple[int, ...]]] = [
    ((32, 256, 56, 56), (7, 7)),
    ((64, 512, 14, 14), (5, 5)),
    ((128, 2048, 7, 7), (1, 1)),
    ((8, 64, 224, 224), (6, 6)),
    ((16, 64, 64, 64), (9, 11)),
    ((4, 64, 16, 56, 56), (4, 7, 7)),
    ((2, 32, 32, 32, 32), (5, 5, 5)),
    ((8, 128, 8, 14, 14), (3, 5, 5)),
    ((1, 16, 64, 64, 64), (7, 9, 11)),
]
QUICK_SUITE = [
    ((4, 16, 28, 28), (7, 7)),
    ((2, 8, 15, 17), (4, 6)),
    ((2, 8, 8, 14, 14), (3, 5, 5)),
    ((1, 4, 5, 9, 11), (3, 4, 7)),
]


def parse_shape(text: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``"32x256x56x56:7x7"`` -> ``((32, 256, 56, 56), (7, 7))``."""
    x, _, o = text.partition(":")
    try:
        shape = tuple(int(v) for v in x.split("x"))
        out = tuple(int(v) for v in o.split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected IN:OUT such as 8x64x56x56:7x7, got {text!r}")
    if len(out) not in (2, 3) or len(shape) != len(out) + 2:
        raise argparse.ArgumentTypeError(f"{text!r}: N, C and 2 or 3 spatial axes, and as many "
                                         f"output sizes")
    return shape, out


def _sync(device: str) -> Callable[[], None]:
    import torch  # noqa: PLC0415

    return torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)


def alternate(fns: Sequence[Callable[[], object]], repeats: int, sync: Callable[[], None],
              number: int = 1) -> list[float]:
    """Median seconds per call of each function, their samples interleaved."""
    for f in fns:  # warm-up: plans, compiles and allocator caches
        f()
    if tiers.settle():  # tuned kernels were compiling in the background: time those
        for f in fns:
            f()
    sync()
    samples: list[list[float]] = [[] for _ in fns]
    for _ in range(repeats):
        for k, f in enumerate(fns):
            t0 = time.perf_counter()
            for _ in range(number):
                f()
            sync()
            samples[k].append((time.perf_counter() - t0) / number)
    return [statistics.median(s) for s in samples]


def _cases(shape, out, dtype, device):
    """(name, ours forward, theirs forward) for one suite entry; max ones drop the indices."""
    import torch  # noqa: PLC0415

    import adaptive_pool.torch as apt  # noqa: PLC0415

    F = torch.nn.functional
    rank = len(out)
    kind = "avg" if rank == 2 else "max"
    name = f"adaptive_{kind}_pool{rank}d"
    ours, theirs = getattr(apt, name), getattr(F, name)
    x = torch.randn(shape, dtype=getattr(torch, dtype), device=device)
    return name, x, (lambda t: ours(t, out)), (lambda t: theirs(t, out))


def suite_rows(shapes, dtype: str, device: str, repeats: int) -> list[list[str]]:
    import torch  # noqa: PLC0415

    sync = _sync(device)
    rows = []
    for shape, out in shapes:
        name, x, ours, theirs = _cases(shape, out, dtype, device)
        xg = x.detach().clone().requires_grad_(True)
        g = torch.randn_like(ours(x))

        def fwd(f):
            return lambda: f(x)

        def fwd_bwd(f):
            def step():
                xg.grad = None
                f(xg).backward(g)
            return step

        f_ours, f_theirs = alternate([fwd(ours), fwd(theirs)], repeats, sync)
        b_ours, b_theirs = alternate([fwd_bwd(ours), fwd_bwd(theirs)], repeats, sync)
        rows.append([
            name, "x".join(map(str, shape)) + " -> " + "x".join(map(str, out)),
            f"{f_ours * 1e3:.3f}", f"{f_theirs * 1e3:.3f}", f"{f_ours / f_theirs:.2f}",
            f"{b_ours * 1e3:.3f}", f"{b_theirs * 1e3:.3f}", f"{b_ours / b_theirs:.2f}",
        ])
    return rows


def overhead_rows(device: str, repeats: int, number: int) -> list[list[str]]:
    """Microseconds per call of a (1, 1, 2, 2) -> 1x1 average pool through each layer (and a
    training step's forward and backward through ours and PyTorch's)."""
    import torch  # noqa: PLC0415

    import adaptive_pool as ap  # noqa: PLC0415
    import adaptive_pool.torch as apt  # noqa: PLC0415

    F = torch.nn.functional
    x = torch.randn(1, 1, 2, 2, device=device)
    xg = x.clone().requires_grad_(True)
    op = torch.ops.adaptive_pool.avg_pool.default
    layers = [
        ("torch.nn.functional.adaptive_avg_pool2d", lambda: F.adaptive_avg_pool2d(x, 1)),
        ("adaptive_pool.torch.adaptive_avg_pool2d", lambda: apt.adaptive_avg_pool2d(x, 1)),
        ("torch.ops.adaptive_pool.avg_pool (bare op)", lambda: op(x, [1, 1])),
        ("  the same, input requires grad (autograd node)", lambda: op(xg, [1, 1])),
        ("adaptive_pool.adaptive_avg_pool2d (tensor in)", lambda: ap.adaptive_avg_pool2d(x, 1)),
        ("torch.nn.functional.adaptive_avg_pool2d, forward and backward",
         lambda: F.adaptive_avg_pool2d(xg, 1).sum().backward()),
        ("adaptive_pool.torch.adaptive_avg_pool2d, forward and backward",
         lambda: apt.adaptive_avg_pool2d(xg, 1).sum().backward()),
    ]
    if device == "cpu":
        a = x.numpy()
        layers.append(("adaptive_pool.adaptive_avg_pool2d (NumPy, no custom op)",
                       lambda: ap.adaptive_avg_pool2d(a, 1)))
    times = alternate([f for _, f in layers], repeats, _sync(device), number)
    return [[name, f"{t * 1e6:.1f}"] for (name, _), t in zip(layers, times)]


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print Markdown tables; returns the exit status."""
    p = argparse.ArgumentParser(prog="python -m adaptive_pool bench torch", description=__doc__
                                .split("\n\n")[0])
    p.add_argument("--device", default="cpu", help="cpu (default) or cuda[:N]")
    p.add_argument("--dtype", default="float32",
                   choices=("float32", "float64", "float16", "bfloat16"))
    p.add_argument("--shapes", nargs="+", type=parse_shape, metavar="IN:OUT",
                   help="shapes to run instead of the suite, e.g. 8x64x56x56:7x7")
    p.add_argument("--quick", action="store_true", help="small shapes, few repeats")
    p.add_argument("--repeats", type=int, default=None, help="samples per side (default 7)")
    p.add_argument("--calls", type=int, default=None,
                   help="calls per overhead sample (default 1000)")
    p.add_argument("--no-suite", action="store_true", help="only the per-call overhead")
    args = p.parse_args(argv)

    import numba  # noqa: PLC0415
    import torch  # noqa: PLC0415

    repeats = args.repeats or (3 if args.quick else 7)
    shapes = args.shapes or (QUICK_SUITE if args.quick else SUITE)
    print(f"torch {torch.__version__}, numba {numba.__version__}, device {args.device}, "
          f"dtype {args.dtype}, torch threads {torch.get_num_threads()}, numba threads "
          f"{numba.get_num_threads()}, {repeats} alternating samples per side (medians)\n")
    if not args.no_suite:
        header = ["operator", "shape", "ours fwd ms", "torch fwd ms", "ours/torch",
                  "ours fwd+bwd ms", "torch fwd+bwd ms", "ours/torch"]
        print(_table(header, suite_rows(shapes, args.dtype, args.device, repeats)))
        print()
    calls = args.calls or (200 if args.quick else 1000)
    rows = overhead_rows(args.device, max(repeats, 15), calls)
    print(_table(["tiny call (1x1x2x2 -> 1x1)", "us per call"], rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
