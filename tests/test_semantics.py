"""DESIGN §3: what each operator computes, against the reference and against PyTorch."""

from __future__ import annotations

import numpy as np
import pytest

import adaptive_pool as ap
import reference as ref
from support import (
    ALL_DTYPES, DTYPE_IDS, F32, F64, bits, channels_last, out_spatial, rand, small_ints, tol,
)

FLOATS = pytest.mark.parametrize("dtype", [F32, F64], ids=["float32", "float64"])

# PyTorch's own sample inputs (torch/testing/_internal/common_methods_invocations.py).
AVG_CASES = [
    ((1, 8, 8, 8), (5, 7)),
    ((2, 8, 8, 8), (None, 7)),
    ((1, 8, 4, 3), (5, None)),
    ((1, 8, 4, 3), (None, None)),
    ((1, 8, 4, 3), 5),
    ((8, 8, 8), (5, 7)),  # un-batched (C, H, W)
    ((2, 3, 4, 3), (9, 11)),  # upsampling
    ((2, 3, 12, 9), (4, 3)),  # divisible
    ((2, 11, 9, 7), (4, 3)),  # 8 planes side by side, then 3 alone (CPU)
    ((3, 17, 7, 7), 1),  # global pooling
]
MAX_CASES = [
    ((1, 4, 4, 3, 5), (None, None, None)),
    ((1, 4, 4, 3, 5), (1, 1, 1)),
    ((3, 3, 4, 4, 6), (2, 3, None)),
    ((1, 3, 4, 4, 6), (3, None, 2)),
    ((3, 3, 4, 4, 6), (None, 3, 2)),
    ((4, 4, 3, 5), (2, 2, 3)),  # un-batched (C, D, H, W)
    ((2, 3, 12, 9, 3), 3),  # divisible
    ((2, 3, 6, 4, 10), (3, 4, 5)),  # divisible
    ((1, 2, 2, 3, 2), (5, 4, 7)),  # upsampling
]


def _ids(cases):
    return [f"{s}->{o}".replace(" ", "") for s, o in cases]


def _assert_close_ref(got, want64, dtype):
    rtol, atol = tol(dtype)
    assert got.dtype == dtype
    np.testing.assert_allclose(got.astype(np.float64), want64, rtol=rtol, atol=atol)


# -- against the reference ----------------------------------------------------------------------
@FLOATS
@pytest.mark.parametrize("shape,output_size", AVG_CASES, ids=_ids(AVG_CASES))
def test_avg_forward_and_backward_vs_reference(shape, output_size, dtype):
    x = rand(shape, dtype, seed=1)
    y = ap.adaptive_avg_pool2d(x, output_size)
    assert y.shape == shape[:-2] + out_spatial(output_size, shape[-2:])
    assert y.flags.c_contiguous
    _assert_close_ref(y, ref.avg_pool2d(x, output_size), dtype)
    g = rand(y.shape, dtype, seed=2)
    gi = ap.adaptive_avg_pool2d_backward(g, x)
    assert gi.shape == x.shape and gi.flags.c_contiguous
    _assert_close_ref(gi, ref.avg_pool2d_backward(g, x.shape), dtype)


