"""CUDA backend, tier 1: every operator and dtype, bitwise equal to the CPU backend.

This module runs in two modes, chosen when it is imported:

* in the CUDA simulator (``NUMBA_ENABLE_CUDASIM=1 pytest -m cudasim``, its own process): the
  tests are marked ``cudasim`` and use tiny shapes (the simulator runs an OS thread per CUDA
  thread);
* otherwise the same tests are marked ``gpu`` and run on a real GPU, or skip when there is none.

The oracle is the CPU backend: CUDA results must be bitwise identical to it.
"""

from __future__ import annotations

import numba
import numpy as np
import pytest

SIMULATOR = bool(numba.config.ENABLE_CUDASIM)

if SIMULATOR:
    pytestmark = pytest.mark.cudasim
else:
    pytestmark = pytest.mark.gpu
    from numba import cuda

    if not cuda.is_available():
        pytest.skip("no CUDA GPU (and not in the CUDA simulator)", allow_module_level=True)

from numba import cuda  # noqa: E402 - after the mode check

import adaptive_pool as ap  # noqa: E402
from adaptive_pool import acl, bfloat16  # noqa: E402
from adaptive_pool.cuda import to_device, to_host  # noqa: E402
from support import bits  # noqa: E402

DTYPES = [np.float32, np.float64, np.float16, bfloat16]
DTYPE_IDS = ["f32", "f64", "f16", "bf16"]


# -- helpers -------------------------------------------------------------------------------------
def dev(a: np.ndarray):
    return to_device(a)  # Numba's own refuses bfloat16 (no buffer format) on a real GPU


def host(a) -> np.ndarray:
    return to_host(a)


def assert_bitwise(got, expected: np.ndarray) -> None:
    """``got`` (a device array) holds ``expected``'s bits (NaNs as NaN), dtype and shape."""
    assert not isinstance(got, np.ndarray), "a CUDA call must return a CUDA array"
    g = host(got)
    assert g.dtype == expected.dtype
    assert g.shape == expected.shape
    np.testing.assert_array_equal(bits(g), bits(expected))


def data(shape, dtype, seed=0, special=False) -> np.ndarray:
    """Random values; ``special`` adds ties, NaN, infinities and an all -inf stretch."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) * 3
    if special:
        x = np.round(x)  # many ties
        flat = x.reshape(-1)
        flat[rng.choice(flat.size, min(3, flat.size // 4), replace=False)] = np.nan
        flat[rng.choice(flat.size, min(2, flat.size // 4), replace=False)] = np.inf
        flat[: min(4, flat.size // 3)] = -np.inf
    return x.astype(dtype)


class _Interface:
    """A bare ``__cuda_array_interface__`` exporter over another array's memory."""

    def __init__(self, owner, desc):
        self.owner = owner
        self.__cuda_array_interface__ = desc


def reversed_w(d):
    """A view of device array ``d`` with a negative stride along its last axis."""
    if SIMULATOR:
        return d[..., ::-1]
    desc = dict(d.__cuda_array_interface__)
    strides = list(d.strides)
    ptr = desc["data"][0] + (d.shape[-1] - 1) * strides[-1]
    strides[-1] = -strides[-1]
    desc.update(data=(ptr, False), strides=tuple(strides), stream=None)
    return _Interface(d, desc)


def permuted(d, axes):
    """``d.transpose(axes)`` as a view (Numba's device arrays transpose only 2-D, by a copy)."""
    if SIMULATOR:
        return d.transpose(axes)
    desc = dict(d.__cuda_array_interface__)
    desc.update(shape=tuple(d.shape[a] for a in axes),
                strides=tuple(d.strides[a] for a in axes), stream=None)
    return _Interface(d, desc)


