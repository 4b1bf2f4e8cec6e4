"""``python -m adaptive_pool bench``: time the operators against PyTorch and the memory system.

For every operator, dtype and shape the benchmark times our public function and PyTorch's
operator in the same process, interleaved (ours, PyTorch, ours, ...), and reports the median of
``--repeat`` samples after warm-up. Both sides allocate their outputs as a user's call would.
The ratio is PyTorch's median time over ours (above 1: we are faster). Because both sides are
measured side by side, the ratio is meaningful on a busy machine where absolute times are not.

Achieved bandwidth counts the bytes an operator must move (inputs read once, outputs written
once) and is reported as a fraction of this machine's parallel copy bandwidth, measured in the
same run (a parallel Numba copy on the CPU, a device-to-device copy on a GPU).

``--compile`` measures compile cost instead, in subprocesses: ``import adaptive_pool`` time and
every operator's first call with an empty Numba cache (cold) and again with it filled (warm).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

import numpy as np

__all__ = ["main", "SUITE", "QUICK_SUITE"]

# --------------------------------------------------------------------------------------------
# What is measured

OPS = {
    # short name: (function name, spatial axes, backward, max)
    "avg2d": ("adaptive_avg_pool2d", 2, False, False),
    "avg2d_backward": ("adaptive_avg_pool2d_backward", 2, True, False),
    "max3d": ("adaptive_max_pool3d", 3, False, True),
    "max3d_backward": ("adaptive_max_pool3d_backward", 3, True, True),
}
OP_ALIASES = {
    "avg": ["avg2d", "avg2d_backward"],
    "max": ["max3d", "max3d_backward"],
    "all": list(OPS),
    "adaptive_avg_pool2d": ["avg2d"],
    "adaptive_avg_pool2d_backward": ["avg2d_backward"],
    "adaptive_max_pool3d": ["max3d"],
    "adaptive_max_pool3d_backward": ["max3d_backward"],
    "avg2d_bwd": ["avg2d_backward"],
    "max3d_bwd": ["max3d_backward"],
}
DTYPES = ("float32", "float64", "float16", "bfloat16")
DEFAULT_DTYPES = ("float32", "float16", "bfloat16")

# (input shape, output size): 2 output entries -> the avg2d operators, 3 -> the max3d ones.
SUITE: list[tuple[tuple[int, ...], tuple[int, ...]]] = [
    ((32, 256, 56, 56), (7, 7)),
    ((64, 512, 14, 14), (5, 5)),
    ((128, 2048, 7, 7), (1, 1)),
    ((8, 64, 224, 224), (6, 6)),
    ((16, 64, 64, 64), (9, 11)),
    ((4, 64, 16, 56, 56), (4, 7, 7)),
    ((2, 32, 32, 32, 32), (5, 5, 5)),
    ((8, 128, 8, 14, 14), (3, 5, 5)),
    ((1, 16, 64, 64, 64), (7, 9, 11)),
]
QUICK_SUITE = [
    ((4, 16, 28, 28), (7, 7)),
    ((2, 8, 15, 17), (4, 6)),
    ((2, 8, 8, 14, 14), (3, 5, 5)),
    ((1, 4, 5, 9, 11), (3, 4, 7)),
]


def parse_shape(text: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``"32x256x56x56:7x7"`` -> ``((32, 256, 56, 56), (7, 7))``."""
    try:
        a, b = text.split(":")
        x = tuple(int(v) for v in a.lower().split("x"))
        o = tuple(int(v) for v in b.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"bad shape {text!r}: expected INPUT:OUTPUT like 32x256x56x56:7x7 (avg2d) or "
            f"4x64x16x56x56:4x7x7 (max3d)"
        ) from None
    if len(o) not in (2, 3) or len(x) not in (len(o) + 1, len(o) + 2) or min(x + o) < 1:
        raise argparse.ArgumentTypeError(
            f"bad shape {text!r}: 2 output sizes need a (C,H,W) or (N,C,H,W) input, 3 need "
            f"(C,D,H,W) or (N,C,D,H,W); all sizes positive"
        )
    return x, o


