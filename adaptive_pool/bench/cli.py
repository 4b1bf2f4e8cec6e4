"""``python -m adaptive_pool bench [options]``: the command line of the two-process benchmark."""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import secrets
import subprocess
import sys
import time
from typing import Any

from . import report
from .compile import measure_compile, render_compile
from .runner import Settings, WorkerError, Workers, run_cases
from .suite import (
    DEFAULT_DTYPES,
    DTYPES,
    cases_for,
    channels_last,
    parse_shape,
    random_cases,
    select_ops,
    suite,
)

__all__ = ["main", "parser"]

# environment variables that change how either library runs: recorded, never set
_ENV_PREFIXES = ("OMP_", "KMP_", "GOMP_", "MKL_", "OPENBLAS_", "NUMBA_", "PYTORCH_", "TORCH_",
                 "ADAPTIVE_POOL_", "MALLOC_",
                 "CUDA_VISIBLE_DEVICES", "LD_PRELOAD")


def _shape(text: str):
    try:
        return parse_shape(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def parser() -> argparse.ArgumentParser:
    """The ``bench`` options."""
    p = argparse.ArgumentParser(
        prog="python -m adaptive_pool bench",
        description="Time adaptive_pool's operators against PyTorch's, each library in its own "
                    "process with its default settings, alternating blocks of samples; report "
                    "the ratio of medians. Other modes: `bench torch ...`, `bench dask ...`.")
    p.add_argument("--ops", default="all",
                   help="comma-separated operators (avg1d ... max3d_backward), function names "
                        "or groups: all, avg, max, forward, backward, 1d, 2d, 3d, seed "
                        "(default all)")
    p.add_argument("--dtypes", default=",".join(DEFAULT_DTYPES),
                   help=f"comma-separated from {', '.join(DTYPES)} (default all)")
    p.add_argument("--backends", default=None,
                   help="comma-separated: cpu, cuda (default: cpu, plus cuda when a GPU is "
                        "present)")
    p.add_argument("--shapes", nargs="+", type=_shape, metavar="IN:OUT",
                   help="custom shapes instead of the fixed suite: 32x256x1024:64 (1-D), "
                        "32x256x56x56:7x7 (2-D), 4x64x16x56x56:4x7x7 (3-D); '_' keeps an axis "
                        "(64x512x14x14:_x1); no batch axis: 256x56x56:7x7")
    p.add_argument("--channels-last", action="store_true",
                   help="store the --shapes inputs (batched 2-D and 3-D) with the channels "
                        "innermost, as PyTorch's channels_last (the CPU backend)")
    p.add_argument("--random", type=int, default=None, metavar="N",
                   help="add N shapes drawn from a generator seeded with --seed (default 6, "
                        "--quick 2, with --shapes 0)")
    p.add_argument("--seed", type=int, default=None,
                   help="seed of the random shapes and of every case's data (default: a fresh "
                        "one, printed with the results)")
    p.add_argument("--quick", action="store_true",
                   help="a smoke run: small shapes, few and short samples")
    p.add_argument("--repeat", type=int, default=None,
                   help="timed samples per side and case (default 12, --quick 4)")
    p.add_argument("--block", type=int, default=None,
                   help="samples per block; the two processes' blocks alternate (default 3, "
                        "--quick 2)")
    p.add_argument("--warmup", type=int, default=2, help="untimed calls per side (default 2)")
    p.add_argument("--gap-ms", type=float, default=20.0,
                   help="idle time before each block against PyTorch, so that the other "
                        "process's OpenMP threads, which spin a few ms after their work, are "
                        "asleep (default 20)")
    p.add_argument("--min-sample-ms", type=float, default=None,
                   help="each sample times enough calls to last this long (default 10, "
                        "--quick 2)")
    p.add_argument("--index-dtype", default="int32", choices=["int32", "int64"],
                   help="our max forward's index dtype (default int32, the library's default; "
                        "PyTorch's is always int64)")
    p.add_argument("--no-torch", action="store_true", help="time adaptive_pool alone")
    p.add_argument("--json", metavar="PATH", help="write the figures and samples as JSON")
    p.add_argument("--plot", metavar="PATH", help="write a PNG chart (needs matplotlib)")
    p.add_argument("--compile", action="store_true",
                   help="also measure import time and first-call compile cost (subprocesses; "
                        "cold = empty NUMBA_CACHE_DIR, warm = cached)")
    p.add_argument("--compile-only", action="store_true", help="only measure compile cost")
    p.add_argument("--quiet", action="store_true", help="no progress display")
    return p


def _split(text: str, allowed: tuple[str, ...], what: str) -> list[str]:
    out = []
    for item in (t.strip() for t in text.split(",") if t.strip()):
        if item not in allowed:
            raise SystemExit(f"bench: unknown {what} {item!r}; choose from {', '.join(allowed)}")
        if item not in out:
            out.append(item)
    if not out:
        raise SystemExit(f"bench: no {what} given")
    return out


def _commit() -> str:
    """The git commit of the package being timed (``+dirty`` with local changes), if any."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    try:
        head = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""
    return head + ("+dirty" if head and dirty else "")


def _progress(total: int, quiet: bool):
    t0 = time.perf_counter()
    tty = sys.stderr.isatty()

    def show(k: int, case: Any) -> None:
        if quiet:
            return
        line = f"[{k + 1:>4}/{total}] {time.perf_counter() - t0:7.1f}s  {case.label}"
        sys.stderr.write(("\r\x1b[2K" + line[:150]) if tty else line + "\n")
        sys.stderr.flush()

    return show


def _header(meta: dict[str, Any]) -> list[str]:
    lines = [f"adaptive_pool bench, {meta['date']}, commit {meta['commit'] or 'unknown'}, "
             f"seed {meta['seed']} ({meta['random']} random shapes), {meta['cpu_count']} CPUs, "
             f"load average {meta['loadavg']}"]
    for be, sides in meta.get("workers", {}).items():
        for name, info in sides.items():
            if "error" in info:
                continue
            if name == "ours":
                lines.append(f"  {be} adaptive_pool {info['version']} (numba {info['numba']}, "
                             f"{info['threads']} threads, {info['threading_layer']} layer; "
                             f"process imported {', '.join(info['imported'])})")
            else:
                lines.append(f"  {be} torch {info['version']} ({info['threads']} threads, "
                             f"{info['parallel_backend']}; process imported "
                             f"{', '.join(info['imported'])})")
    env = meta["environment"]
    lines.append("  environment: " + (", ".join(f"{k}={v}" for k, v in env.items())
                                      if env else "no thread or allocator settings"))
    gap = (f", {meta['gap_ms']:g} ms idle before each block"
           if meta.get("gap_ms") and meta.get("with_torch") else "")
    lines.append(f"  {meta['repeat']} samples per side in blocks of {meta['block']}, each "
                 f"sample >= {meta['min_sample_ms']} ms{gap}; figures are medians")
    return lines + [""]


def main(argv: list[str]) -> int:
    """Run the benchmark; 0 on success, 1 if a case failed or the results disagree."""
    args = parser().parse_args(argv)
    try:
        ops = select_ops(args.ops)
    except ValueError as e:
        raise SystemExit(f"bench: {e}") from None
    dtypes = _split(args.dtypes, DTYPES, "dtype")
    q = args.quick
    repeat = args.repeat if args.repeat is not None else (4 if q else 12)
    block = args.block if args.block is not None else (2 if q else 3)
    if repeat < 1 or block < 1:
        raise SystemExit("bench: --repeat and --block must be at least 1")
    log = (lambda s: None) if args.quiet else (lambda s: print(s, file=sys.stderr, flush=True))
    meta: dict[str, Any] = {
        "argv": argv, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec="seconds"),
        "commit": _commit(), "python": platform.python_version(), "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "loadavg": " ".join(f"{v:.1f}" for v in os.getloadavg()) if hasattr(os, "getloadavg")
        else "?",
        "environment": {k: v for k, v in sorted(os.environ.items())
                        if k.startswith(_ENV_PREFIXES)},
    }
    out: dict[str, Any] = {"meta": meta}
    if args.compile or args.compile_only:
        cres = measure_compile(ops, dtypes[:1] if q else dtypes, repeat, log)
        out["compile"] = cres
        print(render_compile(cres) + "\n")
        if args.compile_only:
            if args.json:
                report.write_json(out, args.json)
                print(f"wrote {args.json}")
            return 0

    seed = args.seed if args.seed is not None else secrets.randbelow(2**31)
    n_random = args.random if args.random is not None else (0 if args.shapes else 2 if q else 6)
    shapes = list(args.shapes) if args.shapes else suite(quick=q)
    if args.channels_last:
        if not args.shapes or any(len(s.x) != s.rank + 2 or s.rank == 1 for s in shapes):
            raise SystemExit("bench: --channels-last takes --shapes of batched 2-D and 3-D "
                             "inputs (N, C, *S)")
        shapes = [channels_last(s) for s in shapes]
    shapes += random_cases(seed, n_random, max_elements=1 << 16 if q else 1 << 22)
    with_torch = not args.no_torch
    if with_torch:
        import importlib.util  # noqa: PLC0415

        if importlib.util.find_spec("torch") is None:
            log("bench: PyTorch is not installed; timing adaptive_pool alone")
            with_torch = False
    asked = _split(args.backends, ("cpu", "cuda"), "backend") if args.backends else None
    try:
        workers = Workers(with_torch)
    except WorkerError as e:
        print(f"bench: {e}", file=sys.stderr)
        return 2
    with workers:
        gpu = workers.cuda_available()
        if asked and "cuda" in asked and not gpu:
            print("bench: backend cuda unavailable: adaptive_pool sees no CUDA GPU",
                  file=sys.stderr)
            return 2
        backends = asked or (["cpu", "cuda"] if gpu else ["cpu"])
        cases = cases_for(ops, dtypes, backends, shapes, args.index_dtype)
        if not cases:
            print("bench: no case matches (an operator's rank must equal the number of output "
                  "sizes)", file=sys.stderr)
            return 2
        settings = Settings(repeat=repeat, block=block, warmup=args.warmup,
                            min_sample_s=(args.min_sample_ms if args.min_sample_ms is not None
                                          else 2 if q else 10) / 1e3, seed=seed,
                            gap_s=args.gap_ms / 1e3)
        meta.update(seed=seed, random=n_random, repeat=repeat, block=block, gap_ms=args.gap_ms,
                    min_sample_ms=settings.min_sample_s * 1e3, warmup=args.warmup,
                    index_dtype=args.index_dtype, with_torch=with_torch, backends=backends)
        res = run_cases(workers, cases, settings, _progress(len(cases), args.quiet),
                        copy_bytes=(64 << 20) if q else (512 << 20))
    if not args.quiet and sys.stderr.isatty():
        sys.stderr.write("\r\x1b[2K")
    meta["workers"] = res["workers"]
    results = res["results"]
    print(report.render(results, res["copy_bandwidth"], with_torch, _header(meta)))
    out.update(report.to_json(results, res["copy_bandwidth"], with_torch))
    status = 1 if any(r.error or r.check == "MISMATCH" for r in results) else 0
    if args.json:
        report.write_json(out, args.json)
        print(f"wrote {args.json}")
    if args.plot:
        msg = report.plot(results, args.plot, res["copy_bandwidth"])
        if msg:
            print(f"bench: {msg}", file=sys.stderr)
            status = 1
        else:
            print(f"wrote {args.plot}")
    return status
