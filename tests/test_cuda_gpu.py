"""CUDA backend, tier 3: real GPU only (marked ``gpu``; skipped without one).

Tier 1 (``test_cuda_backend.py``) also runs on the GPU in this mode. Here: PyTorch and CuPy arrays
in and out, bigger shapes, determinism over repeated runs, and an array above 2**31 elements.
The CPU backend is the oracle: results must be bitwise identical to it.
"""

from __future__ import annotations

import importlib.util

import numba
import numpy as np
import pytest

if numba.config.ENABLE_CUDASIM:
    pytest.skip("real-GPU tests do not run in the CUDA simulator", allow_module_level=True)

from numba import cuda  # noqa: E402

if not cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)

import adaptive_pool as ap  # noqa: E402
from adaptive_pool import acl, bfloat16  # noqa: E402
from adaptive_pool.cuda import to_device, to_host  # noqa: E402
from support import bits  # noqa: E402

pytestmark = pytest.mark.gpu

DTYPES = [np.float32, np.float64, np.float16, bfloat16]
DTYPE_IDS = ["f32", "f64", "f16", "bf16"]


def data(shape, dtype, seed=0, special=False) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) * 3
    if special:
        x = np.round(x)
        flat = x.reshape(-1)
        flat[rng.choice(flat.size, 5, replace=False)] = np.nan
        flat[:7] = -np.inf
    return x.astype(dtype)


def assert_same(got: np.ndarray, expected: np.ndarray) -> None:
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(bits(got), bits(expected))


# -- bigger shapes, every dtype -------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_avg_pool2d_bigger_shapes(dtype):
    x = data((4, 16, 67, 93), dtype)
    for out in [(13, 17), (67, 93), (100, 131), (1, 1)]:
        y = ap.adaptive_avg_pool2d(to_device(x), out)
        y_cpu = ap.adaptive_avg_pool2d(x, out)
        assert_same(to_host(y), y_cpu)
        go = data(y_cpu.shape, dtype, seed=1)
        gi = ap.adaptive_avg_pool2d_backward(to_device(go), to_device(x))
        assert_same(to_host(gi), ap.adaptive_avg_pool2d_backward(go, x))


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64], ids=["i32", "i64"])
def test_max_pool3d_bigger_shapes(dtype, index_dtype):
    x = data((2, 8, 19, 23, 29), dtype, special=True)
    for out in [(7, 5, 11), (19, 23, 29), (25, 30, 31)]:
        y, ind = ap.adaptive_max_pool3d(to_device(x), out, index_dtype=index_dtype)
        y_cpu, ind_cpu = ap.adaptive_max_pool3d(x, out, index_dtype=index_dtype)
        assert_same(to_host(y), y_cpu)
        assert_same(to_host(ind), ind_cpu)
        go = data(y_cpu.shape, dtype, seed=2)
        gi = ap.adaptive_max_pool3d_backward(to_device(go), to_device(x), ind)
        assert_same(to_host(gi), ap.adaptive_max_pool3d_backward(go, x, ind_cpu))


def test_ten_runs_are_bitwise_identical():
    x = data((8, 32, 45, 61), np.float32)
    go = data((8, 32, 11, 13), np.float32, seed=3)
    xd, god = to_device(x), to_device(go)
    v = data((2, 4, 17, 19, 23), np.float16, special=True)
    vd = to_device(v)
    first = None
    for _ in range(10):
        y = to_host(ap.adaptive_avg_pool2d(xd, (11, 13)))
        gi = to_host(ap.adaptive_avg_pool2d_backward(god, xd))
        ym, ind = ap.adaptive_max_pool3d(vd, (5, 6, 7))
        gm = ap.adaptive_max_pool3d_backward(to_device(to_host(ym)), vd, ind)
        run = [bits(a) for a in (y, gi, to_host(ym), to_host(ind), to_host(gm))]
        if first is None:
            first = run
        else:
            for a, b in zip(first, run):
                np.testing.assert_array_equal(a, b)


