"""The PyTorch layer: registered operators (opcheck), gradients (gradcheck, gradgradcheck),
values against torch.nn.functional, vmap, torch.func and torch.compile.

PyTorch's own functions are the independent oracle throughout.
"""

from __future__ import annotations

import subprocess
import sys
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import adaptive_pool as ap  # noqa: E402
import adaptive_pool.torch as apt  # noqa: E402
from adaptive_pool.torch import ops  # noqa: E402
from adaptive_pool.torch._bridge import as_array  # noqa: E402

F = torch.nn.functional
DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
DTYPE_IDS = ("float32", "float64", "float16", "bfloat16")
# per rank: a batched input shape and an output size with overlapping windows and an upsampled
# axis where the rank allows one
SHAPES = {1: ((2, 3, 11), (4,)), 2: ((2, 3, 7, 9), (3, 4)), 3: ((2, 2, 5, 6, 7), (2, 4, 3))}
# smaller ones for the numerical Jacobians of gradcheck (one column per input element)
GRAD_SHAPES = {1: ((2, 2, 7), (3,)), 2: ((2, 2, 5, 6), (3, 4)), 3: ((1, 2, 3, 5, 4), (2, 3, 3))}


def make(shape, dtype=torch.float32, seed=0, requires_grad=False, distinct=False):
    """Random data in [-4, 4); with ``distinct``, a permutation (no ties for the max)."""
    g = torch.Generator().manual_seed(seed)
    n = int(np.prod(shape))
    if distinct:
        t = torch.randperm(n, generator=g).to(torch.float64).reshape(shape) / max(n, 1)
    else:
        t = torch.rand(shape, generator=g, dtype=torch.float64) * 8 - 4
    return t.to(dtype).requires_grad_(requires_grad)


def channels_last(t):
    fmt = {4: torch.channels_last, 5: torch.channels_last_3d}[t.dim()]
    return t.detach().to(memory_format=fmt).requires_grad_(t.requires_grad)


def non_contiguous(t):
    """The same values, every other element of a doubled last axis."""
    wide = torch.stack([t.detach(), torch.full_like(t.detach(), 99.0)], dim=-1)
    return wide.flatten(-2)[..., ::2].requires_grad_(t.requires_grad)


def torch_pool(kind, rank):
    return getattr(F, f"adaptive_{kind}_pool{rank}d")


def ours(kind, rank):
    return getattr(apt, f"adaptive_{kind}_pool{rank}d")


# -- opcheck ------------------------------------------------------------------------------------
def _layouts():
    """(id, x maker) pairs: shapes and layouts every operator is opchecked on."""
    s2, _ = SHAPES[2]
    return [
        ("contiguous", lambda dt, rg: make(s2, dt, requires_grad=rg)),
        ("non-contiguous", lambda dt, rg: non_contiguous(make(s2, dt, requires_grad=rg))),
        ("channels-last", lambda dt, rg: channels_last(make(s2, dt, requires_grad=rg))),
        ("empty-batch", lambda dt, rg: make((0,) + s2[1:], dt, requires_grad=rg)),
        ("unbatched", lambda dt, rg: make(s2[1:], dt, requires_grad=rg)),
    ]


def _opcheck_all(x, output_size):
    """opcheck the four operators on ``x`` pooled to ``output_size``."""
    s = len(output_size)
    torch.library.opcheck(ops.avg_pool, (x, output_size))
    torch.library.opcheck(ops.max_pool, (x, output_size, torch.int64))
    with torch.no_grad():
        y, idx = ops.max_pool(x, output_size, torch.int64)
    g = make(y.shape, x.dtype, seed=1, requires_grad=x.requires_grad)
    torch.library.opcheck(ops.avg_pool_backward, (g, x, s))
    torch.library.opcheck(ops.max_pool_backward, (g, x, idx, s))


@pytest.mark.parametrize("requires_grad", [False, True], ids=["nograd", "grad"])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_opcheck_dtypes(dtype, requires_grad):
    x, o = SHAPES[2]
    _opcheck_all(make(x, dtype, requires_grad=requires_grad), list(o))


