"""DESIGN §4: executors and the two-phase (aclnn-style) API with its workspace."""

from __future__ import annotations

import numpy as np
import pytest

import adaptive_pool as ap
from adaptive_pool import acl
from adaptive_pool.errors import AdaptivePoolError
from support import ALL_DTYPES, DTYPE_IDS, rand


def _problem(dtype, idt=np.int32, shape2=(2, 3, 7, 5), osz2=(3, 4), shape3=(2, 2, 4, 5, 6),
             osz3=(2, 3, 4)):
    x2 = rand(shape2, dtype, seed=1)
    y2 = ap.adaptive_avg_pool2d(x2, osz2)
    g2 = rand(y2.shape, dtype, seed=2)
    x3 = rand(shape3, dtype, seed=3)
    y3, i3 = ap.adaptive_max_pool3d(x3, osz3, index_dtype=idt)
    g3 = rand(y3.shape, dtype, seed=4)
    return x2, osz2, g2, x3, osz3, g3, i3


def _all_two_phase(dtype, idt, workspace_kind):
    """Each operator through acl: ((size, executor, run), want) per operator."""
    x2, osz2, g2, x3, osz3, g3, i3 = _problem(dtype, idt)
    out = {}
    y = np.empty(ap.adaptive_avg_pool2d(x2, osz2).shape, dtype)
    out["avg"] = (acl.adaptive_avg_pool2d_get_workspace_size(x2, osz2, y), acl.adaptive_avg_pool2d,
                  y, ap.adaptive_avg_pool2d(x2, osz2))
    gi = np.empty(x2.shape, dtype)
    out["avg_b"] = (acl.adaptive_avg_pool2d_backward_get_workspace_size(g2, x2, gi),
                    acl.adaptive_avg_pool2d_backward, gi, ap.adaptive_avg_pool2d_backward(g2, x2))
    want_y, want_i = ap.adaptive_max_pool3d(x3, osz3, index_dtype=idt)
    y3 = np.empty(want_y.shape, dtype)
    j3 = np.empty(want_i.shape, idt)
    out["max"] = (acl.adaptive_max_pool3d_get_workspace_size(x3, osz3, y3, j3),
                  acl.adaptive_max_pool3d, (y3, j3), (want_y, want_i))
    gi3 = np.empty(x3.shape, dtype)
    out["max_b"] = (acl.adaptive_max_pool3d_backward_get_workspace_size(g3, x3, i3, gi3),
                    acl.adaptive_max_pool3d_backward, gi3,
                    ap.adaptive_max_pool3d_backward(g3, x3, i3))
    return out


def _equal(got, want):
    if isinstance(got, tuple):
        for a, b in zip(got, want):
            _equal(a, b)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("idt", [np.int32, np.int64], ids=["int32", "int64"])
def test_two_phase_equals_one_call_and_runs_twice(dtype, idt):
    for name, ((size, ex), run, result, want) in _all_two_phase(dtype, idt, "own").items():
        assert isinstance(size, int) and size > 0 and size % 8 == 0, name
        assert size == ex.workspace_size
        for workspace in (np.empty(size, np.uint8), None, np.zeros(size + 24, np.uint8)):
            for outs in (result if isinstance(result, tuple) else (result,)):
                outs[...] = 0
            assert run(workspace, size if workspace is not None else 0, ex) is None
            _equal(result, want)
            run(workspace, size if workspace is not None else 0, ex)  # twice: same result
            _equal(result, want)


def test_workspace_holds_the_window_tables():
    x = rand((1, 1, 7, 5), np.float32)
    y = np.empty((1, 1, 3, 4), np.float32)
    size, ex = acl.adaptive_avg_pool2d_get_workspace_size(x, (3, 4), y)
    # d (1 -> 1), h (7 -> 3), w (5 -> 4): 2*I + 2*O int64 entries per axis
    assert size == 8 * ((2 + 2) + (14 + 6) + (10 + 8))
    ws = np.zeros(size, np.uint8)
    acl.adaptive_avg_pool2d(ws, size, ex)
    tab = ws.view(np.int64)
    assert tab[4:7].tolist() == [0, 2, 4] and tab[7:10].tolist() == [3, 5, 7]  # h start, end