def test_launches_take_the_lean_path_once_checked():
    """Every kernel's arguments, as launch.py marshals them, equal Numba's own marshalling (a
    numba-cuda that lays them out otherwise keeps its own path: correct, but slower)."""
    from adaptive_pool.cuda import launch  # noqa: PLC0415

    if not launch.LEAN:
        pytest.skip("ADAPTIVE_POOL_CUDA_LAUNCH=numba")
    for dtype in (np.float32, bfloat16):
        x = to_device(data((2, 3, 9, 10), dtype))
        for skipna in (False, True):
            for _ in range(2):  # the first launch of each kernel checks, the second is lean
                y, i = ap.adaptive_max_pool2d(x, (4, 5), skipna=skipna, index_dtype=np.int64)
                ap.adaptive_max_pool2d_backward(y, x, i)
                ap.adaptive_avg_pool2d_backward(ap.adaptive_avg_pool2d(x, 3, skipna=skipna), x,
                                                skipna=skipna)
    lean = launch.lean_launches()
    assert len(lean) >= 12 and all(lean.values()), lean


@pytest.mark.slow
def test_more_than_2_31_elements():
    """64-bit offsets: a float16 input of 2**31 + 2**15 elements."""
    h, w = 2**16 + 1, 2**15
    rng = np.random.default_rng(4)
    x = rng.standard_normal((1, 1, h, w), dtype=np.float32).astype(np.float16)
    assert x.size > 2**31
    out = (1024, 256)  # windows of ~64 x 128: enough threads, bounded serial sums
    y = ap.adaptive_avg_pool2d(to_device(x), out)
    assert_same(to_host(y), ap.adaptive_avg_pool2d(x, out))


# -- PyTorch --------------------------------------------------------------------------------------
def _torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("this PyTorch has no CUDA")
    return torch


def _to_torch(torch, a: np.ndarray):
    if a.dtype == bfloat16:
        return torch.from_numpy(a.view(np.int16).copy()).view(torch.bfloat16).cuda()
    return torch.from_numpy(a.copy()).cuda()


def _from_torch(torch, t) -> np.ndarray:
    t = t.detach().cpu()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(bfloat16)
    return t.numpy()


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_torch_tensors_in_and_out(dtype):
    torch = _torch()
    x = data((2, 3, 11, 13), dtype)
    xt = _to_torch(torch, x)
    y = ap.adaptive_avg_pool2d(xt, (4, 5))
    assert isinstance(y, torch.Tensor) and y.is_cuda and y.device == xt.device
    assert_same(_from_torch(torch, y), ap.adaptive_avg_pool2d(x, (4, 5)))
    go = data((2, 3, 4, 5), dtype, seed=5)
    gi = ap.adaptive_avg_pool2d_backward(_to_torch(torch, go), xt)
    assert isinstance(gi, torch.Tensor)
    assert_same(_from_torch(torch, gi), ap.adaptive_avg_pool2d_backward(go, x))

    v = data((2, 3, 5, 6, 7), dtype, special=True)
    vt = _to_torch(torch, v)
    ym, ind = ap.adaptive_max_pool3d(vt, (2, 3, 4), index_dtype=np.int64)
    assert ind.dtype == torch.int64
    ym_cpu, ind_cpu = ap.adaptive_max_pool3d(v, (2, 3, 4), index_dtype=np.int64)
    assert_same(_from_torch(torch, ym), ym_cpu)
    assert_same(_from_torch(torch, ind), ind_cpu)
    gom = data(ym_cpu.shape, dtype, seed=6)
    gm = ap.adaptive_max_pool3d_backward(_to_torch(torch, gom), vt, ind)
    assert_same(_from_torch(torch, gm), ap.adaptive_max_pool3d_backward(gom, v, ind_cpu))


def test_torch_matches_torch_where_defined():
    """Against PyTorch's own kernels on float64 (no NaN): same values and the same indices."""
    torch = _torch()
    import torch.nn.functional as F  # noqa: PLC0415

    v = data((2, 3, 9, 10, 11), np.float64)
    vt = _to_torch(torch, v)
    ym, ind = ap.adaptive_max_pool3d(vt, (4, 3, 5), index_dtype=np.int64)
    ref, ref_ind = F.adaptive_max_pool3d(vt, (4, 3, 5), return_indices=True)
    assert torch.equal(ym, ref) and torch.equal(ind, ref_ind)
    x = data((2, 3, 9, 10), np.float64)
    y = ap.adaptive_avg_pool2d(_to_torch(torch, x), (4, 3))
    torch.testing.assert_close(y, F.adaptive_avg_pool2d(_to_torch(torch, x), (4, 3)))