@FLOATS
@pytest.mark.parametrize("shape,output_size", MAX_CASES, ids=_ids(MAX_CASES))
def test_max_forward_and_backward_vs_reference(shape, output_size, dtype):
    x = rand(shape, dtype, seed=3)
    y, idx = ap.adaptive_max_pool3d(x, output_size)
    want_y, want_i = ref.max_pool3d(x, output_size)
    assert y.shape == idx.shape == shape[:-3] + out_spatial(output_size, shape[-3:])
    assert idx.dtype == np.int32  # CANN's default
    np.testing.assert_array_equal(y, want_y.astype(dtype))  # the max is a copy: exact
    np.testing.assert_array_equal(idx, want_i)
    g = rand(y.shape, dtype, seed=4)
    gi = ap.adaptive_max_pool3d_backward(g, x, idx)
    assert gi.shape == x.shape and gi.dtype == dtype
    _assert_close_ref(gi, ref.max_pool3d_backward(g, x.shape, idx), dtype)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize(
    "shape,output_size",
    [
        ((2, 3, 5, 7, 9), (3, 4, 5)),
        ((1, 2, 3, 4, 5), (5, 6, 7)),
        ((2, 3, 4, 6, 8), (2, 3, 4)),  # disjoint windows
        ((1, 9, 1, 1, 1024), (1, 1, 64)),
        ((2, 9, 1, 1, 999), (1, 1, 50)),  # rows, elements in two windows at most
        ((2, 9, 1, 1, 9), (2, 3, 5)),  # rows, each output row again along h and d
        ((2, 9, 2, 10, 12), (1, 1, 1)),  # global: a work item of many planes
        ((2, 9, 1, 35, 60), (1, 1, 9)),  # few outputs a plane: many planes unless 16-bit
        ((2, 9, 2, 7, 7), (2, 7, 7)),  # windows of one element: every element written, not zeroed
        ((2, 9, 1, 5, 53), (1, 1, 61)),  # upsampled along w by less than 2: scattered one by one
        ((2, 9, 1, 4, 10), (1, 4, 25)),  # by 2.5: consecutive outputs' shared keys in a register
    ],
)
def test_max_backward_paths_agree_bit_for_bit(shape, output_size, dtype, knobs):
    """The CPU max backward's ways (sparse writes into zeroed planes of its own result or,
    checked whole first, of a dense out=; the checked gather into a strided out= and when plane
    accumulators exceed their budget; the sparse one a plane or many planes a work item) give
    the same bits, with windows that overlap and upsample so elements receive several
    gradients, and disjoint ones (16-bit results written straight); the sparse one also with
    indices whose planes are not one run.
    Gradients of -0.0 give +0.0 (sums start at +0.0)."""
    x = small_ints(shape, dtype, seed=11, high=2)  # many ties: many shared indices
    _, idx = ap.adaptive_max_pool3d(x, output_size)
    g = rand(idx.shape, dtype, seed=12)
    g.reshape(-1)[::5] = -0.0
    g.reshape(-1)[1::7] = np.inf
    g.reshape(-1)[2::11] = np.nan
    sparse = ap.adaptive_max_pool3d_backward(g, x, idx)
    strided = ap.adaptive_max_pool3d_backward(g, x, channels_last(idx))
    out = np.full(shape, np.nan, dtype)
    ap.adaptive_max_pool3d_backward(g, x, idx, out=out)
    out_strided = channels_last(np.full(shape, np.nan, dtype))
    ap.adaptive_max_pool3d_backward(g, x, idx, out=out_strided)
    # chunks of several planes, taken one, two and all planes a work item
    m = int(np.prod(output_size))
    per = int(np.prod(shape[2:])) + m
    knobs(_CHUNKS_PER_THREAD=1)
    grouped = []
    for planes in (1, 2, 64):
        knobs(_SPARSE_GROUP=planes * per, _SPARSE_GROUP_WIDE=planes * per,
              _SPARSE_GROUP_OUTPUTS=planes * m)
        grouped.append(ap.adaptive_max_pool3d_backward(g, x, idx))
    knobs(_SPARSE_SCRATCH=0)
    gathered = ap.adaptive_max_pool3d_backward(g, x, idx)
    for a in grouped:
        np.testing.assert_array_equal(bits(sparse), bits(a))
    np.testing.assert_array_equal(bits(sparse), bits(strided))
    np.testing.assert_array_equal(bits(sparse), bits(out))
    np.testing.assert_array_equal(bits(sparse), bits(out_strided))
    np.testing.assert_array_equal(bits(sparse), bits(gathered))
    if dtype in (F32, F64):  # 16-bit accuracy has its own measure (test_dtypes.py)
        _assert_close_ref(sparse, ref.max_pool3d_backward(g, x.shape, idx), dtype)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("width,size", [(999, 50), (100, 30), (100, 300), (37, 36)])