@pytest.mark.parametrize("layout", range(len(_layouts())), ids=[i for i, _ in _layouts()])
def test_opcheck_layouts(layout):
    _, maker = _layouts()[layout]
    _opcheck_all(maker(torch.float32, True), list(SHAPES[2][1]))


@pytest.mark.parametrize("rank", [1, 3])
def test_opcheck_other_ranks(rank):
    if rank == 3:  # int32 indices (the library's default), once
        torch.library.opcheck(ops.max_pool, (make(SHAPES[3][0]), list(SHAPES[3][1]), torch.int32))
    x, o = SHAPES[rank]
    _opcheck_all(make(x, torch.float64, requires_grad=True), list(o))
    _opcheck_all(make(x[1:], torch.float32), list(o))  # unbatched


def test_channels_last_in_channels_last_out():
    x = channels_last(make((2, 8, 7, 9), requires_grad=True))
    y = apt.adaptive_avg_pool2d(x, (3, 4))
    assert y.is_contiguous(memory_format=torch.channels_last)
    y.sum().backward()
    assert x.grad.is_contiguous(memory_format=torch.channels_last)


# channels-last inputs (and an output-sized gradient, expanded or channels-last) whose sizes
# include ones, where the strides of a memory format are a convention
_CL_CASES = [((2, 8, 7, 9), (3, 4)), ((1, 3, 5, 1), (2, 1)), ((2, 4, 1, 6), (1, 4)),
             ((2, 3, 4, 5, 6), (2, 3, 4)), ((1, 2, 3, 1, 4), (2, 1, 3))]


