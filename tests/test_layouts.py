"""DESIGN §3 Shapes, layouts: any strides in, results C-contiguous or where out= says."""

from __future__ import annotations

import numpy as np
import pytest

import adaptive_pool as ap
import reference as ref
from support import ALL_DTYPES, BF16, DTYPE_IDS, F32, F64, channels_last, rand, tol

# Views of a 4-D (N, C, H, W) array other than the C-contiguous one, by name.
VIEWS2 = {
    "contiguous": lambda a: a,
    "fortran": lambda a: np.asfortranarray(a),
    "sliced": lambda a: np.repeat(a, 2, axis=-1)[:, :, :, ::2],
    "offset-steps": lambda a: np.pad(a, ((0, 0), (1, 0), (2, 1), (0, 3)))[:, 1:, 2:-1, :-3],
    "negative": lambda a: np.ascontiguousarray(a[:, ::-1, ::-1, ::-1])[:, ::-1, ::-1, ::-1],
    "channels-last": lambda a: np.ascontiguousarray(a.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2),
    "transposed-hw": lambda a: np.ascontiguousarray(a.swapaxes(-1, -2)).swapaxes(-1, -2),
}
VIEWS3 = {
    "contiguous": lambda a: a,
    "fortran": lambda a: np.asfortranarray(a),
    "sliced": lambda a: np.repeat(a, 3, axis=-2)[..., ::3, :],
    "negative": lambda a: np.ascontiguousarray(a[:, :, ::-1, :, ::-1])[:, :, ::-1, :, ::-1],
    "channels-last": lambda a: np.ascontiguousarray(a.transpose(0, 2, 3, 4, 1)).transpose(
        0, 4, 1, 2, 3
    ),
}


def _bits(a):
    return np.ascontiguousarray(a).view(np.uint8)


def _max_values(shape, seed):
    """float32 values for the max kernels: ties, NaN, -inf and -0.0 (seeds ``seed`` to
    ``seed + 2``)."""
    x = np.round(rand(shape, np.float32, seed=seed) * 2)  # ties
    x[rand(shape, np.float32, seed=seed + 1) > 1.1] = np.nan
    x[rand(shape, np.float32, seed=seed + 2) > 1.6] = -np.inf
    x[x == 0] = -0.0
    return x


def _same_values(view, base):
    np.testing.assert_array_equal(view, base)
    return view


@pytest.mark.parametrize("skipna", [False, True])
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize(
    "shape,out",
    [((2, 19, 9, 10), (4, 3)), ((3, 8, 7, 7), (1, 1)), ((1, 16, 5, 7, 6), (2, 3, 4)),
     ((1, 300, 4, 3), (3, 2)), ((2, 600, 9, 10), (4, 3))],
)
def test_avg_channels_last_blocks_of_channels(shape, out, dtype, skipna):
    """Channels-last inputs of 8 channels or more, which the average forward reads a block of
    channels at a time (all of them where there are output rows for every thread: 600 in one
    block on two threads; 300 of 3 rows: split, a block of 256 and one of 44), give the C-order
    input's bits, into C-order and channels-last results (float64 stores a row's outputs of
    each channel together)."""
    x = rand(shape, dtype, seed=4)
    x[rand(shape, np.float32, seed=5) > 1.2] = np.nan
    perm = (0, *range(2, x.ndim), 1)
    xv = np.ascontiguousarray(x.transpose(perm)).transpose(np.argsort(perm))
    assert xv.strides[1] == x.itemsize
    np.testing.assert_array_equal(_bits(xv), _bits(x))  # (NaN: the bits, not the values)
    fn = getattr(ap, f"adaptive_avg_pool{len(out)}d")
    want = fn(x, out, skipna=skipna)
    np.testing.assert_array_equal(_bits(fn(xv, out, skipna=skipna)), _bits(want))
    into = channels_last(np.empty_like(want))  # (a result whose channels are adjacent too)
    fn(xv, out, skipna=skipna, out=into)
    np.testing.assert_array_equal(_bits(into), _bits(want))


@pytest.mark.parametrize("skipna", [False, True])
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape,out", [((1, 8, 6, 6), (2, 3)), ((1, 8, 12, 12), (1, 1))])
def test_avg_channels_last_signed_zeros(shape, out, dtype, skipna):
    """Windows of -0.0 alone average to +0.0 (a lane starts at +0.0), also where the
    channels-last average stores a lane's first element instead of adding it (windows of 6
    and 144 elements: below and above the 32 lanes)."""
    x = np.full(shape, -0.0, dtype)
    x[:, ::2, :2, :2] = np.nan  # a NaN in the first window of every other channel
    xv = channels_last(x)
    fn = getattr(ap, f"adaptive_avg_pool{len(out)}d")
    got = fn(xv, out, skipna=skipna)
    np.testing.assert_array_equal(_bits(got), _bits(fn(x, out, skipna=skipna)))
    zeros = ~np.isnan(got.astype(np.float32))
    assert zeros.sum() >= got.size // 2
    assert not np.signbit(got.astype(np.float32)[zeros]).any()


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape,out", [((2, 9, 32, 33), (5, 4)), ((1, 8, 4, 16, 17), (3, 3, 4))])
def test_skipna_backward_of_channels_last_x(shape, out, dtype):
    """A channels-last ``x`` of 1,056 and 1,088 positions a plane, which the NaN-skipping
    average backward copies to C order first (``cpu/relayout.py``): the C-order ``x``'s bits,
    NaN inputs and whole NaN windows included."""
    x = rand(shape, dtype, seed=11)
    x[rand(shape, np.float32, seed=12) > 1.0] = np.nan
    x[:, :2, :8, :9] = np.nan
    go = rand(x.shape[:2] + out, dtype, seed=13)
    fn = getattr(ap, f"adaptive_avg_pool{len(out)}d_backward")
    want = fn(go, x, skipna=True)
    np.testing.assert_array_equal(_bits(fn(go, channels_last(x), skipna=True)), _bits(want))


