"""The Dask layer (issue 17): every operator on dask arrays, bitwise equal to the NumPy call for
every chunking (windows cut by chunk boundaries, overlapping windows, upsampling), and its errors.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

import adaptive_pool as ap  # noqa: E402
from adaptive_pool import blocks, windows  # noqa: E402
from support import ALL_DTYPES, DTYPE_IDS, bits  # noqa: E402

FORWARD = [f"adaptive_{k}_pool{r}d" for k in ("avg", "max") for r in (1, 2, 3)]
ALL_OPS = FORWARD + [f"{n}_backward" for n in FORWARD]
MAX_SIZE = {1: 13, 2: 8, 3: 5}


@pytest.fixture(autouse=True)
def synchronous():
    """Tasks on the calling thread: fast and deterministic for tiny blocks."""
    with dask.config.set(scheduler="synchronous"):
        yield


@st.composite
def chunking(draw, n):
    """Random chunk sizes summing to ``n`` (1-element chunks are common)."""
    cuts = draw(st.sets(st.integers(1, n - 1), max_size=n - 1)) if n > 1 else set()
    edges = [0, *sorted(cuts), n]
    return tuple(b - a for a, b in zip(edges, edges[1:]))


@st.composite
def values(draw, shape, dtype, seed):
    """Data with ties (small integers) or spread values, with a few signed zeros, infinities and
    NaN."""
    rng = np.random.default_rng(seed)
    if draw(st.booleans()):
        a = rng.integers(-2, 3, size=shape).astype(np.float64)
    else:
        a = rng.uniform(-4, 4, size=shape)
    if a.size and draw(st.booleans()):
        special = rng.choice([-0.0, 0.0, np.inf, -np.inf, np.nan], size=a.size)
        mask = rng.random(a.size) < 0.15
        a.reshape(-1)[mask] = special[mask]
    return a.astype(dtype)


@st.composite
def problems(draw, op):
    """A shape, an output size and chunkings for ``op``."""
    rank = int(op.split("pool")[1][0])
    lead = draw(st.sampled_from([(), (1,), (2,), (1, 2), (2, 3)]))
    if not lead:
        lead = (draw(st.integers(1, 3)),)  # (C, *S)
    in_sp = tuple(draw(st.integers(1, MAX_SIZE[rank])) for _ in range(rank))
    out_sp = tuple(draw(st.integers(1, 2 * i + 1)) for i in in_sp)
    shape = lead + in_sp
    x_chunks = tuple(draw(chunking(n)) for n in shape)
    g_chunks = tuple(draw(chunking(n)) for n in lead + out_sp)
    dtype = draw(st.sampled_from(ALL_DTYPES))
    seed = draw(st.integers(0, 2**16))
    x = draw(values(shape, dtype, seed))
    g = draw(values(lead + out_sp, dtype, seed + 1))
    index_dtype = draw(st.sampled_from([np.int32, np.int64]))
    return x, out_sp, x_chunks, g, g_chunks, index_dtype


def _same(got, want):
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(bits(got), bits(want))


@pytest.mark.parametrize("name", ALL_OPS)
@settings(max_examples=settings.default.max_examples * 5 // 8)  # 25 of the default 40
@given(data=st.data())
def test_bitwise_equal_to_numpy_for_every_chunking(name, data):
    x, out_sp, x_chunks, g, g_chunks, index_dtype = data.draw(problems(name))
    dx = da.from_array(x, chunks=x_chunks)
    fwd = getattr(ap, name.removesuffix("_backward"))
    if name.startswith("adaptive_max"):
        y, idx = fwd(x, out_sp, index_dtype=index_dtype)
    if name in FORWARD and name.startswith("adaptive_avg"):
        got = fwd(dx, out_sp)
        assert isinstance(got, da.Array)
        _same(got.compute(), fwd(x, out_sp))
    elif name in FORWARD:
        gy, gi = fwd(dx, out_sp, index_dtype=index_dtype)
        assert isinstance(gy, da.Array) and isinstance(gi, da.Array)
        assert gi.dtype == np.dtype(index_dtype)
        gy, gi = dask.compute(gy, gi)
        _same(gy, y)
        np.testing.assert_array_equal(gi, idx)
        assert gi.dtype == idx.dtype
    else:
        bwd = getattr(ap, name)
        dg = da.from_array(g, chunks=g_chunks)
        if name.startswith("adaptive_avg"):
            want, got = bwd(g, x), bwd(dg, dx)
        else:
            di = da.from_array(idx, chunks=g_chunks)
            want, got = bwd(g, x, idx), bwd(dg, dx, di)
        assert isinstance(got, da.Array) and got.chunks == dx.chunks
        _same(got.compute(), want)


SKIPNA_OPS = [
    n for n in ALL_OPS if not (n.startswith("adaptive_max") and n.endswith("_backward"))
]


@pytest.mark.parametrize("name", SKIPNA_OPS)
@settings(max_examples=settings.default.max_examples // 2)
@given(data=st.data(), holes=st.sampled_from([0.0, 0.3, 1.0]))
def test_skipna_bitwise_equal_to_numpy_for_every_chunking(name, data, holes):
    """NaN-skipping averages, their gradients (whose counts need whole windows of x beyond a
    block) and maxima: the single-array call's bits for every chunking."""
    x, out_sp, x_chunks, g, g_chunks, index_dtype = data.draw(problems(name))
    x = x.copy()
    x[np.random.default_rng(x.size).random(x.shape) < holes] = np.nan
    dx = da.from_array(x, chunks=x_chunks)
    fn = getattr(ap, name)
    if name == name.removesuffix("_backward"):
        if name.startswith("adaptive_max"):
            got = dask.compute(*fn(dx, out_sp, skipna=True, index_dtype=index_dtype))
            want = fn(x, out_sp, skipna=True, index_dtype=index_dtype)
            _same(got[0], want[0])
            np.testing.assert_array_equal(got[1], want[1])
        else:
            _same(fn(dx, out_sp, skipna=True).compute(), fn(x, out_sp, skipna=True))
    else:
        dg = da.from_array(g, chunks=g_chunks)
        _same(fn(dg, dx, skipna=True).compute(), fn(g, x, skipna=True))