def test_max_backward_of_rows_takes_any_indices_inside_their_windows(width, size, dtype, knobs):
    """Planes of one row, indices anywhere inside their windows (not only the forward's:
    neighbours that share an element pick it or not at random): the sparse backward, which
    keeps a 16-bit element's sum in a register while consecutive outputs add to it (rows of
    no more outputs than elements), gives the checked gather's bits; upsampled rows too."""
    rng = np.random.default_rng(width + size)
    wins = ref.windows(width, size)
    starts = np.array([a for a, _ in wins])
    lengths = np.array([b - a for a, b in wins])
    # a third on the window's first element, a third on its last (those neighbours share),
    # a third anywhere in it
    anywhere = starts + (rng.random((3, 40, size)) * lengths).astype(np.int64)
    r = rng.random(anywhere.shape)
    idx = np.where(r < 1 / 3, starts, np.where(r < 2 / 3, starts + lengths - 1, anywhere))
    idx = idx.astype(np.int32)
    x = np.zeros((3, 40, width), dtype)
    g = rand(idx.shape, dtype, seed=13)
    g.reshape(-1)[::5] = -0.0
    sparse = ap.adaptive_max_pool1d_backward(g, x, idx)
    knobs(_SPARSE_SCRATCH=0)
    gathered = ap.adaptive_max_pool1d_backward(g, x, idx)
    np.testing.assert_array_equal(bits(sparse), bits(gathered))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize(
    "shape,output_size", [((2, 3, 7, 9, 10), (3, 4, 3)), ((1, 2, 3, 4, 5), (5, 6, 7))]
)
@pytest.mark.parametrize("data", ["ties", "nans"])
def test_max_forward_paths_agree_with_reference(shape, output_size, dtype, data, knobs):
    """The CPU max forward's ways of locating a maximum (positions kept while reducing, or a
    second scan) and of reading an item's rows (one flat block, row by row, at a stride),
    over many output rows an item or one, all give the reference's value and index."""
    x = small_ints(shape, dtype, seed=16, high=3)
    if data == "nans":
        x[np.random.default_rng(17).random(shape) < 0.1] = np.nan
    want_y, want_i = ref.max_pool3d(x, output_size)
    sliced = np.pad(x, [(0, 0)] * 4 + [(1, 2)])[..., 1:-2]  # rows not one run
    for tracked, block in [(1 << 31, 1 << 13), (1, 1 << 13), (1 << 31, 1), (1, 1)]:
        knobs(_TRACKED_WINDOW=tracked)
        knobs(_MAX_BLOCK=block)
        for v in (x, sliced, channels_last(x)):
            y, idx = ap.adaptive_max_pool3d(v, output_size)
            np.testing.assert_array_equal(bits(y), bits(want_y.astype(dtype)))
            np.testing.assert_array_equal(idx, want_i)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize(
    "shape,output_size",
    [((2, 3, 7, 9, 10), (1, 1, 1)), ((2, 3, 4, 5, 70), (None, 1, 1)),
     ((2, 3, 4, 5, 6), (4, 5, 1)), ((1, 2, 1, 3, 200), (1, 3, 1)),
     ((2, 3, 2, 3, 150), (2, 3, 7)), ((1, 9, 1, 1, 14), (1, 1, 14)), ((2, 2, 1, 1, 13), (1, 1, 9)),
     ((2, 3, 1, 2, 40), (1, 2, 7)), ((1, 4, 1, 1, 72), (1, 1, 9)), ((1, 4, 1, 1, 81), (1, 1, 9)),
     ((2, 3, 1, 1, 12), (1, 1, 4)), ((1, 4, 1, 3, 28), (1, 3, 7))],  # windows of 3 and 4
)
@pytest.mark.parametrize("skipna", [False, True])
def test_max_forward_of_windows_that_are_runs(shape, output_size, dtype, skipna, knobs):
    """Where every window is one run of memory (global pooling, (None, 1), windows along
    rows: every 1-D problem) the max forward takes a kernel of its own, in C order; laid out
    otherwise, the general one. Both give the reference's value and index: ties (the first
    maximum), NaN (the last one, or never with skipna), a plane of NaN only, -inf, windows
    over 64 elements, windows of one element, of 3-8 and 9 (scanned element by element up to
    ``SHORT_RUN`` or ``SHORT_RUN_32``, in passes above), overlapping windows (not upsampling
    rows, which the general kernel takes)."""
    x = small_ints(shape, dtype, seed=18, high=3)
    x[np.random.default_rng(19).random(shape) < 0.1] = np.nan
    x[0, 0] = np.nan
    x[0, 1, ..., -1] = -np.inf
    want_y, want_i = ref.max_pool(x, output_size, 3, skipna=skipna)
    for runs in (True, False):
        if not runs:
            knobs(_run_windows=lambda *args: False, _row_windows=lambda *args: False)
        for v in (x, channels_last(x)):
            for index_dtype in (np.int32, np.int64):
                y, idx = ap.adaptive_max_pool3d(
                    v, output_size, skipna=skipna, index_dtype=index_dtype
                )
                np.testing.assert_array_equal(bits(y), bits(want_y.astype(dtype)))
                np.testing.assert_array_equal(idx, want_i)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize(
    "shape,output_size",
    [((2, 3, 1, 7, 7), (1, 7, 7)), ((1, 4, 17, 6, 4), (19, 6, 4)), ((1, 2, 6, 3, 3), (2, 3, 3)),
     ((2, 2, 1, 1, 9), (1, 1, 9))],
)
@pytest.mark.parametrize("skipna", [False, True])
def test_max_forward_of_one_element_rows_takes_planes_as_rows(
    shape, output_size, dtype, skipna, monkeypatch
):
    """Windows one element in h and w (the identity, or deep in d only) where each plane's rows
    follow each other: the max forward takes each plane as one row (``_identity_rows``), whose
    flat indices are the plane's; row by row where rows do not follow. Both give the
    reference's values and indices (ties, NaN, -inf)."""
    from adaptive_pool.cpu import backend  # noqa: PLC0415

    x = small_ints(shape, dtype, seed=21, high=3)
    x[np.random.default_rng(22).random(shape) < 0.1] = np.nan
    x[0, 0, ..., -1] = -np.inf
    want_y, want_i = ref.max_pool(x, output_size, 3, skipna=skipna)
    merged = []
    identity_rows = backend._identity_rows
    monkeypatch.setattr(backend, "_identity_rows", lambda tab, dims, *g: (
        lambda r: (merged.append(r[0] != dims), r)[1])(identity_rows(tab, dims, *g)))
    sliced = np.pad(x, [(0, 0)] * 4 + [(0, 1)])[..., :-1]  # rows not one run
    for view, merges in ((x, shape[3] > 1), (sliced, False)):
        merged.clear()
        ap.clear_cache()
        y, idx = ap.adaptive_max_pool3d(view, output_size, skipna=skipna)
        np.testing.assert_array_equal(bits(y), bits(want_y.astype(dtype)))
        np.testing.assert_array_equal(idx, want_i)
        assert set(merged) == {merges}


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize(
    "shape,output_size",
    [((2, 11, 9, 40), (4, 2)), ((3, 17, 7, 7), (1, 1)), ((1, 9, 6, 5), (9, 7)),
     ((1, 9, 37, 6), (1, None)), ((1, 9, 5, 45), (None, 1))],
)
def test_avg_loop_orders_agree_bit_for_bit(shape, output_size, dtype, knobs, monkeypatch):
    """The CPU average forward's loop orders (window by window, row by row, columns side by
    side, 8 planes side by side; 16-bit planes or bands decoded whole or not) give the same
    bits: the summation order is the contract (the lane order), not the loop order."""
    from adaptive_pool.cpu import backend  # noqa: PLC0415

    x = rand(shape, dtype, seed=13)
    xv = channels_last(x)
    got = {}
    columns = output_size[-1] in (None, shape[-1]) and shape[-1] > 1
    for name, order, band in [
        ("direct", "direct", 1 << 16),
        ("chosen", None, 1 << 16),
        ("chosen_rows", None, 0),  # 16-bit: bands too long to decode go row by row
        ("rowwise", "rowwise", 1 << 16),
        ("columns", "columns" if columns else "direct", 1 << 16),
        ("lanewise", "lanewise", 1 << 16),  # 16-bit planes decoded whole
        ("lanewise_bands", "lanewise", 0),  # 16-bit bands decoded output row by row
        # one chunk: every output row after the first reuses (or replaces) decoded planes
        ("lanewise_one_chunk", "lanewise", 1 << 16),
    ]:
        if name.endswith("one_chunk"):
            monkeypatch.setattr(backend.BACKEND, "_chunks", lambda items, serial=False: 1)
            knobs()
        knobs(_FORCE_ORDER=order)
        knobs(_DECODED_BAND=band)
        got[name] = [bits(ap.adaptive_avg_pool2d(v, output_size)) for v in (x, xv)]
    want = bits(ref.avg_pool_in_order(x, output_size, 2))
    np.testing.assert_array_equal(got["direct"][0], want)
    for name in got:
        for a, b in zip(got["direct"], got[name]):
            np.testing.assert_array_equal(a, b, err_msg=name)
    if dtype in (F32, F64):
        _assert_close_ref(ap.adaptive_avg_pool2d(x, output_size), ref.avg_pool2d(x, output_size),
                          dtype)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize(
    "shape,output_size",
    [((2, 11, 9, 7), (4, 3)), ((3, 17, 7, 7), (1, 1)), ((1, 9, 6, 5), (9, 7)), ((2, 8, 5, 6), (2, 5)),
     ((2, 9, 7, 6), (7, 1)), ((2, 9, 3, 70), (2, 4)), ((2, 9, 8, 6), (4, 3)),
     ((2, 3, 9, 10), (4, 3)), ((1, 2, 12, 12), (5, 5))],  # (few planes, 8 side by side)
)
def test_avg_backward_paths_agree_bit_for_bit(shape, output_size, dtype, knobs):
    """The CPU average backward's kernels (row blocks of one plane; 8 planes side by side
    with a partial last block, or fewer planes than 8, gathering each input's shares (one
    window a column where the windows tile the rows) or, for long windows, adding each output's
    share over its window; a window at a time where windows are runs of memory: global pooling,
    whole rows) give the same bits, in C order and channels-last."""
    from adaptive_pool.cpu import backend  # noqa: PLC0415

    x = rand(shape, dtype, seed=14)
    g = rand(shape[:2] + output_size, dtype, seed=15)
    gv = channels_last(g)
    runs, never = backend._run_windows, lambda *args: False
    got = {}
    for name, plane, windows in [("rows", 0, never), ("lanes", 10**9, never), ("runs", 0, runs)]:
        knobs(_LANES_PLANE=plane, _LANES_SCRATCH=plane, _run_windows=windows)
        got[name] = [bits(ap.adaptive_avg_pool2d_backward(v, x)) for v in (g, gv)]
        out = np.empty(shape[:2] + shape[:1:-1], dtype).swapaxes(-1, -2)  # a strided result
        ap.adaptive_avg_pool2d_backward(g, x, out=out)
        got[name].append(bits(out))
    for other in ("lanes", "runs"):
        for a, b in zip(got["rows"], got[other]):
            np.testing.assert_array_equal(a, b, err_msg=other)
    if dtype in (F32, F64):
        _assert_close_ref(ap.adaptive_avg_pool2d_backward(g, x),
                          ref.avg_pool2d_backward(g, x.shape), dtype)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize(
    "shape,output_size",
    [((1, 9, 559), 11), ((2, 3, 17), 5), ((2, 9, 64), 8), ((1, 10, 1000), 7), ((3, 2, 9), 4)],
)
@pytest.mark.parametrize("skipna", [False, True])
def test_avg_backward_of_windows_along_rows(shape, output_size, dtype, skipna, knobs):
    """The average backward a row of windows at a time (1-D problems, windows overlapping by
    one element or disjoint) gives the bits of the 8-plane and row-block kernels and of a
    strided result, which takes the gather; -0.0 gradients give +0.0, NaN inputs +0.0."""
    x = rand(shape, dtype, seed=21)
    if skipna:
        x.reshape(-1)[::7] = np.nan
        x[0, 0, :3] = np.nan  # a window of NaN only
    g = rand(shape[:2] + (output_size,), dtype, seed=22)
    g.reshape(-1)[::4] = -0.0
    got = {}
    for name, row_window, plane in [("runs", 2, 10**9), ("lanes", 10**9, 10**9),
                                    ("rows", 10**9, 0)]:
        knobs(_ROW_WINDOW=row_window, _LANES_PLANE=plane, _LANES_SCRATCH=plane)
        got[name] = bits(ap.adaptive_avg_pool1d_backward(g, x, skipna=skipna))
    out = np.empty(shape[:2] + (2 * shape[2],), dtype)[..., ::2]
    ap.adaptive_avg_pool1d_backward(g, x, skipna=skipna, out=out)
    got["strided"] = bits(out)
    for other in ("lanes", "rows", "strided"):
        np.testing.assert_array_equal(got["runs"], got[other], err_msg=other)
    if dtype in (F32, F64):
        want = ref.avg_pool_backward(g, x.shape, 1, x if skipna else None)
        _assert_close_ref(ap.adaptive_avg_pool1d_backward(g, x, skipna=skipna), want, dtype)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize(
    "shape,output_size",
    [((2, 3, 37, 20), (33, 1)),  # windows of 1-2 whole rows
     ((2, 3, 10, 50), (6, 1)),
     ((1, 2, 9, 40), (4, 1)),
     ((2, 3, 5, 9, 10), (None, 4, 1)),  # rows of one d each
     ((1, 2, 16, 7, 7), (4, 1, 1)),  # whole planes over d
     ((2, 2, 9, 5, 6), (4, 1, 1))],
)
@pytest.mark.parametrize("skipna", [False, True])
def test_windows_of_whole_rows_as_runs(shape, output_size, dtype, skipna, knobs, monkeypatch,
                                      launched):
    """Windows of whole rows over h, one d each, or of whole planes over d, are runs of the
    merged axes (``_window_runs``): the average forward and backward and the max forward take
    them on the runs kernels, with the reference's maxima and indices (ties, NaN, -inf), its
    lane-order sums and the bits of the other kernels' backward. Not where the merged axes are
    not one run: rows that do not follow each other, outputs that do not (``out=``)."""
    from adaptive_pool.cpu import backend, tiers  # noqa: PLC0415

    rank = len(output_size)
    avg, mx = (getattr(ap, f"adaptive_{k}_pool{rank}d") for k in ("avg", "max"))
    avg_backward = getattr(ap, f"adaptive_avg_pool{rank}d_backward")
    x = small_ints(shape, dtype, seed=31, high=3)  # ties
    x[np.random.default_rng(32).random(shape) < (0.2 if skipna else 0.02)] = np.nan
    x[0, 0, ..., -1] = -np.inf
    x[-1, -1, ..., :2, :] = np.nan  # (skipna) a window of NaN only
    g = rand(shape[:2] + out_spatial(output_size, shape[2:]), dtype, seed=33)
    g.reshape(-1)[::3] = -0.0
    sliced = np.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, 1)])[..., :-1]  # rows not one run
    runs = {"avg_pool_runs", "max_pool_runs", "avg_pool_backward_runs"}
    got = {}
    for name, merge in (("merged", backend._window_runs), ("other", lambda *a: None),
                        ("baseline", backend._window_runs)):  # (it reads the merged tables)
        monkeypatch.setattr(tiers, "MODE", "baseline" if name == "baseline" else "tuned")
        knobs(_window_runs=merge)
        launched.clear()
        got[name] = [bits(avg(x, output_size, skipna=skipna)),
                     *map(bits, mx(x, output_size, skipna=skipna)),
                     bits(avg_backward(g, x, skipna=skipna))]
        assert runs <= set(launched) if name != "other" else not runs & set(launched)
        if name == "merged":  # the other kernels, with the merge on
            launched.clear()
            y = avg(x, output_size, skipna=skipna)
            out = np.empty(y.shape[:-1] + (2,), dtype)[..., :1]  # outputs not at w's stride
            got["sliced"] = [bits(avg(sliced, output_size, skipna=skipna)),
                             bits(avg(x, output_size, skipna=skipna, out=out)),
                             *map(bits, mx(sliced, output_size, skipna=skipna)),
                             bits(avg_backward(g, sliced, skipna=skipna) if skipna
                                  else avg_backward(g, x, skipna=skipna,
                                                    out=np.empty(shape + (2,), dtype)[..., 0]))]
            assert not runs & set(launched)
    for other in ("other", "baseline"):
        for a, b in zip(got["merged"], got[other]):
            np.testing.assert_array_equal(a, b, err_msg=other)
    m = got["merged"]
    for a, b in zip([m[0], m[0], *m[1:]], got["sliced"]):
        np.testing.assert_array_equal(a, b)
    want_y, want_i = ref.max_pool(x, output_size, rank, skipna=skipna)
    np.testing.assert_array_equal(m[1], bits(want_y.astype(dtype)))
    np.testing.assert_array_equal(m[2], want_i)
    np.testing.assert_array_equal(m[0], bits(ref.avg_pool_in_order(x, output_size, rank, skipna)))
    if dtype in (F32, F64):
        want = ref.avg_pool_backward(g, x.shape, rank, x if skipna else None)
        _assert_close_ref(avg_backward(g, x, skipna=skipna), want, dtype)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize(
    "shape,output_size,columns",
    [((2, 9, 8, 12), (1, 12), True),  # (1, None)
     ((2, 3, 9, 10), (3, 10), True),  # bands of three rows
     ((1, 9, 6, 16), (6, 16), True),  # output size = input size
     ((2, 3, 4, 7, 9), (2, 7, 9), True),  # one element in h and w: rows of the whole plane
     ((1, 3, 4, 6, 4), (2, 6, 4), True),  # (planes of 24, rows of 4)
     ((2, 3, 6, 5, 9), (3, 5, 9), True),
     ((1, 2, 4, 6, 11), (2, 3, 11), True),  # bands of 2 d x 2 h rows
     ((2, 3, 6, 5, 9), (2, 3, 9), False),  # windows overlap in h: the other kernels
     ((2, 3, 9, 10), (4, 10), False),
     ((2, 9, 8, 4), (2, 4), False)],  # rows narrower than _COLUMNS_WIDTH
)
@pytest.mark.parametrize("skipna", [False, True])
def test_avg_backward_of_column_windows(shape, output_size, columns, dtype, skipna, knobs,
                                        monkeypatch):
    """Windows one column wide that tile d and h take the columns kernel (an output row's
    shares stored into each row of its band), which gives the bits of the other kernels, also
    with channels-last gradients and inputs; -0.0 gradients give +0.0, NaN inputs +0.0 and a
    window of NaN only nothing."""
    from adaptive_pool.cpu import backend, kernels  # noqa: PLC0415

    rank = len(output_size)
    x = rand(shape, dtype, seed=23)
    if skipna:
        x.reshape(-1)[::5] = np.nan
        x[0, 0] = np.nan  # a plane of NaN only
    g = rand(shape[:2] + output_size, dtype, seed=24)
    g.reshape(-1)[::3] = -0.0
    backward = getattr(ap, f"adaptive_avg_pool{rank}d_backward")
    chosen = []
    runner = backend.CpuBackend._runner
    monkeypatch.setattr(backend.CpuBackend, "_runner",
                        lambda self, k, work: (chosen.append(k), runner(self, k, work))[1])
    got = {}
    for name, width in [("columns", backend._COLUMNS_WIDTH), ("others", 10**9)]:
        knobs(_COLUMNS_WIDTH=width)
        chosen.clear()
        got[name] = [bits(backward(a, b, skipna=skipna))
                     for a in (g, channels_last(g)) for b in (x, channels_last(x))]
        used = kernels.avg_pool_backward_columns in chosen
        assert used == (columns and name == "columns"), name
    for a, b in zip(got["columns"], got["others"]):
        np.testing.assert_array_equal(a, b)
    if dtype in (F32, F64):
        want = ref.avg_pool_backward(g, x.shape, rank, x if skipna else None)
        got = backward(g, x, skipna=skipna)
        assert not (np.signbit(got) & (got == 0)).any()  # no -0.0
        _assert_close_ref(got, want, dtype)


