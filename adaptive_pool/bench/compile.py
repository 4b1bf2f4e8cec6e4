"""Compile cost (``--compile``, ``--compile-only``): import time and first calls, fresh processes.

``import adaptive_pool`` is timed in fresh interpreters. Each operator's first call is timed in
a fresh process per dtype twice: with an empty Numba cache directory (cold: the baseline kernels
compile, and the tuned ones in the background, :mod:`adaptive_pool.cpu.tiers`) and again with
that directory filled (warm: the tuned kernels load from the cache).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from typing import Any, Callable

from .suite import OPS

__all__ = ["measure_compile", "render_compile"]

_FIRST_CALL = r"""
import json, sys, time
t = time.perf_counter()
import numpy as np
import adaptive_pool as ap
t_import = time.perf_counter() - t
from adaptive_pool.dtypes import bfloat16
dt = bfloat16 if sys.argv[1] == "bfloat16" else np.dtype(sys.argv[1])
res = {"import_s": t_import}
for spec in json.loads(sys.argv[2]):
    name, kind, rank, backward = spec
    x = np.ones((2, 3) + (5, 9, 10)[3 - rank:], dt)
    osz = (2, 4, 3)[3 - rank:]
    fwd = getattr(ap, f"adaptive_{kind}_pool{rank}d")
    if backward:
        # the max backward needs its forward's indices: not part of the backward's figure
        y = fwd(x, osz)
        args = (y[0], x, y[1]) if kind == "max" else (y, x)
        bwd = getattr(ap, f"adaptive_{kind}_pool{rank}d_backward")
        t = time.perf_counter()
        bwd(*args)
    else:
        t = time.perf_counter()
        fwd(x, osz)
    res[name] = time.perf_counter() - t
from adaptive_pool.cpu import tiers
tiers.wait()  # the tuned kernels the calls left compiling, for the warm run to load
print(json.dumps(res))
"""

_IMPORT = ("import time; t = time.perf_counter(); import adaptive_pool; "
           "print(time.perf_counter() - t)")


def measure_compile(ops: list[str], dtypes: list[str], repeat: int,
                    log: Callable[[str], None]) -> dict[str, Any]:
    """Import time and first-call times, cold (empty Numba cache) and warm (filled cache).

    Parameters
    ----------
    ops : list of str
        Operator short names (:data:`.suite.OPS`), timed in this order in one process: an
        operator sharing compiled kernels with an earlier one shows only what it adds.
    dtypes : list of str
        One process pair (cold, warm) per dtype.
    repeat : int
        Import-time runs (3 to 7 of them).
    log : callable
        Progress messages.
    """
    # the fresh interpreters import the adaptive_pool this module belongs to
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (root, os.environ.get("PYTHONPATH")) if p))
    out: dict[str, Any] = {"import_s": [], "first_call": {}, "ops": ops}
    for _ in range(max(3, min(repeat, 7))):
        r = subprocess.run([sys.executable, "-c", _IMPORT], capture_output=True, text=True,
                           env=env, check=True)
        out["import_s"].append(float(r.stdout.strip().splitlines()[-1]))
    specs = json.dumps([[n, OPS[n].kind, OPS[n].rank, OPS[n].backward] for n in ops])
    for dt in dtypes:
        with tempfile.TemporaryDirectory(prefix="ap-bench-cache-") as cache:
            env["NUMBA_CACHE_DIR"] = cache
            runs = {}
            for kind in ("cold", "warm"):
                log(f"compile: {dt} first calls, {kind} cache")
                r = subprocess.run([sys.executable, "-c", _FIRST_CALL, dt, specs],
                                   capture_output=True, text=True, env=env)
                if r.returncode != 0:
                    raise RuntimeError(f"first-call subprocess failed:\n{r.stderr[-2000:]}")
                runs[kind] = json.loads(r.stdout.strip().splitlines()[-1])
            out["first_call"][dt] = runs
    return out


def render_compile(res: dict[str, Any]) -> str:
    """The compile-cost measurement as text."""
    imp = res["import_s"]
    lines = [f"import adaptive_pool: median {statistics.median(imp):.3f} s "
             f"(min {min(imp):.3f}, {len(imp)} runs, in fresh interpreters)",
             "first call of each operator, in this order (one process per dtype and cache "
             "state; a max backward excludes its forward):",
             f"  {'operator':<15} " + " ".join(f"{dt + ' ' + k:>15}"
                                                for dt in res["first_call"]
                                                for k in ("cold", "warm"))]
    for op in res["ops"]:
        lines.append(f"  {op:<15} " + " ".join(f"{runs[k][op]:>13.3f} s"
                                               for runs in res["first_call"].values()
                                               for k in ("cold", "warm")))
    return "\n".join(lines)