@pytest.mark.parametrize("channels", [1, 8])
def test_skipna_backward_blocks_with_as_many_outputs_as_inputs(channels):
    """A block of the NaN-skipping average's gradient may have as many covering outputs as
    inputs along d while its windows are deeper (they keep their global extent): its counts
    must not be taken as those of windows one d deep."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, channels, 2, 3, 3)).astype(np.float32)
    x[0, 0, 1, 0, 0] = np.nan
    g = rng.standard_normal((1, channels, 3, 2, 2)).astype(np.float32)
    dx = da.from_array(x, chunks=(1, channels, 1, 3, 3))
    got = ap.adaptive_avg_pool3d_backward(da.from_array(g), dx, skipna=True).compute()
    _same(got, ap.adaptive_avg_pool3d_backward(g, x, skipna=True))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
def test_windows_cut_by_one_element_chunks(dtype):
    """Every spatial chunk one element: each window spans many tasks' chunks."""
    rng = np.random.default_rng(1)
    x = rng.integers(0, 3, size=(1, 2, 7, 5)).astype(dtype)
    dx = da.from_array(x, chunks=(1, 1, 1, 1))
    for out in [(3, 2), (4, 5), (15, 7)]:
        _same(ap.adaptive_avg_pool2d(dx, out).compute(), ap.adaptive_avg_pool2d(x, out))
        y, i = ap.adaptive_max_pool2d(x, out)
        gy, gi = dask.compute(*ap.adaptive_max_pool2d(dx, out))
        _same(gy, y)
        np.testing.assert_array_equal(gi, i)
        g = rng.uniform(-1, 1, size=y.shape).astype(dtype)
        dg = da.from_array(g, chunks=(1, 2, 1, 2))
        _same(
            ap.adaptive_avg_pool2d_backward(dg, dx).compute(),
            ap.adaptive_avg_pool2d_backward(g, x),
        )
        _same(
            ap.adaptive_max_pool2d_backward(dg, dx, da.from_array(i, chunks=2)).compute(),
            ap.adaptive_max_pool2d_backward(g, x, i),
        )