# -- the grid-stride loops' coordinates ----------------------------------------------------------
@pytest.mark.parametrize("radix", [(1, 1, 1, 1), (3, 1, 5, 2), (2, 7, 3, 4), (5, 4, 1, 9)])
@pytest.mark.parametrize("stride", [1, 2, 7, 16, 61, 1000])
def test_grid_stride_steps_are_the_divisions(radix, stride):
    """Advancing by the stride's digits with carries gives what dividing each item gives."""
    from adaptive_pool.cuda.kernels import _split, _step  # noqa: PLC0415

    C, A, B, E = radix
    total = 3 * C * A * B * E
    q = _split(stride, C, A, B, E)
    for start in range(min(stride, total)):
        coords = _split(start, C, A, B, E)
        for t in range(start + stride, total + stride, stride):
            coords = _step(*coords, *q, C, A, B, E)
            assert coords == _split(t, C, A, B, E)


def test_grid_stride_steps_beyond_2_32():
    from adaptive_pool.cuda.kernels import _split, _step  # noqa: PLC0415

    C, A, B, E = 4099, 1023, 997, 1031
    stride = 132 * 16 * 128 + 5
    t = 2**41 + 12345
    coords, q = _split(t, C, A, B, E), _split(stride, C, A, B, E)
    for _ in range(5000):
        t += stride
        coords = _step(*coords, *q, C, A, B, E)
        assert coords == _split(t, C, A, B, E)


# -- every operator and dtype --------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize(
    "shape, out", [((1, 2, 5, 7), (3, 4)), ((2, 2, 3), (3, 5))], ids=["down", "up-unbatched"]
)
def test_avg_pool2d_forward_and_backward(dtype, shape, out):
    x = data(shape, dtype)
    y = ap.adaptive_avg_pool2d(dev(x), out)
    assert_bitwise(y, ap.adaptive_avg_pool2d(x, out))
    go = data(y.shape, dtype, seed=1)
    gi = ap.adaptive_avg_pool2d_backward(dev(go), dev(x))
    assert_bitwise(gi, ap.adaptive_avg_pool2d_backward(go, x))


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64], ids=["i32", "i64"])
def test_max_pool3d_forward_and_backward(dtype, index_dtype):
    shape, out = (1, 2, 3, 4, 5), (2, 3, 2)
    x = data(shape, dtype, special=True)
    y, ind = ap.adaptive_max_pool3d(dev(x), out, index_dtype=index_dtype)
    y_cpu, ind_cpu = ap.adaptive_max_pool3d(x, out, index_dtype=index_dtype)
    assert_bitwise(y, y_cpu)
    assert_bitwise(ind, ind_cpu)
    go = data(y_cpu.shape, dtype, seed=2)
    gi = ap.adaptive_max_pool3d_backward(dev(go), dev(x), ind)
    assert_bitwise(gi, ap.adaptive_max_pool3d_backward(go, x, ind_cpu))


def test_max_pool3d_unbatched_upsampling():
    x = data((2, 2, 3, 2), np.float32, special=True)
    y, ind = ap.adaptive_max_pool3d(dev(x), (3, 2, 4))
    y_cpu, ind_cpu = ap.adaptive_max_pool3d(x, (3, 2, 4))
    assert_bitwise(y, y_cpu)
    assert_bitwise(ind, ind_cpu)
    go = data(y_cpu.shape, np.float32, seed=3)
    gi = ap.adaptive_max_pool3d_backward(dev(go), dev(x), ind)
    assert_bitwise(gi, ap.adaptive_max_pool3d_backward(go, x, ind_cpu))