def shape_text(x: tuple[int, ...], o: tuple[int, ...]) -> str:
    return "x".join(map(str, x)) + "->" + "x".join(map(str, o))


@dataclass
class Case:
    op: str
    dtype: str
    backend: str
    x_shape: tuple[int, ...]
    out_size: tuple[int, ...]
    ours_s: float = math.nan
    torch_s: float = math.nan
    ours_samples: list[float] = field(default_factory=list)
    torch_samples: list[float] = field(default_factory=list)
    bytes: int = 0
    elements: int = 0
    error: str = ""

    @property
    def ratio(self) -> float:
        return self.torch_s / self.ours_s if self.ours_s > 0 else math.nan

    @property
    def gbps(self) -> float:
        return self.bytes / self.ours_s / 1e9 if self.ours_s > 0 else math.nan

    @property
    def ns_per_element(self) -> float:
        return self.ours_s / self.elements * 1e9 if self.elements else math.nan


# --------------------------------------------------------------------------------------------
# Progress (stderr)


class Progress:
    def __init__(self, total: int, enabled: bool = True) -> None:
        self.total = total
        self.done = 0
        self.tty = sys.stderr.isatty()
        self.enabled = enabled
        self.t0 = time.perf_counter()

    def show(self, text: str) -> None:
        if not self.enabled:
            return
        el = time.perf_counter() - self.t0
        line = f"[{self.done + 1:>3}/{self.total}] {el:6.1f}s  {text}"
        if self.tty:
            sys.stderr.write("\r\x1b[2K" + line[:150])
        else:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()

    def step(self) -> None:
        self.done += 1

    def close(self) -> None:
        if self.enabled and self.tty:
            sys.stderr.write("\r\x1b[2K")
            sys.stderr.flush()


# --------------------------------------------------------------------------------------------
# Timing


def _calibrate(fn: Callable[[], Any], sync: Callable[[], None], min_sample_s: float) -> int:
    """Calls per sample so that one sample lasts at least ``min_sample_s``."""
    t = time.perf_counter()
    fn()
    sync()
    one = max(time.perf_counter() - t, 1e-7)
    return max(1, min(1000, int(math.ceil(min_sample_s / one))))


def _sample(fn: Callable[[], Any], sync: Callable[[], None], loops: int) -> float:
    sync()
    t = time.perf_counter()
    for _ in range(loops):
        fn()
    sync()
    return (time.perf_counter() - t) / loops


def time_pair(
    ours: Callable[[], Any],
    theirs: Callable[[], Any] | None,
    repeat: int,
    warmup: int,
    sync: Callable[[], None] = lambda: None,
    min_sample_s: float = 0.005,
) -> tuple[list[float], list[float]]:
    """Interleaved samples of two callables (seconds per call)."""
    for _ in range(warmup):
        ours()
        if theirs is not None:
            theirs()
    sync()
    lo = _calibrate(ours, sync, min_sample_s)
    lt = _calibrate(theirs, sync, min_sample_s) if theirs is not None else 0
    a: list[float] = []
    b: list[float] = []
    for r in range(repeat):
        # alternate who goes first, so neither side always follows the other's cache footprint
        if r % 2 == 0 or theirs is None:
            a.append(_sample(ours, sync, lo))
            if theirs is not None:
                b.append(_sample(theirs, sync, lt))
        else:
            b.append(_sample(theirs, sync, lt))
            a.append(_sample(ours, sync, lo))
    return a, b


# --------------------------------------------------------------------------------------------
# Copy bandwidth

_COPY_KERNEL = None