@pytest.mark.parametrize("dtype", [np.float32, ALL_DTYPES[3]], ids=["float32", "bfloat16"])
@pytest.mark.parametrize(
    "shape, out, chunks",
    [
        ((1, 9, 12, 10), (5, 4), (1, 4, 5, 3)),  # 8 planes side by side (lane kernels)
        ((1, 2, 40, 400), (3, 7), (1, 1, 9, 111)),  # wide windows (row by row)
        ((1, 1, 300, 310), (2, 3), (1, 1, 70, 64)),  # max windows taken in parts
    ],
)
def test_every_loop_order(dtype, shape, out, chunks):
    """Blocks may take other loop orders than the whole array: the sums are the same."""
    rng = np.random.default_rng(4)
    x = rng.uniform(-4, 4, size=shape).astype(dtype)
    dx = da.from_array(x, chunks=chunks)
    _same(ap.adaptive_avg_pool2d(dx, out).compute(), ap.adaptive_avg_pool2d(x, out))
    y, i = ap.adaptive_max_pool2d(x, out)
    gy, gi = dask.compute(*ap.adaptive_max_pool2d(dx, out))
    _same(gy, y)
    np.testing.assert_array_equal(gi, i)
    g = rng.uniform(-1, 1, size=y.shape).astype(dtype)
    dg = da.from_array(g, chunks=(1, 3, 2, 2))
    _same(
        ap.adaptive_avg_pool2d_backward(dg, dx).compute(), ap.adaptive_avg_pool2d_backward(g, x)
    )
    _same(
        ap.adaptive_max_pool2d_backward(dg, dx, da.from_array(i, chunks=2)).compute(),
        ap.adaptive_max_pool2d_backward(g, x, i),
    )


def test_max_backward_keeps_signed_zero_sums():
    """A -0.0 gradient alone gives +0.0 (sums start at +0.0), also where blocks exclude the
    contributions of argmaxes outside them."""
    x = np.zeros((1, 9), np.float32)
    x[0, 4] = 1.0
    y, i = ap.adaptive_max_pool1d(x, 5)
    g = np.full(y.shape, -0.0, np.float32)
    want = ap.adaptive_max_pool1d_backward(g, x, i)
    for c in [1, 2, 3, 4]:
        got = ap.adaptive_max_pool1d_backward(
            da.from_array(g, chunks=1), da.from_array(x, chunks=c), da.from_array(i, chunks=2)
        )
        _same(got.compute(), want)


def test_threaded_scheduler_and_meta():
    x = np.random.default_rng(2).uniform(size=(2, 3, 40, 30)).astype(np.float32)
    dx = da.from_array(x, chunks=(1, 3, 13, 7))
    with dask.config.set(scheduler="threads"):
        y = ap.adaptive_avg_pool2d(dx, (9, 11))
        assert type(y._meta) is np.ndarray and y.dtype == np.float32
        _same(y.compute(), ap.adaptive_avg_pool2d(x, (9, 11)))
        v, i = ap.adaptive_max_pool2d(dx, (9, 11), index_dtype=np.int64)
        assert i.dtype == np.int64 and type(i._meta) is np.ndarray
        got = dask.compute(v, i)
        want = ap.adaptive_max_pool2d(x, (9, 11), index_dtype=np.int64)
        _same(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])


def test_output_chunks_follow_input_chunks():
    dx = da.zeros((1, 100, 64), chunks=(1, 25, 64), dtype=np.float32)
    y = ap.adaptive_avg_pool2d(dx, (10, 8))
    assert y.chunks == ((1,), (3, 2, 3, 2), (8,))  # the outputs whose windows start in a chunk
    up = ap.adaptive_avg_pool2d(dx, (400, 8))  # upsampled blocks no longer than input chunks
    assert max(up.chunks[1]) <= 25 and sum(up.chunks[1]) == 400