@pytest.mark.parametrize("skipna", [False, True])
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
def test_avg_backward_large_results_of_small_planes(dtype, skipna):
    """A C-order result of more than 4 MiB in 14x14 planes, which the 8-planes backward stores
    a block of 8 planes at a time as one run (with skipna, +0.0 at x's NaN in the same pass):
    the bits of the same call into a strided ``out=`` (stored plane by plane), within the
    reference's ulps, NaN inputs 0, and a last block of 3 planes."""
    c = -(-(4 << 20) // (14 * 14 * np.dtype(dtype).itemsize) // 8) * 8 + 3
    x = rand((1, c, 14, 14), dtype, seed=14)
    x[rand(x.shape, np.float32, seed=15) > 3.0] = np.nan
    x[0, 5] = np.nan  # a plane without numbers
    go = rand((1, c, 5, 5), dtype, seed=16, low=0.0)  # (no cancellation: ulps stay meaningful)
    got = ap.adaptive_avg_pool2d_backward(go, x, skipna=skipna)
    strided = np.empty((1, c, 14, 15), dtype)[..., :14]
    ap.adaptive_avg_pool2d_backward(go, x, skipna=skipna, out=strided)
    np.testing.assert_array_equal(_bits(got), _bits(strided))
    exact = ref.avg_pool_backward(go, x.shape, 2, x if skipna else None)
    assert ref.max_ulp(got, exact) <= (1 if np.dtype(dtype).itemsize == 2 else 8)
    if skipna:
        assert not got[np.isnan(x)].any()


@pytest.mark.parametrize("chunks", ["calling thread", "many chunks"])
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize(
    "shape,out",
    [((8, 19, 14, 14), (5, 5)), ((8, 130, 9, 10), (4, 3)), ((2, 8, 4, 4), (7, 11)),
     ((1, 16, 5, 7, 6), (2, 3, 4)), ((2, 9, 4, 16, 16), (3, 1, 5))],
)
def test_avg_backward_of_channels_last_gradients_in_blocks_of_planes(shape, out, dtype, chunks,
                                                                      monkeypatch, request):
    """Channels-last gradients of small planes, which the plain average backward takes up to
    128 planes side by side (on two threads: 130 channels a block of 128 and one of 2; 19 a
    block of 24 lanes; upsampled: elements in 3 windows of a row; windows deeper than one d,
    whose slabs share their output planes, also split among many chunks): the bits of C-order
    gradients (the 8-planes kernel), into C-order, channels-last and strided results, within
    the reference's ulps."""
    from adaptive_pool.cpu import backend, kernels

    if chunks == "many chunks":
        request.getfixturevalue("knobs")  # (parallel launches of 32 chunks a thread)
    monkeypatch.setattr(backend, "_threads", lambda: 2)  # (the blocks the docstring names)
    if shape[1] in (130, 19):
        assert backend._backward_block(shape[1], shape[0], 2) == {130: 128, 19: 24}[shape[1]]

    chosen = []
    runner = backend.CpuBackend._runner

    def noted(self, kernel, work):
        chosen.append(kernel)
        return runner(self, kernel, work)

    monkeypatch.setattr(backend.CpuBackend, "_runner", noted)
    ap.clear_cache()
    x = rand(shape, dtype, seed=21)
    go = rand(shape[:2] + out, dtype, seed=22, low=0.0)  # (no cancellation: ulps stay meaningful)
    fn = getattr(ap, f"adaptive_avg_pool{len(out)}d_backward")
    want = fn(go, x)
    assert kernels.avg_pool_backward_block not in chosen
    got = fn(channels_last(go), x)
    assert kernels.avg_pool_backward_block in chosen
    np.testing.assert_array_equal(_bits(got), _bits(want))
    for into in (channels_last(np.empty_like(want)), np.empty(shape[:-1] + (shape[-1] + 3,),
                                                              dtype)[..., 1:-2]):
        fn(channels_last(go), x, out=into)
        np.testing.assert_array_equal(_bits(into), _bits(want))
    exact = ref.avg_pool_backward(go, x.shape, len(out))
    assert ref.max_ulp(got, exact) <= (1 if np.dtype(dtype).itemsize == 2 else 8)
    ap.clear_cache()


@pytest.mark.parametrize("skipna", [False, True])
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize(
    "shape,out",
    [((2, 19, 9, 10), (4, 3)), ((3, 8, 7, 7), (1, 1)), ((1, 16, 5, 7, 6), (2, 3, 4)),
     ((2, 9, 4, 5), (7, 9)), ((1, 300, 4, 3), (3, 2)), ((2, 6000, 3, 2), (2, 1)),
     ((1, 1500, 3, 10), (2, 5))],
)
def test_max_channels_last_blocks_of_channels(shape, out, dtype, skipna):
    """Channels-last inputs of 8 channels or more, whose blocks of channels the max forward
    compares side by side (every channel in one block where their state fits 32 KiB: 6000
    take two or three blocks, the last a partial one; the outputs of a row stored a few at a
    time: 1500 channels two outputs at a time in float32), with ties, NaN (whole NaN windows
    too) and infinities: the reference's values and indices, and the C-order input's bits,
    into C-order results and into channels-last ones."""
    x = np.round(rand(shape, np.float32, seed=6) * 2)  # ties
    x[rand(shape, np.float32, seed=7) > 1.1] = np.nan
    x[rand(shape, np.float32, seed=8) > 1.6] = -np.inf
    x[..., :2, :2] = np.nan  # windows of NaN only
    x = x.astype(dtype)
    perm = (0, *range(2, x.ndim), 1)
    xv = np.ascontiguousarray(x.transpose(perm)).transpose(np.argsort(perm))
    assert xv.strides[1] == x.itemsize
    fn = getattr(ap, f"adaptive_max_pool{len(out)}d")
    y, ind = fn(xv, out, skipna=skipna)
    want_y, want_i = ref.max_pool(x, out, len(out), skipna=skipna)
    np.testing.assert_array_equal(ind, want_i)
    np.testing.assert_array_equal(ref.to_f64(y), want_y)
    y_c, ind_c = fn(x, out, skipna=skipna)
    np.testing.assert_array_equal(_bits(y), _bits(y_c))
    np.testing.assert_array_equal(ind, ind_c)

    def cl(a):
        return np.full(a.transpose(perm).shape, -1, a.dtype).transpose(np.argsort(perm))

    y_cl, ind_cl = fn(xv, out, skipna=skipna, out=cl(y), indices_out=cl(ind))
    assert y_cl.strides[1] == y.itemsize and ind_cl.strides[1] == ind.itemsize
    np.testing.assert_array_equal(_bits(y_cl), _bits(y))
    np.testing.assert_array_equal(ind_cl, ind)
    y_cl, ind_c = fn(xv, out, skipna=skipna, out=cl(y))  # (the indices in C order)
    np.testing.assert_array_equal(_bits(y_cl), _bits(y))
    np.testing.assert_array_equal(ind_c, ind)


@pytest.mark.parametrize("skipna", [False, True])
@pytest.mark.parametrize("dtype", [F32, BF16], ids=["float32", "bfloat16"])
@pytest.mark.parametrize("shape,out", [((2, 19, 9, 10), (4, 3)), ((1, 16, 5, 7, 6), (2, 3, 4)),
                                       ((2, 9, 4, 5), (7, 9)), ((2, 6000, 3, 2), (2, 1))])
def test_max_channels_last_prefetched_as_if_from_memory(shape, out, dtype, skipna, knobs):
    """The channels-last max forward prefetches each window's elements for the next window
    where ``x`` comes from memory (``_CACHED_INPUT`` forced to 0 here): the same values and
    indices as without (overlapping windows, upsampled ones whose next window starts at the
    same element, two blocks of channels)."""
    x = np.round(rand(shape, np.float32, seed=6) * 2).astype(dtype)
    x[..., ::3, 1:] = np.nan
    perm = (0, *range(2, x.ndim), 1)
    xv = np.ascontiguousarray(x.transpose(perm)).transpose(np.argsort(perm))
    fn = getattr(ap, f"adaptive_max_pool{len(out)}d")
    y, ind = fn(xv, out, skipna=skipna)
    knobs(_CACHED_INPUT=0)
    y_p, ind_p = fn(xv, out, skipna=skipna)
    np.testing.assert_array_equal(_bits(y_p), _bits(y))
    np.testing.assert_array_equal(ind_p, ind)


@pytest.mark.parametrize("skipna", [False, True])
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize(
    "shape,out",
    [((1, 37, 14, 14), (5, 5)), ((2, 12, 9, 10), (4, 3)), ((1, 24, 4, 6, 6), (2, 3, 3)),
     ((1, 24, 3, 4), (5, 7)), ((1, 24, 10, 10), (1, 1))],
)
def test_max_blocks_of_planes_copied_side_by_side(shape, out, dtype, skipna, knobs):
    """C-order planes of unit-stride rows, which the max forward copies side by side in
    blocks (their minimum lowered so that small shapes take them: 24 to 37 planes, a last
    block of fewer, samples taken as more planes) and compares as the channels of a
    channels-last input, with ties, NaN (whole NaN windows too), infinities and signed zeros
    (16-bit values copied as they are): the reference's values and indices, from C-order planes
    and from planes two apart, into C-order and channels-last results."""
    from adaptive_pool.cpu import backend
    from adaptive_pool.cpu.lanes import vector_runs
    from adaptive_pool.dtypes import SUPPORTED

    knobs(_WIDE_MIN=16)
    x = _max_values(shape, seed=6)
    x[..., :2, :2] = np.nan  # windows of NaN only
    x = x.astype(dtype)
    storage = SUPPORTED[x.dtype].storage
    block = backend._lanewise_block(shape[0] * shape[1], int(np.prod(shape[2:])),
                                    (0, 0, 0, 0, 0, 1), storage)
    assert block > backend.kernels.LANES or not vector_runs(storage)
    fn = getattr(ap, f"adaptive_max_pool{len(out)}d")
    want_y, want_i = ref.max_pool(x, out, len(out), skipna=skipna)
    apart = np.zeros((shape[0], 2 * shape[1]) + shape[2:], dtype)
    apart[:, ::2] = x
    for v in (x, apart[:, ::2]):
        y, ind = fn(v, out, skipna=skipna)
        np.testing.assert_array_equal(ind, want_i)
        np.testing.assert_array_equal(ref.to_f64(y), want_y)
        y_cl, ind_cl = fn(v, out, skipna=skipna, out=channels_last(np.empty_like(y)),
                          indices_out=channels_last(np.empty_like(ind)))
        np.testing.assert_array_equal(_bits(y_cl), _bits(y))
        np.testing.assert_array_equal(ind_cl, ind)
    # the values' own bits (signed zeros; NaN payloads as the input's)
    flat = x.reshape(x.shape[0] * x.shape[1], -1)
    got = np.take_along_axis(flat, ind.reshape(flat.shape[0], -1), axis=1).reshape(y.shape)
    np.testing.assert_array_equal(_bits(y), _bits(got))


#: The limits that send the max forward's windows to the kernel named, rather than the
#: channels kernel (planes side by side).
_ONE_AT_A_TIME = {
    "max_pool_runs": dict(_MAX_ROW_RUN=0, _MAX_ROW_RUN_16=0, _MAX_ROW_RUN_FEW={2: 0, 4: 0, 8: 0},
                          _MAX_ONE_RUN=0, _MAX_ONE_RUN_16=0),
    "max_pool": dict(_MAX_FEW_PLANE=0),
}


@pytest.mark.parametrize("skipna", [False, True])
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize(
    "shape,out,other,side_by_side",
    [((2, 16, 9), (7,), "max_pool_runs", True),  # 32 planes, windows of 2-3
     ((4, 32, 40), (4,), "max_pool_runs", True),  # blocks of 64 planes: windows of 10
     ((1, 40, 30), (6,), "max_pool_runs", True),
     ((2, 12, 3, 20), (3, 6), "max_pool_runs", True),  # along the rows of 2-D and 3-D planes
     ((1, 20, 2, 2, 11), (2, 2, 4), "max_pool_runs", True),
     ((2, 64, 6, 12), (6, 1), "max_pool_runs", True),  # (None, 1): rows of 12
     ((4, 32, 5, 5), (1, 1), "max_pool_runs", True),  # global pooling of 25-element planes
     ((1, 40, 60), (6,), "max_pool_runs", True),  # windows of 10-11 in blocks of 24 planes
     ((1, 40, 100), (4,), "max_pool_runs", False),  # windows of 25 in blocks of 24 planes
     ((2, 64, 16, 16), (1, 1), "max_pool_runs", False),  # global pooling of 256 elements
     ((1, 12, 9), (7,), "max_pool_runs", False),  # too few planes for a block
     ((16, 3, 32, 3), (1, None), "max_pool", True),  # columns of 96-element planes
     ((1, 24, 7, 7), (3, 3), "max_pool", True),  # blocks of 16
     ((1, 24, 20, 24), (5, 6), "max_pool", False)],  # planes of 480 elements
)
def test_max_planes_side_by_side(shape, out, other, side_by_side, dtype, skipna, knobs,
                                 launched):
    """Windows that are runs short enough for their block of planes (``_MAX_ROW_RUN*``,
    ``_MAX_ONE_RUN*``), and windows over several rows of planes of at most
    ``_MAX_FEW_PLANE`` elements in blocks of 16 or more, are compared planes side by side (the
    channels kernel), others one at a time (``other``: a vectorised pass each, the runs
    kernel, or the general kernel): the reference's values and indices, with ties, NaN (whole
    NaN windows too), infinities and signed zeros, and the other kernel's bits."""
    from adaptive_pool.cpu.lanes import vector_runs
    from adaptive_pool.dtypes import SUPPORTED

    x = _max_values(shape, seed=16)
    x[0, 0, ..., :3] = np.nan  # a window of NaN only
    x = x.astype(dtype)
    fn = getattr(ap, f"adaptive_max_pool{len(out)}d")
    side_by_side &= vector_runs(SUPPORTED[x.dtype].storage)
    got = {}
    for name, limits in (("chosen", {}), ("other", _ONE_AT_A_TIME[other])):
        knobs(_threads=lambda: 2, **limits)  # (blocks are sized for the threads)
        launched.clear()
        got[name] = fn(x, out, skipna=skipna)
        side = side_by_side and name == "chosen"
        assert set(launched) == {"max_pool_channels" if side else other}, name
    want_y, want_i = ref.max_pool(x, out, len(out), skipna=skipna)
    np.testing.assert_array_equal(got["chosen"][1], want_i)
    np.testing.assert_array_equal(ref.to_f64(got["chosen"][0]), want_y)
    for a, b in zip(got["chosen"], got["other"]):
        np.testing.assert_array_equal(_bits(a), _bits(b))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize(
    "op,shape,out,kernels,blocks",
    [("max", (16, 1, 3, 30, 2), (1, 32, 2), ("max_pool_channels", "max_pool"), (16, 8)),
     ("max", (2, 8, 20, 20), (5, 5), ("max_pool_channels", "max_pool"), (16, 8)),
     ("max", (4, 16, 14, 14), (5, 5), ("max_pool_channels",) * 2, (64, 32)),
     ("avg", (16, 3, 32, 3), (1, None), ("avg_pool_lanewise",) * 2, (48, 8)),
     ("avg", (1, 32, 12, 12), (5, 5), ("avg_pool_lanewise",) * 2, (32, 8)),  # (at least 32)
     # 128 planes: float64 in blocks of 64 where windows are larger than 16 elements
     ("avg", (8, 16, 3, 33), (1, 2), ("avg_pool_lanewise",) * 2, ({2: 128, 4: 128, 8: 64}, 64)),
     ("avg", (8, 64, 1, 1, 4), (1, 1, 5), ("avg_pool_lanewise",) * 2, (128, 128)),
     # the identity's rows: a copy, not 16 planes side by side (nor 8 on two threads)
     ("max", (16, 76), (None,), ("max_pool_runs",) * 2, (16, 8)),
     # one block of 8 planes, upsampled: side by side on one thread, not on two
     ("avg_backward", (1, 8, 30, 33), (36, 27),
      ("avg_pool_backward_lanes", "avg_pool_backward"), None)],
)
def test_calling_thread_blocks(op, shape, out, kernels, blocks, dtype, knobs, launched,
                               monkeypatch):
    """A launch small enough for the calling thread alone sizes its blocks of planes for one
    thread, not for the pool's (``kernels`` and ``blocks``: on the calling thread, then in
    parallel on two threads): the reference's results, and the bits of the parallel launch."""
    from adaptive_pool.cpu import backend

    sizes = []
    block = backend._lanewise_block
    monkeypatch.setattr(backend, "_lanewise_block", lambda *a, **k: sizes.append(
        block(*a, **k)) or sizes[-1])
    x = _max_values(shape, seed=21).astype(dtype)
    rank = len(out)
    fn = getattr(ap, f"adaptive_{op[:3]}_pool{rank}d" + op[3:])
    g = rand(shape[:-rank] + out, dtype, seed=23) if op == "avg_backward" else None
    # where 512-bit units are whole (Zen 5), windows of 3 columns go rows summed in
    # registers: the blocks of 8 planes side by side are what these cases are about
    from adaptive_pool.cpu.access import SPLIT_512
    order = "lanewise" if kernels[0] == "avg_pool_lanewise" and not SPLIT_512 else None
    got = []
    for serial in (True, False):
        knobs(_threads=lambda: 2, _SERIAL_WORK=1 << 15 if serial else 0, _FORCE_ORDER=order)
        launched.clear()
        sizes.clear()
        got.append(fn(g, x) if op == "avg_backward" else fn(x, out))
        assert set(launched) == {kernels[not serial]}
        size = blocks[not serial] if blocks else None
        size = size[x.itemsize] if isinstance(size, dict) else size
        assert set(sizes) == ({size} if size else set())
    if op == "max":
        want_y, want_i = ref.max_pool(x, out, rank)
        np.testing.assert_array_equal(got[0][1], want_i)
        np.testing.assert_array_equal(ref.to_f64(got[0][0]), want_y)
    elif op == "avg":
        want = ref.avg_pool_in_order(x, out, rank)
        np.testing.assert_array_equal(_bits(got[0]), _bits(want))
    elif dtype in (F32, F64):  # (16-bit results: the parallel launch's bits, below)
        want = ref.avg_pool_backward(g, x.shape, rank, None)
        rtol, atol = tol(dtype)
        np.testing.assert_allclose(ref.to_f64(got[0]), want, rtol=rtol, atol=atol)
    for a, b in zip(*(r if op == "max" else (r,) for r in got)):
        np.testing.assert_array_equal(_bits(a), _bits(b))


@pytest.mark.parametrize("skipna", [False, True])
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize(
    "shape,out,other,side_by_side",
    [((2, 16, 60), (20,), "avg_pool_backward_runs", True),  # windows of 3
     # along the rows of 2-D planes, overlapping
     ((1, 24, 2, 61), (2, 20), "avg_pool_backward_runs", True),
     ((2, 16, 192), (16,), "avg_pool_backward_runs", False),  # windows of 12
     ((1, 4, 60), (20,), "avg_pool_backward_runs", False),  # fewer planes than 8
     ((2, 8, 1000), (300,), "avg_pool_backward_runs", True),  # short windows, long rows
     ((1, 16, 30, 33), (36, 27), "avg_pool_backward", True),  # upsampling 990-element planes
     ((1, 16, 32, 32), (16, 16), "avg_pool_backward", False),  # windows of 4
     ((1, 8, 30, 33), (36, 27), "avg_pool_backward", False),  # one block of planes
     # windows overlapping along h, 4-5 rows tall: float32 and 16 bits
     ((1, 16, 35, 35), (8, 8), "avg_pool_backward", "not float64"),
     ((1, 16, 56, 56), (5, 5), "avg_pool_backward", False)],  # 11-12 rows tall
)
def test_avg_backward_planes_side_by_side(shape, out, other, side_by_side, dtype, skipna,
                                          knobs, launched):
    """The average backward takes 8 planes or more side by side (the 8-planes kernel) where
    windows along rows are short on average (``_ROW_WINDOW_LANES``) and, in planes larger
    than ``_LANES_PLANE``, where windows hold fewer than ``_LANES_WINDOW`` elements an output,
    or, in float32 and 16 bits, windows overlap along h (``_LANES_OVERLAP_*``), the sums fit
    ``_LANES_SCRATCH`` and each of the two threads has a block; others a row of windows at a
    time (the runs kernel) or in row blocks: the reference's gradient (NaN inputs +0.0 with
    ``skipna``), the other kernel's bits."""
    if side_by_side == "not float64":
        side_by_side = dtype != F64
    x = rand(shape, dtype, seed=21)
    x[rand(shape, np.float32, seed=22) > 3.0] = np.nan
    g = rand(shape[:2] + out, dtype, seed=23)
    g.reshape(-1)[::5] = -0.0
    fn = getattr(ap, f"adaptive_avg_pool{len(out)}d_backward")
    got = {}
    for name, limits in (("chosen", dict(_LANES_SCRATCH=1 << 24)),
                         ("other", dict(_ROW_WINDOW_LANES={2: 0, 4: 0, 8: 0},
                                        _ROW_WINDOW_LANES_SKIPNA=0, _LANES_SCRATCH=0))):
        knobs(_threads=lambda: 2, **limits)
        launched.clear()
        got[name] = fn(g, x, skipna=skipna)
        side = side_by_side and name == "chosen"
        assert set(launched) == {"avg_pool_backward_lanes" if side else other}, name
    np.testing.assert_array_equal(_bits(got["chosen"]), _bits(got["other"]))
    if dtype in (F32, F64):  # (16-bit results: the other kernels' bits, tested elsewhere)
        want = ref.avg_pool_backward(g, x.shape, len(out), x if skipna else None)
        rtol, atol = tol(dtype)
        np.testing.assert_allclose(got["chosen"].astype(np.float64), want, rtol=rtol,
                                   atol=atol)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("view", list(VIEWS2))
def test_avg_any_input_layout(view, dtype):
    x = rand((2, 3, 7, 6), dtype, seed=1)
    xv = _same_values(VIEWS2[view](x), x)
    keep = xv.copy()
    want = ap.adaptive_avg_pool2d(x, (3, 4))
    y = ap.adaptive_avg_pool2d(xv, (3, 4))
    assert y.flags.c_contiguous
    np.testing.assert_array_equal(_bits(y), _bits(want))
    g = rand(y.shape, dtype, seed=2)
    gv = _same_values(VIEWS2[view](g), g)
    gkeep = gv.copy()
    gi = ap.adaptive_avg_pool2d_backward(gv, xv)
    assert gi.flags.c_contiguous
    np.testing.assert_array_equal(gi, ap.adaptive_avg_pool2d_backward(g, x))
    # inputs never modified
    np.testing.assert_array_equal(_bits(xv), _bits(keep))
    np.testing.assert_array_equal(_bits(gv), _bits(gkeep))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("h", [1, 3])
def test_avg_input_overlapping_itself(h, dtype):
    """Inputs may share memory between elements (``as_strided``): here planes 4 elements apart
    whose elements step by 2. The result is bit for bit that of a contiguous copy."""
    flat = rand((200,), dtype, seed=5)
    step = flat.itemsize
    xv = np.lib.stride_tricks.as_strided(
        flat, (2, 9, h, 4), (40 * step, 4 * step, 5 * step, 2 * step), writeable=False
    )
    want = ap.adaptive_avg_pool2d(np.ascontiguousarray(xv), (h, 2))
    np.testing.assert_array_equal(_bits(ap.adaptive_avg_pool2d(xv, (h, 2))), _bits(want))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("view", list(VIEWS3))
def test_max_any_input_layout(view, dtype):
    x = rand((2, 3, 5, 4, 6), dtype, seed=3)
    xv = _same_values(VIEWS3[view](x), x)
    keep = xv.copy()
    want_y, want_i = ap.adaptive_max_pool3d(x, (2, 3, 4))
    y, idx = ap.adaptive_max_pool3d(xv, (2, 3, 4))
    assert y.flags.c_contiguous and idx.flags.c_contiguous
    np.testing.assert_array_equal(y, want_y)
    np.testing.assert_array_equal(idx, want_i)
    g = rand(y.shape, dtype, seed=4)
    want_gi = ap.adaptive_max_pool3d_backward(g, x, idx)
    gv = VIEWS3[view](g)
    iv = _same_values(VIEWS3[view](idx), idx)  # non-contiguous indices too
    gi = ap.adaptive_max_pool3d_backward(gv, xv, iv)
    np.testing.assert_array_equal(gi, want_gi)
    np.testing.assert_array_equal(_bits(xv), _bits(keep))


@pytest.mark.parametrize("skipna", [False, True])
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape,out", [((2, 3, 4, 3, 5), (1, None, 1)),
                                       ((2, 3, 4, 3, 1), (1, None, None))])