@pytest.mark.parametrize("dtype", [F32, np.float16], ids=["float32", "float16"])
@pytest.mark.parametrize(
    "shape,output_size",
    [((8, 1, 6, 12, 12), (2, 3, 3)), ((16, 1, 9, 9), (4, 4)), ((3, 5, 7, 10), (3, 4)),
     ((4, 2, 33), (5,))],
)
@pytest.mark.parametrize("skipna", [False, True])
def test_samples_taken_as_channels(shape, output_size, dtype, skipna, knobs, monkeypatch):
    """Where the samples' planes follow each other (C order), the average takes them as more
    channels (8 planes side by side from 8 on): each sample's result is the one it has alone,
    bit for bit, forward and backward; a view whose samples do not follow is taken as it is."""
    from adaptive_pool.cpu import backend  # noqa: PLC0415

    rank = len(output_size)
    forward = getattr(ap, f"adaptive_avg_pool{rank}d")
    backward = getattr(ap, f"adaptive_avg_pool{rank}d_backward")
    x = rand(shape, dtype, seed=25)
    if skipna:
        x.reshape(-1)[::6] = np.nan
    g = rand(shape[:2] + output_size, dtype, seed=26)
    folded = []
    fold = backend._samples_as_channels
    monkeypatch.setattr(backend, "_samples_as_channels",
                        lambda dims, *geo: (lambda r: (folded.append(r != dims), r)[1])(
                            fold(dims, *geo)))
    knobs()
    y, gi = forward(x, output_size, skipna=skipna), backward(g, x, skipna=skipna)
    assert folded and all(folded)
    alone = [(forward(x[i : i + 1], output_size, skipna=skipna),
              backward(g[i : i + 1], x[i : i + 1], skipna=skipna)) for i in range(shape[0])]
    np.testing.assert_array_equal(bits(y), bits(np.concatenate([a for a, _ in alone])))
    np.testing.assert_array_equal(bits(gi), bits(np.concatenate([b for _, b in alone])))
    folded.clear()
    apart = np.stack([x, x], axis=1)[:, 0]  # samples twice as far apart as the planes are long
    np.testing.assert_array_equal(bits(forward(apart, output_size, skipna=skipna)), bits(y))
    assert folded and not any(folded)


