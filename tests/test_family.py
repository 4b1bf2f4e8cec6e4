"""DESIGN §3, the whole family: average and max pooling in 1, 2 and 3 dimensions, forward and
backward, against the reference and against PyTorch, in every dtype and layout."""

from __future__ import annotations

import numpy as np
import pytest

import adaptive_pool as ap
import reference as ref
from adaptive_pool.errors import AdaptivePoolIndexError
from support import ALL_DTYPES, DTYPE_IDS, F16, F32, F64, BF16, bits, rand, small_ints

RANKS = (1, 2, 3)

#: (input shape, output_size) per rank: batched and un-batched, divisible and overlapping
#: windows, upsampling, ``None`` entries and global pooling (``1``, ``(None, 1)``, ``(1, None)``).
CASES = {
    1: [((2, 3, 10), 4), ((3, 7), (3,)), ((2, 2, 5), 9), ((2, 5, 12), 1), ((1, 9, 8), (None,))],
    2: [
        ((2, 3, 9, 7), (4, 3)), ((3, 6, 5), (2, None)), ((1, 2, 4, 3), (7, 5)),
        ((2, 3, 7, 7), 1), ((2, 2, 6, 9), (None, 1)), ((2, 2, 6, 9), (1, None)),
    ],
    3: [
        ((2, 2, 5, 4, 6), (2, 3, 4)), ((3, 4, 3, 5), (None, 2, 3)), ((1, 2, 2, 3, 2), (3, 4, 5)),
        ((2, 3, 3, 4, 5), 1),
    ],
}
ALL_CASES = [(r, s, o) for r in RANKS for s, o in CASES[r]]


def _case_id(c):
    r, s, o = c
    return f"{r}d-{s}->{o}".replace(" ", "")


def fn(kind: str, rank: int, backward: bool = False):
    return getattr(ap, f"adaptive_{kind}_pool{rank}d" + ("_backward" if backward else ""))


def _layouts(a: np.ndarray) -> dict[str, np.ndarray]:
    """``a`` as the same values in four memory layouts: dense, strided, reversed, permuted."""
    big = np.zeros(tuple(2 * n for n in a.shape), a.dtype)
    strided = big[(slice(None, None, 2),) * a.ndim]
    strided[...] = a
    rev = np.ascontiguousarray(a[..., ::-1])[..., ::-1]
    order = (0,) + tuple(range(2, a.ndim)) + (1,) if a.ndim > 2 else (1, 0)
    perm = np.ascontiguousarray(a.transpose(order)).transpose(np.argsort(order))
    return {"dense": a, "strided": strided, "reversed": rev, "permuted": perm}


def _ulp_bound(dtype) -> int:
    # 16-bit: float32 sums rounded once, so within one ulp of the exact result; float32 and
    # float64 accumulate in their own type: a few ulps over the small windows used here.
    return 1 if np.dtype(dtype) in (F16, BF16) else 8


# -- against the reference ----------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("case", ALL_CASES, ids=_case_id)
def test_avg_family_vs_reference(case, dtype):
    rank, shape, osz = case
    x = rand(shape, dtype, seed=1, low=0.25)
    want_shape = shape[:-rank] + ref.resolve_output_size(osz, shape[-rank:])
    g = rand(want_shape, dtype, seed=2, low=0.25)
    want = ref.avg_pool(x, osz, rank)
    want_gi = ref.avg_pool_backward(g, shape, rank)
    first = None
    for name, xv in _layouts(x).items():
        y = fn("avg", rank)(xv, osz)
        assert y.shape == want_shape and y.dtype == dtype and y.flags.c_contiguous, name
        assert ref.max_ulp(y, want) <= _ulp_bound(dtype), name
        gi = fn("avg", rank, True)(_layouts(g)[name], xv)
        assert gi.shape == shape and gi.dtype == dtype, name
        assert ref.max_ulp(gi, want_gi) <= _ulp_bound(dtype), name
        if first is None:
            first = (bits(y), bits(gi))
        # the summation order does not depend on strides
        np.testing.assert_array_equal(bits(y), first[0], err_msg=name)
        np.testing.assert_array_equal(bits(gi), first[1], err_msg=name)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("case", ALL_CASES, ids=_case_id)