def test_max_indices_of_windows_that_are_runs_across_d(shape, out, dtype, skipna):
    """Windows whole in d and w and one row of h are runs of memory where h lies outside d
    (a C-order input's never are): each run's maximum must be indexed by its (d, h, w), not by
    its place in the run. Ties, NaN and -inf decide which element wins."""
    x = np.floor(rand(shape, F64, seed=7))
    x[x == -2] = np.nan
    x[x == 1] = -np.inf
    x = x.astype(dtype)
    xv = np.ascontiguousarray(x.transpose(0, 1, 3, 2, 4)).transpose(0, 1, 3, 2, 4)
    assert np.array_equal(_bits(xv), _bits(x))
    y, idx = ap.adaptive_max_pool3d(xv, out, skipna=skipna, index_dtype=np.int64)
    np.testing.assert_array_equal(idx, ref.max_pool(x, out, 3, skipna=skipna)[1])
    # the value as stored at that index, NaN payloads and all
    at = np.take_along_axis(x.reshape(2, 3, -1), idx.reshape(2, 3, -1), axis=-1)
    np.testing.assert_array_equal(_bits(y), _bits(at.reshape(y.shape)))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("batch", [1, 2])
def test_max_backward_singleton_axis_with_its_own_stride(batch, dtype):
    """A gradient of one-wide rows (OW == 1) whose w stride is not 1: each plane's gradients
    are still one unit-stride run (the sparse kernel once read them a w stride apart)."""
    x = rand((batch, 3, 6, 2), dtype, seed=4)
    y, idx = ap.adaptive_max_pool2d(x, (3, 1))
    g = rand(y.shape, dtype, seed=5)
    t = np.zeros((batch, 3, 4), dtype)  # planes 4 apart, rows 1 apart, w stride 4
    t[..., :3] = g[..., 0]
    step = g.itemsize
    gv = np.lib.stride_tricks.as_strided(t, g.shape, (12 * step, 4 * step, step, 4 * step))
    gv = _same_values(gv, g)
    want = ap.adaptive_max_pool2d_backward(g, x, idx)
    np.testing.assert_array_equal(_bits(ap.adaptive_max_pool2d_backward(gv, x, idx)), _bits(want))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize(
    "grad_view,index_view",
    [("channels-last", "contiguous"), ("contiguous", "channels-last"),
     ("channels-last", "channels-last"), ("fortran", "contiguous")],
)
def test_max_backward_planes_in_groups_of_mixed_layouts(grad_view, index_view, dtype):
    """The sparse max backward takes many small planes at once where the result's planes
    follow each other, copying gradients and indices that do not (channels-last) plane after
    plane: the bits of the C-order call, groups stopping at each sample's last channel, and
    the first bad index in C order reported."""
    x = rand((3, 37, 9, 10), dtype, seed=8)
    y, idx = ap.adaptive_max_pool2d(x, (4, 3))
    g = rand(y.shape, dtype, seed=9)
    gv = _same_values(VIEWS2[grad_view](g), g)
    iv = _same_values(VIEWS2[index_view](idx), idx)
    want = ap.adaptive_max_pool2d_backward(g, x, idx)
    np.testing.assert_array_equal(_bits(ap.adaptive_max_pool2d_backward(gv, x, iv)), _bits(want))
    bad = idx.copy()
    bad[2, 30, 3, 2] = 0  # outside its window
    bad[1, 5, 0, 1] = 89
    with pytest.raises(IndexError, match=r"\[1, 5, 0, 1\] = 89"):
        ap.adaptive_max_pool2d_backward(gv, x, _same_values(VIEWS2[index_view](bad), bad))