@pytest.mark.parametrize("seed", range(6))
def test_random_problems(seed):
    """Random small sizes (down-, up- and non-divisible sampling) for each operator."""
    rng = np.random.default_rng(100 + seed)
    dtype = DTYPES[seed % 4]
    n, c = int(rng.integers(1, 3)), int(rng.integers(1, 3))
    x2 = data((n, c) + tuple(int(s) for s in rng.integers(1, 6, 2)), dtype, seed=seed)
    out2 = tuple(int(s) for s in rng.integers(1, 6, 2))
    y = ap.adaptive_avg_pool2d(dev(x2), out2)
    assert_bitwise(y, ap.adaptive_avg_pool2d(x2, out2))
    go2 = data(y.shape, dtype, seed=seed + 1)
    assert_bitwise(ap.adaptive_avg_pool2d_backward(dev(go2), dev(x2)),
                   ap.adaptive_avg_pool2d_backward(go2, x2))
    x3 = data((n, c) + tuple(int(s) for s in rng.integers(1, 4, 3)), dtype, seed=seed,
              special=True)
    out3 = tuple(int(s) for s in rng.integers(1, 4, 3))
    ym, ind = ap.adaptive_max_pool3d(dev(x3), out3)
    ym_cpu, ind_cpu = ap.adaptive_max_pool3d(x3, out3)
    assert_bitwise(ym, ym_cpu)
    assert_bitwise(ind, ind_cpu)
    go3 = data(ym_cpu.shape, dtype, seed=seed + 2)
    assert_bitwise(ap.adaptive_max_pool3d_backward(dev(go3), dev(x3), ind),
                   ap.adaptive_max_pool3d_backward(go3, x3, ind_cpu))


FAMILY_CASES = [
    (1, (2, 3, 7), 3), (1, (2, 5), (9,)), (1, (1, 2, 6), 1),
    (2, (2, 2, 5, 4), (None, 1)), (2, (2, 4, 3), (1, None)), (2, (1, 2, 3, 5), (4, 2)),
    (3, (1, 2, 2, 3, 4), 1), (3, (2, 3, 2, 3), (3, None, 2)),
]


# One OS thread per simulated CUDA thread: the family's ranks in float32 and bfloat16 (the other
# dtypes run through the same kernels in the tests above), skipna on one case per rank.
FAMILY_DTYPES = pytest.mark.parametrize("dtype", [np.float32, bfloat16], ids=["f32", "bf16"])
SKIPNA_CASES = [FAMILY_CASES[0], FAMILY_CASES[3], FAMILY_CASES[7]]


@FAMILY_DTYPES
@pytest.mark.parametrize(
    "rank, shape, out", FAMILY_CASES, ids=[f"{r}d-{s}->{o}" for r, s, o in FAMILY_CASES]
)
def test_the_family(dtype, rank, shape, out):
    """Every rank of both operators and their backwards, bitwise equal to the CPU."""
    x = data(shape, dtype, special=True)
    avg, mx = (getattr(ap, f"adaptive_{k}_pool{rank}d") for k in ("avg", "max"))
    y = avg(dev(x), out)
    y_cpu = avg(x, out)
    assert_bitwise(y, y_cpu)
    go = data(y_cpu.shape, dtype, seed=6)
    backward = getattr(ap, f"adaptive_avg_pool{rank}d_backward")
    assert_bitwise(backward(dev(go), dev(x)), backward(go, x))
    ym, ind = mx(dev(x), out, index_dtype=np.int64)
    ym_cpu, ind_cpu = mx(x, out, index_dtype=np.int64)
    assert_bitwise(ym, ym_cpu)
    assert_bitwise(ind, ind_cpu)
    backward = getattr(ap, f"adaptive_max_pool{rank}d_backward")
    assert_bitwise(backward(dev(go), dev(x), ind), backward(go, x, ind_cpu))


