"""A timing worker: one process that serves one library's side of the benchmark.

The runner starts ``python worker.py {ours,torch} --root DIR`` as a script, not as a module of
the package: importing ``adaptive_pool.bench.worker`` would first import ``adaptive_pool`` and
Numba into PyTorch's worker. So this file imports only the standard library and NumPy, and loads
its siblings (:mod:`.suite`, :mod:`.data` and the one side module it serves) by path. The
``ours`` worker never imports PyTorch; the ``torch`` worker imports only PyTorch and NumPy. Each
keeps its library's defaults: nothing here sets threads, wait policies or allocators.

Protocol: one JSON object per line on stdin, one answer per line on the worker's original
stdout (the process's own fd 1 is pointed at stderr, so a library's prints cannot corrupt it).
The first line the worker writes is ``{"ready": ...}``. Requests, by ``"cmd"``:

* ``info``: the library, its version, threads, ... and which of torch, numba, adaptive_pool
  this process has imported.
* ``cuda_available``; ``copy_bandwidth`` (``nbytes``, ``repeat``; ``ours`` only).
* ``prepare`` (``case``, ``seed``, ``warmup``, ``min_sample_s``): build the case's data from
  the seed, call once (the answer's ``first_call_s`` and result ``summary``), warm up, wait
  for kernels the side still compiles in the background (its ``settle``, if it has one) and
  calibrate the calls per sample (``loops``) so that a sample lasts ``min_sample_s``.
* ``time`` (``samples``): one untimed call, then that many samples of the prepared case, each
  the mean time of ``loops`` calls (seconds); the garbage collector is off meanwhile.
* ``reference`` (``case``, ``seed``): the case's ``summary`` computed in float64 from the same
  inputs, widened exactly: the referee where the two results differ beyond the tolerance.
* ``release``; ``exit``.

Any failure answers ``{"error": "..."}`` and the worker goes on.
"""

from __future__ import annotations

import gc
import importlib.util
import json
import math
import os
import sys
import time
import traceback
from typing import Any, Callable

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))