def test_read_only_inputs_are_accepted():
    x = rand((2, 3, 5, 4, 6), F32, seed=5)
    x.flags.writeable = False
    y, idx = ap.adaptive_max_pool3d(x, 2)
    y.flags.writeable = False
    idx.flags.writeable = False
    gi = ap.adaptive_max_pool3d_backward(y, x, idx)
    assert gi.shape == x.shape
    x2 = np.broadcast_to(rand((1, 1, 5, 6), F64), (2, 3, 5, 6))  # zero strides, read-only
    np.testing.assert_allclose(
        ap.adaptive_avg_pool2d(x2, 3), ap.adaptive_avg_pool2d(np.ascontiguousarray(x2), 3)
    )


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
def test_strided_out(dtype):
    x = rand((2, 3, 7, 6), dtype, seed=6)
    want = ap.adaptive_avg_pool2d(x, (3, 4))
    big = np.zeros((2, 6, 7, 9), dtype)
    out = big[:, ::-2, 1:7:2, ::2][:, :, :, :4]
    assert out.shape == (2, 3, 3, 4) and not out.flags.c_contiguous
    ret = ap.adaptive_avg_pool2d(x, (3, 4), out=out)
    assert ret is out
    np.testing.assert_array_equal(out, want)
    # nothing else in big was touched
    mask = np.ones(big.shape, bool)
    mask[:, ::-2, 1:7:2, ::2][:, :, :, :4] = False
    assert (big[mask].astype(np.float64) == 0).all()
    # channels-last out for the backward, strided outs for the max forward
    g = rand(want.shape, dtype, seed=7)
    gi = np.empty((2, 7, 6, 3), dtype).transpose(0, 3, 1, 2)
    ap.adaptive_avg_pool2d_backward(g, x, out=gi)
    np.testing.assert_array_equal(gi, ap.adaptive_avg_pool2d_backward(g, x))
    v = rand((2, 3, 4, 5, 6), dtype, seed=8)
    wy, wi = ap.adaptive_max_pool3d(v, 2, index_dtype=np.int64)
    yo = np.zeros((2, 3, 2, 2, 4), dtype)[..., ::-2]
    io = np.zeros((2, 3, 2, 4, 2), np.int64)[:, :, :, ::2]
    ry, ri = ap.adaptive_max_pool3d(v, 2, out=yo, indices_out=io)
    assert ry is yo and ri is io
    np.testing.assert_array_equal(yo, wy)
    np.testing.assert_array_equal(io, wi)
    gio = np.zeros((2, 3, 4, 5, 12), dtype)[..., 1::2]
    ap.adaptive_max_pool3d_backward(wy, v, io, out=gio)
    np.testing.assert_array_equal(gio, ap.adaptive_max_pool3d_backward(wy, v, wi))