def _copy_kernel():
    global _COPY_KERNEL
    if _COPY_KERNEL is None:
        import numba  # noqa: PLC0415

        @numba.njit(parallel=True, nogil=True, cache=False)
        def copy(src, dst):  # pragma: no cover - compiled
            n = src.size
            chunk = 1 << 16
            for k in numba.prange((n + chunk - 1) // chunk):
                lo = k * chunk
                hi = min(n, lo + chunk)
                for i in range(lo, hi):
                    dst[i] = src[i]

        _COPY_KERNEL = copy
    return _COPY_KERNEL


def cpu_copy_bandwidth(nbytes: int, repeat: int) -> dict[str, float]:
    """Bytes/s (read + written) of a parallel copy between two fresh-paged large arrays."""
    n = nbytes // 8
    src = np.ones(n, np.float64)
    dst = np.zeros(n, np.float64)
    k = _copy_kernel()
    k(src, dst)
    samples = []
    for _ in range(max(3, repeat)):
        t = time.perf_counter()
        k(src, dst)
        samples.append(time.perf_counter() - t)
    best = 2 * n * 8 / min(samples)
    med = 2 * n * 8 / statistics.median(samples)
    return {"bytes_per_s": med, "best_bytes_per_s": best, "array_bytes": n * 8}


# --------------------------------------------------------------------------------------------
# Inputs and the two sides of each case


def _dtype(name: str) -> np.dtype:
    if name == "bfloat16":
        from .dtypes import bfloat16  # noqa: PLC0415

        return bfloat16
    return np.dtype(name)


def _torch_dtype(torch: Any, name: str) -> Any:
    return getattr(torch, name)


def _to_torch(torch: Any, a: np.ndarray, name: str, device: str) -> Any:
    if name == "bfloat16":
        t = torch.from_numpy(np.ascontiguousarray(a).view(np.int16)).view(torch.bfloat16)
    else:
        t = torch.from_numpy(np.ascontiguousarray(a))
    return t.to(device) if device != "cpu" else t


def _random(rng: np.random.Generator, shape: tuple[int, ...], dt: np.dtype) -> np.ndarray:
    return rng.standard_normal(shape, dtype=np.float32).astype(dt)


def nbytes_moved(op: str, x_shape, y_shape, itemsize: int, index_itemsize: int) -> int:
    nx = math.prod(x_shape)
    ny = math.prod(y_shape)
    if op == "avg2d":
        return (nx + ny) * itemsize
    if op == "avg2d_backward":
        return (ny + nx) * itemsize
    if op == "max3d":
        return (nx + ny) * itemsize + ny * index_itemsize
    return (ny + nx) * itemsize + ny * index_itemsize  # max3d_backward: go, indices -> gi


def build_case(
    case: Case, torch: Any, rng: np.random.Generator, index_dtype: np.dtype, device: Any
) -> tuple[Callable[[], Any], Callable[[], Any] | None]:
    """The two zero-argument callables (ours, PyTorch's) of one case."""
    import adaptive_pool as ap  # noqa: PLC0415

    fname, _, backward, is_max = OPS[case.op]
    dt = _dtype(case.dtype)
    x = _random(rng, case.x_shape, dt)
    lead = case.x_shape[: len(case.x_shape) - len(case.out_size)]
    y_shape = lead + case.out_size
    case.elements = math.prod(case.x_shape)
    case.bytes = nbytes_moved(case.op, case.x_shape, y_shape, dt.itemsize, index_dtype.itemsize)
    dev = case.backend
    tdev = "cuda" if dev == "cuda" else "cpu"
    tx = _to_torch(torch, x, case.dtype, tdev) if torch is not None else None
    ox = device.put(x, case.dtype) if dev == "cuda" else x
    F = torch.nn.functional if torch is not None else None
    osz = case.out_size

    if not backward:
        if is_max:
            ours = lambda: ap.adaptive_max_pool3d(ox, osz, index_dtype=index_dtype)  # noqa: E731
            theirs = (lambda: F.adaptive_max_pool3d(tx, osz, return_indices=True)) if F else None
        else:
            ours = lambda: ap.adaptive_avg_pool2d(ox, osz)  # noqa: E731
            theirs = (lambda: F.adaptive_avg_pool2d(tx, osz)) if F else None
        return ours, theirs

    go = _random(rng, y_shape, dt)
    ogo = device.put(go, case.dtype) if dev == "cuda" else go
    tgo = _to_torch(torch, go, case.dtype, tdev) if torch is not None else None
    if is_max:
        _, oind = ap.adaptive_max_pool3d(ox, osz, index_dtype=index_dtype)
        ours = lambda: ap.adaptive_max_pool3d_backward(ogo, ox, oind)  # noqa: E731
        theirs = None
        if torch is not None:
            _, tind = F.adaptive_max_pool3d(tx, osz, return_indices=True)
            bw = torch.ops.aten.adaptive_max_pool3d_backward
            theirs = lambda: bw(tgo, tx, tind)  # noqa: E731
    else:
        ours = lambda: ap.adaptive_avg_pool2d_backward(ogo, ox)  # noqa: E731
        theirs = None
        if torch is not None:
            bw = torch.ops.aten._adaptive_avg_pool2d_backward
            theirs = lambda: bw(tgo, tx)  # noqa: E731
    return ours, theirs


class CpuDevice:
    name = "cpu"

    def sync(self) -> None:
        pass

    def copy_bandwidth(self, nbytes: int, repeat: int) -> dict[str, float]:
        return cpu_copy_bandwidth(nbytes, repeat)

    def describe(self) -> str:
        import numba  # noqa: PLC0415

        return f"CPU, {os.cpu_count()} logical cores, numba {numba.get_num_threads()} threads " \
               f"({numba.config.THREADING_LAYER} layer)"


class CudaDevice:
    """Arrays for the CUDA side: PyTorch CUDA tensors when PyTorch is present, else Numba's."""

    name = "cuda"

    def __init__(self, torch: Any) -> None:
        self.torch = torch if torch is not None and torch.cuda.is_available() else None
        if self.torch is None:
            from .cuda import backend  # noqa: PLC0415 - the one module that imports numba.cuda

            if not backend.is_available():
                raise RuntimeError("no CUDA GPU is available")
            self.cuda = backend

    def put(self, a: np.ndarray, name: str) -> Any:
        if self.torch is not None:
            return _to_torch(self.torch, a, name, "cuda")
        return self.cuda.to_device(a)

    def sync(self) -> None:
        if self.torch is not None:
            self.torch.cuda.synchronize()
        else:
            self.cuda.synchronize()

    def copy_bandwidth(self, nbytes: int, repeat: int) -> dict[str, float]:
        """Device-to-device copy of a large buffer (bytes read + written per second)."""
        n = nbytes // 8
        if self.torch is not None:
            t = self.torch
            src = t.ones(n, dtype=t.float64, device="cuda")
            dst = t.empty_like(src)
            copy = lambda: dst.copy_(src)  # noqa: E731
        else:
            src = self.cuda.to_device(np.ones(n, np.float64))
            dst = self.cuda.to_device(np.empty(n, np.float64))
            copy = lambda: dst.copy_to_device(src)  # noqa: E731
        copy()
        self.sync()
        samples = []
        for _ in range(max(5, repeat)):
            samples.append(_sample(copy, self.sync, 10))
        return {
            "bytes_per_s": 2 * n * 8 / statistics.median(samples),
            "best_bytes_per_s": 2 * n * 8 / min(samples),
            "array_bytes": n * 8,
        }

    def describe(self) -> str:
        if self.torch is not None:
            return f"CUDA {self.torch.cuda.get_device_name()}"
        return f"CUDA {self.cuda.device_name()}"


def cuda_present(torch: Any) -> bool:
    if torch is not None:
        try:
            return bool(torch.cuda.is_available())
        except Exception:  # noqa: BLE001
            return False
    try:
        from .cuda import backend  # noqa: PLC0415

        return backend.is_available()
    except ImportError:
        return False


# --------------------------------------------------------------------------------------------
# Reporting


def geomean(values: list[float]) -> float:
    v = [x for x in values if x > 0 and math.isfinite(x)]
    return math.exp(sum(map(math.log, v)) / len(v)) if v else math.nan


def _fmt_time(s: float) -> str:
    if not math.isfinite(s):
        return "-"
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.2f} ms"
    return f"{s * 1e6:.1f} us"