def _sibling(name: str) -> Any:
    """Load a module of this folder by path, without importing the package around it."""
    spec = importlib.util.spec_from_file_location(f"_adaptive_pool_bench_{name}",
                                                  os.path.join(_HERE, f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up while being defined
    spec.loader.exec_module(mod)
    return mod


def calibrate(fn: Callable[[], Any], sync: Callable[[], None], min_sample_s: float) -> int:
    """Calls per sample so that one sample lasts at least ``min_sample_s``.

    The fastest of three single calls sets it, so one preempted call does not shrink it.
    """
    one = math.inf
    for _ in range(3):
        sync()
        t = time.perf_counter()
        fn()
        sync()
        one = min(one, time.perf_counter() - t)
    return max(1, min(100_000, math.ceil(min_sample_s / max(one, 1e-7))))


def sample(fn: Callable[[], Any], sync: Callable[[], None], loops: int) -> float:
    """Mean seconds per call over ``loops`` back-to-back calls."""
    sync()
    t = time.perf_counter()
    for _ in range(loops):
        fn()
    sync()
    return (time.perf_counter() - t) / loops


class Server:
    """The state of one worker: its side per backend and the prepared case."""

    def __init__(self, side_module: Any, suite: Any, data: Any) -> None:
        self.mod = side_module
        self.suite = suite
        self.data = data
        self.sides: dict[str, Any] = {}
        self.fn: Callable[[], Any] | None = None
        self.side: Any = None
        self.loops = 1

    def _side(self, backend: str) -> Any:
        if backend not in self.sides:
            self.sides[backend] = self.mod.Side(backend)
        return self.sides[backend]

    def info(self, req: dict) -> dict:
        d = self._side(req.get("backend", "cpu")).info()
        d["imported"] = sorted({m.split(".")[0] for m in sys.modules}
                               & {"torch", "numba", "adaptive_pool"})
        d["pid"] = os.getpid()
        return d

    def cuda_available(self, req: dict) -> dict:
        return {"cuda_available": self.mod.cuda_available()}

    def copy_bandwidth(self, req: dict) -> dict:
        return self._side(req["backend"]).copy_bandwidth(req["nbytes"], req["repeat"])

    def _build(self, req: dict, dtype: str | None = None) -> tuple[Any, Any, Callable, Callable]:
        """``(case, side, fn, arrays)`` of a request's case, its inputs drawn from the seed in
        the case's dtype and handed to the library in ``dtype`` (the case's by default; float64
        widens them exactly)."""
        case = self.suite.Case.from_json(req["case"])
        spec = case.spec
        side = self._side(case.backend)
        rng = np.random.default_rng(req["seed"])

        def make(shape: tuple[int, ...]) -> Any:
            a = self.data.make_array(rng, shape, case.dtype)
            a = side.put(a, case.dtype) if dtype is None else side.put(
                self.data.values(a, case.dtype), dtype)
            return side.channels_last(a) if case.shape.channels_last else a

        x = make(case.shape.x)
        go = make(case.shape.y) if spec.backward else None
        fn, arrays = side.build(spec.kind, spec.rank, spec.backward, x, go, case.shape.out,
                                case.index_dtype)
        return case, side, fn, arrays

    def prepare(self, req: dict) -> dict:
        self.release({})
        case, side, fn, arrays = self._build(req)
        side.sync()
        t = time.perf_counter()
        result = fn()
        side.sync()
        first = time.perf_counter() - t
        out = [side.host(a) for a in arrays(result)]
        summary = self.data.summarize(out, case.dtype, int(case.spec.indices))
        del result, out
        for _ in range(req.get("warmup", 2)):
            fn()
        settle = getattr(side, "settle", None)
        if settle is not None and settle():
            fn()  # (now on the kernels that settled)
        self.fn, self.side = fn, side
        self.loops = calibrate(fn, side.sync, req["min_sample_s"])
        return {"loops": self.loops, "first_call_s": first, "summary": summary}

    def reference(self, req: dict) -> dict:
        case, side, fn, arrays = self._build(req, "float64")
        out = [side.host(a) for a in arrays(fn())]
        return {"summary": self.data.summarize(out, "float64", int(case.spec.indices))}

    def time(self, req: dict) -> dict:
        if self.fn is None:
            raise RuntimeError("no prepared case")
        fn, sync = self.fn, self.side.sync
        # one untimed call: the first call after the other worker's block pays for waking
        # this library's threads and refilling caches; the samples measure the steady state
        fn()
        enabled = gc.isenabled()
        gc.disable()  # as timeit does: a collection lands in whichever sample triggers it
        try:
            samples = [sample(fn, sync, self.loops) for _ in range(req["samples"])]
        finally:
            if enabled:
                gc.enable()
        return {"samples": samples}

    def release(self, req: dict) -> dict:
        # dropping the references frees the case's arrays (no cycles hold them): a full
        # collection here would cost more than many small cases
        self.fn = self.side = None
        return {}


def main(argv: list[str]) -> int:
    """Serve requests until ``exit`` or the end of stdin."""
    which = argv[0]
    root = argv[argv.index("--root") + 1] if "--root" in argv else None
    # The script's folder must not shadow top-level modules (suite, data, ...) of the libraries.
    if sys.path and os.path.abspath(sys.path[0] or ".") == _HERE:
        sys.path.pop(0)
    if which == "ours" and root:
        sys.path.insert(0, root)  # the same adaptive_pool as the runner's
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)

    def send(obj: dict) -> None:
        proto.write(json.dumps(obj) + "\n")
        proto.flush()

    try:
        suite, data = _sibling("suite"), _sibling("data")
        server = Server(_sibling({"ours": "side_ours", "torch": "side_torch"}[which]), suite,
                        data)
    except Exception as e:  # noqa: BLE001 - e.g. the library is not installed: say so and stop
        send({"ready": False, "error": f"{type(e).__name__}: {e}"})
        return 1
    send({"ready": True, "side": which, "pid": os.getpid()})
    handlers = {"info": server.info, "cuda_available": server.cuda_available,
                "copy_bandwidth": server.copy_bandwidth, "prepare": server.prepare,
                "time": server.time, "release": server.release,
                "reference": server.reference}
    for line in sys.stdin:
        req = json.loads(line)
        if req["cmd"] == "exit":
            break
        try:
            send(handlers[req["cmd"]](req))
        except Exception as e:  # noqa: BLE001 - one case failing must not end the run
            traceback.print_exc(file=sys.stderr)
            server.release({})
            send({"error": f"{type(e).__name__}: {e}"})
    send({"bye": True})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
