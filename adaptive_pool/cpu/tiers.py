"""Tiered compilation: a cold kernel's first calls run a baseline kernel while the tuned one
compiles in the background.

A tuned kernel (:mod:`adaptive_pool.cpu.kernels`) takes 2-10 s to compile on a cold cache, a
baseline kernel (:mod:`adaptive_pool.cpu.baseline`) well under a second, and both give the
same bits. So where a launch needs a tuned kernel that is neither compiled in this process nor
in Numba's cache on disk, it runs the baseline kernel, and a background process compiles the
tuned kernel's warm-up group (:mod:`adaptive_pool.cpu.warm`) for that dtype into the cache. Once
that process is done, the next call loads the tuned kernel from the cache (milliseconds) and
runs it from then on. A compile that failed, or that left the kernel uncompiled for this call's
types, is done in the foreground on the next call: tiering can cost time, never results.

One background process at a time, in the order they were asked for: each compiles one group
(Numba's cache index is per kernel, so two processes must not compile one kernel at once) on
one core while the caller's own work goes on. :func:`wait` blocks until it is done.

``ADAPTIVE_POOL_KERNELS`` (read at import, or set :data:`MODE`) chooses: ``tiered`` (the
default), ``tuned`` (compile tuned kernels in the foreground, as a warm cache would have them:
the test suite does, to test them), or ``baseline`` (the baseline kernels only: a check of a
result that a tuned kernel is suspected of getting wrong).
"""

from __future__ import annotations

import os
import sys
import threading
import warnings
from collections import deque
from functools import partial
from typing import Callable

import numba
import numpy as np

__all__ = ["MODE", "MODES", "launch", "noted", "wait", "settle", "pending"]

MODES = ("tiered", "tuned", "baseline")

#: Which kernels launches run: one of :data:`MODES`.
MODE = os.environ.get("ADAPTIVE_POOL_KERNELS", "tiered").strip().lower() or "tiered"
if MODE not in MODES:
    warnings.warn(f"ADAPTIVE_POOL_KERNELS={MODE!r} is not one of {MODES}; using 'tiered'",
                  RuntimeWarning, stacklevel=1)
    MODE = "tiered"
if numba.config.DISABLE_JIT:
    MODE = "tuned"  # nothing compiles: nothing to wait for

#: Launches whose tuned kernels this process has found ready: (their runs, ``skipna``, the
#: dtypes of their arrays).
_READY: set = set()

_LOCK = threading.Lock()
_QUEUE: deque = deque()  # jobs not started
_PENDING: set = set()  # jobs queued or running
_FINISHED: set = set()  # jobs that ran (whether they compiled anything or not)
_IDLE = threading.Condition(_LOCK)
_WORKER: threading.Thread | None = None

#: What a background job runs: one warm-up group for one dtype, index dtype and skipna.
#: At a lower priority than the caller's work (POSIX ``nice``).
_JOB = ("import os, sys\n"
        "if hasattr(os, 'nice'): os.nice(10)\n"
        "from adaptive_pool.cpu.warm import warm\n"
        "warm(sys.argv[1], [sys.argv[2]], [sys.argv[3]], sys.argv[4] == '1')")

#: The package's parent folder: the background process imports this very package (Numba's
#: cache is keyed by the source files' paths).
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def launch(
    call: Callable, runs: tuple, like, baseline: Callable, skipna: bool,
    needs: Callable, bind: Callable,
) -> Callable:
    """``bind(call, runs, like)`` where its tuned kernels are ready, else a launch that runs
    ``baseline`` (a function of the same arrays) until they are.

    ``needs(run)`` are the dispatchers a run calls, each with the arguments the run receives
    plus a leading int64 (a chunk index or a chunk's address). Runs must be the same objects
    from one launch to the next (the backend keeps them): with the arrays' dtypes and
    ``skipna`` they say which kernels a launch needs, so a warm launch costs a set lookup.
    """
    if MODE == "baseline":
        return baseline if like is None else partial(_as_storage, baseline, like)
    if like is None:
        return partial(_plain, call, runs, baseline, skipna, needs, bind)
    tiered = _Tiered(call, runs, like, baseline, skipna, needs, bind)
    return bind(call, runs, like) if tiered.ready(like) else tiered


def _plain(call, runs, baseline, skipna, needs, bind, *arrays):
    """A launch of ``arrays`` that is not kept: tuned where this process found its kernels
    ready before."""
    if (runs, skipna, *map(_dtype, arrays)) in _READY:
        return call(*runs, *arrays)
    return _Tiered(call, runs, None, baseline, skipna, needs, bind)(*arrays)


class _Tiered:
    """A launch that runs its baseline kernel until its tuned kernels are compiled, then
    them."""

    __slots__ = ("call", "runs", "like", "baseline", "skipna", "needs", "bind", "tuned", "jobs")

    def __init__(self, call, runs, like, baseline, skipna, needs, bind) -> None:
        self.call, self.runs, self.like, self.baseline = call, runs, like, baseline
        self.skipna, self.needs, self.bind = skipna, needs, bind
        self.tuned = None
        self.jobs: tuple = ()

    def ready(self, arrays) -> bool:
        """Whether every tuned kernel is compiled for ``arrays``' types, loading those that
        are in the cache on disk. Where that cannot be told, True (compile as usual)."""
        key = (self.runs, self.skipna, *map(_dtype, arrays))
        if key in _READY:
            return True
        try:
            for run, args in zip(self.runs, noted(self.call, self.runs, arrays)):
                if args is None:
                    continue
                sig = (numba.types.int64, *map(numba.typeof, args))
                for d in self.needs(run):
                    if sig not in d.overloads and not _cached(d, sig):
                        return False
        except Exception:  # noqa: BLE001 - Numba internals changed: compile as usual
            return True
        _READY.add(key)
        return True

    def __call__(self, *arrays):
        tuned = self.tuned
        if tuned is None:
            # a prepared launch's arrays may be 16-bit dtypes Numba cannot type; its ``like``
            # holds their storage dtypes
            probe = arrays if self.like is None else self.like
            if not self.jobs and not self.ready(probe):
                self.jobs = _request(probe, [d for r in self.runs for d in self.needs(r)],
                                     self.skipna)
            if any(j in _PENDING for j in self.jobs):
                return self.baseline(*_storage(arrays, probe))
            # ready, or the background could not make it so: compile (or load) here
            tuned = self.tuned = self.bind(self.call, self.runs, self.like)
        return tuned(*arrays)