def render_table(cases: list[Case], copy_bw: dict[str, dict[str, float]], has_torch: bool) -> str:
    head = ["backend", "operator", "dtype", "shape", "ours", "torch", "speedup", "GB/s",
            "%copy", "ns/elem"]
    rows = []
    for c in cases:
        bw = copy_bw.get(c.backend, {}).get("bytes_per_s", math.nan)
        if c.error:
            rows.append([c.backend, c.op, c.dtype, shape_text(c.x_shape, c.out_size),
                         "error: " + c.error[:60], "", "", "", "", ""])
            continue
        rows.append([
            c.backend, c.op, c.dtype, shape_text(c.x_shape, c.out_size),
            _fmt_time(c.ours_s), _fmt_time(c.torch_s) if has_torch else "-",
            f"{c.ratio:.2f}x" if has_torch else "-",
            f"{c.gbps:.1f}", f"{100 * c.bytes / c.ours_s / bw:.0f}%", f"{c.ns_per_element:.3f}",
        ])
    widths = [max(len(str(r[i])) for r in [head] + rows) for i in range(len(head))]
    right = {4, 5, 6, 7, 8, 9}

    def line(r):
        return "  ".join(str(v).rjust(w) if i in right else str(v).ljust(w)
                         for i, (v, w) in enumerate(zip(r, widths)))

    out = [line(head), "  ".join("-" * w for w in widths)]
    prev = None
    for c, r in zip(cases, rows):
        if prev is not None and (c.backend, c.op) != prev:
            out.append("")
        prev = (c.backend, c.op)
        out.append(line(r))
    if has_torch:
        out.append("")
        out.append("geometric mean of speedups (PyTorch time / ours):")
        groups: dict[tuple[str, str], list[Case]] = {}
        for c in cases:
            if not c.error:
                groups.setdefault((c.backend, c.op), []).append(c)
        for (be, op), cs in groups.items():
            per_dt = {}
            for c in cs:
                per_dt.setdefault(c.dtype, []).append(c.ratio)
            dts = "  ".join(f"{d} {geomean(v):.2f}x" for d, v in per_dt.items())
            worst = min(cs, key=lambda c: c.ratio)
            out.append(f"  {be:<5} {op:<15} {geomean([c.ratio for c in cs]):6.2f}x   ({dts}; "
                       f"min {worst.ratio:.2f}x at {worst.dtype} "
                       f"{shape_text(worst.x_shape, worst.out_size)})")
    for be, bw in copy_bw.items():
        out.append(f"{be} copy bandwidth: {bw['bytes_per_s'] / 1e9:.1f} GB/s read+write "
                   f"(best {bw['best_bytes_per_s'] / 1e9:.1f}, {bw['array_bytes'] >> 20} MiB array)")
    return "\n".join(out)


