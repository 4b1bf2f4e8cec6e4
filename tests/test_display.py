"""Readable executors: the one-line repr and the HTML of adaptive_pool.display."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import numpy as np
import pytest

import adaptive_pool as ap
from adaptive_pool import acl
from adaptive_pool.display import executor_html, window_preview
from adaptive_pool.functional import backward_executor, forward_executor
from adaptive_pool.windows import axis_tables


class _Tables(HTMLParser):
    """Collects the rows of every <table> as lists of cell texts; checks tags balance."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: list[list[list[str]]] = []
        self.stack: list[str] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        self.stack.append(tag)
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, (self.stack, tag)
        self.stack.pop()
        if tag in ("td", "th"):
            self.tables[-1][-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def _parse(html: str) -> _Tables:
    p = _Tables()
    p.feed(html)
    p.close()
    assert not p.stack, p.stack
    return p


def _facts(p: _Tables) -> dict[str, str]:
    return {row[0]: row[1] for row in p.tables[0]}


def test_avg_backward_html_shows_the_plan_and_the_window_tables():
    x = np.zeros((2, 3, 10, 7), np.float16)
    gy = np.zeros((2, 3, 4, 7), np.float16)
    ex = backward_executor("adaptive_avg_pool2d_backward", gy, x)
    html = ex._repr_html_()
    assert html == executor_html(ex)
    p = _parse(html)
    facts = _facts(p)
    assert facts["operator"] == "adaptive_avg_pool2d_backward"
    assert facts["shapes"] == "grad_output (2, 3, 4, 7) \u2192 grad_input (2, 3, 10, 7)"
    assert facts["dtype"].startswith("float16")
    assert "uint16 bit patterns" in facts["dtype"] and "float32" in facts["dtype"]
    assert facts["backend"] == "cpu"
    assert facts["workspace"] == f"{ex.workspace_size:,} bytes (window tables, int64)"
    assert "indices" not in facts
    # Axis H: 10 -> 4 (overlapping), axis W: 7 -> 7 (identity). Two tables per axis.
    assert "axis H" in html and "axis W" in html and "axis D" not in html
    assert len(p.tables) == 1 + 2 * 2
    t = axis_tables(10, 4)
    out_rows, in_rows = p.tables[1], p.tables[2]
    assert out_rows[0] == ["output o", "0", "1", "2", "3"]
    assert out_rows[1] == ["start"] + [str(v) for v in t["start"]]
    assert out_rows[2] == ["end"] + [str(v) for v in t["end"]]
    assert in_rows[0] == ["input i"] + [str(i) for i in range(10)]
    assert in_rows[1] == ["cover_lo"] + [str(v) for v in t["cover_lo"]]
    assert in_rows[2] == ["cover_hi"] + [str(v) for v in t["cover_hi"]]
    assert "up to 2 windows share an input position" in html


def test_max_forward_html_names_the_index_dtype_and_three_axes():
    x = np.zeros((3, 4, 5, 6), np.float32)
    ex = forward_executor("adaptive_max_pool3d", x, (2, 3, 4), np.int64)
    facts = _facts(_parse(ex._repr_html_()))
    assert facts["shapes"] == "x (3, 4, 5, 6) \u2192 y (3, 2, 3, 4)"
    assert facts["indices"].startswith("int64")
    assert facts["dtype"] == "float32"  # the max forward only compares: no accumulation
    html = ex._repr_html_()
    assert all(f"axis {a}" in html for a in "DHW")


def test_long_axes_are_truncated():
    x = np.zeros((1, 1, 3, 1000), np.float32)
    ex = forward_executor("adaptive_avg_pool2d", x, (2, 300))
    p = _parse(executor_html(ex, limit=10))
    w_out, w_in = p.tables[3], p.tables[4]
    assert len(w_out[0]) == 1 + 10 + 1  # label, 10 columns, the ellipsis
    assert w_out[0][1:7] == ["0", "1", "2", "3", "4", "\u2026"]
    assert w_out[0][-1] == "299" and w_in[0][-1] == "999"
    t = axis_tables(1000, 300)
    assert w_in[1][-1] == str(t["cover_lo"][-1]) and w_out[2][-2] == str(t["end"][-2])
    assert len(executor_html(ex)) < 20_000  # the default preview stays small too


def test_acl_executor_html_says_what_it_is_bound_to():
    v = np.random.default_rng(0).random((1, 2, 4, 5, 6)).astype(np.float32)
    y, idx = ap.adaptive_max_pool3d(v, (2, 2, 3))
    gi = np.empty_like(v)
    size, ex = acl.adaptive_max_pool3d_backward_get_workspace_size(np.ones_like(y), v, idx, gi)
    html = ex._repr_html_()
    facts = _facts(_parse(html))
    assert html.count("AclExecutor") == 1
    assert facts["bound to"] == ", ".join(ex.arrays)
    assert {"grad_output", "indices", "out"} <= set(facts["bound to"].split(", "))
    assert facts["workspace"].startswith(f"{size:,} bytes")
    assert facts["indices"].startswith("int32")
    assert "sums accumulated in float32" in facts["dtype"]
    assert repr(ex).startswith(f"<AclExecutor bound to {', '.join(ex.arrays)}: <Executor ")


def test_empty_problem_has_no_tables():
    x = np.zeros((0, 3, 5, 5), np.float32)
    ex = forward_executor("adaptive_avg_pool2d", x, 2)
    assert window_preview(ex) == {}
    html = ex._repr_html_()
    assert "no window tables" in html
    assert _facts(_parse(html))["workspace"].startswith("0 bytes")


def test_repr_is_one_line_and_names_the_plan():
    x = np.zeros((2, 5, 6), ap.bfloat16)
    ex = forward_executor("adaptive_avg_pool2d", x, (None, 4))
    r = repr(ex)
    assert "\n" not in r
    assert re.search(r"adaptive_avg_pool2d \(2, 5, 6\)->\(2, 5, 4\) bfloat16 on cpu", r)


@pytest.mark.parametrize(
    "op, shape, out",
    [
        ("adaptive_max_pool1d", (1, 2, 11), (3,)),
        ("adaptive_avg_pool2d", (1, 2, 9, 11), (4, 3)),
        ("adaptive_max_pool3d", (1, 2, 5, 9, 11), (2, 4, 3)),
    ],
)
def test_window_preview_matches_axis_tables(op, shape, out):
    ex = forward_executor(op, np.zeros(shape, np.float64), out, np.int32)
    pre = window_preview(ex)
    assert list(pre) == (["L"] if len(out) == 1 else ["D", "H", "W"][3 - len(out) :])
    for (name, tabs), i, o in zip(pre.items(), shape[-len(out) :], out):
        ref = axis_tables(i, o)
        for k in ref:
            np.testing.assert_array_equal(tabs[k], ref[k], err_msg=f"{name}.{k}")
    if "max" in op:
        flat = "l" if len(out) == 1 else "d*H*W + h*W + w"
        assert f"(flat {flat} per plane)" in ex._repr_html_()