@FAMILY_DTYPES
@pytest.mark.parametrize(
    "rank, shape, out", SKIPNA_CASES, ids=[f"{r}d-{s}->{o}" for r, s, o in SKIPNA_CASES]
)
def test_the_family_skipping_nan(dtype, rank, shape, out):
    """skipna=True: the contract's lane order bit for bit, and the CPU's bits."""
    import reference as ref

    x = data(shape, dtype, seed=7, special=True)
    x.reshape(-1)[::3] = np.nan
    avg, mx = (getattr(ap, f"adaptive_{k}_pool{rank}d") for k in ("avg", "max"))
    y = avg(dev(x), out, skipna=True)
    assert_bitwise(y, ref.avg_pool_in_order(x, out, rank, skipna=True))
    assert_bitwise(y, avg(x, out, skipna=True))
    go = data(host(y).shape, dtype, seed=8)
    backward = getattr(ap, f"adaptive_avg_pool{rank}d_backward")
    assert_bitwise(backward(dev(go), dev(x), skipna=True), backward(go, x, skipna=True))
    ym, ind = mx(dev(x), out, skipna=True)
    ym_cpu, ind_cpu = mx(x, out, skipna=True)
    assert_bitwise(ym, ym_cpu)
    assert_bitwise(ind, ind_cpu)
    want_y, want_i = ref.max_pool(x, out, rank, skipna=True)
    np.testing.assert_array_equal(host(ind), want_i)


WARP_CASES = [  # (input, output): windows of 1 to 180 elements, 1 to 3 axes, overlapping
    ((2, 3, 20, 9), (1, 1)),
    ((1, 2, 13, 37), (3, 2)),
    ((1, 3, 5, 9, 7), (2, 1, 3)),
    ((2, 1, 3, 4), (3, 4)),
]
# the simulator runs a thread per simulated thread: two dtypes (the 16-bit codecs are shared)
WARP_DTYPES = DTYPES[::3] if SIMULATOR else DTYPES