def test_max_family_vs_reference(case, dtype):
    rank, shape, osz = case
    x = small_ints(shape, dtype, seed=3, high=4)  # many ties: the first maximum must win
    want_y, want_i = ref.max_pool(x, osz, rank)
    g = rand(want_y.shape, dtype, seed=4, low=0.25)
    want_gi = ref.max_pool_backward(g, shape, want_i, rank)
    for name, xv in _layouts(x).items():
        y, idx = fn("max", rank)(xv, osz)
        assert idx.dtype == np.int32, name  # CANN's default
        np.testing.assert_array_equal(y.astype(np.float64), want_y, err_msg=name)
        np.testing.assert_array_equal(idx, want_i, err_msg=name)
        gi = fn("max", rank, True)(_layouts(g)[name], xv, _layouts(idx)[name])
        assert gi.shape == shape and gi.dtype == dtype
        assert ref.max_ulp(gi, want_gi) <= _ulp_bound(dtype), name


@pytest.mark.parametrize("rank", RANKS)
def test_max_nan_and_minus_inf_rules_in_every_rank(rank):
    rng = np.random.default_rng(rank)
    shape = (2, 3) + (5, 6, 7)[3 - rank :]
    x = rng.integers(0, 3, size=shape).astype(F32)
    x[rng.random(shape) < 0.05] = np.nan
    x[0, 1] = -np.inf  # an all -inf plane
    for osz in (1, 2, 3, tuple(shape[2:])):
        y, idx = fn("max", rank)(x, osz, index_dtype=np.int64)
        want_y, want_i = ref.max_pool(x, osz, rank)
        np.testing.assert_array_equal(idx, want_i)
        np.testing.assert_array_equal(y, want_y.astype(F32))


@pytest.mark.parametrize("rank", RANKS)
def test_max_backward_checks_every_index_against_its_own_window(rank):
    x = rand((2, 3) + (6, 5, 7)[3 - rank :], F32, seed=5)
    y, idx = fn("max", rank)(x, 3)
    bad = idx.copy()
    pos = (1, 2) + (0,) * rank
    bad[pos] = idx[(1, 2) + (2,) * rank]  # a real index, but of another window
    out = np.full(x.shape, 7.0, F32)
    with pytest.raises(AdaptivePoolIndexError) as info:
        fn("max", rank, True)(np.ones_like(y), x, bad, out=out)
    flat = {1: "flat offsets l ", 2: "flat offsets h*W + w ", 3: "flat offsets d*H*W + h*W + w "}
    assert f"indices{list(pos)}" in str(info.value) and flat[rank] in str(info.value)
    assert (out == 7.0).all()  # nothing written


@pytest.mark.parametrize("rank", RANKS)
def test_max_backward_checks_each_axis_of_a_window(rank):
    """An index one step past its window along one axis only (the others inside it) is bad."""
    shape = (6, 5, 7)[3 - rank :]
    x = rand((2, 3) + shape, F32, seed=5)
    y, idx = fn("max", rank)(x, 3)
    first = (1, 2) + (0,) * rank  # its window starts at 0 on every axis
    for axis in range(rank):
        past = [0] * rank
        past[axis] = ref.window(0, shape[axis], 3)[1]
        bad = idx.copy()
        bad[first] = np.ravel_multi_index(past, shape)
        with pytest.raises(AdaptivePoolIndexError, match=rf"indices\[1, 2, 0"):
            fn("max", rank, True)(np.ones_like(y), x, bad)


@pytest.mark.parametrize("rank", RANKS)
def test_ranks_are_singleton_axes_of_one_kernel(rank):
    """A rank-r problem gives the bits of the 3-D operator on the same data with unit axes."""
    shape = (2, 3) + (9, 8, 7)[3 - rank :]
    osz = (4, 3, 5)[3 - rank :]
    x = rand(shape, BF16, seed=6)
    as3 = x.reshape(shape[:2] + (1,) * (3 - rank) + shape[2:])
    osz3 = (1,) * (3 - rank) + osz
    y = fn("avg", rank)(x, osz)
    np.testing.assert_array_equal(bits(y), bits(ap.adaptive_avg_pool3d(as3, osz3).reshape(y.shape)))
    ym, im = fn("max", rank)(x, osz)
    y3, i3 = ap.adaptive_max_pool3d(as3, osz3)
    np.testing.assert_array_equal(bits(ym), bits(y3.reshape(ym.shape)))
    np.testing.assert_array_equal(im, i3.reshape(im.shape))


