"""The benchmark's report: the table, geometric means, where we are slower, JSON and a plot."""

from __future__ import annotations

import json
import math
from typing import Any, Optional

import numpy as np

from .runner import Result, quartiles
from .suite import DTYPES, OPS, Case

__all__ = ["geomean", "nbytes_moved", "render", "to_json", "write_json", "plot"]

_ITEMSIZE = {"float32": 4, "float64": 8, "float16": 2, "bfloat16": 2}


def geomean(values: list[float]) -> float:
    """Geometric mean of the positive, finite values (NaN if there are none)."""
    v = [x for x in values if x > 0 and math.isfinite(x)]
    return math.exp(sum(map(math.log, v)) / len(v)) if v else math.nan


def nbytes_moved(case: Case) -> int:
    """Bytes an operator must move: its inputs read once, its outputs written once.

    (A backward's ``x`` only gives the shape, so it is not counted.)
    """
    nx, ny = math.prod(case.shape.x), math.prod(case.shape.y)
    item = _ITEMSIZE[case.dtype]
    index = ny * int(case.index_dtype[-2:]) // 8 if case.spec.kind == "max" else 0
    return (nx + ny) * item + index


def _rel_iqr(samples: list[float]) -> float:
    q1, q2, q3 = quartiles(samples)
    return (q3 - q1) / q2 if q2 > 0 else math.nan


def _fmt_time(s: float) -> str:
    if not math.isfinite(s):
        return "-"
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.2f} ms"
    return f"{s * 1e6:.1f} us"


def _pct(v: float) -> str:
    return f"{100 * v:.0f}%" if math.isfinite(v) else "-"


def _table(results: list[Result], copy_bw: dict[str, dict], with_torch: bool) -> list[str]:
    head = ["backend", "operator", "dtype", "shape", "kind", "ours", "iqr"]
    if with_torch:
        head += ["torch", "iqr", "torch/ours", "check"]
    head += ["GB/s", "%copy"]
    rows: list[list[str]] = []
    for r in results:
        c = r.case
        row = [c.backend, c.op, c.dtype, c.shape.text, c.shape.source]
        if r.error:
            rows.append(row + ["error: " + r.error.splitlines()[0][:70]])
            continue
        gbps = nbytes_moved(c) / r.ours_s / 1e9
        bw = copy_bw.get(c.backend, {}).get("bytes_per_s", math.nan)
        row += [_fmt_time(r.ours_s), _pct(_rel_iqr(r.ours_samples))]
        if with_torch:
            if r.torch_error:
                row += ["unsupported" if "not implemented" in r.torch_error.lower() else "error",
                        "", "-", ""]
            else:
                row += [_fmt_time(r.torch_s), _pct(_rel_iqr(r.torch_samples)),
                        f"{r.ratio:.2f}x", r.check]
        row += [f"{gbps:.1f}", _pct(gbps * 1e9 / bw)]
        rows.append(row)
    full = [r for r in [head] + rows if len(r) == len(head)]  # error rows do not set widths
    widths = [max(len(r[i]) for r in full) for i in range(len(head))]
    right = set(range(5, len(head))) - {len(head) - 3 if with_torch else -1}

    def line(r: list[str]) -> str:
        return "  ".join(v.rjust(w) if i in right else v.ljust(w)
                         for i, (v, w) in enumerate(zip(r, widths))).rstrip()

    out = [line(head), "  ".join("-" * w for w in widths)]
    prev = None
    for r, row in zip(results, rows):
        if prev is not None and (r.case.backend, r.case.op) != prev:
            out.append("")
        prev = (r.case.backend, r.case.op)
        out.append(line(row))
    return out


def _timed(results: list[Result]) -> list[Result]:
    return [r for r in results if not r.error and not r.torch_error and r.torch_samples]


