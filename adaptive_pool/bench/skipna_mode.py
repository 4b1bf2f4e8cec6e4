"""``python -m adaptive_pool bench skipna``: what skipping NaN costs.

For each shape of the suite (or ``--shapes``), dtype and operator that takes ``skipna`` (the
average forward and backward, the max forward), the same call is timed with ``skipna=False``
and ``skipna=True`` on the same data, with a tenth of it NaN, in one process: one library, so no
second process is needed. Samples alternate between the two so that drift on a shared machine
hits both; the report gives the ratio of the medians (skipna / plain) and the geometric mean.
The contract's target: at most 1.5x.

The plain average backward only writes its result; the NaN-skipping one must also read ``x``.
So each backward case is also timed against a copy of ``x`` into an array of its size over the
same threads (read ``x``, write the result: the least that any NaN-skipping backward does), in
the same alternation: where that copy alone takes more than 1.5x the plain call, the memory
traffic, not the kernel, stands in the way of the target.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import statistics
import time
from typing import Any, Callable

import numpy as np

from .. import functional
from ..cpu import tiers
from ..dtypes import bfloat16
from .cli import _commit
from .side_ours import copy_kernel
from .suite import DTYPES, Shape, parse_shape, suite

__all__ = ["main"]

_DTYPES = {"float32": np.float32, "float64": np.float64, "float16": np.float16,
           "bfloat16": bfloat16}
_OPS = ("avg", "avg_backward", "max")
_TARGET = 1.5


def _calls(shape: Shape, dtype: str, kind: str) -> tuple[Callable[[], Any], ...]:
    """The plain and the NaN-skipping call of one case, on data a tenth of which is NaN; for a
    backward, also a copy of ``x``'s bytes into an array of its size (:func:`_copy`)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape.x, dtype=np.float32)
    x[rng.random(shape.x) < 0.1] = np.nan
    x = x.astype(_DTYPES[dtype])
    r = shape.rank
    if kind == "avg_backward":
        fn = getattr(functional, f"adaptive_avg_pool{r}d_backward")
        g = rng.standard_normal(shape.y, dtype=np.float32).astype(_DTYPES[dtype])
        return (lambda: fn(g, x)), (lambda: fn(g, x, skipna=True)), _copy(x)
    fn = getattr(functional, f"adaptive_{kind}_pool{r}d")
    return (lambda: fn(x, shape.out)), (lambda: fn(x, shape.out, skipna=True))


def _copy(x: np.ndarray) -> Callable[[], Any]:
    """A copy of ``x``'s bytes (as unsigned integers of its item size) into an array kept for
    it, over Numba's threads: the memory traffic of reading ``x`` and writing a result."""
    src = x.reshape(-1).view(f"u{x.dtype.itemsize}")
    dst = np.empty_like(src)
    kernel = copy_kernel()
    return lambda: kernel(src, dst)


def _time(call: Callable[[], Any], loops: int) -> float:
    t = time.perf_counter()
    for _ in range(loops):
        call()
    return (time.perf_counter() - t) / loops


def _alternate(calls: tuple[Callable[[], Any], ...], samples: int) -> list[float]:
    """The median time of each call, over ``samples`` alternated samples of about 20 ms each
    (the order of the calls rotating from one sample to the next)."""
    for call in calls:  # compile (or load from the cache) and plan
        call()
    if tiers.settle():  # tuned kernels were compiling in the background: time those
        for call in calls:
            call()
    loops = max(1, int(0.02 / max(_time(calls[0], 1), 1e-7)))
    times: list[list[float]] = [[] for _ in calls]
    for k in range(samples):
        for j in range(len(calls)):
            i = (j + k) % len(calls)
            times[i].append(_time(calls[i], loops))
    return [statistics.median(t) for t in times]


def main(argv: list[str] | None = None) -> int:
    """Run the skipna benchmark; returns 0, or 1 when a case fails to run."""
    p = argparse.ArgumentParser(prog="python -m adaptive_pool bench skipna", description=__doc__)
    p.add_argument("--shapes", nargs="*", help="INPUT:OUTPUT shapes (default: the suite's)")
    p.add_argument("--dtypes", default="float32,bfloat16", help="comma-separated dtypes")
    p.add_argument("--samples", type=int, default=7, help="alternated samples per side")
    p.add_argument("--quick", action="store_true", help="the small suite")
    p.add_argument("--json", help="write the results here")
    args = p.parse_args(argv)
    dtypes = [d for d in args.dtypes.split(",") if d]
    bad = [d for d in dtypes if d not in DTYPES]
    if bad:
        p.error(f"unknown dtypes {bad}; choose from {', '.join(DTYPES)}")
    shapes = (
        [parse_shape(s) for s in args.shapes]
        if args.shapes
        else [s for s in suite(args.quick) if s.source != "tiny"]
    )
    rows, ratios, failures = [], [], 0
    above, bound = 0, 0  # cases above the target; those whose copy of x alone is above it
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(f"adaptive_pool bench skipna, {now}, commit {_commit() or 'unknown'}, "
          f"{os.cpu_count()} CPUs (copy x: a copy of x into an array of its size, same threads)")
    print(f"{'case':<42} {'plain':>10} {'skipna':>10} {'ratio':>7} {'copy x':>10} {'skip/copy':>9}")
    for shape in shapes:
        for dtype in dtypes:
            for kind in _OPS:
                op = kind.replace("_backward", f"{shape.rank}d_backward") if "_" in kind else (
                    f"{kind}{shape.rank}d"
                )
                label = f"{op} {dtype} {shape.text}"
                try:
                    plain, skip, *copy = _alternate(_calls(shape, dtype, kind), args.samples)
                except Exception as e:  # noqa: BLE001 - report the case and go on
                    failures += 1
                    print(f"{label:<42} error: {e}")
                    continue
                ratios.append(skip / plain)
                row = {"case": label, "plain_s": plain, "skipna_s": skip}
                line = f"{label:<42} {plain * 1e3:>8.3f}ms {skip * 1e3:>8.3f}ms {skip / plain:>6.2f}x"
                if copy:
                    row["copy_s"] = copy[0]
                    line += f" {copy[0] * 1e3:>8.3f}ms {skip / copy[0]:>8.2f}x"
                    if skip > _TARGET * plain:
                        above += 1
                        bound += copy[0] > _TARGET * plain
                rows.append(row)
                print(line)
    if ratios:
        geo = math.exp(sum(map(math.log, ratios)) / len(ratios))
        print(f"\nskipna / plain: geometric mean {geo:.2f}x, worst {max(ratios):.2f}x over "
              f"{len(ratios)} cases (target: at most {_TARGET}x)")
        print(f"backwards above the target: {above}, {bound} of them where a copy of x alone "
              f"takes more than {_TARGET}x the plain call")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cases": rows}, f, indent=1)
    return 1 if failures else 0