def plot(cases: list[Case], path: str, copy_bw: dict[str, dict[str, float]]) -> str | None:
    """Write a PNG of the speedups and bandwidth fractions; an error message if impossible."""
    try:
        import matplotlib  # noqa: PLC0415

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # noqa: PLC0415
    except ImportError:
        return "--plot needs matplotlib (pip install matplotlib, or the project's [viz] extra)"
    ok = [c for c in cases if not c.error]
    if not ok:
        return "nothing to plot"
    labels = [f"{c.backend} {c.op} {c.dtype}\n{shape_text(c.x_shape, c.out_size)}" for c in ok]
    fig, axes = plt.subplots(1, 2, figsize=(14, max(4, 0.32 * len(ok) + 1.5)), sharey=True)
    ypos = np.arange(len(ok))
    colors = {"float32": "tab:blue", "float64": "tab:gray", "float16": "tab:orange",
              "bfloat16": "tab:green"}
    col = [colors.get(c.dtype, "tab:purple") for c in ok]
    axes[0].barh(ypos, [c.ratio for c in ok], color=col)
    axes[0].axvline(1.0, color="k", lw=0.8)
    axes[0].set_xscale("log")
    # plain ratios at round values: the default log labels (2x10^-1, ...) collide
    ticks = [t for t in (0.1, 0.2, 0.5, 1, 2, 5, 10, 20) if t <= 2 * max(c.ratio for c in ok)]
    axes[0].set_xticks(ticks, [f"{t:g}x" for t in ticks])
    axes[0].xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    axes[0].set_xlabel("speedup vs PyTorch (PyTorch time / ours)")
    frac = [c.bytes / c.ours_s / copy_bw[c.backend]["bytes_per_s"] for c in ok]
    axes[1].barh(ypos, frac, color=col)
    axes[1].axvline(1.0, color="k", lw=0.8)
    axes[1].set_xlabel("achieved bytes/s as a fraction of copy bandwidth")
    axes[0].set_yticks(ypos, labels, fontsize=6)
    axes[0].invert_yaxis()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return None