def test_strides_that_are_not_whole_elements():
    # Fields of a packed record: byte strides that are not multiples of the itemsize.
    rec = np.dtype([("a", "<f4"), ("b", "<u2")])
    x = rand((2, 3, 7, 6), F32, seed=9)
    xr = np.zeros(x.shape, rec)
    xr["a"] = x
    want = ap.adaptive_avg_pool2d(x, (3, 4))
    np.testing.assert_array_equal(ap.adaptive_avg_pool2d(xr["a"], (3, 4)), want)
    outr = np.zeros(want.shape, rec)
    out = outr["a"]
    assert out.strides[-1] == 6
    ap.adaptive_avg_pool2d(x, (3, 4), out=out)
    np.testing.assert_array_equal(outr["a"], want)  # written through to the records
    assert (outr["b"] == 0).all()
    gr = np.zeros(x.shape, rec)
    ap.adaptive_avg_pool2d_backward(want, x, out=gr["a"])
    np.testing.assert_array_equal(gr["a"], ap.adaptive_avg_pool2d_backward(want, x))
    v = rand((2, 3, 4, 5, 6), F32, seed=10)
    wy, wi = ap.adaptive_max_pool3d(v, 2)
    yr = np.zeros(wy.shape, rec)
    irec = np.zeros(wy.shape, [("i", "<i4"), ("pad", "u1")])
    ap.adaptive_max_pool3d(v, 2, out=yr["a"], indices_out=irec["i"])
    np.testing.assert_array_equal(yr["a"], wy)
    np.testing.assert_array_equal(irec["i"], wi)
    gr3 = np.zeros(v.shape, rec)
    ap.adaptive_max_pool3d_backward(wy, v, irec["i"], out=gr3["a"])
    np.testing.assert_array_equal(gr3["a"], ap.adaptive_max_pool3d_backward(wy, v, wi))


