"""DESIGN §2: the window helpers, against brute force and exact big-integer arithmetic."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from hypothesis import given, strategies as st

from adaptive_pool import windows
from adaptive_pool.cpu import max_backward
from reference import covering, window

SMALL = range(1, 65)


@numba.njit
def _helpers(i_or_o, in_size, out_size):
    """All four scalar helpers at one position, from compiled code (as the kernels call them)."""
    return (
        windows.start(i_or_o, in_size, out_size),
        windows.end(i_or_o, in_size, out_size),
        windows.cover_lo(i_or_o, in_size, out_size),
        windows.cover_hi(i_or_o, in_size, out_size),
    )


@numba.njit
def _all_tables(in_size, out_size):
    s = np.empty(out_size, np.int64)
    e = np.empty(out_size, np.int64)
    lo = np.empty(in_size, np.int64)
    hi = np.empty(in_size, np.int64)
    for o in range(out_size):
        s[o] = windows.start(o, in_size, out_size)
        e[o] = windows.end(o, in_size, out_size)
    for i in range(in_size):
        lo[i] = windows.cover_lo(i, in_size, out_size)
        hi[i] = windows.cover_hi(i, in_size, out_size)
    return s, e, lo, hi


def _brute(in_size, out_size):
    wins = [window(o, in_size, out_size) for o in range(out_size)]
    cover = [covering(i, in_size, out_size) for i in range(in_size)]
    return wins, cover


@pytest.mark.parametrize("in_size", SMALL)
def test_tables_match_brute_force_every_size_up_to_64(in_size):
    for out_size in SMALL:
        wins, cover = _brute(in_size, out_size)
        t = windows.axis_tables(in_size, out_size)
        s, e, lo, hi = _all_tables(in_size, out_size)
        assert t["start"].tolist() == [w[0] for w in wins] == s.tolist()
        assert t["end"].tolist() == [w[1] for w in wins] == e.tolist()
        # cover_lo/cover_hi are exactly the cells whose windows contain i (never empty).
        assert t["cover_lo"].tolist() == [c[0] for c in cover] == lo.tolist()
        assert t["cover_hi"].tolist() == [c[-1] + 1 for c in cover] == hi.tolist()
        for c in cover:
            assert c == list(range(c[0], c[-1] + 1))  # contiguous
        for o, (a, b) in enumerate(wins):
            assert 0 <= a < b <= in_size
            assert b - a <= -(-in_size // out_size) + 1
        assert wins[0][0] == 0 and wins[-1][1] == in_size


def test_table_dtypes_and_shapes():
    t = windows.axis_tables(7, 3)
    for name, n in (("start", 3), ("end", 3), ("cover_lo", 7), ("cover_hi", 7)):
        assert t[name].dtype == np.int64 and t[name].shape == (n,)
    assert windows.table_size((4, 5), (2, 3)) == 2 * 4 + 2 * 2 + 2 * 5 + 2 * 3


@given(in_size=st.integers(0, 3000), out_size=st.integers(1, 3000), base=st.integers(0, 5))
def test_numpy_table_builder_matches_the_compiled_helpers(in_size, out_size, base):
    # build_tables fills axes in NumPy; the compiled helpers serve axes too large for int64
    n = base + windows.table_size((in_size,), (out_size,))
    fast, exact = np.full(n, -1, np.int64), np.full(n, -1, np.int64)
    windows._fill_axis_small(fast, in_size, out_size, base)
    windows._fill_axis(exact, in_size, out_size, base)
    assert fast.tolist() == exact.tolist()


def test_upsampling_windows():
    # O > I: every window has one or two cells, every input is covered, the first and last
    # cells are the edges.
    for in_size, out_size in ((1, 64), (2, 7), (3, 64), (5, 8), (63, 64)):
        t = windows.axis_tables(in_size, out_size)
        lengths = t["end"] - t["start"]
        assert lengths.min() >= 1 and lengths.max() <= 2
        assert (t["cover_hi"] > t["cover_lo"]).all()
        assert t["cover_lo"][0] == 0 and t["cover_hi"][-1] == out_size


def _exact(i_or_o, in_size, out_size):
    """The four helpers from their definitions with Python's unbounded integers."""
    s = (i_or_o * in_size) // out_size
    e = -((-(i_or_o + 1) * in_size) // out_size)
    lo = (i_or_o * out_size) // in_size
    hi = min(-((-(i_or_o + 1) * out_size) // in_size), out_size)
    return s, e, lo, hi


LARGE = st.integers(1, 2**40)


@given(in_size=LARGE, out_size=LARGE, data=st.data())
def test_helpers_exact_on_large_sizes(in_size, out_size, data):
    o = data.draw(st.integers(0, out_size - 1), label="o")
    i = data.draw(st.integers(0, in_size - 1), label="i")
    s, e, _, _ = _helpers(o, in_size, out_size)
    es, ee, _, _ = _exact(o, in_size, out_size)
    assert (s, e) == (es, ee)
    _, _, lo, hi = _helpers(i, in_size, out_size)
    _, _, elo, ehi = _exact(i, in_size, out_size)
    assert (lo, hi) == (elo, ehi)
    # cover range is exactly the cells whose window holds i: the cells just inside contain i,
    # the cells just outside do not.
    assert lo < hi
    for cell in (lo, hi - 1):
        a, b = _exact(cell, in_size, out_size)[:2]
        assert a <= i < b
    if lo > 0:
        assert not (i < _exact(lo - 1, in_size, out_size)[1])
    if hi < out_size:
        assert not (_exact(hi, in_size, out_size)[0] <= i)
    # window lengths are bounded by ceil(I/O) + 1
    assert 1 <= e - s <= -(-in_size // out_size) + 1


@pytest.mark.parametrize(
    "in_size,out_size",
    [(2**40, 2**40 - 1), (2**40 - 1, 3), (3, 2**40 - 1), (2**40, 1), (1, 2**40), (2**33 + 7, 2**31 + 1)],
)
def test_helpers_at_extreme_positions(in_size, out_size):
    for o in (0, 1, out_size // 2, out_size - 2, out_size - 1):
        if 0 <= o < out_size:
            assert _helpers(o, in_size, out_size)[:2] == _exact(o, in_size, out_size)[:2]
    for i in (0, 1, in_size // 2, in_size - 2, in_size - 1):
        if 0 <= i < in_size:
            assert _helpers(i, in_size, out_size)[2:] == _exact(i, in_size, out_size)[2:]


def test_helpers_beyond_2_to_the_40():
    # The product i * O overflows 64 bits here; the helpers promise exactness below 2**62.
    for in_size, out_size in ((2**61 + 3, 2**61 - 1), (2**55 + 1, 3), (5, 2**60 - 7)):
        for k in (0, 1, 2, 3, 12345):
            o = min(k, out_size - 1) if k < 4 else out_size - 1 - k % out_size
            i = min(k, in_size - 1) if k < 4 else in_size - 1 - k % in_size
            assert _helpers(o, in_size, out_size)[:2] == _exact(o, in_size, out_size)[:2]
            assert _helpers(i, in_size, out_size)[2:] == _exact(i, in_size, out_size)[2:]


def test_index_in_window():
    f = numba.njit(
        lambda k, ph, pw, d0, d1, h0, h1, w0, w1: windows.index_in_window(
            k, ph, pw, d0, d1, h0, h1, w0, w1
        )
    )
    H, W = 4, 5
    for k in range(-3, 3 * H * W + 3):
        d, r = divmod(k, H * W)
        h, w = divmod(r, W)
        inside = k >= 0 and 1 <= d < 3 and 1 <= h < 3 and 2 <= w < 5
        assert f(k, H, W, 1, 3, 1, 3, 2, 5) == inside, k


@numba.njit
def _magic_divmods(ks, m):
    mul, sh = max_backward._magic(m)
    q = np.empty_like(ks)
    r = np.empty_like(ks)
    for i in range(ks.size):
        q[i], r[i] = max_backward._divmod_magic(ks[i], m, mul, sh)
    return q, r


@pytest.mark.parametrize(
    "m",
    list(range(1, 300))
    + [2**k + e for k in range(9, 31) for e in (-1, 0, 1)]
    + [3**19, 7**11, 10**9, 2**31 - 1],
)
def test_division_by_multiplication_is_exact(m):
    """The index checks divide by W and H with a multiply and a shift, for planes < 2**31."""
    top = 2**31 - 1
    rng = np.random.default_rng(m)
    ks = np.concatenate([
        np.arange(0, 3 * m + 3, max(1, m // 7)),
        [m - 1, m, m + 1, top, top - 1, top - top % m, top - top % m - 1],
        [q * m + e for q in (top // m, top // m - 1) for e in (-1, 0, 1)],
        rng.integers(0, top, 2000),
    ]).astype(np.int64)
    ks = ks[(ks >= 0) & (ks <= top)]
    q, r = _magic_divmods(ks, m)
    np.testing.assert_array_equal(q, ks // m)
    np.testing.assert_array_equal(r, ks % m)


@pytest.mark.parametrize(
    "dhw",
    [(1, 1, 7), (1, 3, 5), (2, 9, 10), (7, 13, 1), (1, 2**11, 2**11), (1, 2**11 - 1, 2**11 + 1),
     (3, 1021, 1367), (64, 256, 256), (1, 1, 2**22), (2**22, 1, 1), (5, 7**5, 49), (2, 3, 699050)],
)
def test_the_sparse_max_backward_check_divides_exactly(dhw):
    """The sparse max backward splits each index into (d, h, w) in float32 for planes of up to
    2**22 elements: with one-element windows at the true position, every index passes."""
    D, H, W = dhw
    plane = D * H * W
    assert plane <= 2**22
    rng = np.random.default_rng(plane)
    edges = [q * s + e for s in (W, H * W) for q in (0, 1, plane // s - 1) for e in (-1, 0, 1)]
    ks = np.concatenate([edges, [plane - 1], rng.integers(0, plane, 4000)]).astype(np.int32)
    ks = ks[(ks >= 0) & (ks < plane)]
    d, r = np.divmod(ks, H * W)
    h, w = np.divmod(r, W)
    lo = np.stack([d, h, w, np.zeros_like(ks)]).astype(np.int32)
    nn = np.ones((3, ks.size), np.int32)
    keys = np.empty(ks.size, np.int32)
    rw, rh = np.float32(1.0 / W), np.float32(1.0 / H)
    first = max_backward._check_plane(ks, 0, ks.size, ks.size, plane, W, H, rw, rh, lo, nn, keys)
    assert first == -1
    np.testing.assert_array_equal(keys, ks)
    lo[2] += 1  # every window now starts one column to the right of its index
    assert max_backward._check_plane(ks, 0, ks.size, ks.size, plane, W, H, rw, rh, lo, nn, keys) == 0