# --------------------------------------------------------------------------------------------
# Compile cost (subprocesses)

_FIRST_CALL = r"""
import json, sys, time
t = time.perf_counter()
import numpy as np
import adaptive_pool as ap
t_import = time.perf_counter() - t
from adaptive_pool.dtypes import bfloat16
dt = bfloat16 if sys.argv[1] == "bfloat16" else np.dtype(sys.argv[1])
ops = sys.argv[2].split(",")
res = {"import_s": t_import}
x2 = np.ones((2, 3, 9, 10), dt); x3 = np.ones((2, 3, 5, 9, 10), dt)
for op in ops:
    t = time.perf_counter()
    if op == "avg2d":
        ap.adaptive_avg_pool2d(x2, (4, 3))
    elif op == "avg2d_backward":
        ap.adaptive_avg_pool2d_backward(np.ones((2, 3, 4, 3), dt), x2)
    elif op == "max3d":
        ap.adaptive_max_pool3d(x3, (2, 4, 3))
    elif op == "max3d_backward":
        y, i = ap.adaptive_max_pool3d(x3, (2, 4, 3))
        t = time.perf_counter()
        ap.adaptive_max_pool3d_backward(y, x3, i)
    res[op] = time.perf_counter() - t
print(json.dumps(res))
"""

_IMPORT = "import time; t = time.perf_counter(); import adaptive_pool; " \
          "print(time.perf_counter() - t)"


def measure_compile(ops: list[str], dtypes: list[str], repeat: int, log) -> dict[str, Any]:
    """Import time and first-call times, cold (empty Numba cache) and warm (filled cache)."""
    env = dict(os.environ)
    out: dict[str, Any] = {"import_s": [], "first_call": {}}
    for _ in range(max(3, min(repeat, 7))):
        r = subprocess.run([sys.executable, "-c", _IMPORT], capture_output=True, text=True,
                           env=env, check=True)
        out["import_s"].append(float(r.stdout.strip()))
    for dt in dtypes:
        with tempfile.TemporaryDirectory(prefix="ap-bench-cache-") as cache:
            env["NUMBA_CACHE_DIR"] = cache
            runs = {}
            for kind in ("cold", "warm"):
                log(f"compile: {dt} first calls, {kind} cache")
                r = subprocess.run([sys.executable, "-c", _FIRST_CALL, dt, ",".join(ops)],
                                   capture_output=True, text=True, env=env)
                if r.returncode != 0:
                    raise RuntimeError(f"first-call subprocess failed:\n{r.stderr[-2000:]}")
                runs[kind] = json.loads(r.stdout.strip().splitlines()[-1])
            out["first_call"][dt] = runs
    return out