def test_unbatched_and_batched_agree():
    x = rand((3, 7, 6), BF16, seed=11)
    np.testing.assert_array_equal(ap.adaptive_avg_pool2d(x, 4), ap.adaptive_avg_pool2d(x[None], 4)[0])
    v = rand((3, 4, 7, 6), F32, seed=12)
    y, i = ap.adaptive_max_pool3d(v, (2, None, 3))
    yb, ib = ap.adaptive_max_pool3d(v[None], (2, None, 3))
    np.testing.assert_array_equal(y, yb[0])
    np.testing.assert_array_equal(i, ib[0])
    np.testing.assert_array_equal(
        ap.adaptive_max_pool3d_backward(y, v, i), ap.adaptive_max_pool3d_backward(yb, v[None], ib)[0]
    )


def test_out_overlapping_itself_is_an_error():
    x = rand((2, 3, 4, 4), F32)
    out = np.lib.stride_tricks.as_strided(np.zeros(8, F32), (2, 3, 2, 2), (4, 4, 8, 4))
    with pytest.raises(ap.AdaptivePoolValueError):
        ap.adaptive_avg_pool2d(x, 2, out=out)


def test_misaligned_input():
    buf = np.zeros(4 * 2 * 3 * 4 * 5 + 1, np.uint8)[1:]
    x = buf.view(F32).reshape(2, 3, 4, 5)
    x[...] = rand(x.shape, F32, seed=13)
    assert not x.flags.aligned
    np.testing.assert_array_equal(ap.adaptive_avg_pool2d(x, 3), ap.adaptive_avg_pool2d(x.copy(), 3))


