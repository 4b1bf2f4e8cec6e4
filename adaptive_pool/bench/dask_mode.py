"""The Dask benchmark: adaptive pooling on a local cluster of worker processes.

Usage::

    python -m adaptive_pool bench dask                 # throughput, 2 workers
    python -m adaptive_pool bench dask --big           # also the larger-than-memory scenario

Throughput is input gigabytes per second (best of ``--repeat``) of

* our average and max pooling of a dask array held in the workers' memory,
* the single-array call on the same data, as one NumPy array in this process,
* ``dask.array.coarsen`` (mean), the peer, on a divisible case (it only has integer factors);

with the peak resident memory of every process (this one and each worker), sampled with psutil.
``--big`` pools a lazily generated float32 array of ``--big-size`` squared elements (16 GiB by
default), larger than the workers' memory limit, to 1000 x 1000, and reports the time and every
process's peak memory.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import logging
import os
import platform
import threading
import time
from typing import Any, Callable

import numpy as np

__all__ = ["main", "MemorySampler"]


class MemorySampler:
    """The peak resident memory of a set of processes, sampled every ``interval`` seconds."""

    def __init__(self, pids: dict[str, int], interval: float = 0.05) -> None:
        import psutil  # noqa: PLC0415

        self._procs = {name: psutil.Process(pid) for name, pid in pids.items()}
        self.peak = {name: 0 for name in pids}
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            for name, p in self._procs.items():
                try:
                    self.peak[name] = max(self.peak[name], p.memory_info().rss)
                except Exception:  # noqa: BLE001 - a process that ended keeps its peak
                    pass
            self._stop.wait(self._interval)

    def __enter__(self) -> "MemorySampler":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()

    def report(self) -> str:
        return ", ".join(f"{n} {v / 2**30:.2f} GiB" for n, v in self.peak.items())


def _best(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def _pids(client: Any) -> dict[str, int]:
    """This process (client and scheduler), each worker, and every other process the cluster
    started (its nannies)."""
    import psutil  # noqa: PLC0415

    pids = {"client": os.getpid()}
    workers = sorted(client.run(os.getpid).values())
    for i, pid in enumerate(workers):
        pids[f"worker{i}"] = pid
    others = [p.pid for p in psutil.Process().children(recursive=True) if p.pid not in workers]
    for i, pid in enumerate(sorted(others)):
        pids[f"other{i}"] = pid
    return pids


def _throughput(client: Any, args: argparse.Namespace) -> list[str]:
    import dask  # noqa: PLC0415
    import dask.array as da  # noqa: PLC0415
    from dask.distributed import wait  # noqa: PLC0415

    import adaptive_pool as ap  # noqa: PLC0415

    lines = []
    s, o, c = args.size, args.out, args.chunk
    cases = [(s if s % o else s + 1, "non-divisible"), (o * (s // o), "divisible")]
    for seed, (size, label) in enumerate(cases):
        x = da.random.default_rng(seed).random(
            (1, size, size), dtype=np.float32, chunks=(1, c, c)
        )
        x = client.persist(x)
        wait(x)
        gb = x.nbytes / 1e9
        xn = x.compute()
        ap.adaptive_avg_pool2d(xn[:, :64, :64], 7)  # kernels loaded before timing
        with MemorySampler(_pids(client)) as mem:
            runs = {
                "dask avg (ours)": lambda: ap.adaptive_avg_pool2d(x, o).compute(),
                "dask max (ours)": lambda: dask.compute(*ap.adaptive_max_pool2d(x, o)),
                "single-array avg": lambda: ap.adaptive_avg_pool2d(xn, o),
                "single-array max": lambda: ap.adaptive_max_pool2d(xn, o),
            }
            if size % o == 0:
                f = size // o
                runs["dask.array.coarsen mean"] = lambda: da.coarsen(
                    np.mean, x, {1: f, 2: f}
                ).compute()
            for name, fn in runs.items():
                fn()  # first call: compiled or cached kernels loaded in every worker
                t = _best(fn, args.repeat)
                lines.append(
                    f"| {size}x{size} -> {o}x{o} ({label}) | {name} | {gb / t:.2f} | "
                    f"{t * 1e3:.0f} |"
                )
        if label == "divisible":
            want = ap.adaptive_avg_pool2d(xn, o)
            same = np.array_equal(ap.adaptive_avg_pool2d(x, o).compute().view(np.uint32),
                                  want.view(np.uint32))
            lines.append(f"|  | bitwise equal to the single-array call | {same} |  |")
        lines.append(f"|  | peak memory | {mem.report()} |  |")
        del x, xn
    return lines


def _big(client: Any, args: argparse.Namespace) -> list[str]:
    import dask  # noqa: PLC0415
    import dask.array as da  # noqa: PLC0415

    import adaptive_pool as ap  # noqa: PLC0415

    s, c = args.big_size, args.big_chunk
    x = da.random.default_rng(1).random((1, s, s), dtype=np.float32, chunks=(1, c, c))
    lines = []
    for kind in ("avg", "max"):
        with MemorySampler(_pids(client)) as mem:
            t = time.perf_counter()
            if kind == "avg":
                y = ap.adaptive_avg_pool2d(x, 1000).compute()
            else:
                y, i = dask.compute(*ap.adaptive_max_pool2d(x, 1000, index_dtype=np.int64))
            t = time.perf_counter() - t
        lines.append(
            f"| {s}x{s} float32 ({x.nbytes / 2**30:.0f} GiB, chunks {c}x{c}) -> 1000x1000 | "
            f"{kind} | {x.nbytes / 1e9 / t:.2f} | {t:.0f} s | {mem.report()} |"
        )
        assert y.shape == (1, 1000, 1000)
    return lines


def main(argv: list[str] | None = None) -> int:
    """Run the Dask benchmark and print a Markdown table; returns the exit status."""
    p = argparse.ArgumentParser(prog="python -m adaptive_pool bench dask", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--memory-limit", default="2GiB", help="per worker")
    p.add_argument("--size", type=int, default=8192, help="input side (throughput cases)")
    p.add_argument("--out", type=int, default=1000, help="output side")
    p.add_argument("--chunk", type=int, default=2048)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--big", action="store_true", help="run the larger-than-memory scenario")
    p.add_argument("--only-big", action="store_true", help="run only that scenario")
    p.add_argument("--big-size", type=int, default=65536, help="side of the big input")
    p.add_argument("--big-chunk", type=int, default=4096)
    args = p.parse_args(argv)

    from dask.distributed import Client, LocalCluster  # noqa: PLC0415

    from ..cpu import tiers  # noqa: PLC0415

    # this process and the workers compile cold kernels in the foreground (first calls are
    # not timed), so that no timed call runs a baseline kernel (adaptive_pool.cpu.tiers)
    os.environ["ADAPTIVE_POOL_KERNELS"] = tiers.MODE = "tuned"
    print(f"adaptive_pool Dask benchmark, {_dt.date.today()}, {platform.node()}: "
          f"{os.cpu_count()} cores, {args.workers} worker processes x 1 thread, memory limit "
          f"{args.memory_limit} each")
    with LocalCluster(
        n_workers=args.workers, threads_per_worker=1, processes=True,
        memory_limit=args.memory_limit, dashboard_address=":0", silence_logs=logging.ERROR,
    ) as cluster, Client(cluster) as client:
        if not args.only_big:
            print("\n| case | run | input GB/s | ms |\n|---|---|---|---|")
            for line in _throughput(client, args):
                print(line, flush=True)
        if args.big or args.only_big:
            print("\n| scenario | op | input GB/s | time | peak memory |\n|---|---|---|---|---|")
            for line in _big(client, args):
                print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