def render_compile(res: dict[str, Any]) -> str:
    imp = res["import_s"]
    lines = [f"import adaptive_pool: median {statistics.median(imp):.3f} s "
             f"(min {min(imp):.3f}, {len(imp)} runs, in fresh interpreters)",
             "first call of each operator (separate process per dtype; the max backward "
             "excludes its forward):"]
    ops = [o for o in OPS if any(o in r["cold"] for r in res["first_call"].values())]
    lines.append(f"  {'dtype':<9} {'cache':<5} " + " ".join(f"{o:>15}" for o in ops))
    for dt, runs in res["first_call"].items():
        for kind in ("cold", "warm"):
            lines.append(f"  {dt:<9} {kind:<5} " +
                         " ".join(f"{runs[kind][o]:>13.3f} s" for o in ops))
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Command line


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m adaptive_pool bench",
        description="Time adaptive_pool's operators against PyTorch (interleaved, same process) "
                    "and against the machine's copy bandwidth.")
    p.add_argument("--ops", default="all",
                   help="comma-separated operators: avg2d, avg2d_backward, max3d, "
                        "max3d_backward, or avg, max, all (default all)")
    p.add_argument("--dtypes", default=",".join(DEFAULT_DTYPES),
                   help=f"comma-separated from {', '.join(DTYPES)} (default "
                        f"{','.join(DEFAULT_DTYPES)})")
    p.add_argument("--backends", default=None,
                   help="comma-separated: cpu, cuda (default: cpu, plus cuda when a GPU is "
                        "present)")
    p.add_argument("--shapes", nargs="+", type=parse_shape, metavar="IN:OUT",
                   help="custom cases instead of the suite, e.g. 32x256x56x56:7x7 "
                        "4x64x16x56x56:4x7x7 (2 output sizes: avg2d ops; 3: max3d ops)")
    p.add_argument("--quick", action="store_true",
                   help="a fast smoke run: small shapes, few repeats")
    p.add_argument("--repeat", type=int, default=None,
                   help="timed samples per side (median reported; default 7, quick 3)")
    p.add_argument("--warmup", type=int, default=2, help="untimed calls per side (default 2)")
    p.add_argument("--index-dtype", default="int32", choices=["int32", "int64"],
                   help="our max forward's index dtype (default int32, the library default; "
                        "PyTorch always uses int64)")
    p.add_argument("--no-torch", action="store_true", help="do not time PyTorch")
    p.add_argument("--json", metavar="PATH", help="write the raw figures as JSON")
    p.add_argument("--plot", metavar="PATH", help="write a PNG chart (needs matplotlib)")
    p.add_argument("--compile", action="store_true",
                   help="also measure import time and first-call compile cost (subprocesses; "
                        "cold = empty NUMBA_CACHE_DIR, warm = cached)")
    p.add_argument("--compile-only", action="store_true",
                   help="only measure compile cost")
    p.add_argument("--omp-wait", choices=["passive", "inherit"], default="passive",
                   help="OMP_WAIT_POLICY for this process (default passive). PyTorch and Numba "
                        "each bring an OpenMP runtime; interleaved, their idle threads spin on "
                        "the cores the other one needs, which on a small or shared machine "
                        "turns timings into multiples of the scheduler's time slice. Passive "
                        "waiting is fairer to both; 'inherit' keeps the environment's policy")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quiet", action="store_true", help="no progress display")
    return p


