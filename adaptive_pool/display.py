"""Rich (HTML) descriptions of executors, for Jupyter.

``Executor._repr_html_`` and ``AclExecutor._repr_html_`` call :func:`executor_html`, so an
executor left as the last expression of a notebook cell shows its operator, shapes, dtypes,
backend, workspace and a preview of its window tables (see :mod:`adaptive_pool.windows`).
"""

from __future__ import annotations

from html import escape
from typing import Any

import numpy as np

from .windows import table_layout

__all__ = ["executor_html", "window_preview"]

#: Table columns shown per axis before the middle is elided.
PREVIEW_COLUMNS = 16

def _columns(n: int, limit: int) -> list[int | None]:
    """The positions ``0..n-1`` to show, with ``None`` where the middle is elided."""
    if n <= limit:
        return list(range(n))
    head = (limit + 1) // 2
    tail = limit - head
    return list(range(head)) + [None] + list(range(n - tail, n))


def window_preview(executor: Any) -> dict[str, dict[str, np.ndarray]]:
    """The window tables of each spatial axis of ``executor``, by axis name.

    Returns ``{"H": {"start", "end", "cover_lo", "cover_hi"}, ...}`` (``"L"`` for a 1-D
    operator; views into the packed
    ``executor.tables_host``), or ``{}`` for an empty problem (no tables).
    """
    tab = executor.tables_host
    if tab.size == 0:
        return {}
    _, _, d, h, w, od, oh, ow = executor.dims
    result: dict[str, dict[str, np.ndarray]] = {}
    base = 0
    # the kernels' singleton leading axes first, then the operator's own, by their names
    names = (None,) * (3 - executor.op.spatial) + executor.op.axes
    for name, i, o in zip(names, (d, h, w), (od, oh, ow)):
        s_at, e_at, l_at, h_at, nxt = (int(v) for v in table_layout.py_func(i, o, base))
        result[name] = {
            "start": tab[s_at:e_at],
            "end": tab[e_at:l_at],
            "cover_lo": tab[l_at:h_at],
            "cover_hi": tab[h_at:nxt],
        }
        base = nxt
    result.pop(None, None)
    return result


def _row(label: str, values: np.ndarray | None, cols: list[int | None], head: bool) -> str:
    tag = "th" if head else "td"
    cells = [f'<th style="text-align:left">{escape(label)}</th>']
    for c in cols:
        if c is None:
            text = "&hellip;"
        else:
            text = str(c) if values is None else str(int(values[c]))
        cells.append(f'<{tag} style="text-align:right">{text}</{tag}>')
    return "<tr>" + "".join(cells) + "</tr>"


def _table(index: str, rows: dict[str, np.ndarray], n: int, limit: int) -> str:
    cols = _columns(n, limit)
    body = [_row(index, None, cols, True)]
    body += [_row(k, v, cols, False) for k, v in rows.items()]
    return '<table style="font-family:monospace;font-size:90%">' + "".join(body) + "</table>"


def executor_html(executor: Any, limit: int = PREVIEW_COLUMNS) -> str:
    """An HTML description of an executor (or of an ``acl`` executor bound to arrays).

    Shows the operator, the shapes, the dtype (with how it is stored and accumulated), the index
    dtype, the backend, the workspace bytes and, per spatial axis, the window tables: ``start``
    and ``end`` for each output cell, ``cover_lo`` and ``cover_hi`` for each input position.
    Axes longer than ``limit`` show their first and last entries only.
    """
    bound = getattr(executor, "arrays", None)
    ex = getattr(executor, "executor", executor)
    op = ex.op
    if op.backward:
        shapes = f"grad_output {ex.y_shape} &rarr; grad_input {ex.x_shape}"
    else:
        shapes = f"x {ex.x_shape} &rarr; y {ex.y_shape}"  # tuples of ints: nothing to escape
    spec = ex.spec
    sums = op.backward or not op.max  # the max forward only compares
    dtype = spec.name
    if spec.storage != spec.dtype:
        dtype += f", read and written as {spec.storage} bit patterns"
    if sums:
        dtype += f", sums accumulated in {spec.acc}"
    facts = [
        ("operator", escape(op.name)),
        ("shapes", shapes),
        ("dtype", escape(dtype)),
    ]
    if ex.index_dtype is not None:
        facts.append(("indices", escape(f"{ex.index_dtype} (flat {ex.op.flat_index} per plane)")))
    facts.append(("backend", escape(str(ex.backend.name))))
    facts.append(("workspace", f"{ex.workspace_size:,} bytes (window tables, int64)"))
    if bound is not None:
        facts.append(("bound to", escape(", ".join(bound))))
    title = "AclExecutor" if bound is not None else "Executor"
    parts = [
        f'<div class="adaptive-pool-executor"><strong>{title}</strong> '
        f"<code>{escape(op.name)}</code>",
        '<table style="font-size:90%">'
        + "".join(
            f'<tr><th style="text-align:left">{k}</th><td style="text-align:left">{v}</td></tr>'
            for k, v in facts
        )
        + "</table>",
    ]
    axes = window_preview(ex)
    if not axes:
        parts.append("<p>Empty problem: no window tables, nothing to compute.</p>")
    for name, t in axes.items():
        n_in, n_out = len(t["cover_lo"]), len(t["start"])
        most = int((t["cover_hi"] - t["cover_lo"]).max())
        overlap = f", up to {most} windows share an input position" if most > 1 else ""
        parts.append(f"<p><strong>axis {name}</strong>: {n_in} &rarr; {n_out}{overlap}</p>")
        parts.append(_table("output o", {"start": t["start"], "end": t["end"]}, n_out, limit))
        parts.append(
            _table("input i", {"cover_lo": t["cover_lo"], "cover_hi": t["cover_hi"]}, n_in, limit)
        )
    parts.append("</div>")
    return "\n".join(parts)