def _geomeans(results: list[Result]) -> list[str]:
    ok = _timed(results)
    out = ["geometric mean of torch/ours (ratio of medians; above 1: adaptive_pool is faster):"]
    dtypes = [d for d in DTYPES if any(r.case.dtype == d for r in ok)]
    for be in dict.fromkeys(r.case.backend for r in ok):
        out.append(f"  {be:<5} {'operator':<15} {'all':>6}  " +
                   "  ".join(f"{d:>8}" for d in dtypes))
        for op in OPS:
            rs = [r for r in ok if r.case.backend == be and r.case.op == op]
            if not rs:
                continue
            per = [geomean([r.ratio for r in rs if r.case.dtype == d]) for d in dtypes]
            out.append(f"  {'':<5} {op:<15} {geomean([r.ratio for r in rs]):5.2f}x  " +
                       "  ".join(f"{g:7.2f}x" if math.isfinite(g) else f"{'-':>8}"
                                 for g in per))
        rs = [r for r in ok if r.case.backend == be]
        kinds = dict.fromkeys(r.case.shape.source for r in rs)
        by_kind = ", ".join(f"{k} {geomean([r.ratio for r in rs if r.case.shape.source == k]):.2f}x"
                            for k in kinds)
        out.append(f"  {'':<5} {'all':<15} {geomean([r.ratio for r in rs]):5.2f}x  "
                   f"(by kind of shape: {by_kind})")
    return out


def _slower(results: list[Result]) -> list[str]:
    slow = sorted((r for r in _timed(results) if r.ratio < 1), key=lambda r: r.ratio)
    if not slow:
        return ["adaptive_pool is not slower than PyTorch in any case."]
    out = [f"where adaptive_pool is slower ({len(slow)} of {len(_timed(results))} cases; "
           f"'overlap': the two sides' interquartile ranges overlap):"]
    for r in slow:
        o1, _, o3 = quartiles(r.ours_samples)
        t1, _, t3 = quartiles(r.torch_samples)
        overlap = "  overlap" if o1 <= t3 else ""
        out.append(f"  {r.ratio:5.2f}x  {r.case.label}  ({_fmt_time(r.ours_s)} against "
                   f"{_fmt_time(r.torch_s)}){overlap}")
    return out


def render(results: list[Result], copy_bw: dict[str, dict], with_torch: bool,
           header: Optional[list[str]] = None) -> str:
    """The text report: header lines, the table, geometric means, slower cases, checks."""
    out = list(header or [])
    out += _table(results, copy_bw, with_torch)
    if with_torch and _timed(results):
        out += [""] + _geomeans(results) + [""] + _slower(results)
        bad = [r for r in results if r.check == "MISMATCH"]
        exact = [r for r in results if r.check == "ours exact"]
        n = sum(1 for r in results if r.check)
        bits = sum(1 for r in results if r.check == "bitwise")
        out.append(f"results cross-checked in {n} cases: {bits} bitwise equal, "
                   f"{n - bits - len(bad) - len(exact)} within tolerance, {len(exact)} where "
                   f"only ours is within it of float64, {len(bad)} mismatches")
        out += [f"  {r.check} {r.case.label}: {r.check_detail}" for r in exact + bad]
        unsupported = [r for r in results if r.torch_error]
        if unsupported:
            out.append(f"PyTorch failed in {len(unsupported)} cases (ours timed alone), e.g. "
                       f"{unsupported[0].case.label}: {unsupported[0].torch_error[:120]}")
    for be, bw in copy_bw.items():
        out.append(f"{be} copy bandwidth: {bw['bytes_per_s'] / 1e9:.1f} GB/s read+write "
                   f"(best {bw['best_bytes_per_s'] / 1e9:.1f}, {bw['array_bytes'] >> 20} MiB "
                   f"array)")
    return "\n".join(out)


def _finite(v: float) -> Optional[float]:
    return v if math.isfinite(v) else None