@pytest.mark.parametrize("dtype", WARP_DTYPES, ids=DTYPE_IDS[::3] if SIMULATOR else DTYPE_IDS)
@pytest.mark.parametrize("skipna", [False, True], ids=["nan", "skipna"])
@pytest.mark.parametrize("shape, out", WARP_CASES, ids=[f"{s}->{o}" for s, o in WARP_CASES])
def test_warp_per_window_forwards(monkeypatch, dtype, skipna, shape, out):
    """The forwards' warp-per-window kernels (forced here for every window size) give the CPU's
    bits, as the thread-per-window kernels do: NaN, ties, infinities, all-NaN and all -inf
    windows, a reversed input."""
    from adaptive_pool.cuda import backend  # noqa: PLC0415

    rank = len(out)
    x = data(shape, dtype, seed=11, special=True)
    planes = x.reshape(-1, *shape[2:])
    planes[1] = np.nan  # whole windows of NaN
    planes[-1] = -np.inf
    planes[-1].reshape(-1)[: planes[-1].size // 3] = np.nan  # NaN first, then -inf only
    planes[0].reshape(-1)[5::7] = np.nan
    avg, mx = (getattr(ap, f"adaptive_{k}_pool{rank}d") for k in ("avg", "max"))
    monkeypatch.setattr(backend, "WARP_WINDOW", 0)
    assert_bitwise(avg(dev(x), out, skipna=skipna), avg(x, out, skipna=skipna))
    xr = reversed_w(dev(np.ascontiguousarray(x[..., ::-1])))
    ym, ind = mx(xr, out, skipna=skipna, index_dtype=np.int64)
    ym_cpu, ind_cpu = mx(x, out, skipna=skipna, index_dtype=np.int64)
    assert_bitwise(ym, ym_cpu)
    assert_bitwise(ind, ind_cpu)


# -- layouts -------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, bfloat16], ids=["f32", "bf16"])
def test_strided_inputs_and_outputs(dtype):
    big = data((2, 3, 6, 9), dtype)
    view = big[::2, ::-1, 1::2, ::-1]  # (1, 3, 3, 5): sliced, reversed
    xd = reversed_w(dev(big[::2, ::-1, 1::2]))  # the same view, built on the device
    y_cpu = ap.adaptive_avg_pool2d(view, (2, 3))
    assert_bitwise(ap.adaptive_avg_pool2d(xd, (2, 3)), y_cpu)

    # channels-last input and a strided out=
    cl = permuted(dev(np.ascontiguousarray(view.transpose(0, 2, 3, 1))), (0, 3, 1, 2))
    out_big = cuda.device_array((1, 3, 2, 6), np.dtype(dtype))
    out = out_big[:, :, :, ::2]
    res = ap.adaptive_avg_pool2d(cl, (2, 3), out=out)
    assert res is out
    np.testing.assert_array_equal(bits(host(out_big)[..., ::2]), bits(y_cpu))

    go = data((1, 3, 2, 3), dtype, seed=4)
    go_t = permuted(dev(np.ascontiguousarray(go.transpose(0, 1, 3, 2))), (0, 1, 3, 2))
    gi = ap.adaptive_avg_pool2d_backward(go_t, xd)
    assert_bitwise(gi, ap.adaptive_avg_pool2d_backward(go, view))


def test_strided_max_pool3d_and_backward():
    big = data((1, 2, 4, 5, 8), np.float16, special=True)
    view = big[:, :, ::-1, :, ::2]
    xd = dev(big[:, :, ::-1])[:, :, :, :, ::2]  # Numba device arrays take no `...`
    y, ind = ap.adaptive_max_pool3d(xd, (3, 2, 3), index_dtype=np.int64)
    y_cpu, ind_cpu = ap.adaptive_max_pool3d(view, (3, 2, 3), index_dtype=np.int64)
    assert_bitwise(y, y_cpu)
    assert_bitwise(ind, ind_cpu)
    go = data(y_cpu.shape, np.float16, seed=5)
    ind_t = permuted(dev(np.ascontiguousarray(ind_cpu.transpose(4, 3, 2, 1, 0))),
                     (4, 3, 2, 1, 0))
    gi = ap.adaptive_max_pool3d_backward(dev(go), xd, ind_t)
    assert_bitwise(gi, ap.adaptive_max_pool3d_backward(go, view, ind_cpu))


# -- the two-phase API with a device workspace ---------------------------------------------------
def test_acl_avg_pool2d_backward_with_device_workspace():
    x = data((1, 2, 5, 7), np.float16)
    go = data((1, 2, 3, 4), np.float16, seed=6)
    gi = cuda.device_array(x.shape, np.float16)
    size, ex = acl.adaptive_avg_pool2d_backward_get_workspace_size(dev(go), dev(x), gi)
    assert size == ex.workspace_size > 0
    ws = cuda.device_array(size + 8, np.uint8)
    acl.adaptive_avg_pool2d_backward(ws, size + 8, ex)
    expected = ap.adaptive_avg_pool2d_backward(go, x)
    assert_bitwise(gi, expected)
    acl.adaptive_avg_pool2d_backward(None, 0, ex)  # the executor's own workspace
    assert_bitwise(gi, expected)


def test_acl_max_pool3d_backward_with_device_workspace():
    x = data((2, 1, 3, 4, 3), bfloat16, special=True)
    y_cpu, ind_cpu = ap.adaptive_max_pool3d(x, (2, 2, 2))
    go = data(y_cpu.shape, bfloat16, seed=7)
    gi = cuda.device_array(x.shape, bfloat16)
    size, ex = acl.adaptive_max_pool3d_backward_get_workspace_size(
        dev(go), dev(x), dev(ind_cpu), gi
    )
    ws = cuda.device_array(size, np.uint8)
    acl.adaptive_max_pool3d_backward(ws, size, ex, stream=cuda.stream())
    assert_bitwise(gi, ap.adaptive_max_pool3d_backward(go, x, ind_cpu))


def test_acl_forward_with_device_workspace():
    x = data((1, 2, 3, 4, 5), np.float64, special=True)
    y = cuda.device_array((1, 2, 2, 2, 3), np.float64)
    ind = cuda.device_array((1, 2, 2, 2, 3), np.int32)
    size, ex = acl.adaptive_max_pool3d_get_workspace_size(dev(x), (2, 2, 3), y, ind)
    acl.adaptive_max_pool3d(cuda.device_array(size, np.uint8), size, ex)
    y_cpu, ind_cpu = ap.adaptive_max_pool3d(x, (2, 2, 3))
    assert_bitwise(y, y_cpu)
    assert_bitwise(ind, ind_cpu)


def test_acl_workspace_errors():
    x = data((1, 2, 5, 7), np.float32)
    out = cuda.device_array((1, 2, 3, 4), np.float32)
    size, ex = acl.adaptive_avg_pool2d_get_workspace_size(dev(x), (3, 4), out)
    with pytest.raises(TypeError, match="workspace"):
        acl.adaptive_avg_pool2d(np.empty(size, np.uint8), size, ex)  # host memory
    with pytest.raises(TypeError, match="uint8"):
        acl.adaptive_avg_pool2d(cuda.device_array(size // 8, np.int64), size, ex)
    with pytest.raises(ValueError, match="bytes"):
        acl.adaptive_avg_pool2d(cuda.device_array(size - 8, np.uint8), size, ex)
    with pytest.raises(ValueError, match="aligned"):
        acl.adaptive_avg_pool2d(cuda.device_array(size + 8, np.uint8)[1:], size, ex)
    acl.adaptive_avg_pool2d(cuda.device_array(size, np.uint8), size, ex)
    assert_bitwise(out, ap.adaptive_avg_pool2d(x, (3, 4)))


# -- errors --------------------------------------------------------------------------------------
def test_mixed_host_and_device_arrays_are_rejected():
    x = data((1, 2, 5, 7), np.float32)
    go = data((1, 2, 3, 4), np.float32)
    with pytest.raises(TypeError, match="one device"):
        ap.adaptive_avg_pool2d_backward(dev(go), x)
    with pytest.raises(TypeError, match="one device"):
        ap.adaptive_avg_pool2d(dev(x), (3, 4), out=np.empty((1, 2, 3, 4), np.float32))
    v = data((1, 2, 3, 4, 5), np.float32)
    _, ind = ap.adaptive_max_pool3d(v, 2)
    with pytest.raises(TypeError, match="one device"):
        ap.adaptive_max_pool3d_backward(dev(data((1, 2, 2, 2, 2), np.float32)), dev(v), ind)


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64], ids=["i32", "i64"])
def test_out_of_window_index_raises_index_error(index_dtype):
    x = data((1, 2, 3, 4, 5), np.float32)
    _, ind = ap.adaptive_max_pool3d(x, (2, 2, 2), index_dtype=index_dtype)
    go = data((1, 2, 2, 2, 2), np.float32)
    bad = ind.copy()
    bad[0, 1, 1, 0, 1] = 0  # (0, 0, 0) is outside that cell's window
    bad[0, 1, 1, 1, 1] = -1
    with pytest.raises(IndexError, match=r"indices\[0, 1, 1, 0, 1\] = 0") as err:
        ap.adaptive_max_pool3d_backward(dev(go), dev(x), dev(bad))
    assert isinstance(err.value, ap.AdaptivePoolError)
    # the same indices pass when valid
    gi = ap.adaptive_max_pool3d_backward(dev(go), dev(x), dev(ind))
    assert_bitwise(gi, ap.adaptive_max_pool3d_backward(go, x, ind))


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_backwards_where_windows_tile(dtype):
    """Windows that tile the input (4x6x4 -> 2x3x1) take the tiled average backward and the
    max backward's scatter: the gathers' bits (-0.0, NaN and infinite gradients, NaN inputs
    skipped), a bad index reported at its position whether the result is the call's own
    (checked as written) or the caller's out= (checked before, and left untouched)."""
    x = data((2, 2, 4, 6, 4), dtype, seed=9, special=True)
    _, ind = ap.adaptive_max_pool3d(x, (2, 3, 1), index_dtype=np.int64)
    go = data((2, 2, 2, 3, 1), dtype, seed=10, special=True)
    go.reshape(-1)[::5] = -0.0
    for skipna in (False, True):
        assert_bitwise(ap.adaptive_avg_pool3d_backward(dev(go), dev(x), skipna=skipna),
                       ap.adaptive_avg_pool3d_backward(go, x, skipna=skipna))
    gi_cpu = ap.adaptive_max_pool3d_backward(go, x, ind)
    assert_bitwise(ap.adaptive_max_pool3d_backward(dev(go), dev(x), dev(ind)), gi_cpu)
    out = dev(np.full(x.shape, 7, dtype))
    assert ap.adaptive_max_pool3d_backward(dev(go), dev(x), dev(ind), out=out) is out
    assert_bitwise(out, gi_cpu)
    bad = ind.copy()
    bad[1, 0, 1, 2, 0] = 0  # (0, 0, 0) lies in another window
    bad[1, 1, 0, 0, 0] = 4 * 6 * 4
    for target in (None, dev(np.full(x.shape, 7, dtype))):
        with pytest.raises(IndexError, match=r"indices\[1, 0, 1, 2, 0\] = 0"):
            ap.adaptive_max_pool3d_backward(dev(go), dev(x), dev(bad), out=target)
    np.testing.assert_array_equal(bits(host(target)), bits(np.full(x.shape, 7, dtype)))


def test_output_overlapping_input_is_rejected():
    buf = cuda.device_array((1, 2, 5, 7), np.float32)
    buf.copy_to_device(data((1, 2, 5, 7), np.float32))
    with pytest.raises(ValueError, match="overlaps x"):
        ap.adaptive_avg_pool2d(buf, (3, 4), out=buf[:, :, :3, :4])
    # disjoint halves of one allocation are fine
    big = cuda.device_array((1, 2, 10, 7), np.float32)
    big.copy_to_device(data((1, 2, 10, 7), np.float32))
    y = ap.adaptive_avg_pool2d(big[:, :, :5], (3, 4), out=big[:, :, 5:8, :4])
    assert y.shape == (1, 2, 3, 4)


def test_empty_grad_output_gives_zeros():
    x = data((1, 2, 3, 4), np.float16)
    go = cuda.device_array((1, 2, 0, 4), np.float16)
    gi_big = dev(np.full((1, 2, 3, 8), np.nan, np.float16))
    # (Numba's device arrays take no `...`)
    gi = ap.adaptive_avg_pool2d_backward(go, dev(x), out=gi_big[:, :, :, ::2])
    g = host(gi_big)
    assert np.all(bits(g[..., ::2]) == 0)
    assert np.all(np.isnan(g[..., 1::2]))  # untouched
    assert gi.shape == x.shape


def test_empty_batch_returns_empty_device_array():
    x = cuda.device_array((0, 2, 3, 4), np.float32)
    y = ap.adaptive_avg_pool2d(x, 2)
    assert y.shape == (0, 2, 2, 2) and not isinstance(y, np.ndarray)


# -- streams -------------------------------------------------------------------------------------
class _TorchLikeStream:
    def __init__(self, handle):
        self.cuda_stream = handle


@pytest.mark.parametrize(
    "make_stream",
    [lambda: None, lambda: 0, lambda: cuda.stream(), lambda: cuda.default_stream(),
     lambda: _TorchLikeStream(0)],
    ids=["none", "int", "numba", "default", "torch-like"],
)
def test_streams_are_accepted(make_stream):
    x = data((1, 2, 5, 7), np.float32)
    s = make_stream()
    y = ap.adaptive_avg_pool2d(dev(x), (3, 4), stream=s)
    if hasattr(s, "synchronize"):
        s.synchronize()
    assert_bitwise(y, ap.adaptive_avg_pool2d(x, (3, 4)))


def test_bad_stream_is_a_type_error():
    with pytest.raises(TypeError, match="stream"):
        ap.adaptive_avg_pool2d(dev(data((1, 2, 5, 7), np.float32)), 2, stream="s0")
