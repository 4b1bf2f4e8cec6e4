"""The two-process runner: our worker and PyTorch's, alternating blocks of samples.

Each library runs in a process of its own, started with this process's environment unchanged
(no thread counts, no OpenMP wait policy, no allocator settings: each library's defaults, as its
users get them). For every case both workers build the same data from the case's seed, warm up
and calibrate; then the runner asks them in turn for blocks of samples, swapping who goes first
on every round, so that a drift of a shared machine's speed reaches both sides. A case's figure
per side is the median of its samples, the spread their interquartile range, and the ratio is
PyTorch's median over ours (above 1: adaptive_pool is faster).
"""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from .check import compare, referee
from .suite import Case, case_seed

__all__ = ["Worker", "Workers", "WorkerError", "Result", "Settings", "run_cases", "quartiles"]

_WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker.py")
# the folder holding the adaptive_pool package this runner belongs to
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class WorkerError(RuntimeError):
    """A worker died or answered nonsense (its stderr's tail is in the message)."""


class Worker:
    """A worker process (``ours`` or ``torch``) and its request/answer pipe."""

    def __init__(self, side: str) -> None:
        self.side = side
        self._start()

    def _start(self) -> None:
        self._err = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(
            [sys.executable, _WORKER, self.side, "--root", _ROOT],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._err, text=True,
            bufsize=1, env=dict(os.environ),
        )
        hello = self._read()
        if not hello.get("ready"):
            self.close()
            raise WorkerError(f"the {self.side} worker did not start: {hello.get('error')}")

    def _stderr_tail(self) -> str:
        try:
            self._err.seek(0)
            return self._err.read()[-2000:]
        except (OSError, ValueError):
            return ""

    def _read(self) -> dict:
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait()
            raise WorkerError(f"the {self.side} worker exited (status {self.proc.returncode}):"
                              f"\n{self._stderr_tail()}")
        return json.loads(line)

    def request(self, cmd: str, **kw: Any) -> dict:
        """Send one request; its answer, or :class:`WorkerError` if the worker failed."""
        try:
            self.proc.stdin.write(json.dumps({"cmd": cmd, **kw}) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as e:
            raise WorkerError(f"the {self.side} worker is gone: {e}\n{self._stderr_tail()}")
        return self._read()

    def restart(self) -> None:
        """A fresh process after a crash (a case that killed it is reported, the rest go on)."""
        self.close()
        self._start()

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write(json.dumps({"cmd": "exit"}) + "\n")
                self.proc.stdin.flush()
                self.proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        self._err.close()


@dataclass
class Settings:
    """How many samples, how long, which seed."""

    repeat: int = 12  # samples per side and case
    block: int = 3  # samples per block; the blocks of the two sides alternate
    warmup: int = 2  # untimed calls after the first, per side
    min_sample_s: float = 0.01  # calls per sample are calibrated to last this long
    seed: int = 0
    gap_s: float = 0.02  # idle time before each block


@dataclass
class Result:
    """One case's measurements."""

    case: Case
    ours_samples: list[float] = field(default_factory=list)
    torch_samples: list[float] = field(default_factory=list)
    ours_loops: int = 0
    torch_loops: int = 0
    ours_first_call_s: float = math.nan
    check: str = ""  # bitwise, close, MISMATCH, or "" (not compared)
    check_detail: str = ""
    error: str = ""  # our side failed: the case has no figures
    torch_error: str = ""  # PyTorch's side failed (e.g. a dtype it lacks): ours only

    @property
    def ours_s(self) -> float:
        return statistics.median(self.ours_samples) if self.ours_samples else math.nan

    @property
    def torch_s(self) -> float:
        return statistics.median(self.torch_samples) if self.torch_samples else math.nan

    @property
    def ratio(self) -> float:
        """PyTorch's median over ours: above 1, adaptive_pool is faster."""
        o, t = self.ours_s, self.torch_s
        return t / o if o > 0 and math.isfinite(t) else math.nan


def quartiles(samples: list[float]) -> tuple[float, float, float]:
    """(first quartile, median, third quartile) of the samples."""
    if not samples:
        return (math.nan,) * 3
    if len(samples) == 1:
        return (samples[0],) * 3
    q1, q2, q3 = statistics.quantiles(samples, n=4, method="inclusive")
    return q1, q2, q3


def _prepare(w: Worker, case: Case, s: Settings) -> dict:
    return w.request("prepare", case=case.to_json(), seed=case_seed(s.seed, case),
                     warmup=s.warmup, min_sample_s=s.min_sample_s)


def _guard(w: Worker, call: Callable[[], dict]) -> dict:
    """A request whose worker crash becomes an error answer (and a fresh worker)."""
    try:
        return call()
    except WorkerError as e:
        w.restart()
        return {"error": str(e)}


def run_case(ours: Worker, theirs: Optional[Worker], case: Case, s: Settings) -> Result:
    """Prepare one case in both workers, then time alternating blocks of samples."""
    r = Result(case)
    po = _guard(ours, lambda: _prepare(ours, case, s))
    if "error" in po:
        r.error = po["error"]
        _guard(ours, lambda: ours.request("release"))
        return r
    r.ours_loops, r.ours_first_call_s = po["loops"], po["first_call_s"]
    pt: dict = {}
    if theirs is not None:
        pt = _guard(theirs, lambda: _prepare(theirs, case, s))
        if "error" in pt:
            r.torch_error = pt["error"]
        else:
            r.torch_loops = pt["loops"]
            r.check, r.check_detail = compare(case, po["summary"], pt["summary"])
            if r.check == "MISMATCH" and not case.spec.indices:  # max forwards are exact
                ref = _guard(theirs, lambda: theirs.request(
                    "reference", case=case.to_json(), seed=case_seed(s.seed, case)))
                if "error" not in ref:
                    r.check, r.check_detail = referee(
                        case, po["summary"], pt["summary"], ref["summary"])
    active = [(ours, r.ours_samples)]
    if theirs is not None and not r.torch_error:
        active.append((theirs, r.torch_samples))
    done = rnd = 0
    while done < s.repeat and not r.error:
        m = min(s.block, s.repeat - done)
        for w, into in list(active if rnd % 2 == 0 else active[::-1]):
            # each library's OpenMP threads spin for a few ms after its work (libgomp's
            # default): idle first, so that they do not run beside the other's block (with
            # PyTorch's threads spinning, ours took 13.2 us a call on 1x256x559 -> 11, IQR 50%;
            # alone 10.0 us, IQR 2%); alone, there is no other process to wait for
            if len(active) > 1:
                time.sleep(s.gap_s)
            ans = _guard(w, lambda: w.request("time", samples=m))
            if "error" not in ans:
                into.extend(ans["samples"])
            elif w is ours:
                r.error = ans["error"]
                break
            else:  # PyTorch failed mid-way: ours goes on alone, the ratio is not reported
                r.torch_error = ans["error"]
                active = active[:1]
        done += m
        rnd += 1
    for w in (ours, theirs):
        if w is not None:
            _guard(w, lambda: w.request("release"))
    if r.torch_error:
        r.torch_samples.clear()
    return r


class Workers:
    """Our worker and, optionally, PyTorch's, for the length of a ``with`` block."""

    def __init__(self, with_torch: bool) -> None:
        self.ours = Worker("ours")
        self.theirs: Optional[Worker] = None
        try:
            self.theirs = Worker("torch") if with_torch else None
        except WorkerError:
            self.ours.close()
            raise

    def __enter__(self) -> "Workers":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for w in (self.ours, self.theirs):
            if w is not None:
                w.close()

    def cuda_available(self) -> bool:
        """Whether adaptive_pool can run CUDA arrays here (asked of our worker: the runner
        imports no GPU library)."""
        return bool(self.ours.request("cuda_available").get("cuda_available"))


def run_cases(workers: Workers, cases: list[Case], settings: Settings,
              progress: Callable[[int, Case], None] = lambda k, c: None,
              copy_bytes: int = 0) -> dict[str, Any]:
    """Time every case; the results and what the workers say about themselves.

    Parameters
    ----------
    workers : Workers
        Ours, and PyTorch's unless only ours is timed.
    cases : list of Case
        In report order.
    settings : Settings
        Samples, blocks, warm-up, sample length and the data seed.
    progress : callable
        Called with the index and case before each case.
    copy_bytes : int
        Array size of the copy-bandwidth measurement per backend (0: none).

    Returns
    -------
    dict
        ``results`` (list of :class:`Result`), ``workers`` (each worker's ``info`` per backend)
        and ``copy_bandwidth`` (per backend).
    """
    ours, theirs = workers.ours, workers.theirs
    backends = list(dict.fromkeys(c.backend for c in cases))
    out: dict[str, Any] = {"workers": {}, "copy_bandwidth": {}, "results": []}
    if copy_bytes:
        for be in backends:
            bw = ours.request("copy_bandwidth", backend=be, nbytes=copy_bytes, repeat=5)
            if "error" not in bw:
                out["copy_bandwidth"][be] = bw
    for k, c in enumerate(cases):
        progress(k, c)
        out["results"].append(run_case(ours, theirs, c, settings))
    for be in backends:
        for name, w in (("ours", ours), ("torch", theirs)):
            if w is not None:
                # asked last: Numba names its threading layer only after a parallel launch
                out["workers"].setdefault(be, {})[name] = w.request("info", backend=be)
    return out