@pytest.mark.parametrize("kind", ["avg", "max"])
@pytest.mark.parametrize("rank", RANKS)
def test_empty_batches_and_empty_outputs(kind, rank):
    sp = (4, 5, 6)[3 - rank :]
    x = np.ones((0, 3) + sp, F32)
    y = fn(kind, rank)(x, 2)
    y = y[0] if kind == "max" else y
    assert y.shape == (0, 3) + (2,) * rank
    x = np.ones((2, 3) + sp, F32)
    y = fn(kind, rank)(x, 0)
    y, args = (y[0], (y[1],)) if kind == "max" else (y, ())
    assert y.shape == (2, 3) + (0,) * rank
    gi = fn(kind, rank, True)(y, x, *args)
    assert gi.shape == x.shape and not gi.any()


# -- against PyTorch ----------------------------------------------------------------------------
def _tensor(torch, a):
    a = np.ascontiguousarray(a)
    if a.dtype == BF16:
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(a)


def _array(torch, t):
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(BF16)
    return t.numpy()


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("case", ALL_CASES, ids=_case_id)
def test_family_vs_torch(torch, case, dtype):
    """Max values, indices and gradients bit for bit; averages within the contract's rounding.

    PyTorch rounds its average twice (a sum, then a division by kh and by kw) and sums 16-bit
    gradients in their own type, so each result is compared with the exact one: ours within
    our bound, theirs as a sanity check of the comparison.
    """
    F = torch.nn.functional
    rank, shape, osz = case
    x = rand(shape, dtype, seed=7, low=0.25)
    xt = _tensor(torch, x).requires_grad_(True)
    y = fn("avg", rank)(x, osz)
    tosz = ref.resolve_output_size(osz, shape[-rank:])  # PyTorch 1-D takes no None
    yt = getattr(F, f"adaptive_avg_pool{rank}d")(xt, tosz)
    assert yt.shape == y.shape
    exact = ref.avg_pool(x, osz, rank)
    assert ref.max_ulp(y, exact) <= _ulp_bound(dtype)
    assert ref.max_ulp(_array(torch, yt.detach()), exact) <= 4 * _ulp_bound(dtype)
    g = rand(y.shape, dtype, seed=8, low=0.25)
    (gt,) = torch.autograd.grad(yt, xt, _tensor(torch, g))
    gi = fn("avg", rank, True)(g, x)
    exact_gi = ref.avg_pool_backward(g, shape, rank)
    assert ref.max_ulp(gi, exact_gi) <= _ulp_bound(dtype)
    assert ref.max_ulp(_array(torch, gt), exact_gi) <= 4 * _ulp_bound(dtype)

    x = small_ints(shape, dtype, seed=9, high=4)  # ties
    xt = _tensor(torch, x).requires_grad_(True)
    ym, im = fn("max", rank)(x, osz, index_dtype=np.int64)
    ymt, imt = getattr(F, f"adaptive_max_pool{rank}d")(xt, tosz, return_indices=True)
    np.testing.assert_array_equal(bits(ym), bits(_array(torch, ymt.detach())))
    np.testing.assert_array_equal(im, imt.numpy())
    # a gradient that is exact in every dtype, so that the sums at shared maxima agree
    g = small_ints(ym.shape, dtype, seed=10, high=5)
    (gmt,) = torch.autograd.grad(ymt, xt, _tensor(torch, g))
    np.testing.assert_array_equal(bits(fn("max", rank, True)(g, x, im)), bits(_array(torch, gmt)))


# -- the error contract, for every operator ------------------------------------------------------
from support import MISSING, check  # noqa: E402


def _problem(kind, rank, dtype=F32):
    """``(x, output_size, y, indices, grad_output)`` of a small problem of one operator pair."""
    x = rand((2, 3) + (5, 6, 7)[3 - rank :], dtype, seed=11)
    if kind == "max":
        y, idx = fn("max", rank)(x, 2)
    else:
        y, idx = fn("avg", rank)(x, 2), None
    return x, 2, y, idx, np.ones_like(y)


