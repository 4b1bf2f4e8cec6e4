"""Compare versions of the package with their kernels loaded from Numba's cache.

A kernel compiled in the running process can run other machine code than the same kernel
loaded from the cache (docs/numba-cache.md): a version can look 1.3x
faster in an in-process A/B and run 2.5x slower for every user. So kernel changes are compared
here the way users run them. Each version is a directory holding an ``adaptive_pool`` package
(a git worktree, say); it first compiles into a cache directory of its own, then every round
times each version in a fresh process that loads its kernels from that cache, with
``python -m adaptive_pool bench --no-torch --seed 0`` (a fixed seed: the same data, and the same
random shapes, in every process). Rounds alternate the versions, so a drift of the machine's speed
reaches all of them; the table shows each case's best median over the rounds, for the cases that
every version ran (an older version may know fewer operators).

    git worktree add /tmp/wt-base HEAD
    python tools/cached_ab.py --shapes 16x64x64x64:9x11 --dtypes float32,bfloat16 \\
        --ops avg2d --threads 1 base=/tmp/wt-base new=.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

from adaptive_pool.bench.suite import shape_text


def bench(path: str, cache: str, args: argparse.Namespace, repeat: int) -> dict:
    """One process's medians (seconds) by case, for the package under ``path``."""
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        cmd = [sys.executable, "-m", "adaptive_pool", "bench", "--no-torch", "--quiet",
               "--ops", args.ops, "--dtypes", args.dtypes, "--repeat", str(repeat),
               "--seed", "0", "--json", f.name]
        if args.shapes:
            cmd += ["--shapes", *args.shapes]
        env = dict(os.environ, PYTHONPATH=os.path.abspath(path), NUMBA_CACHE_DIR=cache)
        if args.threads:
            env["NUMBA_NUM_THREADS"] = str(args.threads)
        run = subprocess.run(cmd, env=env, cwd=path, stdout=subprocess.DEVNULL)
        try:
            cases = json.load(f)["cases"]
        except ValueError:
            raise SystemExit(f"{path}: the benchmark failed (exit status {run.returncode})")
    errors = [f"{c['op']} {c['dtype']}: {c['error']}" for c in cases if c["error"]]
    if errors:
        raise SystemExit(f"{path}:\n" + "\n".join(errors))
    return {(c["op"], c["dtype"], shape_text(tuple(c["x_shape"]), tuple(c["out_size"]))):
            c["ours_s"] for c in cases}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("versions", nargs="+", metavar="NAME=DIR")
    p.add_argument("--ops", default="all")
    p.add_argument("--dtypes", default="float32,float16,bfloat16")
    p.add_argument("--shapes", nargs="+", metavar="IN:OUT")
    p.add_argument("--threads", type=int, help="NUMBA_NUM_THREADS for the timed processes")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--repeat", type=int, default=9, help="timed calls per case and round")
    args = p.parse_args()
    versions = dict(v.split("=", 1) for v in args.versions)
    with tempfile.TemporaryDirectory() as tmp:
        caches = {name: os.path.join(tmp, name) for name in versions}
        for name, path in versions.items():  # compile (and cache) each version once
            bench(path, caches[name], args, 1)
        best: dict = {}
        for r in range(args.rounds):
            for name, path in versions.items():
                for case, t in bench(path, caches[name], args, args.repeat).items():
                    best[case, name] = min(best.get((case, name), t), t)
            print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    names = list(versions)
    print("case".ljust(44) + "".join(f"{n:>12}" for n in names)
          + "".join(f"{n + '/' + names[0]:>16}" for n in names[1:]))
    for case in dict.fromkeys(c for c, _ in best):
        if any((case, n) not in best for n in names):
            continue  # a case that not every version knows
        row = [best[case, n] for n in names]
        print(" ".join(case).ljust(44) + "".join(f"{t * 1e3:10.3f}ms" for t in row)
              + "".join(f"{t / row[0]:16.3f}" for t in row[1:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
