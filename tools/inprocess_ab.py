"""Compare versions of the package in one process, on the same arrays, kernels from the cache.

``tools/cached_ab.py`` times each version in processes of its own, which is how users run
them, but one process's arrays are not another's: NumPy asks for transparent huge pages on
large allocations, and whether one gets them changes from allocation to allocation (the same
NaN-skipping backward measured 0.85x in one pair of processes and 1.35x in the next). Here each
version's ``adaptive_pool`` is copied under a module name of its own (``ap_<NAME>``), and one
process runs them all on one set of inputs per case, backwards writing into one shared
``out=`` array, samples alternated between the versions. A first process compiles the cases'
kernels into a cache directory of this run, so that the timed process loads them from it
(docs/numba-cache.md: code compiled in the timing process can differ from the cached code
users run). The table gives each version's median and, against the first version, the ratio
of medians and the median of the ratios of the samples taken side by side.

    git worktree add /tmp/wt-base HEAD
    python tools/inprocess_ab.py base=/tmp/wt-base new=. \\
        64x512x14x14:5x5:avg_backward:float32:skipna 32x256x28x28:1x_:avg_backward

A case is ``IN:OUT:OP[:DTYPE][:skipna]``: sizes joined by ``x`` (``_`` in OUT keeps the axis),
OP one of avg, max, avg_backward, max_backward (the rank is OUT's), DTYPE float32 by default.
Inputs are standard normal with a tenth NaN (``--nan``), the kernels the tuned ones.
"""
import argparse
import importlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

OPS = ("avg", "max", "avg_backward", "max_backward")


def parse_case(text: str) -> tuple:
    """``(x_shape, output_size, op, dtype name, skipna)`` of a case's text."""
    parts = text.split(":")
    if len(parts) < 3 or parts[2] not in OPS:
        raise SystemExit(f"{text!r}: a case is IN:OUT:OP[:DTYPE][:skipna], OP one of {OPS}")
    skipna = parts[-1] == "skipna"
    rest = parts[3:-1] if skipna else parts[3:]
    x_shape = tuple(int(s) for s in parts[0].split("x"))
    out = tuple(None if s == "_" else int(s) for s in parts[1].split("x"))
    return x_shape, out, parts[2], rest[0] if rest else "float32", skipna


def make_calls(modules: list, case: str, nan: float) -> list:
    """One callable per module for ``case``, all on the same arrays."""
    import ml_dtypes
    import numpy as np

    x_shape, out, op, dtype, skipna = parse_case(case)
    rank = len(out)
    first = modules[0]
    rng = np.random.default_rng(0)
    x = rng.standard_normal(x_shape, dtype=np.float32)
    x[rng.random(x_shape) < nan] = np.nan
    x = x.astype(np.dtype(getattr(ml_dtypes, dtype, None) or dtype))
    y = getattr(first, f"adaptive_avg_pool{rank}d")(x, out)
    g = rng.standard_normal(y.shape, dtype=np.float32).astype(x.dtype)
    if op == "max_backward":
        indices = getattr(first, f"adaptive_max_pool{rank}d")(x, out)[1]
    shared = np.empty_like(x)
    calls = []
    for m in modules:
        f = getattr(m, f"adaptive_{op.split('_')[0]}_pool{rank}d" + (
            "_backward" if op.endswith("backward") else ""))
        if op == "avg_backward":
            calls.append(lambda f=f: f(g, x, skipna=skipna, out=shared))
        elif op == "max_backward":
            calls.append(lambda f=f: f(g, x, indices, out=shared))
        else:
            calls.append(lambda f=f: f(x, out, skipna=skipna))
    return calls


def child(names: list, cases: list, args: argparse.Namespace, timed: bool) -> None:
    """Warm every case (``timed`` False), or time them and print the table."""
    modules = [importlib.import_module(f"ap_{n}") for n in names]
    for case in cases:
        calls = make_calls(modules, case, args.nan)
        for call in calls:
            call()
            call()
        if not timed:
            continue
        t0 = time.perf_counter()
        calls[0]()
        n = max(1, int(args.sample_ms / 1e3 / max(time.perf_counter() - t0, 1e-7)))
        samples = [[] for _ in calls]
        for k in range(args.samples):
            for j in range(len(calls)):
                v = (j + k) % len(calls)  # each version first in turn
                t0 = time.perf_counter()
                for _ in range(n):
                    calls[v]()
                samples[v].append((time.perf_counter() - t0) / n)
        medians = [statistics.median(s) for s in samples]
        cells = [f"{n_}={m * 1e6:.1f}us" for n_, m in zip(names, medians)]
        for v in range(1, len(calls)):
            paired = statistics.median(a / b for a, b in zip(samples[0], samples[v]))
            cells.append(f"{names[0]}/{names[v]} {medians[0] / medians[v]:.3f}x "
                         f"(paired {paired:.3f}x)")
        print(f"{case:44s} " + "  ".join(cells), flush=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("versions", nargs="+", metavar="NAME=DIR or CASE")
    p.add_argument("--samples", type=int, default=31, help="samples per version and case")
    p.add_argument("--sample-ms", type=float, default=10.0)
    p.add_argument("--nan", type=float, default=0.1, help="fraction of NaN in x")
    p.add_argument("--threads", type=int, help="NUMBA_NUM_THREADS")
    p.add_argument("--child", choices=("warm", "time"), help=argparse.SUPPRESS)
    args = p.parse_args()
    versions = [v.split("=", 1) for v in args.versions if "=" in v]
    cases = [v for v in args.versions if "=" not in v]
    for case in cases:
        parse_case(case)
    if args.child:
        child([n for n, _ in versions], cases, args, args.child == "time")
        return 0
    if len(versions) < 2 or not cases:
        p.error("give two versions or more (NAME=DIR) and at least one case")
    with tempfile.TemporaryDirectory(prefix="inprocess_ab-") as tmp:
        for name, path in versions:
            shutil.copytree(os.path.join(path, "adaptive_pool"), os.path.join(tmp, f"ap_{name}"),
                            ignore=shutil.ignore_patterns("__pycache__"))
        env = dict(os.environ, PYTHONPATH=tmp, NUMBA_CACHE_DIR=os.path.join(tmp, "cache"),
                   ADAPTIVE_POOL_KERNELS="tuned")
        if args.threads:
            env["NUMBA_NUM_THREADS"] = str(args.threads)
        rest = [f"--samples={args.samples}", f"--sample-ms={args.sample_ms}",
                f"--nan={args.nan}", *args.versions]
        for stage in ("warm", "time"):
            cmd = [sys.executable, os.path.abspath(__file__), f"--child={stage}", *rest]
            if subprocess.run(cmd, env=env).returncode:
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