def test_small_integer_data_is_exact():
    # Exact sums: float32 results equal the reference rounded once (ties, repeated cells).
    x = small_ints((2, 3, 7, 9), F32, seed=5, high=5)
    for osz in ((3, 4), (7, 9), (10, 13), (1, 1)):
        y = ap.adaptive_avg_pool2d(x, osz)
        np.testing.assert_array_equal(y, ref.avg_pool2d(x, osz).astype(F32))
        g = small_ints(y.shape, F32, seed=6, high=7)
        gi = ap.adaptive_avg_pool2d_backward(g, x)
        np.testing.assert_allclose(gi, ref.avg_pool2d_backward(g, x.shape), rtol=1e-6)
    v = small_ints((2, 2, 5, 4, 7), F32, seed=7, high=4)
    y, idx = ap.adaptive_max_pool3d(v, (2, 3, 3))
    g = small_ints(y.shape, F32, seed=8, high=9)
    np.testing.assert_array_equal(
        ap.adaptive_max_pool3d_backward(g, v, idx), ref.max_pool3d_backward(g, v.shape, idx)
    )


def test_identity_sizes_copy_the_input():
    x = rand((2, 3, 5, 6), F64, seed=9)
    np.testing.assert_array_equal(ap.adaptive_avg_pool2d(x, (None, None)), x)
    np.testing.assert_array_equal(ap.adaptive_avg_pool2d_backward(x, x), x)
    v = rand((2, 3, 4, 5, 6), F64, seed=10)
    y, idx = ap.adaptive_max_pool3d(v, (4, 5, 6))
    np.testing.assert_array_equal(y, v)
    np.testing.assert_array_equal(idx.ravel(), np.tile(np.arange(120), 6))


