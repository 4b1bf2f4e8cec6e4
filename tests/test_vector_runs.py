"""The CPU's vector code over runs of memory (``cpu/lanes.py``), against NumPy: every length
around the 32-element blocks, every storage dtype, NaN patterns, and nothing read past a run
or written outside it."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from adaptive_pool.cpu.lanes import (
    PLANES, add_block, add_numbers, add_planes, add_segment, copy_numbers, count_bits, count_ones,
    fill_run, interleave_planes, number_bits, number_word, plane_row_words, rows_sum, run_count,
    run_fill, run_sum, share_planes, store_channel_runs, store_planes, sum_blocks, vector_runs,
)
from adaptive_pool.dtypes import bfloat16
from reference import lane_sum

DTYPES = [np.float32, np.float64, np.float16, bfloat16]
STORAGE = {np.dtype(np.float32): np.float32, np.dtype(np.float64): np.float64,
           np.dtype(np.float16): np.uint16, np.dtype(bfloat16): np.int16}
LENGTHS = [0, 1, 4, 7, 8, 9, 15, 16, 17, 31, 32, 33, 49, 63, 64, 70, 97]
GUARD = 40  # elements before and after each run, NaN, so a stray read or write shows


@numba.njit
def _sums(src, b, n):
    return run_sum(src, b, n, None), run_sum(src, b, n, True)


@numba.njit
def _rows(src, b, nw, nh, hstep, nd, dstep):
    return (rows_sum(src, b, nw, nh, hstep, nd, dstep, None),
            rows_sum(src, b, nw, nh, hstep, nd, dstep, True))


@numba.njit
def _count(src, b, n):
    return run_count(src, b, n)


@numba.njit
def _segment(lanes, L, src, b, n, skip):
    return add_segment(lanes, L, src, b, n, skip) if skip else add_segment(
        lanes, L, src, b, n, None)


@numba.njit
def _fill(dst, db, src, sb, n, share, other):
    run_fill(dst, db, src, sb, n, share, other)


@numba.njit
def _zero(dst, db, src, sb, n, zero):
    run_fill(dst, db, src, sb, n, None, zero)


@numba.njit
def _copy(dst, db, row, rb, src, sb, n):
    copy_numbers(dst, db, row, rb, src, sb, n)


@numba.njit
def _fill_with(dst, b, n, v):
    fill_run(dst, b, n, v)


@numba.njit
def _add(col, src, b, n, rows, step):
    add_numbers(col, src, b, n, rows, step)


@numba.njit
def _add_planes(a, q, src, o, poff, cnt, skip):
    add_planes(a, q, src, o, poff, cnt, skip)


@numba.njit
def _interleave(dst, o, stride, src, b, poff, n):
    interleave_planes(dst, o, stride, src, b, poff, n)


@numba.njit
def _store_planes(dst, b, poff, src, o, n):
    store_planes(dst, b, poff, src, o, n)


@numba.njit
def _share_planes(a, q, src, o, poff, v, cnt, cq):
    share_planes(a, q, src, o, poff, v, cnt, cq)


@numba.njit
def _add_block(a, q, src, o, cnt, skip):
    add_block(a, q, src, o, cnt, skip)


@numba.njit
def _sum_blocks(a, q, src, lo, hi):
    sum_blocks(a, q, src, lo, hi)


@numba.njit
def _plane_row_words(out, o, src, b, poff, H, W, words):
    plane_row_words(out, o, src, b, poff, H, W, words)


@numba.njit
def _channel_runs(dst, b, stride, src, P, m, nc):
    store_channel_runs(dst, b, stride, src, P, m, nc)


@numba.njit
def _bits(out, o, src, b, n):
    number_bits(out, o, src, b, n)


@numba.njit
def _word(src, b, n):
    return number_word(src, b, n)


@numba.njit
def _ones(bits):
    return count_ones(bits)


@numba.njit
def _count_bits(cnt, q, bits, o, rows, wmask):
    count_bits(cnt, q, bits, o, rows, wmask)


def _data(rng, n, dtype, nan_share):
    """``n`` values with NaN guards around them, in ``dtype``; its storage view."""
    x = rng.standard_normal(n + 2 * GUARD).astype(np.float32)
    x[rng.random(x.size) < nan_share] = np.nan
    x[:GUARD] = x[-GUARD:] = np.nan
    x = x.astype(dtype)
    return x, x.view(STORAGE[x.dtype])


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("nan_share", [0.0, 0.3, 1.0])
def test_runs_sum_count_fill_and_zero_as_numpy_does(dtype, nan_share):
    rng = np.random.default_rng(7)
    acc = np.float64 if np.dtype(dtype) == np.float64 else np.float32
    for n in LENGTHS:
        x, xs = _data(rng, n, dtype, nan_share)
        run = x[GUARD : GUARD + n]
        numbers = ~np.isnan(run.astype(np.float32))
        plain, skip = _sums(xs, GUARD, n)
        want_plain = lane_sum(run.astype(acc), acc)
        want_skip = lane_sum(run.astype(acc), acc, skipna=True)
        np.testing.assert_array_equal(np.array(plain[0], acc), want_plain)
        assert plain[1] == n
        assert np.array(skip[0], acc).tobytes() == np.array(want_skip, acc).tobytes()
        assert skip[1] == numbers.sum() == _count(xs, GUARD, n)

        share, other = (np.array(v, dtype).view(xs.dtype)[()] for v in (1.5, 0.0))
        out = np.full(x.size, 9.0, dtype)
        _fill(out.view(xs.dtype), GUARD, xs, GUARD, n, share, other)
        assert (out[:GUARD] == 9).all() and (out[GUARD + n :] == 9).all()
        np.testing.assert_array_equal(out[GUARD : GUARD + n], np.where(numbers, 1.5, 0.0))

        out = rng.standard_normal(x.size).astype(dtype)
        kept = out.copy()
        _zero(out.view(xs.dtype), GUARD, xs, GUARD, n, other)
        np.testing.assert_array_equal(out[:GUARD], kept[:GUARD])
        np.testing.assert_array_equal(out[GUARD + n :], kept[GUARD + n :])
        np.testing.assert_array_equal(out[GUARD : GUARD + n],
                                      np.where(numbers, kept[GUARD : GUARD + n], 0.0))

        # a row of stored elements copied where x holds numbers, +0.0 (all bits clear) elsewhere
        row = rng.standard_normal(x.size).astype(dtype)
        row[rng.random(x.size) < 0.2] = -0.0
        out = np.full(x.size, 9.0, dtype)
        _copy(out.view(xs.dtype), GUARD, row.view(xs.dtype), GUARD, xs, GUARD, n)
        assert (out[:GUARD] == 9).all() and (out[GUARD + n :] == 9).all()
        want = np.where(numbers, row[GUARD : GUARD + n], np.zeros((), dtype))
        assert out[GUARD : GUARD + n].tobytes() == want.astype(dtype).tobytes()


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("value", [1.5, -0.0, np.nan, -np.inf])
@pytest.mark.parametrize("native", [True, False], ids=["masks", "loop"])
def test_run_filled_with_one_value(dtype, value, native, monkeypatch):
    """``fill_run`` writes its value, bit for bit, over every length around the 64-byte
    registers and from every offset in one, and nothing outside the run: with AVX-512's masked
    stores and, compiled anew with them switched off, as the loop other targets take."""
    from adaptive_pool.cpu import lanes  # noqa: PLC0415

    fill = _fill_with
    if not native:
        monkeypatch.setattr(lanes, "NATIVE_MASKS", False)
        fill = numba.njit(lambda dst, b, n, v: fill_run(dst, b, n, v))
    v = np.array(value, dtype)
    for b in range(GUARD, GUARD + 64 // v.itemsize):
        for n in LENGTHS:
            out = np.random.default_rng(n).standard_normal(2 * GUARD + 200).astype(dtype)
            want = out.copy()
            want[b : b + n] = v
            fill(out, b, n, v[()])
            assert out.tobytes() == want.tobytes(), (b, n)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_runs_and_rows_at_the_arrays_edges(dtype):
    """Runs that are the whole array and windows whose rows start at its first element and end
    at its last: where a 32-lane block would reach past the array, the loads stay masked (16-bit
    lanes without AVX-512 read whole vectors only inside the array)."""
    rng = np.random.default_rng(13)
    acc = np.float64 if np.dtype(dtype) == np.float64 else np.float32
    for n in LENGTHS:
        x = rng.standard_normal(n).astype(np.float32)
        x[rng.random(n) < 0.3] = np.nan
        x = x.astype(dtype)
        plain, skip = _sums(x.view(STORAGE[x.dtype]), 0, n)
        run = x.astype(acc)
        assert np.array(plain[0], acc).tobytes() == np.array(lane_sum(run, acc), acc).tobytes()
        assert np.array(skip[0], acc).tobytes() == np.array(
            lane_sum(run, acc, skipna=True), acc).tobytes()
        assert skip[1] == _count(x.view(STORAGE[x.dtype]), 0, n) == (~np.isnan(run)).sum()
    for nh, nw in [(3, 5), (8, 8), (2, 30), (3, 33)]:
        x = rng.standard_normal(nh * nw).astype(dtype)  # rows back to back: the whole array
        plain, _ = _rows(x.view(STORAGE[x.dtype]), 0, nw, nh, nw, 1, 0)
        want = lane_sum(x.astype(acc), acc)
        assert np.array(plain[0], acc).tobytes() == np.array(want, acc).tobytes(), (nh, nw)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_rows_and_segments_skip_nan_without_avx512(dtype, monkeypatch):
    """Compiled anew without AVX-512's masked loads (the 32 lanes at once), ``rows_sum`` and
    ``add_segment`` with ``skip`` still skip NaN and count the numbers: the lane order of the
    window's numbers (their registers-only path is AVX-512's alone)."""
    from adaptive_pool.cpu import lanes  # noqa: PLC0415

    monkeypatch.setattr(lanes, "NATIVE_MASKS", False)
    rows = numba.njit(lambda x, b, nw, nh: rows_sum(x, b, nw, nh, nw, 1, 0, True))
    segment = numba.njit(lambda a, x, n: add_segment(a, 0, x, 0, n, True))
    rng = np.random.default_rng(17)
    for nw, nh in [(8, 3), (13, 2), (40, 2)]:
        x = rng.standard_normal(nw * nh).astype(dtype)
        x[rng.random(x.size) < 0.3] = np.nan
        want = np.array(lane_sum(x, dtype, skipna=True), dtype).tobytes()
        total, count = rows(x, 0, nw, nh)
        assert np.array(total, dtype).tobytes() == want, (nw, nh)
        assert count == (~np.isnan(x)).sum()
        a = np.zeros(32, dtype)
        _, count = segment(a, x, x.size)
        assert count == (~np.isnan(x)).sum() and not np.isnan(a).any()


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("nan_share", [0.0, 0.3])
def test_window_of_rows_summed_in_lane_order(dtype, nan_share):
    """``rows_sum`` over ``nd x nh`` rows of ``nw``, rows from any lane (wrapping or not, rows
    longer than 32 in several segments), equals the lane order of the window's elements; the
    gaps between rows and the guards are NaN, so a read outside the rows shows."""
    rng = np.random.default_rng(11)
    acc = np.float64 if np.dtype(dtype) == np.float64 else np.float32
    for nd, nh, nw in [(1, 1, 1), (1, 8, 8), (1, 7, 7), (2, 3, 13), (1, 10, 30), (1, 3, 32),
                       (2, 2, 33), (1, 4, 70), (3, 5, 4), (1, 1, 97), (0, 3, 5), (2, 0, 5)]:
        gap = int(rng.integers(1, 6))
        hstep = nw + gap
        dstep = (nh + 1) * hstep
        x = np.full(2 * GUARD + max(nd, 1) * dstep, np.nan, np.float32)
        rows = [GUARD + d * dstep + h * hstep for d in range(nd) for h in range(nh)]
        for r in rows:
            v = rng.standard_normal(nw).astype(np.float32)
            v[rng.random(nw) < nan_share] = np.nan
            x[r : r + nw] = v
        x = x.astype(dtype)
        window = np.concatenate([x[r : r + nw] for r in rows] or [x[:0]]).astype(acc)
        plain, skip = _rows(x.view(STORAGE[x.dtype]), GUARD, nw, nh, hstep, nd, dstep)
        for got, skipna in ((plain, False), (skip, True)):
            want = lane_sum(window, acc, skipna=skipna)
            assert np.array(got[0], acc).tobytes() == np.array(want, acc).tobytes(), (nd, nh, nw)
        assert plain[1] == window.size
        assert skip[1] == (~np.isnan(window)).sum()


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("skip", [False, True])
def test_segment_added_from_its_lane(dtype, skip):
    """``add_segment`` adds element ``j`` of a run into lane ``(L + j) % 32`` of its 32 lanes
    (a view between NaN guards), in ascending ``j`` per lane (NaN skipped with ``skip``), as
    the scalar loop of the contract's order does; returns the next lane and the elements
    added. Lanes hold numbers beforehand (an unreached lane is unchanged); the guards around
    the run and the lanes are NaN, so a stray read or write shows."""
    rng = np.random.default_rng(13)
    acc = np.float64 if np.dtype(dtype) == np.float64 else np.float32
    for L in (0, 1, 5, 16, 31):
        for n in LENGTHS:
            x, xs = _data(rng, n, dtype, 0.3)
            lanes = np.full(32 + 2 * GUARD, np.nan, acc)
            lanes[GUARD : GUARD + 32] = rng.standard_normal(32)
            want = lanes.copy()
            k = 0
            for j, v in enumerate(x[GUARD : GUARD + n].astype(acc)):
                if not (skip and np.isnan(v)):
                    want[GUARD + (L + j) % 32] += v
                    k += 1
            got = _segment(lanes[GUARD : GUARD + 32], L, xs, GUARD, n, skip)
            assert got == ((L + n) % 32, k), (L, n)
            assert lanes.tobytes() == want.tobytes(), (L, n)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("step", [1, 2])
def test_column_counts_over_rows(dtype, step):
    """``add_numbers`` adds each column's numbers over rows ``step`` rows apart to what the
    counts held, and touches no count past ``n``."""
    rng = np.random.default_rng(3)
    for n in LENGTHS:
        for rows in (0, 1, 3):
            w = n + 5
            x = rng.standard_normal((rows * step + 1, w)).astype(np.float32)
            x[rng.random(x.shape) < 0.3] = np.nan
            x = x.astype(dtype)
            col = np.arange(n + 3, dtype=np.int32)
            want = col.copy()
            want[:n] += (~np.isnan(x[: rows * step : step, 2 : 2 + n].astype(np.float32))).sum(0)
            _add(col, x.view(STORAGE[x.dtype]).ravel(), 2, n, rows, step * w)
            np.testing.assert_array_equal(col, want)


@pytest.mark.parametrize("stride", [PLANES, 3 * PLANES])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_planes_interleaved(dtype, stride):
    """``interleave_planes`` puts element i of plane l at ``stride * i + l``, decoded, for
    runs of every length around its blocks of 8 (side by side with others where ``stride`` is
    wider than the 8 planes), and writes nothing else."""
    rng = np.random.default_rng(9)
    acc = np.float64 if np.dtype(dtype) == np.float64 else np.float32
    for n in (0, 1, 7, 8, 9, 16, 23, 70):
        src = rng.standard_normal(600).astype(dtype)
        src[rng.random(src.size) < 0.1] = np.nan
        poff = rng.integers(0, 500, PLANES).astype(np.int64)
        dst = np.full(2 * GUARD + stride * n, 9.0, acc)
        _interleave(dst, GUARD, stride, src.view(STORAGE[src.dtype]), 3, poff, n)
        want = np.full_like(dst, 9.0)
        if n:
            rows = want[GUARD : GUARD + stride * n].reshape(n, stride)
            rows[:, :PLANES] = np.stack([src[3 + p : 3 + p + n] for p in poff], axis=1)
        np.testing.assert_array_equal(dst, want)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_planes_stored_back(dtype):
    """``store_planes`` writes element ``8 i + l`` of the lane-major source to element i of
    plane l, bits unchanged (NaN payloads and -0.0 included), for runs of every length around
    its blocks of 8, and writes nothing else."""
    rng = np.random.default_rng(10)
    st = STORAGE[np.dtype(dtype)]
    bits = np.dtype(st).itemsize * 8
    for n in (0, 1, 7, 8, 9, 16, 23, 70):
        src = rng.integers(0, 1 << bits, 2 * GUARD + PLANES * n, dtype=np.uint64)
        src = src.astype(f"u{bits // 8}").view(st)
        # planes far enough apart not to overlap, in no particular order
        poff = (rng.permutation(PLANES) * (n + 3)).astype(np.int64)
        dst = np.full(PLANES * (n + 3) + 2 * GUARD, 7, f"u{bits // 8}").view(st)
        want = dst.copy()
        _store_planes(dst, GUARD, poff, src, GUARD, n)
        for l, p in enumerate(poff):
            want[GUARD + p : GUARD + p + n] = src[GUARD + l : GUARD + l + PLANES * n : PLANES]
        assert dst.tobytes() == want.tobytes()


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_shares_divided_side_by_side(dtype):
    """``share_planes`` stores one element of each plane, decoded, divided by ``v`` or by the
    counts beside it: the bits of the scalar division, NaN, infinities, signed zeros and counts
    of zero included; no other slot changes."""
    if not vector_runs(np.dtype(STORAGE[np.dtype(dtype)])):
        pytest.skip("float16 runs need F16C")
    rng = np.random.default_rng(11)
    acc = np.float64 if np.dtype(dtype) == np.float64 else np.float32
    src = rng.standard_normal(300).astype(dtype)
    src[:6] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30]
    for o, v in ((0, 3.0), (5, 7.0), (100, 0.1), (3, -0.0)):
        poff = rng.integers(0, 200, PLANES).astype(np.int64)
        poff[:5] = np.arange(5) - o  # the special values among the lanes
        cnt = rng.integers(0, 50, 3 * PLANES).astype(np.int32)
        cnt[PLANES + 2] = 0
        for counted in (False, True):
            a = np.full(3 * PLANES, 5.0, acc)
            want = a.copy()
            by = cnt[PLANES + 1 : 2 * PLANES + 1].astype(acc) if counted else acc(v)
            with np.errstate(all="ignore"):
                want[PLANES : 2 * PLANES] = src[o + poff].astype(acc) / by
            _share_planes(a, PLANES, src.view(STORAGE[src.dtype]), o, poff, acc(v),
                          cnt if counted else None, PLANES + 1)
            assert a.tobytes() == want.tobytes()


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("skip", [None, True], ids=["plain", "skipna"])
def test_block_added_side_by_side(dtype, skip):
    """``add_block`` adds 8 consecutive elements into 8 consecutive slots (NaN as +0.0,
    counted out in the counts beside the slots, with skipna), and touches no other slot or
    count."""
    rng = np.random.default_rng(6)
    src = rng.standard_normal(40).astype(dtype)
    src[rng.random(src.size) < 0.3] = np.nan
    for o in (0, 5, 32):
        a = rng.standard_normal(3 * PLANES).astype(dtype)
        cnt = np.arange(2 * PLANES + 2, dtype=np.int32)
        want_a, want_cnt = a.copy(), cnt.copy()
        v = src[o : o + PLANES]
        q = PLANES
        if skip is None:
            want_a[q : q + PLANES] += v
        else:
            ok = ~np.isnan(v)
            want_a[q : q + PLANES] += np.where(ok, v, 0)
            want_cnt[q : q + PLANES] += ok
        _add_block(a, q, src, o, cnt, skip)
        assert a.tobytes() == want_a.tobytes()
        np.testing.assert_array_equal(cnt, want_cnt)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("lo,hi", [(0, 1), (2, 3), (2, 5), (3, 3), (0, 6)])
def test_blocks_summed_side_by_side(dtype, lo, hi):
    """``sum_blocks`` writes 8 consecutive slots with the sums of columns ``lo .. hi - 1`` of
    8 planes side by side, each from +0.0 (0) in ascending order (an empty range: +0.0; a
    column of -0.0 alone: +0.0), and touches no other slot."""
    rng = np.random.default_rng(7)
    src = (rng.standard_normal(6 * PLANES) * 1e4).astype(dtype)
    if dtype != np.int32:
        src[2 * PLANES : 3 * PLANES : 2] = -0.0
        src[PLANES + 1] = np.inf
    a = rng.standard_normal(3 * PLANES).astype(dtype)
    want = a.copy()
    col = np.zeros(PLANES, dtype)  # +0.0, then each column in turn: the contract's order
    for k in range(lo, hi):
        col = col + src[k * PLANES : (k + 1) * PLANES]
    want[PLANES : 2 * PLANES] = col
    _sum_blocks(a, PLANES, src, lo, hi)
    assert a.tobytes() == want.tobytes()


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("skip", [None, True], ids=["plain", "skipna"])
def test_planes_added_side_by_side(dtype, skip):
    """``add_planes`` adds one element of each of the ``PLANES`` planes into its own slot
    (NaN as +0.0, counted out in the counts beside the slots, with skipna), and touches no
    other slot or count."""
    rng = np.random.default_rng(5)
    src = rng.standard_normal(500).astype(dtype)
    src[rng.random(src.size) < 0.3] = np.nan
    for o in (0, 17, 100):
        poff = rng.integers(0, 400 - o, PLANES).astype(np.int64)
        a = rng.standard_normal(3 * PLANES).astype(dtype)
        cnt = np.arange(2 * PLANES + 2, dtype=np.int32)
        want_a, want_cnt = a.copy(), cnt.copy()
        v = src[o + poff]
        q = PLANES
        if skip is None:
            want_a[q : q + PLANES] += v
        else:
            want_a[q : q + PLANES] += np.where(np.isnan(v), 0.0, v).astype(dtype)
            want_cnt[q : q + PLANES] += ~np.isnan(v)
        _add_planes(a, q, src, o, poff, cnt, skip)
        np.testing.assert_array_equal(a, want_a)
        np.testing.assert_array_equal(cnt, want_cnt)


@pytest.mark.parametrize(
    "src_dtype,dst_dtype",
    [(np.float32, np.float32), (np.float64, np.float64), (np.int16, np.int16),
     (np.uint16, np.uint16), (np.int32, np.int32), (np.int64, np.int64), (np.int32, np.int64)],
    ids=lambda d: np.dtype(d).name,
)
@pytest.mark.parametrize("padded", [True, False], ids=["padded", "exact"])
def test_channel_runs_stored(src_dtype, dst_dtype, padded):
    """``store_channel_runs`` stores output t of channel l (``src[t * P + l]``) at
    ``dst[b + l * stride + t]`` for every t < m and l < nc, blocks of 8 by 8 whole or partial,
    from a buffer padded for whole loads or one of the exact size (masked loads), int32
    indices into int64 sign-extended; nothing else in ``dst`` changes."""
    rng = np.random.default_rng(13)
    for m, nc, P in [(1, 1, 1), (4, 7, 7), (5, 13, 16), (8, 8, 8), (11, 20, 24), (3, 9, 9)]:
        size = (-(-m // 8) * 8 * P + 8) if padded else m * P
        src = rng.integers(-30000, 30000, size).astype(src_dtype)
        stride = m + 3
        dst = np.full(2 + nc * stride + 5, 7, dst_dtype)
        want = dst.copy()
        for l in range(nc):
            want[2 + l * stride : 2 + l * stride + m] = src[l : m * P : P][:m]
        _channel_runs(dst, 2, stride, src, P, m, nc)
        np.testing.assert_array_equal(dst, want, err_msg=str((m, nc, P)))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("H,W", [(1, 1), (3, 7), (14, 14), (5, 63), (4, 64), (2, 33), (9, 50)])
def test_row_words_of_planes(dtype, H, W):
    """``plane_row_words`` gives each row of each of the ``PLANES`` planes (runs of ``H * W``
    at any offsets) the word ``number_bits`` gives it: bit i where element i of the row is a
    number, none above ``W``; rows that straddle two 64-bit words, and rows of 64; it writes
    no other slot and reads nothing outside the runs (NaN guards around them)."""
    rng = np.random.default_rng(12)
    n = H * W
    starts = GUARD + np.cumsum(rng.integers(0, 5, PLANES)) + np.arange(PLANES) * n
    x = rng.standard_normal(int(starts[-1]) + n + GUARD).astype(np.float32)
    x[rng.random(x.size) < 0.3] = np.nan
    x = x.astype(dtype)
    xs = x.view(STORAGE[x.dtype])
    out = np.full((H + 2) * PLANES, -5, np.int64)
    words = np.empty((-(-n // 64) + 1) * PLANES, np.int64)
    b = 3
    _plane_row_words(out, PLANES, xs, b, (starts - b).astype(np.int64), H, W, words)
    for l, s in enumerate(starts):
        for h in range(H):
            row = ~np.isnan(x[s + h * W : s + (h + 1) * W].astype(np.float32))
            want = sum(1 << int(i) for i in np.flatnonzero(row))
            got = int(out[PLANES + h * PLANES + l]) % (1 << 64)
            assert got == want, (l, h)
    assert (out[:PLANES] == -5).all() and (out[(H + 1) * PLANES :] == -5).all()


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_row_bits_and_window_popcounts(dtype):
    """``number_bits`` (and ``number_word``) sets bit i where element i of a row of at most 64
    is a number (reading nothing past it); ``count_ones`` counts a word's set bits;
    ``count_bits`` adds the bits a column mask selects over rows, for the
    ``PLANES`` planes side by side."""
    rng = np.random.default_rng(11)
    for n in (0, 1, 7, 31, 32, 33, 63, 64):
        x, xs = _data(rng, n, dtype, 0.3)
        out = np.full(3, -5, np.int64)
        _bits(out, 1, xs, GUARD, n)
        numbers = ~np.isnan(x[GUARD : GUARD + n].astype(np.float32))
        want = sum(1 << int(i) for i in np.flatnonzero(numbers))
        assert int(out[1]) & ((1 << 64) - 1) == want and out[0] == out[2] == -5
        assert int(_word(xs, GUARD, n)) & ((1 << 64) - 1) == want
    # count_ones: the set bits of a word, the sign bit included
    for word in (0, 1, -1, -(2**63), 2**63 - 1, *rng.integers(-(2**63), 2**63 - 1, 8)):
        assert _ones(np.int64(word)) == bin(int(word) % (1 << 64)).count("1")
    rows = 5
    bits = rng.integers(-(2**63), 2**63 - 1, (rows + 1) * PLANES, dtype=np.int64)
    for ws, we in ((0, 1), (3, 17), (0, 64), (40, 64)):
        wmask = sum(1 << w for w in range(ws, we))
        wmask = wmask - (1 << 64) if wmask >= 1 << 63 else wmask
        cnt = np.full(PLANES + 2, -1, np.int32)
        _count_bits(cnt, 1, bits, PLANES, rows, wmask)
        u = bits.view(np.uint64).reshape(rows + 1, PLANES)[1:]
        m = wmask % (1 << 64)
        want = [sum(bin(int(r) & m).count("1") for r in u[:, l]) for l in range(PLANES)]
        np.testing.assert_array_equal(cnt[1 : PLANES + 1], want)
        assert cnt[0] == cnt[-1] == -1