def _dtype(a):
    return None if a is None else a.dtype


def _as_storage(baseline, like, *arrays):
    return baseline(*_storage(arrays, like))


def _storage(arrays, like) -> list:
    """``arrays`` viewed as the dtypes of ``like``'s (their storage dtypes)."""
    return [a if a is None or a.dtype == b.dtype else a.view(b.dtype)
            for a, b in zip(arrays, like)]


def noted(call, runs, arrays) -> list:
    """The arguments each run receives when ``call`` launches ``arrays``: no kernel runs, each
    run only takes note and returns -1 ("no bad index", so a check goes on to its gather)."""
    seen: list = [None] * len(runs)

    def noting(k):
        def note(*args):
            seen[k] = args
            return -1

        return note

    call(*(noting(k) for k in range(len(runs))), *arrays)
    return seen


def _cached(dispatcher, sig) -> bool:
    """Whether Numba's cache holds ``sig`` for ``dispatcher``; loads it if so."""
    cache = dispatcher._cache
    if type(cache).__name__ == "NullCache":
        return True  # no cache: a background compile could not help
    index = cache._cache_file._load_index()
    if cache._index_key(sig, dispatcher.targetctx.codegen()) not in index:
        return False
    dispatcher.compile(sig)
    return True


def _request(arrays, dispatchers, skipna) -> tuple:
    """Queue the background compiles of the warm-up groups of ``dispatchers`` for the dtypes
    of ``arrays``; returns the jobs (empty if none could be made)."""
    from ..dtypes import SUPPORTED  # noqa: PLC0415
    from .warm import group_of  # noqa: PLC0415 - warm imports the backend

    data = arrays[0].dtype
    names = [s.name for s in SUPPORTED.values() if s.storage == data]
    index = next((a.dtype for a in arrays if a is not None and a.dtype.kind == "i"
                  and a.dtype.itemsize >= 4), np.dtype(np.int32))
    groups = {group_of(d) for d in dispatchers}
    if not names or None in groups:
        return ()
    jobs = tuple(job for job in ((g, names[0], index.name, bool(skipna)) for g in sorted(groups))
                 if job not in _FINISHED)  # (what one left cold is compiled in the foreground)
    if not jobs:
        return ()
    global _WORKER
    with _LOCK:
        for job in jobs:
            if job not in _PENDING:
                _PENDING.add(job)
                _QUEUE.append(job)
        if _WORKER is None or not _WORKER.is_alive():
            _WORKER = threading.Thread(target=_work, name="adaptive_pool-compile", daemon=True)
            _WORKER.start()
    return jobs


def _work() -> None:
    """The background thread: run the queued jobs one at a time, each a process."""
    import subprocess  # noqa: PLC0415 - only processes that compile in the background need it

    env = dict(os.environ)  # (warm compiles tuned kernels whatever the mode)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [_ROOT, env.get("PYTHONPATH")]))
    while True:
        with _LOCK:
            if not _QUEUE:
                return
            job = _QUEUE.popleft()
        group, dtype, index, skipna = job
        try:
            subprocess.run([sys.executable, "-c", _JOB, group, dtype, index, str(int(skipna))],
                           env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, check=False)
        except Exception:  # noqa: BLE001 - the next call compiles in the foreground
            pass
        finally:
            with _LOCK:
                _FINISHED.add(job)
                _PENDING.discard(job)
                _IDLE.notify_all()


def settle() -> bool:
    """:func:`wait`, and say whether anything was compiling: launches that ran baseline
    kernels meanwhile run tuned ones from their next call (a benchmark's warm-up redoes it)."""
    busy = bool(_PENDING)
    wait()
    return busy


def pending() -> int:
    """How many background compiles are queued or running.

    Returns
    -------
    int
        Warm-up groups (one kernel group, dtype, index dtype and ``skipna`` each) not done yet.
    """
    return len(_PENDING)


def wait(timeout: float | None = None) -> bool:
    """Block until the tuned kernels that first calls left compiling in the background are in
    the cache; the next call of each then runs its tuned kernel.

    Parameters
    ----------
    timeout : float, optional
        Seconds to wait at most; no limit by default.

    Returns
    -------
    bool
        True when nothing is left compiling, False if ``timeout`` passed first.
    """
    with _LOCK:
        return _IDLE.wait_for(lambda: not _PENDING, timeout)


def _forget() -> None:
    """In a forked child: the parent's background thread and its jobs are not ours."""
    global _WORKER, _LOCK, _IDLE
    _LOCK = threading.Lock()
    _IDLE = threading.Condition(_LOCK)
    _WORKER = None
    _QUEUE.clear()
    _PENDING.clear()
    _FINISHED.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget)
