"""Time the first call of each operator and dtype, cold (empty Numba cache) and warm.

Every measurement is a fresh process timing one operator in one dtype; a cold one gets a new,
empty ``NUMBA_CACHE_DIR``, and the warm one that follows reuses it. Versions are directories
holding an ``adaptive_pool`` package (a git worktree, say); they are alternated case by case, so
a drift of the machine's speed reaches all of them.

    git worktree add /tmp/wt-base HEAD
    python tools/first_call.py --rounds 2 base=/tmp/wt-base new=.

The max backward's time excludes its forward (which runs first, in the same process). Where
the first call ran baseline kernels (``adaptive_pool.cpu.tiers``), "tuned" is when the tuned
kernels its background compile made were ready, counted from the start of the call. Each
line also gives the first call's CPU time (threads included), steadier than the wall-clock time
on a machine that other work shares, and the load average when it ended.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

_SCRIPT = r"""
import json, sys, time
t = time.perf_counter()
import numpy as np
import adaptive_pool as ap
t_import = time.perf_counter() - t
from adaptive_pool.dtypes import bfloat16
dt = bfloat16 if sys.argv[1] == "bfloat16" else np.dtype(sys.argv[1])
op = sys.argv[2]
x2 = np.ones((2, 3, 9, 10), dt); x3 = np.ones((2, 3, 5, 9, 10), dt)
t, c = time.perf_counter(), time.process_time()
if op == "avg":
    ap.adaptive_avg_pool2d(x2, (4, 3))
elif op == "avg_backward":
    ap.adaptive_avg_pool2d_backward(np.ones((2, 3, 4, 3), dt), x2)
elif op == "max":
    ap.adaptive_max_pool3d(x3, (2, 4, 3))
elif op == "max_backward":
    y, i = ap.adaptive_max_pool3d(x3, (2, 4, 3))
    t, c = time.perf_counter(), time.process_time()
    ap.adaptive_max_pool3d_backward(y, x3, i)
call_s, cpu_s = time.perf_counter() - t, time.process_time() - c
try:  # tiered kernels: the first call ran baseline kernels; when were the tuned ones ready?
    from adaptive_pool.cpu import tiers
    tiers.wait()
except ImportError:
    pass
print(json.dumps({"import_s": t_import, "call_s": call_s, "cpu_s": cpu_s,
                  "tuned_s": time.perf_counter() - t}))
"""

OPS = ["avg", "avg_backward", "max", "max_backward"]
DTYPES = ["float32", "float64", "float16", "bfloat16"]


def first_call(path: str, cache: str, dtype: str, op: str) -> dict:
    """Import and first-call seconds of one fresh process running ``path``'s package."""
    env = dict(os.environ, PYTHONPATH=os.path.abspath(path), NUMBA_CACHE_DIR=cache)
    r = subprocess.run([sys.executable, "-c", _SCRIPT, dtype, op], env=env, cwd=path,
                       capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(f"{path} {op} {dtype} failed:\n{r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("versions", nargs="+", metavar="NAME=DIR")
    p.add_argument("--ops", default=",".join(OPS))
    p.add_argument("--dtypes", default=",".join(DTYPES))
    p.add_argument("--rounds", type=int, default=1, help="cold + warm pairs per case")
    p.add_argument("--json", help="write every sample here")
    args = p.parse_args()
    versions = dict(v.split("=", 1) for v in args.versions)
    samples = []
    for op in args.ops.split(","):
        for dtype in args.dtypes.split(","):
            for r in range(args.rounds):
                for name, path in versions.items():
                    with tempfile.TemporaryDirectory(prefix="first-call-") as cache:
                        cold = first_call(path, cache, dtype, op)
                        warm = first_call(path, cache, dtype, op)
                    samples.append(dict(version=name, op=op, dtype=dtype, round=r,
                                        cold_s=cold["call_s"], cold_cpu_s=cold["cpu_s"],
                                        warm_s=warm["call_s"], import_s=cold["import_s"],
                                        tuned_s=cold.get("tuned_s"),
                                        load=os.getloadavg()[0]))
                    print(f"{op:<13} {dtype:<9} {name:<8} cold {cold['call_s']:6.2f} s "
                          f"(cpu {cold['cpu_s']:5.2f} s)  tuned {cold['tuned_s']:5.1f} s  "
                          f"warm {warm['call_s']:6.3f} s  "
                          f"import {cold['import_s']:5.2f} s  load {os.getloadavg()[0]:4.1f}",
                          flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(samples, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