# -- documented examples ------------------------------------------------------------------------
def test_arange_max_pool_indices():
    x = np.arange(1, 257, dtype=F32).reshape(2, 2, 4, 4, 4)
    y, idx = ap.adaptive_max_pool3d(x, 2)
    want = np.array([21, 23, 29, 31, 53, 55, 61, 63]).reshape(2, 2, 2)
    for n in range(2):
        for c in range(2):
            np.testing.assert_array_equal(idx[n, c], want)  # per-plane offsets
            np.testing.assert_array_equal(y[n, c], x[n, c].ravel()[want])
    np.testing.assert_array_equal(y.ravel()[:8], want.ravel() + 1)


def test_cann_avg_backward_example():
    g = np.arange(1, 7, dtype=F32).reshape(1, 1, 3, 2)
    x = np.zeros((1, 1, 4, 2), F32)
    gi = ap.adaptive_avg_pool2d_backward(g, x)
    np.testing.assert_array_equal(gi.ravel(), [0.5, 1, 2, 3, 4, 5, 2.5, 3])


def test_avg_docstring_example():
    y = ap.adaptive_avg_pool2d(np.arange(6.0).reshape(1, 2, 3), (1, 2))
    np.testing.assert_array_equal(y, [[[2.0, 3.0]]])


# -- max rules ----------------------------------------------------------------------------------
def test_ties_keep_the_first_maximum():
    x = np.zeros((1, 1, 2, 3, 4), F64)
    y, idx = ap.adaptive_max_pool3d(x, 1)
    assert idx.item() == 0
    x[0, 0, 1, 2, 1] = 1.0
    x[0, 0, 1, 2, 3] = 1.0
    y, idx = ap.adaptive_max_pool3d(x, 1)
    assert idx.item() == (1 * 3 + 2) * 4 + 1 and y.item() == 1.0