def test_max_forward_runs_one_kernel_per_block(monkeypatch):
    """Values and indices come from one kernel call per block, computed together or apart."""
    calls = []
    run = blocks.forward_block
    monkeypatch.setattr(blocks, "forward_block", lambda *a, **k: calls.append(1) or run(*a, **k))
    dx = da.ones((2, 12, 12), chunks=(2, 6, 6), dtype=np.float32)
    y, i = ap.adaptive_max_pool2d(dx, 5)
    for sched in ("synchronous", "threads"):
        calls.clear()
        dask.compute(y, i, scheduler=sched)
        assert len(calls) == math.prod(y.numblocks) == 4


def test_global_int64_indices_of_large_planes():
    """Global offsets are computed in int64 and cast: planes of 2**31 elements and more."""
    got = blocks.forward_block(
        np.arange(4, dtype=np.float32).reshape(1, 2, 2),
        [(7, 8), (9, 10)],
        op="adaptive_max_pool2d",
        in_sizes=(2**20, 2**20),
        out_sizes=(2**19, 2**19),
        index_dtype=np.dtype(np.int64),
    )[1]
    # output (7, 9) pools rows 14:16 and columns 18:20, its maximum is the last of them
    assert got.dtype == np.int64 and int(got[0, 0, 0]) == 15 * 2**20 + 19


# -- errors ---------------------------------------------------------------------------------------
def test_unknown_chunks_name_the_argument():
    a = da.from_array(np.arange(1.0, 17.0).reshape(2, 8), chunks=4)
    x = a[:, a[0] > 0]  # boolean indexing: NaN chunk sizes
    with pytest.raises(ValueError, match="compute_chunk_sizes") as e:
        ap.adaptive_avg_pool1d(x, 2)
    assert e.value.argument == "x"
    g = da.from_array(np.ones((2, 2)), chunks=1)
    with pytest.raises(ValueError) as e:
        ap.adaptive_avg_pool1d_backward(g[:, g[0] > 0], da.ones((2, 8), chunks=4))
    assert e.value.argument == "grad_output"


def test_non_numeric_dtypes_name_the_argument():
    for dt in (np.int32, np.bool_, "U3", object):
        x = da.from_array(np.zeros((2, 4), dt), chunks=2)
        with pytest.raises(TypeError, match="float32") as e:
            ap.adaptive_avg_pool1d(x, 2)
        assert e.value.argument == "x"


def test_window_table_too_large_names_the_argument():
    x = da.zeros((1, 2**50), chunks=(1, 2**50), dtype=np.float32)
    with pytest.raises(ValueError, match="window tables") as e:
        ap.adaptive_avg_pool1d(x, 3)
    assert e.value.argument == "x"


def test_other_errors_match_numpy():
    dx = da.ones((2, 6, 6), chunks=3, dtype=np.float32)
    with pytest.raises(TypeError) as e:
        ap.adaptive_avg_pool2d(dx, 2, out=np.empty((2, 2, 2), np.float32))
    assert e.value.argument == "out"
    with pytest.raises(ValueError) as e:
        ap.adaptive_avg_pool2d(dx, (2, -1))
    assert e.value.argument == "output_size"
    with pytest.raises(ValueError) as e:
        ap.adaptive_avg_pool2d_backward(da.ones((3, 2, 2), dtype=np.float32), dx)
    assert e.value.argument == "grad_output"
    with pytest.raises(ValueError, match="int64") as e:
        ap.adaptive_max_pool2d(da.ones((1, 2**16, 2**16), chunks=2**14, dtype=np.float32), 4)
    assert e.value.argument == "index_dtype"


@pytest.mark.parametrize("bad", [-1, 5, 36, 21])
def test_bad_index_raises_like_numpy(bad):
    """The first bad index in C order is named, as the single-array call names it."""
    x = np.random.default_rng(3).uniform(size=(2, 6, 6)).astype(np.float32)
    y, i = ap.adaptive_max_pool2d(x, (3, 3))
    i = i.copy()
    i[1, 2, 0] = bad
    i[1, 2, 2] = -7  # a later bad one is not the one named
    with pytest.raises(ap.AdaptivePoolIndexError) as want:
        ap.adaptive_max_pool2d_backward(y, x, i)
    got = ap.adaptive_max_pool2d_backward(
        da.from_array(y, chunks=(1, 2, 1)), da.from_array(x, chunks=(2, 3, 4)),
        da.from_array(i, chunks=(1, 1, 2)),
    )
    with pytest.raises(ap.AdaptivePoolIndexError) as e:
        got.compute()
    assert str(e.value) == str(want.value) and e.value.argument == "indices"