def to_json(results: list[Result], copy_bw: dict[str, dict], with_torch: bool) -> dict:
    """Per-case records (the old benchmark's keys kept: tools read ``op``, ``dtype``,
    ``x_shape``, ``out_size``, ``ours_s``, ``error``) and geometric means."""
    cases = []
    for r in results:
        c = r.case
        d: dict[str, Any] = c.to_json()
        nbytes = nbytes_moved(c)
        bw = copy_bw.get(c.backend, {}).get("bytes_per_s")
        d.update(
            ours_s=_finite(r.ours_s), torch_s=_finite(r.torch_s) if with_torch else None,
            ratio=_finite(r.ratio) if with_torch else None,
            ours_quartiles=[_finite(v) for v in quartiles(r.ours_samples)],
            torch_quartiles=[_finite(v) for v in quartiles(r.torch_samples)],
            ours_samples=r.ours_samples, torch_samples=r.torch_samples,
            ours_loops=r.ours_loops, torch_loops=r.torch_loops,
            ours_first_call_s=_finite(r.ours_first_call_s),
            check=r.check, check_detail=r.check_detail,
            error=r.error, torch_error=r.torch_error,
            bytes=nbytes, elements=math.prod(c.shape.x),
            gbps=_finite(nbytes / r.ours_s / 1e9) if r.ours_samples else None,
            copy_fraction=_finite(nbytes / r.ours_s / bw) if bw and r.ours_samples else None,
        )
        cases.append(d)
    geo: dict[str, float] = {}
    ok = _timed(results)
    for be in dict.fromkeys(r.case.backend for r in ok):
        for op in OPS:
            for dt in (None,) + DTYPES:
                rs = [r.ratio for r in ok if r.case.backend == be and r.case.op == op
                      and dt in (None, r.case.dtype)]
                if rs:
                    geo[f"{be}/{op}" + (f"/{dt}" if dt else "")] = geomean(rs)
    return {"cases": cases, "geomean": geo, "copy_bandwidth": copy_bw}


def write_json(report: dict, path: str) -> None:
    """Write ``report`` (NaN and infinities as null)."""
    def clean(o: Any) -> Any:
        if isinstance(o, float):
            return o if math.isfinite(o) else None
        if isinstance(o, dict):
            return {str(k): clean(v) for k, v in o.items()}
        if isinstance(o, (list, tuple)):
            return [clean(v) for v in o]
        return o

    with open(path, "w") as f:
        json.dump(clean(report), f, indent=1)


def plot(results: list[Result], path: str, copy_bw: dict[str, dict]) -> Optional[str]:
    """A PNG of the ratios (with their spread) and the copy-bandwidth fractions.

    Returns
    -------
    str or None
        Why nothing was written (matplotlib missing, nothing timed), or None.
    """
    try:
        import matplotlib  # noqa: PLC0415 - optional

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # noqa: PLC0415
    except ImportError:
        return "--plot needs matplotlib (pip install matplotlib, or the project's [viz] extra)"
    ok = [r for r in results if not r.error]
    if not ok:
        return "nothing to plot"
    labels = [f"{r.case.label} ({r.case.shape.source})" for r in ok]
    colors = {"float32": "tab:blue", "float64": "tab:gray", "float16": "tab:orange",
              "bfloat16": "tab:green"}
    col = [colors.get(r.case.dtype, "tab:purple") for r in ok]
    y = np.arange(len(ok))
    fig, axes = plt.subplots(1, 2, figsize=(14, max(4, 0.22 * len(ok) + 1.5)), sharey=True)
    ratios = [r.ratio for r in ok]
    # error bars: PyTorch's quartiles over our median and PyTorch's median over our quartiles
    lo, hi = [], []
    for r in ok:
        o1, o2, o3 = quartiles(r.ours_samples)
        t1, t2, t3 = quartiles(r.torch_samples)
        rr = r.ratio
        lo.append(max(0.0, rr - t1 / o3) if math.isfinite(rr) else 0.0)
        hi.append(max(0.0, t3 / o1 - rr) if math.isfinite(rr) else 0.0)
    axes[0].barh(y, [v if math.isfinite(v) else 0 for v in ratios], color=col,
                 xerr=[lo, hi], error_kw={"lw": 0.6})
    axes[0].axvline(1.0, color="k", lw=0.8)
    axes[0].set_xscale("log")
    finite = [v for v in ratios if math.isfinite(v) and v > 0] or [1.0]
    ticks = [t for t in (0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50)
             if min(finite) / 2 <= t <= 2 * max(finite)]
    axes[0].set_xticks(ticks, [f"{t:g}x" for t in ticks])
    axes[0].xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    axes[0].set_xlabel("PyTorch median / adaptive_pool median (bars: interquartile ranges)")
    frac = [nbytes_moved(r.case) / r.ours_s / copy_bw[r.case.backend]["bytes_per_s"]
            if r.case.backend in copy_bw else 0.0 for r in ok]
    axes[1].barh(y, frac, color=col)
    axes[1].axvline(1.0, color="k", lw=0.8)
    axes[1].set_xlabel("adaptive_pool's bytes/s as a fraction of copy bandwidth")
    axes[0].set_yticks(y, labels, fontsize=6)
    axes[0].invert_yaxis()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return None