def test_nan_propagates_with_the_last_nans_index():
    x = np.arange(24, dtype=F32).reshape(1, 1, 2, 3, 4)
    x[0, 0, 0, 1, 1] = np.nan
    x[0, 0, 1, 0, 2] = np.nan
    x[0, 0, 1, 2, 3] = 1e30  # a larger value after the NaNs does not replace them
    y, idx = ap.adaptive_max_pool3d(x, 1)
    assert np.isnan(y.item()) and idx.item() == (1 * 3 + 0) * 4 + 2


def test_all_minus_inf_window_points_at_its_first_element():
    x = np.full((1, 1, 3, 4, 5), -np.inf, F32)
    y, idx = ap.adaptive_max_pool3d(x, (2, 3, 2))
    assert np.all(y == -np.inf)
    _, want = ref.max_pool3d(x, (2, 3, 2))
    np.testing.assert_array_equal(idx, want)
    # the first element of each window, not of the plane
    t = [ref.window(o, s, n) for s, n, o in ((3, 2, 1), (4, 3, 2), (5, 2, 1))]
    assert idx[0, 0, 1, 2, 1] == (t[0][0] * 4 + t[1][0]) * 5 + t[2][0]


# -- against PyTorch ----------------------------------------------------------------------------
def _t(torch, a):
    return torch.from_numpy(np.ascontiguousarray(a))