@pytest.mark.parametrize("readonly", [False, True])
@pytest.mark.parametrize("view", ["fortran", "channels-last", "transposed-hw", "sliced",
                                  "negative", "singletons"])
def test_flat_geometry_addresses_every_element_without_a_copy(view, readonly):
    """The CPU kernels' flat view of an operand (``flat_geometry``: memory from the lowest
    address, offset and strides in elements) holds each element where the geometry says, in
    the operand's own memory, for dense blocks in another axis order (a transposed view, taken
    as it is) and other strides (an alias of the span)."""
    from adaptive_pool.cpu.backend import flat_geometry  # noqa: PLC0415

    base = np.arange(2 * 3 * 8 * 10, dtype=np.float32).reshape(2, 3, 8, 10)
    if view == "singletons":  # length-1 axes whose strides say nothing (0, negative)
        a = np.lib.stride_tricks.as_strided(base[1:, 1:2], (1, 1, 8, 10), (0, -4, 40, 4),
                                            writeable=not readonly)
    else:
        a = VIEWS2[view](base.copy())
        a.flags.writeable = not readonly
    flat, (offset, *strides) = flat_geometry(a)
    assert np.shares_memory(flat, a)
    positions = offset + sum(np.arange(n).reshape((-1,) + (1,) * (a.ndim - 1 - k)) * s
                             for k, (n, s) in enumerate(zip(a.shape, strides)))
    np.testing.assert_array_equal(flat[positions], a)
    assert positions.min() == 0 and positions.max() == flat.size - 1  # the span, no more