@pytest.mark.parametrize("kind", ["avg", "max"])
@pytest.mark.parametrize("rank", RANKS)
def test_forward_errors_in_every_operator(kind, rank):
    f = fn(kind, rank)
    x, osz, y, _, _ = _problem(kind, rank)
    layout = {1: "(C, L)", 2: "(C, H, W)", 3: "(C, D, H, W)"}[rank]
    check(TypeError, "x", f, None, osz, status=MISSING)
    check(TypeError, "output_size", f, x, None, status=MISSING)
    check(ValueError, "x", f, x[0, 0], osz, contains=[f"{rank + 1}-D or {rank + 2}-D", layout])
    check(ValueError, "x", f, x[None, None], osz)
    check(TypeError, "x", f, x.astype(np.int32), osz, contains=["bfloat16"])
    check(ValueError, "output_size", f, x, -1, contains=[">= 0"])
    check(ValueError, "output_size", f, x, (2,) * (rank + 1), contains=[f"{rank} entries"])
    check(TypeError, "output_size", f, x, 2.0)
    check(ValueError, "out", f, x, osz, out=np.empty((9,), F32))
    check(ValueError, "out", f, x, osz, out=x[..., :2] if rank == 1 else x[..., :2, :2])
    if kind == "max":
        check(TypeError, "index_dtype", f, x, osz, index_dtype=np.int16)
        check(TypeError, "indices_out", f, x, osz, indices_out=np.empty(y[0].shape, np.float32))


@pytest.mark.parametrize("kind", ["avg", "max"])
@pytest.mark.parametrize("rank", RANKS)
def test_backward_errors_in_every_operator(kind, rank):
    b = fn(kind, rank, True)
    x, _, y, idx, g = _problem(kind, rank)
    extra = (idx,) if kind == "max" else ()
    check(TypeError, "grad_output", b, None, x, *extra, status=MISSING)
    check(TypeError, "x", b, g, None, *extra, status=MISSING)
    check(ValueError, "grad_output", b, g[:1], x, *(e[:1] for e in extra), contains=["N and C"])
    check(ValueError, "grad_output", b, g[0], x, *(e[0] for e in extra), contains=["rank"])
    check(TypeError, "grad_output", b, g.astype(F64), x, *extra)
    check(ValueError, "out", b, g, x, *extra, out=np.empty(g.shape, F32))
    if kind == "max":
        check(TypeError, "indices", b, g, x, None, status=MISSING)
        check(TypeError, "indices", b, g, x, idx.astype(np.float32))
        check(ValueError, "indices", b, g, x, idx[..., :1])
        bad = idx.copy()
        bad.flat[-1] = -1
        check(IndexError, "indices", b, g, x, bad, contains=["outside the window"])


# -- the two-phase API, for every operator -------------------------------------------------------
@pytest.mark.parametrize("kind", ["avg", "max"])
@pytest.mark.parametrize("rank", RANKS)
def test_two_phase_api_for_every_operator(kind, rank):
    from adaptive_pool import acl

    x, osz, y, idx, g = _problem(kind, rank, BF16)
    name = f"adaptive_{kind}_pool{rank}d"
    if kind == "max":
        yo, io = np.empty_like(y), np.empty_like(idx)
        size, ex = getattr(acl, f"{name}_get_workspace_size")(x, osz, yo, io)
        want = (y, idx)
        result = (yo, io)
    else:
        yo = np.empty_like(y)
        size, ex = getattr(acl, f"{name}_get_workspace_size")(x, osz, yo)
        want, result = (y,), (yo,)
    getattr(acl, name)(np.empty(size, np.uint8), size, ex)
    for a, w in zip(result, want):
        np.testing.assert_array_equal(bits(a), bits(w))
    gi = np.empty_like(x)
    args = (g, x, idx, gi) if kind == "max" else (g, x, gi)
    size, ex = getattr(acl, f"{name}_backward_get_workspace_size")(*args)
    getattr(acl, f"{name}_backward")(None, None, ex)
    want_gi = fn(kind, rank, True)(g, x, *((idx,) if kind == "max" else ()))
    np.testing.assert_array_equal(bits(gi), bits(want_gi))
    # a too-small workspace, and another operator's executor, are errors
    check(ValueError, "workspace_size", getattr(acl, f"{name}_backward"), np.empty(1, np.uint8),
          size - 8, ex)
    check(TypeError, "executor", getattr(acl, name), None, None, ex)


@pytest.mark.parametrize("name", [f"adaptive_{k}_pool{r}d" for k in ("avg", "max") for r in RANKS])
def test_docstring_examples_run(name):
    """Each forward's docstring, written once and filled in per rank, shows what it computes."""
    import doctest

    f = getattr(ap, name)
    assert f.__name__ == name and "over the last" in f.__doc__
    tests = doctest.DocTestFinder().find(f, name, globs={})
    assert tests and tests[0].examples
    result = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE).run(tests[0])
    assert result.failed == 0 and result.attempted >= 2
