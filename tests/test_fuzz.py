"""Property tests: random problems against the reference; random garbage gives clean errors."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

import adaptive_pool as ap
import reference as ref
from adaptive_pool import acl
from support import ALL_DTYPES, F32, F64, rand

DTYPES = st.sampled_from(ALL_DTYPES)


@st.composite
def strided(draw, shape, dtype):
    """An array of ``shape`` with random steps, flips, an offset and maybe channels-last."""
    steps = [draw(st.integers(1, 2)) for _ in shape]
    flips = [draw(st.booleans()) for _ in shape]
    base_shape = tuple(n * s + 1 for n, s in zip(shape, steps))
    seed = draw(st.integers(0, 2**16))
    base = rand(base_shape, dtype, seed=seed)
    if draw(st.booleans()):  # channels-last storage of the base
        perm = (0,) + tuple(range(2, len(shape))) + (1,)
        inv = np.argsort(perm)
        base = np.ascontiguousarray(base.transpose(perm)).transpose(inv)
    sl = tuple(
        slice(n * s - s + 1, None, -s) if f else slice(1, None, s)
        for n, s, f in zip(shape, steps, flips)
    )
    a = base[sl]
    a = a[tuple(slice(0, n) for n in shape)]
    assert a.shape == tuple(shape)
    return a


def sizes(spatial):
    return st.lists(st.one_of(st.none(), st.integers(1, 7)), min_size=spatial, max_size=spatial)


def _check_float(got, want64, dtype):
    dtype = np.dtype(dtype)
    assert got.dtype == dtype
    if dtype in (np.float16, ref.BF16):
        assert ref.max_ulp(got, want64) <= 1
    else:
        rtol = 1e-13 if dtype == F64 else 3e-6
        np.testing.assert_allclose(got.astype(np.float64), want64, rtol=rtol, atol=rtol)


@settings(max_examples=40)
@given(data=st.data(), dtype=DTYPES, batched=st.booleans(),
       spatial_in=st.tuples(st.integers(1, 7), st.integers(1, 7)))
def test_avg_random_problems(data, dtype, batched, spatial_in):
    lead = (data.draw(st.integers(1, 2)), data.draw(st.integers(1, 3))) if batched else (
        data.draw(st.integers(1, 3)),)
    x = data.draw(strided(lead + spatial_in, dtype), label="x")
    osz = data.draw(st.one_of(st.integers(1, 7), sizes(2).map(tuple)), label="output_size")
    y = ap.adaptive_avg_pool2d(x, osz)
    _check_float(y, ref.avg_pool2d(x, osz), dtype)
    g = data.draw(strided(y.shape, dtype), label="grad_output")
    gi = ap.adaptive_avg_pool2d_backward(g, x)
    _check_float(gi, ref.avg_pool2d_backward(g, x.shape), dtype)


@settings(max_examples=40)
@given(data=st.data(), dtype=DTYPES, batched=st.booleans(),
       spatial_in=st.tuples(st.integers(1, 5), st.integers(1, 5), st.integers(1, 5)),
       index_dtype=st.sampled_from([np.int32, np.int64]), ties=st.booleans())
def test_max_random_problems(data, dtype, batched, spatial_in, index_dtype, ties):
    lead = (data.draw(st.integers(1, 2)), data.draw(st.integers(1, 2))) if batched else (
        data.draw(st.integers(1, 2)),)
    x = data.draw(strided(lead + spatial_in, dtype), label="x")
    if ties:  # small integers and a few NaNs / -infs
        x = np.floor(x.astype(np.float64)).astype(dtype)
        x[(x.astype(np.float64) == -4)] = np.nan
        x[(x.astype(np.float64) == 3)] = -np.inf
    osz = data.draw(st.one_of(st.integers(1, 6), sizes(3).map(tuple)), label="output_size")
    y, idx = ap.adaptive_max_pool3d(x, osz, index_dtype=index_dtype)
    wy, wi = ref.max_pool3d(x, osz)
    assert idx.dtype == index_dtype
    np.testing.assert_array_equal(idx, wi)
    np.testing.assert_array_equal(y.astype(np.float64), wy)  # a copy: exact (NaN == NaN)
    g = data.draw(strided(y.shape, dtype), label="grad_output")
    gi = ap.adaptive_max_pool3d_backward(g, x, idx)
    _check_float(gi, ref.max_pool3d_backward(g, x.shape, idx), dtype)


# -- garbage ------------------------------------------------------------------------------------
class Weird:
    def __len__(self):
        raise RuntimeError("len() of Weird")

    def __index__(self):
        raise RuntimeError("index() of Weird")


def _arrays():
    f = F32
    ro = np.ones((2, 3, 4, 5), f)
    ro.flags.writeable = False
    return [
        None, 3, 2.5, "abc", b"x", [1.0, 2.0], [[[[1.0]]]], {"a": 1}, object(), Weird(),
        np.float32(1), np.array(1.0), np.ones((2, 3), f), np.ones((2, 3, 4, 5), f),
        np.ones((3, 4, 5), f), np.ones((2, 3, 4, 5, 6), f), np.ones((2, 3, 4, 5, 6, 7), f),
        np.ones((2, 3, 2, 2), f), np.ones((2, 3, 2, 2, 2), f), np.ones((2, 3, 2, 2), F64),
        np.ones((2, 3, 4, 5), np.int32), np.ones((2, 3, 2, 2, 2), np.int64),
        np.ones((2, 3, 2, 2, 2), np.int32), np.full((2, 3, 2, 2, 2), -7, np.int64),
        np.full((2, 3, 2, 2, 2), 2**40, np.int64), np.ones((2, 3, 4, 5), np.complex64),
        np.ones((2, 3, 4, 5), object), np.ones((2, 3, 0, 5), f), np.ones((0, 3, 4, 5), f),
        np.zeros((2, 3, 4, 5), "V4"), np.ones((2, 3, 4, 5), np.bool_), ro,
        np.broadcast_to(np.ones(5, f), (2, 3, 4, 5)), np.ones((2, 3, 4, 5), ">f4"),
        np.ones((2, 3, 4, 5, 6), np.float16), np.ones((2, 3, 2, 2, 2), np.float16),
        np.ma.masked_array(np.ones((2, 3, 4, 5), f)), np.ones((2, 3, 4, 5), f)[..., ::-1],
    ]


SIZES = [None, -1, 0, 1, 2, 2**62, 2**70, True, 2.5, "2", (1,), (1, 2, 3, 4), (None, -1),
         (2, None), (2, 2, 2), [2, 2], np.array([2, 2]), (2, 2.0), (np.int64(2), 1), Weird(),
         (Weird(), 1), -(2**70), np.int8(-3)]
INDEX_DTYPES = [None, "foo", np.float32, np.int8, object, np.int64, np.int32, "int64", 5]
WORKSPACES = [None, np.empty(4096, np.uint8), np.empty(3, np.uint8), "ws", np.empty(8, F32),
              np.empty(4097, np.uint8)[1:]]
WS_SIZES = [None, 0, 8, 4096, -1, "8", 2.5, True, 2**70]


def _call(kind, a, b, c, d, size, idt, ws, wss):
    if kind == 0:
        return ap.adaptive_avg_pool2d(a, size, out=b)
    if kind == 1:
        return ap.adaptive_avg_pool2d_backward(a, b, out=c)
    if kind == 2:
        return ap.adaptive_max_pool3d(a, size, index_dtype=idt, out=b, indices_out=c)
    if kind == 3:
        return ap.adaptive_max_pool3d_backward(a, b, c, out=d)
    if kind == 4:
        s, ex = acl.adaptive_avg_pool2d_get_workspace_size(a, size, b)
        return acl.adaptive_avg_pool2d(ws, wss, ex)
    if kind == 5:
        s, ex = acl.adaptive_avg_pool2d_backward_get_workspace_size(a, b, c)
        return acl.adaptive_avg_pool2d_backward(ws, wss, ex)
    if kind == 6:
        s, ex = acl.adaptive_max_pool3d_get_workspace_size(a, size, b, c)
        return acl.adaptive_max_pool3d(ws, wss, ex)
    s, ex = acl.adaptive_max_pool3d_backward_get_workspace_size(a, b, c, d)
    return acl.adaptive_max_pool3d_backward(ws, wss, ex)


_X = rand((2, 3, 5, 4), F32, seed=99)
_WANT = ref.avg_pool2d(_X, (2, 3))
_V = rand((2, 2, 3, 4, 5), F32, seed=98)
_WANT_Y, _WANT_I = ref.max_pool3d(_V, 2)


@settings(max_examples=300)
@given(kind=st.integers(0, 7), picks=st.lists(st.integers(0, 10**6), min_size=4, max_size=4),
       size=st.sampled_from(SIZES), idt=st.sampled_from(INDEX_DTYPES),
       ws=st.integers(0, len(WORKSPACES) - 1), wss=st.sampled_from(WS_SIZES))
def test_garbage_gives_only_clean_errors(kind, picks, size, idt, ws, wss):
    pool = _arrays()
    a, b, c, d = (pool[p % len(pool)] for p in picks)
    try:
        _call(kind, a, b, c, d, size, idt, WORKSPACES[ws], wss)
    except ap.AdaptivePoolError as e:
        assert e.status in (161001, 161002)
        assert str(e)
    # and the library still works afterwards
    np.testing.assert_allclose(ap.adaptive_avg_pool2d(_X, (2, 3)), _WANT, rtol=2e-6)
    y, i = ap.adaptive_max_pool3d(_V, 2)
    np.testing.assert_array_equal(i, _WANT_I)
