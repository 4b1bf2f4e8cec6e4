"""``python -m adaptive_pool warmup``: compile every CPU kernel into Numba's cache, in parallel.

A cold first call compiles its kernel (seconds); a warm one loads it from the cache on disk
(a fraction of a second). This fills the cache ahead of time, one process per kernel (Numba
keeps one cache index per kernel, so two processes must never compile the same kernel at
once), each compiling its kernel for every requested dtype.

The cache lives next to the package's sources (``__pycache__``) or in ``NUMBA_CACHE_DIR``, and
is specific to this machine's CPU.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

__all__ = ["main", "warmup"]


def _warm_one(name: str, dtypes, index_dtypes, skipna) -> tuple[str, int, float]:
    """In a worker process: compile kernel group ``name``; ``(name, specialisations, seconds)``."""
    from .cpu.warm import warm  # noqa: PLC0415 - imported in the worker, not the parent

    t = time.perf_counter()
    n = warm(name, dtypes, index_dtypes, skipna)
    return name, n, time.perf_counter() - t


def warmup(
    dtypes: list[str] | None = None,
    kernels: list[str] | None = None,
    jobs: int | None = None,
    index_dtypes: list[str] | None = None,
    out=sys.stdout,
    skipna: bool = True,
) -> float:
    """Compile the CPU kernels into Numba's cache, one process per kernel.

    Parameters
    ----------
    dtypes : list of str, optional
        dtype names to compile for (``"float32"``, ``"float64"``, ``"float16"``,
        ``"bfloat16"``); all of them by default.
    kernels : list of str, optional
        Kernel names (see ``python -m adaptive_pool warmup --list``); all by default.
    jobs : int, optional
        Processes at a time; the number of CPUs by default.
    index_dtypes : list of str, optional
        Index dtypes of the max kernels (``"int32"``, ``"int64"``); both by default.
    out : file, optional
        Where progress goes, one line per kernel as it finishes.
    skipna : bool, default True
        Also the NaN-skipping specialisations.

    Returns
    -------
    float
        Seconds taken, start to end.
    """
    from .cpu.warm import kernel_names  # noqa: PLC0415

    names = kernels or kernel_names()
    unknown = sorted(set(names) - set(kernel_names()))
    if unknown:
        raise ValueError(f"unknown kernels {unknown}; expected some of {kernel_names()}")
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(names)))
    t0 = time.perf_counter()
    what = ", ".join(dtypes) if dtypes else "every dtype"
    print(f"warmup: {len(names)} kernels for {what}, {jobs} at a time", file=out, flush=True)
    # spawn, not fork: numba's thread pools do not survive a fork
    ctx = multiprocessing.get_context("spawn")
    done = 0
    with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
        pending = {pool.submit(_warm_one, name, dtypes, index_dtypes, skipna) for name in names}
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for f in finished:
                name, n, secs = f.result()
                done += 1
                print(f"  [{done}/{len(names)}] {name:<26} {n:>2} specialisations  "
                      f"{secs:6.1f} s", file=out, flush=True)
    total = time.perf_counter() - t0
    print(f"warmup: done in {total:.1f} s", file=out, flush=True)
    return total


def main(argv: list[str] | None = None) -> int:
    """Run the ``warmup`` subcommand; returns the exit status."""
    from .cpu.warm import kernel_names  # noqa: PLC0415

    p = argparse.ArgumentParser(prog="python -m adaptive_pool warmup",
                                description="Compile every CPU kernel into Numba's cache, "
                                            "one process per kernel, for the given dtypes.")
    p.add_argument("--dtypes", help="comma-separated dtypes (default: all four)")
    p.add_argument("--kernels", help="comma-separated kernel names (default: all)")
    p.add_argument("--index-dtypes", help="int32 and/or int64, for the max kernels (default: both)")
    p.add_argument("--jobs", "-j", type=int, help="processes at a time (default: CPUs)")
    p.add_argument("--list", action="store_true", help="list the kernel names and exit")
    p.add_argument("--no-skipna", action="store_true",
                   help="only the plain kernels, not the NaN-skipping ones")
    args = p.parse_args(argv)
    if args.list:
        print("\n".join(kernel_names()))
        return 0
    split = (lambda s: [v.strip() for v in s.split(",") if v.strip()] if s else None)
    try:
        warmup(split(args.dtypes), split(args.kernels), args.jobs, split(args.index_dtypes),
               skipna=not args.no_skipna)
    except (ValueError, TypeError) as e:
        print(f"warmup: {e}", file=sys.stderr)
        return 2
    return 0