def test_empty_problems():
    dx = da.ones((2, 0, 5, 4), chunks=2, dtype=np.float32)
    y, i = ap.adaptive_max_pool2d(dx, 3)
    assert y.shape == i.shape == (2, 0, 3, 3) and y.compute().shape == (2, 0, 3, 3)
    x = da.ones((2, 5, 4), chunks=2, dtype=np.float32)
    assert ap.adaptive_avg_pool2d(x, (0, 2)).compute().shape == (2, 0, 2)
    g = da.ones((2, 0, 2), dtype=np.float32)
    gx = ap.adaptive_avg_pool2d_backward(g, x).compute()
    assert gx.shape == x.shape and not gx.any()


def test_importing_the_package_does_not_import_dask():
    import subprocess
    import sys

    code = "import sys, adaptive_pool; print('dask' in sys.modules, 'xarray' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


# -- the window spans -----------------------------------------------------------------------------
@given(st.integers(1, 60), st.integers(1, 60), st.data())
def test_block_tables_are_the_global_tables_rebased(i_size, o_size, data):
    o0 = data.draw(st.integers(0, o_size - 1))
    o1 = data.draw(st.integers(o0 + 1, o_size))
    (i0, i1), = windows.input_spans(o0, o1, i_size, o_size).tolist()
    full = windows.axis_tables(i_size, o_size)
    tab = windows.build_block_tables((i_size,), (o_size,), ((i0, i1),), ((o0, o1),))
    n, m = o1 - o0, i1 - i0
    np.testing.assert_array_equal(tab[:n], full["start"][o0:o1] - i0)
    np.testing.assert_array_equal(tab[n : 2 * n], full["end"][o0:o1] - i0)
    assert tab[:n].min() >= 0 and tab[n : 2 * n].max() <= m  # the windows are inside
    lo, hi = tab[2 * n : 2 * n + m], tab[2 * n + m :]
    np.testing.assert_array_equal(lo, np.clip(full["cover_lo"][i0:i1] - o0, 0, n))
    np.testing.assert_array_equal(hi, np.clip(full["cover_hi"][i0:i1] - o0, 0, n))
    (c0, c1), = windows.cover_spans(i0, i1, i_size, o_size).tolist()
    assert c0 == full["cover_lo"][i0] and c1 == full["cover_hi"][i1 - 1]


def test_single_array_max_backward_of_many_gradients():
    """Blocks of rows receiving more than 128 gradients (a scratch buffer grown twice)."""
    x = np.random.default_rng(0).uniform(size=(1, 1, 64, 64)).astype(np.float32)
    y, i = ap.adaptive_max_pool2d(x, (64, 64))
    ap.adaptive_max_pool2d_backward(y, x, i)


def test_tasks_are_small():
    """Tasks carry sizes and their block's place, never window tables or plans."""
    import pickle

    x = da.zeros((2, 4096, 6000), chunks=(1, 1024, 1024), dtype=np.float32)
    y, i = ap.adaptive_max_pool2d(x, (1000, 999))
    g = ap.adaptive_max_pool2d_backward(y, x, i)
    graph = dict(dask.base.collections_to_expr([g]).__dask_graph__())
    assert len(graph) > 100
    assert max(len(pickle.dumps(t)) for t in graph.values()) < 4000


def test_bench_memory_sampler_sees_a_peak():
    import os
    import time

    from adaptive_pool.bench.dask_mode import MemorySampler

    with MemorySampler({"me": os.getpid()}, interval=0.01) as mem:
        a = np.ones(2**26)  # 512 MiB, touched
        time.sleep(0.1)
        del a
    assert mem.peak["me"] >= 2**29 and "me" in mem.report()