def test_garbage_in_workspace_is_overwritten():
    x2, osz2, *_ = _problem(np.float32)
    y = np.empty((2, 3, 3, 4), np.float32)
    size, ex = acl.adaptive_avg_pool2d_get_workspace_size(x2, osz2, y)
    ws = np.full(size, 0xFF, np.uint8)
    acl.adaptive_avg_pool2d(ws, size, ex)
    np.testing.assert_array_equal(y, ap.adaptive_avg_pool2d(x2, osz2))


def _err(builtin, argument, fn, *args):
    with pytest.raises(AdaptivePoolError) as info:
        fn(*args)
    assert isinstance(info.value, builtin), repr(info.value)
    assert info.value.argument == argument, repr(info.value)
    assert argument in str(info.value)
    return info.value


@pytest.mark.parametrize("op", ["avg", "avg_b", "max", "max_b"])
def test_bad_workspaces_are_errors(op):
    (size, ex), run, result, want = _all_two_phase(np.float32, np.int32, "own")[op]
    # smaller than announced, both as a buffer and as a declared size
    _err(ValueError, "workspace", run, np.empty(size - 8, np.uint8), size, ex)
    _err(ValueError, "workspace", run, np.empty(size - 1, np.uint8), size, ex)
    _err(ValueError, "workspace_size", run, np.empty(size, np.uint8), size - 8, ex)
    _err(ValueError, "workspace_size", run, np.empty(size, np.uint8), 0, ex)
    # wrong dtype, kind, shape, layout, alignment
    _err(TypeError, "workspace", run, np.empty(size // 8, np.int64), size, ex)
    _err(TypeError, "workspace", run, np.empty(size, np.int8), size, ex)
    _err(TypeError, "workspace", run, bytearray(size), size, ex)
    _err(TypeError, "workspace", run, [0] * size, size, ex)
    _err(TypeError, "workspace", run, np.empty((2, size), np.uint8), size, ex)
    _err(TypeError, "workspace", run, np.empty(2 * size, np.uint8)[::2], size, ex)
    _err(ValueError, "workspace", run, np.empty(size + 8, np.uint8)[3 : size + 3], size, ex)
    # garbage sizes and executors
    for bad_size in ("100", 1.5e9, None, [size]):
        _err(TypeError, "workspace_size", run, np.empty(size, np.uint8), bad_size, ex)
    _err(ValueError, "workspace_size", run, np.empty(size, np.uint8), -1, ex)
    e = _err(TypeError, "executor", run, np.empty(size, np.uint8), size, None)
    assert e.status == 161001
    _err(TypeError, "executor", run, np.empty(size, np.uint8), size, ex.executor)
    _err(TypeError, "executor", run, np.empty(size, np.uint8), size, "executor")
    # an executor of another operator
    other = "avg" if op != "avg" else "max"
    (osize, oex), *_ = _all_two_phase(np.float32, np.int32, "own")[other]
    _err(TypeError, "executor", run, np.empty(max(size, osize), np.uint8), max(size, osize), oex)
    # after all that, the executor still runs and is right
    run(np.empty(size, np.uint8), size, ex)
    _equal(result, want)


def test_empty_problems_need_no_workspace():
    f = np.float32
    cases = [
        acl.adaptive_avg_pool2d_get_workspace_size(np.ones((0, 3, 4, 4), f), 2,
                                                   np.empty((0, 3, 2, 2), f)),
        acl.adaptive_avg_pool2d_get_workspace_size(np.ones((2, 3, 4, 4), f), (0, 2),
                                                   np.empty((2, 3, 0, 2), f)),
        acl.adaptive_avg_pool2d_backward_get_workspace_size(
            np.ones((2, 0, 2, 2), f), np.ones((2, 0, 4, 4), f), np.empty((2, 0, 4, 4), f)),
        acl.adaptive_max_pool3d_get_workspace_size(
            np.ones((2, 3, 4, 4, 4), f), (2, 0, 2), np.empty((2, 3, 2, 0, 2), f),
            np.empty((2, 3, 2, 0, 2), np.int32)),
    ]
    runs = [acl.adaptive_avg_pool2d, acl.adaptive_avg_pool2d,
            acl.adaptive_avg_pool2d_backward, acl.adaptive_max_pool3d]
    for (size, ex), run in zip(cases, runs):
        assert size == 0
        run(None, 0, ex)
        run(np.empty(0, np.uint8), 0, ex)
    # an empty grad_output: zeros, without a workspace
    gi = np.full((2, 3, 4, 4), 9.0, f)
    size, ex = acl.adaptive_avg_pool2d_backward_get_workspace_size(
        np.ones((2, 3, 0, 2), f), np.ones((2, 3, 4, 4), f), gi)
    assert size == 0
    acl.adaptive_avg_pool2d_backward(None, 0, ex)
    assert (gi == 0).all()


def test_phase_one_validates_everything():
    x2, osz2, g2, x3, osz3, g3, i3 = _problem(np.float32)
    y = np.empty((2, 3, 3, 4), np.float32)
    _err(TypeError, "out", acl.adaptive_avg_pool2d_get_workspace_size, x2, osz2, None)
    _err(ValueError, "out", acl.adaptive_avg_pool2d_get_workspace_size, x2, (3, 3), y)
    _err(ValueError, "out", acl.adaptive_avg_pool2d_get_workspace_size, y, (3, 4), y)
    _err(TypeError, "grad_input", acl.adaptive_max_pool3d_backward_get_workspace_size,
         g3, x3, i3, None)
    _err(TypeError, "indices_out", acl.adaptive_max_pool3d_get_workspace_size,
         x3, osz3, np.empty(g3.shape, np.float32), None)
    _err(TypeError, "indices_out", acl.adaptive_max_pool3d_get_workspace_size,
         x3, osz3, np.empty(g3.shape, np.float32), np.empty(g3.shape, np.float32))
    buf = np.empty(2 * g3.size, np.float32)
    _err(ValueError, "indices_out", acl.adaptive_max_pool3d_get_workspace_size,
         x3, osz3, buf[: g3.size].reshape(g3.shape), buf[: g3.size].view(np.int32).reshape(g3.shape))
    xb = x2.copy()
    _err(ValueError, "out", acl.adaptive_avg_pool2d_backward_get_workspace_size, g2, xb, xb)
    # the bad index is found when the kernel runs: phase two raises, nothing is written
    bad = i3.copy()
    bad[0, 0, 0, 0, 0] = -1
    gi = np.full(x3.shape, 3.0, np.float32)
    size, ex = acl.adaptive_max_pool3d_backward_get_workspace_size(g3, x3, bad, gi)
    _err(IndexError, "indices", acl.adaptive_max_pool3d_backward, np.empty(size, np.uint8),
         size, ex)
    assert (gi == 3.0).all()


def test_executor_cache_and_reuse():
    x2, osz2, *_ = _problem(np.float32)
    from adaptive_pool.functional import forward_executor

    a = forward_executor("adaptive_avg_pool2d", x2, osz2)
    b = forward_executor("adaptive_avg_pool2d", x2[:, :, ::-1], osz2)  # strides: same plan
    assert a is b
    assert forward_executor("adaptive_avg_pool2d", x2.astype(np.float64), osz2) is not a
    assert "adaptive_avg_pool2d" in repr(a) and str(a.workspace_size) in repr(a)
    ap.clear_cache()
    c = forward_executor("adaptive_avg_pool2d", x2, osz2)
    assert c is not a
    np.testing.assert_array_equal(a.run(x2), c.run(x2))