def _split(text: str, allowed, aliases=None, what="value") -> list[str]:
    out: list[str] = []
    for item in (t.strip() for t in text.split(",") if t.strip()):
        names = (aliases or {}).get(item, [item])
        for n in names:
            if n not in allowed:
                raise SystemExit(f"bench: unknown {what} {item!r}; choose from "
                                 f"{', '.join(list(allowed) + list(aliases or {}))}")
            if n not in out:
                out.append(n)
    return out


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    if args.omp_wait == "passive":
        # read by each OpenMP runtime when it loads: before torch is imported and before the
        # first parallel Numba launch (a no-op when either already happened in this process)
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    ops = _split(args.ops, OPS, OP_ALIASES, "operator")
    dtypes = _split(args.dtypes, DTYPES, None, "dtype")
    repeat = args.repeat if args.repeat is not None else (3 if args.quick else 7)
    if repeat < 1:
        raise SystemExit("bench: --repeat must be at least 1")
    log = (lambda s: None) if args.quiet else (lambda s: print(s, file=sys.stderr, flush=True))
    report: dict[str, Any] = {"argv": argv, "python": sys.version.split()[0],
                              "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY")}

    if args.compile or args.compile_only:
        cres = measure_compile(ops, dtypes[:1] if args.quick else dtypes, repeat, log)
        report["compile"] = cres
        print(render_compile(cres))
        print()
        if args.compile_only:
            return _finish(args, report, [], {}, False)

    torch = None
    if not args.no_torch:
        try:
            import torch  # noqa: PLC0415
        except ImportError:
            log("bench: PyTorch is not installed; timing adaptive_pool alone")
    backends = _split(args.backends, ("cpu", "cuda"), None, "backend") if args.backends else (
        ["cpu", "cuda"] if cuda_present(torch) else ["cpu"])
    devices = {}
    for be in backends:
        try:
            devices[be] = CpuDevice() if be == "cpu" else CudaDevice(torch)
        except Exception as e:  # noqa: BLE001
            print(f"bench: backend {be} unavailable: {e}", file=sys.stderr)
            return 2
    shapes = args.shapes or (QUICK_SUITE if args.quick else SUITE)
    cases = [
        Case(op, dt, be, x, o)
        for be in backends
        for op in ops
        for dt in dtypes
        for x, o in shapes
        if len(o) == OPS[op][1]
    ]
    if not cases:
        print("bench: no case matches (avg2d operators take 2 output sizes, max3d ones 3)",
              file=sys.stderr)
        return 2
    import numba  # noqa: PLC0415

    report["numba_threads"] = numba.get_num_threads()
    if torch is not None:
        report["torch"] = {"version": torch.__version__, "threads": torch.get_num_threads()}
    copy_bw = {}
    for be, dev in devices.items():
        log(f"measuring {be} copy bandwidth ...")
        copy_bw[be] = dev.copy_bandwidth(64 << 20 if args.quick else 512 << 20, repeat)
        report.setdefault("devices", {})[be] = dev.describe()
    index_dtype = np.dtype(args.index_dtype)
    prog = Progress(len(cases), enabled=not args.quiet)
    rng = np.random.default_rng(args.seed)
    for c in cases:
        prog.show(f"{c.backend} {c.op} {c.dtype} {shape_text(c.x_shape, c.out_size)}")
        dev = devices[c.backend]
        try:
            ours, theirs = build_case(c, torch, rng, index_dtype, dev)
            a, b = time_pair(ours, theirs, repeat, args.warmup, dev.sync,
                             0.002 if args.quick else 0.02)
            c.ours_samples, c.torch_samples = a, b
            c.ours_s = statistics.median(a)
            c.torch_s = statistics.median(b) if b else math.nan
        except Exception as e:  # noqa: BLE001 - report and go on with the other cases
            c.error = f"{type(e).__name__}: {e}"
        finally:
            ours = theirs = None
        prog.step()
    prog.close()
    print(render_table(cases, copy_bw, torch is not None))
    report["copy_bandwidth"] = copy_bw
    return _finish(args, report, cases, copy_bw, torch is not None)


def _clean(o: Any) -> Any:
    """JSON-safe copy: NaN and infinities become null."""
    if isinstance(o, float):
        return o if math.isfinite(o) else None
    if isinstance(o, dict):
        return {str(k): _clean(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_clean(v) for v in o]
    return o


def _finish(args, report, cases, copy_bw, has_torch) -> int:
    report["cases"] = []
    for c in cases:
        d = asdict(c)
        d.update(ratio=c.ratio if has_torch else None, gbps=c.gbps,
                 copy_fraction=(c.bytes / c.ours_s / copy_bw[c.backend]["bytes_per_s"])
                 if c.ours_s > 0 else None,
                 ns_per_element=c.ns_per_element)
        report["cases"].append(d)
    if has_torch and cases:
        report["geomean"] = {}
        for be in {c.backend for c in cases}:
            for op in OPS:
                r = [c.ratio for c in cases if c.backend == be and c.op == op and not c.error]
                if r:
                    report["geomean"][f"{be}/{op}"] = geomean(r)
    status = 0
    if args.json:
        with open(args.json, "w") as f:
            json.dump(_clean(report), f, indent=1)
        print(f"wrote {args.json}")
    if args.plot:
        if cases:
            msg = plot(cases, args.plot, copy_bw)
            if msg:
                print(f"bench: {msg}", file=sys.stderr)
                status = 1
            else:
                print(f"wrote {args.plot}")
        else:
            print("bench: --plot: no timed cases to plot", file=sys.stderr)
    if any(c.error for c in cases):
        status = 1
    return status