@FLOATS
@pytest.mark.parametrize("shape,output_size", AVG_CASES, ids=_ids(AVG_CASES))
def test_avg_vs_torch(torch, shape, output_size, dtype):
    import torch.nn.functional as F

    x = rand(shape, dtype, seed=11)
    y = ap.adaptive_avg_pool2d(x, output_size)
    ty = F.adaptive_avg_pool2d(_t(torch, x), output_size).numpy()
    # PyTorch divides by kh and then by kw (two roundings); we divide once by the volume.
    rtol = 1e-6 if dtype == F32 else 1e-14
    np.testing.assert_allclose(y, ty, rtol=rtol, atol=rtol)
    g = rand(y.shape, dtype, seed=12)
    gi = ap.adaptive_avg_pool2d_backward(g, x)
    tgi = torch.ops.aten._adaptive_avg_pool2d_backward(_t(torch, g), _t(torch, x)).numpy()
    np.testing.assert_allclose(gi, tgi, rtol=rtol, atol=rtol)


@FLOATS
@pytest.mark.parametrize("shape,output_size", MAX_CASES, ids=_ids(MAX_CASES))
def test_max_vs_torch(torch, shape, output_size, dtype):
    import torch.nn.functional as F

    x = rand(shape, dtype, seed=13)
    y, idx = ap.adaptive_max_pool3d(x, output_size, index_dtype=np.int64)
    ty, tidx = F.adaptive_max_pool3d(_t(torch, x), output_size, return_indices=True)
    np.testing.assert_array_equal(y, ty.numpy())
    np.testing.assert_array_equal(idx, tidx.numpy())
    g = rand(y.shape, dtype, seed=14)
    gi = ap.adaptive_max_pool3d_backward(g, x, idx)
    tgi = torch.ops.aten.adaptive_max_pool3d_backward(_t(torch, g), _t(torch, x), tidx).numpy()
    rtol = 1e-6 if dtype == F32 else 1e-14
    np.testing.assert_allclose(gi, tgi, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("osz", [(2, 3, 2), (3, 5, 4), (1, 1, 1), (4, 4, 4)])
def test_max_rules_vs_torch_ties_nan_and_minus_inf(torch, seed, osz):
    import torch.nn.functional as F

    rng = np.random.default_rng(seed)
    x = rng.integers(0, 3, size=(2, 3, 4, 5, 6)).astype(F32)  # many ties
    nan_at = rng.random(x.shape) < 0.03
    x[nan_at] = np.nan
    x[0, 1] = -np.inf  # an all -inf plane
    x[1, 2, :2, :3, :3] = -np.inf  # some all -inf windows among finite ones
    y, idx = ap.adaptive_max_pool3d(x, osz, index_dtype=np.int64)
    ty, tidx = F.adaptive_max_pool3d(_t(torch, x), osz, return_indices=True)
    np.testing.assert_array_equal(idx, tidx.numpy())
    np.testing.assert_array_equal(y, ty.numpy())  # NaN == NaN for assert_array_equal
    np.testing.assert_array_equal(idx, ref.max_pool3d(x, osz)[1])


# -- index dtypes -------------------------------------------------------------------------------
def test_index_dtypes_int32_default_int64_on_request_backward_takes_both():
    x = rand((2, 3, 5, 6, 7), F32, seed=15)
    y32, i32 = ap.adaptive_max_pool3d(x, (2, 3, 4))
    y64, i64 = ap.adaptive_max_pool3d(x, (2, 3, 4), index_dtype=np.int64)
    assert i32.dtype == np.int32 and i64.dtype == np.int64
    np.testing.assert_array_equal(i32, i64)
    np.testing.assert_array_equal(y32, y64)
    _, istr = ap.adaptive_max_pool3d(x, (2, 3, 4), index_dtype="int64")
    assert istr.dtype == np.int64
    g = rand(y32.shape, F32, seed=16)
    np.testing.assert_array_equal(
        ap.adaptive_max_pool3d_backward(g, x, i32), ap.adaptive_max_pool3d_backward(g, x, i64)
    )
    # indices_out decides the dtype when given
    io = np.empty(y32.shape, np.int64)
    _, ri = ap.adaptive_max_pool3d(x, (2, 3, 4), indices_out=io)
    assert ri is io
    np.testing.assert_array_equal(io, i32)