def _bits(t):
    return t.view({2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape,size", _CL_CASES, ids=[str(c[0]) for c in _CL_CASES])
def test_channels_last_calls_repeat_through_prepared_calls(shape, size, dtype, monkeypatch):
    """A call on a channels-last CPU tensor plans and writes into a torch-allocated result,
    then keeps a prepared call whose NumPy results are laid out channels-last too: the next
    calls take it, with the first call's bits and strides, which are PyTorch's own."""
    from adaptive_pool import executors

    ap.clear_cache()
    rank, size = len(size), list(size)
    x = channels_last(make(shape, dtype, distinct=True))
    xn = channels_last(torch.where(make(shape, seed=2) > 2, float("nan"), x))
    F_avg, F_max = torch_pool("avg", rank), torch_pool("max", rank)

    def calls():
        y = ops.avg_pool(x, size)
        yn = ops.avg_pool(xn, size, True)
        m, idx = ops.max_pool(x, size, torch.int64)
        g = channels_last(make(y.shape, dtype, seed=1))
        flat = torch.ones((), dtype=dtype).expand(y.shape)  # as y.sum().backward() hands it
        return [y, yn, m, idx, ops.avg_pool_backward(g, x, rank),
                ops.avg_pool_backward(flat, xn, rank, True),
                ops.max_pool_backward(g, x, idx, rank), ops.max_pool_backward(flat, x, idx, rank)]

    with torch.no_grad():
        first = calls()
        # kept under keys that begin with the results' axis order: the six kinds of call
        kept = [run for k, run in executors._PREPARED.items() if isinstance(k[0], tuple)]
        assert len(kept) == 6 and all(kept)

        def planned(*args, **kwargs):
            raise AssertionError("a repeated call took the long way")

        monkeypatch.setattr(executors.Executor, "run", planned)
        again = calls()
    for a, b in zip(first, again):
        assert a.stride() == b.stride() and torch.equal(_bits(a), _bits(b))
    y, m, idx = first[0], first[2], first[3]
    want_y, want_idx = F_avg(x, size), F_max(x, size, return_indices=True)[1]
    assert y.stride() == want_y.stride() and idx.stride() == want_idx.stride()
    if dtype == torch.float64:
        assert torch.equal(m, F_max(x, size)) and torch.equal(idx, want_idx)
        torch.testing.assert_close(y, want_y)


# -- gradients ----------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["avg", "max"])
@pytest.mark.parametrize("rank", [1, 2, 3])
def test_gradcheck_and_gradgradcheck(kind, rank):
    shape, o = GRAD_SHAPES[rank]
    x = make(shape, torch.float64, requires_grad=True, distinct=True)
    f = ours(kind, rank)
    fn = lambda t: f(t, o)  # noqa: E731
    assert torch.autograd.gradcheck(fn, (x,))
    assert torch.autograd.gradgradcheck(fn, (x,))
    # unbatched, and through the library's own top-level function
    xu = make(shape[1:], torch.float64, requires_grad=True, distinct=True)
    top = getattr(ap, f"adaptive_{kind}_pool{rank}d")
    fn_top = (lambda t: top(t, o)[0]) if kind == "max" else (lambda t: top(t, o))
    assert torch.autograd.gradcheck(fn_top, (xu,))
    assert torch.autograd.gradgradcheck(fn_top, (xu,))


# -- values, indices and gradients against torch.nn.functional ----------------------------------
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("kind", ["avg", "max"])
@pytest.mark.parametrize("rank", [1, 2, 3])
def test_against_torch(rank, kind, dtype):
    """Values, indices and gradients. For float16 and bfloat16 the oracle is PyTorch in float32
    rounded once to the dtype, which is what the contract promises (PyTorch's own 16-bit CPU
    backward rounds at every step of its sums)."""
    shape, o = SHAPES[rank]
    wide = torch.float64 if dtype == torch.float64 else torch.float32
    x = make(shape, dtype, seed=rank, requires_grad=True)
    x_ref = x.detach().to(wide).requires_grad_(True)  # exact: every 16-bit value is a float32
    g = make((shape[0], shape[1]) + o, dtype, seed=7)
    if kind == "max":
        want, want_i = torch_pool(kind, rank)(x_ref, o, return_indices=True)
        got, got_i = ours(kind, rank)(x, o, return_indices=True)
        assert got_i.dtype == torch.int64
        torch.testing.assert_close(got_i, want_i, rtol=0, atol=0)  # first maximum on ties, both
        torch.testing.assert_close(got, want.to(dtype), rtol=0, atol=0)
    else:
        want = torch_pool(kind, rank)(x_ref, o)
        got = ours(kind, rank)(x, o)
        torch.testing.assert_close(got, want.to(dtype))
    assert got.dtype == dtype
    (gx,) = torch.autograd.grad(got, x, g)
    (gx_ref,) = torch.autograd.grad(want, x_ref, g.to(wide))
    torch.testing.assert_close(gx, gx_ref.to(dtype))
    if kind == "max" and dtype == torch.float32:  # PyTorch sums in the same order: bitwise
        torch.testing.assert_close(gx, gx_ref, rtol=0, atol=0)


def test_top_level_functions_take_tensors():
    x = make((2, 3, 7, 9), requires_grad=True)
    y = ap.adaptive_avg_pool2d(x, (3, 4))
    assert isinstance(y, torch.Tensor) and y.requires_grad
    torch.testing.assert_close(y, F.adaptive_avg_pool2d(x, (3, 4)))
    g = make(y.shape, seed=3)
    gx = ap.adaptive_avg_pool2d_backward(g, x)
    (want,) = torch.autograd.grad(F.adaptive_avg_pool2d(x, (3, 4)), x, g)
    torch.testing.assert_close(gx, want)

    v = make((2, 2, 5, 6, 7), distinct=True)
    y, i = ap.adaptive_max_pool3d(v, (2, 4, 3))
    assert i.dtype == torch.int32  # our convention (CANN), not PyTorch's
    want_y, want_i = F.adaptive_max_pool3d(v, (2, 4, 3), return_indices=True)
    assert torch.equal(y, want_y) and torch.equal(i.long(), want_i)
    _, i64 = ap.adaptive_max_pool3d(v, (2, 4, 3), index_dtype=np.int64)
    assert i64.dtype == torch.int64
    gv = ap.adaptive_max_pool3d_backward(make(y.shape, seed=4), v, i)
    assert isinstance(gv, torch.Tensor) and gv.shape == v.shape


def test_top_level_out_tensors():
    x = make((2, 3, 7, 9))
    out = torch.full((2, 3, 4, 6), 7.0)[:, :, :3, :4]  # strided
    y = ap.adaptive_avg_pool2d(x, (3, 4), out=out)
    assert y is out
    torch.testing.assert_close(out, F.adaptive_avg_pool2d(x, (3, 4)))
    v = make((2, 2, 5, 6, 7))
    iout = torch.empty((2, 2, 2, 4, 3), dtype=torch.int64)
    y, i = ap.adaptive_max_pool3d(v, (2, 4, 3), indices_out=iout)
    assert i is iout and torch.equal(i, F.adaptive_max_pool3d(v, (2, 4, 3), True)[1])
    gi = torch.empty_like(v)
    assert ap.adaptive_max_pool3d_backward(torch.ones_like(y), v, i, out=gi) is gi
    # out= is not differentiable, as in PyTorch
    with pytest.raises(ap.AdaptivePoolValueError, match="not differentiable"):
        ap.adaptive_avg_pool2d(x.requires_grad_(True), (3, 4), out=torch.empty(2, 3, 3, 4))
    with torch.no_grad():
        ap.adaptive_avg_pool2d(x, (3, 4), out=torch.empty(2, 3, 3, 4))


def test_mixing_tensors_and_numpy_is_a_type_error():
    x = make((2, 3, 7, 9))
    with pytest.raises(ap.AdaptivePoolTypeError, match="one kind") as e:
        ap.adaptive_avg_pool2d(x, 2, out=np.empty((2, 3, 2, 2), np.float32))
    assert e.value.argument == "out"
    with pytest.raises(ap.AdaptivePoolTypeError, match="one kind") as e:
        ap.adaptive_avg_pool2d_backward(np.ones((2, 3, 2, 2), np.float32), x)
    assert e.value.argument == "grad_output"


def test_errors_keep_their_types():
    with pytest.raises(ap.AdaptivePoolTypeError, match="float32"):
        apt.adaptive_avg_pool2d(torch.ones(2, 3, 4, 5, dtype=torch.int32), 2)
    with pytest.raises(ap.AdaptivePoolValueError, match="4-D"):
        apt.adaptive_avg_pool2d(torch.ones(2, 3, 4, 5, 6), 2)
    with pytest.raises(ap.AdaptivePoolValueError, match="2 entries"):
        apt.adaptive_max_pool2d(torch.ones(2, 3, 4, 5), (1, 2, 3))
    with pytest.raises(ap.AdaptivePoolValueError, match=">= 0"):
        apt.adaptive_max_pool2d(torch.ones(2, 3, 4, 5), -1)
    x = torch.ones(1, 1, 4, 4)
    bad = torch.zeros(1, 1, 2, 2, dtype=torch.int64)
    bad[0, 0, 1, 1] = 0  # cell (1, 1) pools rows 2-3, columns 2-3: offset 0 is outside it
    with pytest.raises(ap.AdaptivePoolIndexError, match="outside the window"):
        ops.max_pool_backward(torch.ones(1, 1, 2, 2), x, bad, 2)


def test_cpu_tensors_are_not_copied():
    for dtype in DTYPES:
        t = channels_last(make((2, 3, 4, 5), dtype))
        a = as_array(t, "x")
        assert a.__array_interface__["data"][0] == t.data_ptr()
        assert a.strides == tuple(s * t.element_size() for s in t.stride())
        assert np.array_equal(a.astype(np.float64), t.double().numpy())


@pytest.mark.parametrize("kind", ["avg", "max"])
def test_calls_without_history_skip_the_dispatcher_but_not_modes_or_tracing(kind):
    """Without autograd history a call runs the operator's kernel straight; a dispatch mode
    and the tracer still see the registered operator, with the same result."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Seen(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops.append(str(func))
            return func(*args, **(kwargs or {}))

    f = getattr(apt, f"adaptive_{kind}_pool2d")
    x = make((2, 3, 8, 9))
    want = f(x, (3, 4))
    with Seen() as mode:
        got = f(x, (3, 4))
    assert any(f"adaptive_pool.{kind}_pool" in o for o in mode.ops)
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    with torch.no_grad():
        traced = torch.jit.trace(lambda t: f(t, (3, 4)), x, check_trace=False)
    assert f"adaptive_pool::{kind}_pool" in str(traced.graph)
    torch.testing.assert_close(traced(x), want, rtol=0, atol=0)
    xg = x.clone().requires_grad_()
    (want_grad,) = torch.autograd.grad(f(xg, (3, 4)).sum(), xg)  # the backward runs straight
    with Seen() as mode:
        (got_grad,) = torch.autograd.grad(f(xg, (3, 4)).sum(), xg)
    assert any(f"adaptive_pool.{kind}_pool_backward" in o for o in mode.ops)
    torch.testing.assert_close(got_grad, want_grad, rtol=0, atol=0)


@pytest.mark.parametrize("kind", ["avg", "max"])
@pytest.mark.parametrize("skipna", [False, True], ids=["plain", "skipna"])
def test_calls_with_history_run_the_kernel_under_the_operators_rule(kind, skipna):
    """Eager autograd runs the operator's kernel through an ``autograd.Function`` with the
    operator's own autograd rule, without the custom operator's dispatch: the same values,
    gradients and second derivatives, bit for bit, as the registered operator."""
    x = make((2, 3, 8, 9), torch.float64, distinct=True)
    x[0, 1, 2, 3] = x[1, 2, 7, 8] = float("nan")
    top = getattr(ap, f"adaptive_{kind}_pool2d")
    if kind == "avg":
        ours_ = lambda t: top(t, (3, 4), skipna=skipna)  # noqa: E731
        registered = lambda t: ops.avg_pool(t, [3, 4], skipna)  # noqa: E731
    else:
        ours_ = lambda t: top(t, (3, 4), skipna=skipna, index_dtype=np.int64)[0]  # noqa: E731
        registered = lambda t: ops.max_pool(t, [3, 4], torch.int64, skipna)[0]  # noqa: E731
    results = []
    for f in (ours_, registered):
        xg = x.clone().requires_grad_()
        y = f(xg)
        g = make(y.shape, torch.float64, seed=1, requires_grad=True)
        (gx,) = torch.autograd.grad(y, xg, g, create_graph=True)
        (gg,) = torch.autograd.grad((gx * make(x.shape, torch.float64, seed=2)).nansum(), g)
        results.append((y, gx, gg, type(y.grad_fn).__name__))
    (y, gx, gg, node), (y_r, gx_r, gg_r, node_r) = results
    assert node.startswith("_Eager") and not node_r.startswith("_Eager")
    for a, b in ((y, y_r), (gx, gx_r), (gg, gg_r)):
        torch.testing.assert_close(a, b, rtol=0, atol=0, equal_nan=True)


def test_import_adaptive_pool_does_not_import_torch():
    code = "import sys, adaptive_pool; assert 'torch' not in sys.modules, 'torch imported'"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=300)


# -- vmap and torch.func (eager) ----------------------------------------------------------------
@pytest.mark.parametrize("kind", ["avg", "max"])
def test_vmap(kind):
    xs = make((4, 2, 3, 7, 9), torch.float64, distinct=True)  # a batch of batched inputs
    if kind == "avg":
        f = lambda t: apt.adaptive_avg_pool2d(t, (3, 4))  # noqa: E731
    else:
        f = lambda t: apt.adaptive_max_pool2d(t, (3, 4), return_indices=True)  # noqa: E731
    got = torch.vmap(f, in_dims=1, out_dims=1)(xs.movedim(0, 1))  # vmapped axis not first
    want = [f(x) for x in xs]
    if kind == "avg":
        torch.testing.assert_close(got.movedim(1, 0), torch.stack(want), rtol=0, atol=0)
    else:
        assert torch.equal(got[0].movedim(1, 0), torch.stack([w[0] for w in want]))
        assert torch.equal(got[1].movedim(1, 0), torch.stack([w[1] for w in want]))


@pytest.mark.parametrize("kind", ["avg", "max"])
def test_torch_func_grad_and_jacobians(kind):
    x = make((3, 5, 6), torch.float64, distinct=True)
    f_ours = lambda t: ours(kind, 2)(t, (2, 4))  # noqa: E731
    f_ref = lambda t: torch_pool(kind, 2)(t, (2, 4))  # noqa: E731
    loss = lambda f: (lambda t: (f(t) ** 2).sum())  # noqa: E731
    torch.testing.assert_close(torch.func.grad(loss(f_ours))(x), torch.func.grad(loss(f_ref))(x))
    # jacrev vmaps the backward operator (grad_output batched, x and indices not)
    torch.testing.assert_close(torch.func.jacrev(f_ours)(x), torch.func.jacrev(f_ref)(x))
    # jacfwd's forward-mode is not registered: jacobians go through reverse mode
    hess = torch.func.jacrev(torch.func.jacrev(loss(f_ours)))(x)
    want = torch.func.jacrev(torch.func.jacrev(loss(f_ref)))(x)
    torch.testing.assert_close(hess, want)


# -- torch.compile --------------------------------------------------------------------------------
def _net(x, v):
    """Uses the family's ranks and both kinds, with a non-trivial gradient."""
    a = apt.adaptive_avg_pool2d(x, (3, None))
    m, _ = apt.adaptive_max_pool2d(x.sin(), 4, return_indices=True)
    w = apt.adaptive_max_pool3d(v, (2, 3, 2))
    u = apt.adaptive_avg_pool1d(x.flatten(2), 5)
    return (a**2).sum() + (m * 3).sum() + w.square().sum() + u.sum()


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_compile_fullgraph(backend):
    torch._dynamo.reset()
    x = make((2, 3, 7, 9), requires_grad=True)
    v = make((2, 2, 5, 6, 7), requires_grad=True)
    want = _net(x, v)
    gx_want, gv_want = torch.autograd.grad(want, (x, v))
    compiled = torch.compile(_net, backend=backend, fullgraph=True)
    got = compiled(x, v)
    gx, gv = torch.autograd.grad(got, (x, v))
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(gx, gx_want)
    torch.testing.assert_close(gv, gv_want)
    torch._dynamo.reset()


# -- modules --------------------------------------------------------------------------------------
def test_modules_match_torch_modules():
    x = make((2, 3, 7, 9, 5), distinct=True)
    for rank in (1, 2, 3):
        xi = x.flatten(2)[..., :11] if rank == 1 else (x[..., 0] if rank == 2 else x)
        o = SHAPES[rank][1]
        for name, kw in (("AdaptiveAvgPool", {}), ("AdaptiveMaxPool", {"return_indices": True})):
            cls = f"{name}{rank}d"
            mine, theirs = getattr(apt, cls)(o, **kw), getattr(torch.nn, cls)(o, **kw)
            assert isinstance(mine, getattr(torch.nn, cls)) and repr(mine) == repr(theirs)
            torch.testing.assert_close(mine(xi), theirs(xi))


def test_swap_modules_in_place():
    pool = torch.nn.AdaptiveMaxPool2d(3, return_indices=True)
    seen = []
    pool.register_forward_hook(lambda m, i, o: seen.append(type(m).__module__))

    class Custom(torch.nn.AdaptiveAvgPool2d):  # a user's own subclass keeps its behaviour
        pass

    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 4, 3), torch.nn.AdaptiveAvgPool2d((4, 5)), pool, Custom(1)
    )
    same = model[2]
    assert apt.swap_modules(model) is model
    assert type(model[1]) is apt.AdaptiveAvgPool2d and model[1].output_size == (4, 5)
    assert type(model[2]) is apt.AdaptiveMaxPool2d and model[2] is same
    assert type(model[3]) is Custom
    y, i = model[2](make((1, 4, 7, 7)))
    assert seen == ["adaptive_pool.torch.modules"] and i.dtype == torch.int64
    root = apt.swap_modules(torch.nn.AdaptiveAvgPool3d(2))
    assert type(root) is apt.AdaptiveAvgPool3d


# -- the benchmark's torch mode -------------------------------------------------------------------
def test_bench_torch_runs(capsys):
    from adaptive_pool.bench.torch_mode import main

    assert main(["--shapes", "2x3x9x10:4x3", "1x2x5x6x7:2x3x4", "--repeats", "1",
                 "--calls", "2"]) == 0
    out = capsys.readouterr().out
    assert "adaptive_avg_pool2d" in out and "adaptive_max_pool3d" in out
    assert "torch.ops.adaptive_pool.avg_pool" in out