def test_torch_streams_views_and_grad_tensors():
    torch = _torch()
    x = data((2, 3, 11, 13), np.float32)
    xt = _to_torch(torch, x).requires_grad_(True)  # refused by __cuda_array_interface__
    expected = ap.adaptive_avg_pool2d(x, (4, 5))
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):  # stream=None: PyTorch's current stream
        y = ap.adaptive_avg_pool2d(xt, (4, 5))
    s.synchronize()
    assert_same(_from_torch(torch, y), expected)
    y2 = ap.adaptive_avg_pool2d(xt, (4, 5), stream=s)  # an explicit PyTorch stream
    s.synchronize()
    assert_same(_from_torch(torch, y2), expected)
    # channels-last and sliced views
    cl = xt.detach().to(memory_format=torch.channels_last)
    assert_same(_from_torch(torch, ap.adaptive_avg_pool2d(cl, (4, 5))), expected)
    big = _to_torch(torch, data((2, 3, 22, 26), np.float32, seed=7))
    view = big[:, :, ::2, 1::2]
    assert_same(
        _from_torch(torch, ap.adaptive_avg_pool2d(view, (4, 5))),
        ap.adaptive_avg_pool2d(_from_torch(torch, view), (4, 5)),
    )


def test_torch_workspace_and_bad_index():
    torch = _torch()
    v = data((1, 2, 6, 7, 8), bfloat16, special=True)
    _, ind = ap.adaptive_max_pool3d(v, (3, 3, 3))
    go = data((1, 2, 3, 3, 3), bfloat16, seed=8)
    gi = torch.empty(v.shape, dtype=torch.bfloat16, device="cuda")
    size, ex = acl.adaptive_max_pool3d_backward_get_workspace_size(
        _to_torch(torch, go), _to_torch(torch, v), _to_torch(torch, ind), gi
    )
    ws = torch.empty(size, dtype=torch.uint8, device="cuda")
    acl.adaptive_max_pool3d_backward(ws, size, ex, stream=torch.cuda.current_stream())
    assert_same(_from_torch(torch, gi), ap.adaptive_max_pool3d_backward(go, v, ind))
    bad = ind.copy()
    bad[0, 1, 2, 2, 2] = 0
    with pytest.raises(IndexError, match=r"indices\[0, 1, 2, 2, 2\] = 0"):
        ap.adaptive_max_pool3d_backward(_to_torch(torch, go), _to_torch(torch, v),
                                        _to_torch(torch, bad))


# -- CuPy -----------------------------------------------------------------------------------------
@pytest.mark.skipif(importlib.util.find_spec("cupy") is None, reason="CuPy is not installed")
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16], ids=["f32", "f64", "f16"])
def test_cupy_arrays_in_and_out(dtype):
    import cupy  # noqa: PLC0415

    x = data((2, 3, 11, 13), dtype)
    xc = cupy.asarray(x)[:, :, ::-1]  # negative strides
    y = ap.adaptive_avg_pool2d(xc, (4, 5))
    assert isinstance(y, cupy.ndarray)
    assert_same(cupy.asnumpy(y), ap.adaptive_avg_pool2d(x[:, :, ::-1], (4, 5)))

    v = data((2, 3, 5, 6, 7), dtype, special=True)
    vc = cupy.asarray(v)
    s = cupy.cuda.Stream(non_blocking=True)
    ym, ind = ap.adaptive_max_pool3d(vc, (2, 3, 4), stream=s)
    gm = ap.adaptive_max_pool3d_backward(ym, vc, ind, stream=s)
    s.synchronize()
    assert isinstance(ind, cupy.ndarray) and ind.dtype == np.int32
    ym_cpu, ind_cpu = ap.adaptive_max_pool3d(v, (2, 3, 4))
    assert_same(cupy.asnumpy(ym), ym_cpu)
    assert_same(cupy.asnumpy(ind), ind_cpu)
    assert_same(cupy.asnumpy(gm), ap.adaptive_max_pool3d_backward(ym_cpu, v, ind_cpu))
