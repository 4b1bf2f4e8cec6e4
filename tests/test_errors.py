"""DESIGN §3 Errors: every rule raises the right class, built-in, status and names its argument."""

from __future__ import annotations

import numpy as np
import pytest

import adaptive_pool as ap
from adaptive_pool.errors import (
    AdaptivePoolError,
    AdaptivePoolIndexError,
    AdaptivePoolTypeError,
    AdaptivePoolValueError,
    MissingArgumentError,
)
from reference import window
from support import F32, F64, INVALID, MISSING, channels_last, check

def test_exception_hierarchy():
    assert issubclass(AdaptivePoolTypeError, TypeError)
    assert issubclass(AdaptivePoolValueError, ValueError)
    assert issubclass(AdaptivePoolIndexError, IndexError)
    assert issubclass(MissingArgumentError, AdaptivePoolError)
    assert MissingArgumentError.status == MISSING and AdaptivePoolValueError.status == INVALID
    assert ap.AdaptivePoolError is AdaptivePoolError


X2 = np.ones((2, 3, 4, 5), F32)
G2 = np.ones((2, 3, 2, 2), F32)
X3 = np.ones((2, 3, 4, 5, 6), F32)
Y3, I3 = ap.adaptive_max_pool3d(X3, 2)
G3 = np.ones_like(Y3)


def avg(x, output_size=2, **kw):
    return ap.adaptive_avg_pool2d(x, output_size, **kw)


def avg_b(g, x, **kw):
    return ap.adaptive_avg_pool2d_backward(g, x, **kw)


def mx(x, output_size=2, **kw):
    return ap.adaptive_max_pool3d(x, output_size, **kw)


def mx_b(g, x, i, **kw):
    return ap.adaptive_max_pool3d_backward(g, x, i, **kw)


# -- ranks --------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(4,), (4, 5), (1, 2, 3, 4, 5), ()])
def test_avg_wrong_rank(shape):
    check(ValueError, "x", avg, np.ones(shape, F32), contains=["3-D or 4-D", str(shape)])


@pytest.mark.parametrize("shape", [(4, 5), (3, 4, 5), (1, 1, 2, 3, 4, 5)])
def test_max_wrong_rank(shape):
    check(ValueError, "x", mx, np.ones(shape, F32), contains=["4-D or 5-D"])


def test_backward_wrong_ranks():
    check(ValueError, "x", avg_b, G2, np.ones((4, 5), F32))
    check(ValueError, "grad_output", avg_b, G2[0], X2, contains=["rank"])
    check(ValueError, "grad_output", avg_b, G2[None], X2)
    check(ValueError, "x", mx_b, G3, np.ones((4, 5, 6), F32), I3)
    check(ValueError, "grad_output", mx_b, G3[0], X3, I3[0])


@pytest.mark.parametrize("which", ["N", "C"])
def test_backward_n_or_c_mismatch(which):
    sl = (slice(0, 1),) if which == "N" else (slice(None), slice(0, 2))
    check(ValueError, "grad_output", avg_b, G2[sl], X2, contains=["N and C"])
    check(ValueError, "grad_output", mx_b, G3[sl], X3, I3[sl])
    # un-batched: C must agree
    check(ValueError, "grad_output", avg_b, G2[0, :2], X2[0], contains=["C"])


# -- dtypes -------------------------------------------------------------------------------------
BAD_DTYPES = [np.int32, np.int64, np.uint8, np.bool_, np.complex64, np.complex128, object,
              np.dtype(">f4"), np.dtype("V2")]
if hasattr(np, "float128"):
    BAD_DTYPES.append(np.float128)


@pytest.mark.parametrize("dtype", BAD_DTYPES, ids=lambda d: np.dtype(d).str)
def test_unsupported_dtypes(dtype):
    accepted = ["float32", "float64", "float16", "bfloat16"]
    check(TypeError, "x", avg, np.zeros((1, 1, 2, 2), dtype), contains=accepted)
    check(TypeError, "x", mx, np.zeros((1, 1, 2, 2, 2), dtype), contains=accepted)
    g = np.zeros((1, 1, 1, 1), dtype)
    check(TypeError, "x", avg_b, g, np.zeros((1, 1, 2, 2), dtype))


def test_dtype_mismatch_between_grad_output_and_x():
    check(TypeError, "grad_output", avg_b, G2.astype(F64), X2, contains=["float64", "float32"])
    check(TypeError, "grad_output", mx_b, G3.astype(np.float16), X3, I3)


def test_out_dtype_and_shape():
    check(TypeError, "out", avg, X2, out=np.empty((2, 3, 2, 2), F64))
    check(ValueError, "out", avg, X2, out=np.empty((2, 3, 2, 3), F32), contains=["(2, 3, 2, 2)"])
    check(ValueError, "out", avg_b, G2, X2, out=np.empty((2, 3, 4, 4), F32))
    check(TypeError, "out", mx_b, G3, X3, I3, out=np.empty(X3.shape, F64))
    check(ValueError, "out", mx, X3, out=np.empty((2, 3, 2, 2, 3), F32))
    check(ValueError, "indices_out", mx, X3, indices_out=np.empty((2, 3, 2, 2), np.int32))


# -- output_size --------------------------------------------------------------------------------
@pytest.mark.parametrize("size", [(2,), (2, 2, 2), ()], ids=str)
def test_output_size_wrong_length(size):
    check(ValueError, "output_size", avg, X2, size, contains=["2 entries"])


@pytest.mark.parametrize("size", [-1, (2, -3), (-1, None)], ids=str)
def test_output_size_negative(size):
    check(ValueError, "output_size", avg, X2, size, contains=[">= 0"])
    check(ValueError, "output_size", mx, X3, size if isinstance(size, int) else (1,) + size)


@pytest.mark.parametrize(
    "size", [True, 2.0, "2", b"2", (2, 2.5), (True, 2), (2, "2"), {2: 2}, np.array([2, 2]),
             1j, (2, np.float32(2))],
    ids=repr,
)
def test_output_size_wrong_type(size):
    check(TypeError, "output_size", avg, X2, size)


def test_output_size_numpy_integers_are_fine():
    assert avg(X2, (np.int64(2), np.int32(3))).shape == (2, 3, 2, 3)
    assert avg(X2, np.uint8(3)).shape == (2, 3, 3, 3)


def test_output_size_too_large_for_64_bit_windows():
    # The window helpers are exact below 2**62; a size above that is a clean error.
    check(ValueError, "output_size", avg, X2, 2**62)
    check(ValueError, "output_size", avg, X2, (2, 2**70))


def test_output_size_none():
    check(TypeError, "output_size", avg, X2, None, status=MISSING)


# -- indices ------------------------------------------------------------------------------------
def test_indices_wrong_shape_or_dtype():
    check(ValueError, "indices", mx_b, G3, X3, I3[:, :, :1], contains=["shape"])
    check(ValueError, "indices", mx_b, G3, X3, I3.reshape(2, 3, 8))
    for dt in (np.float32, np.int16, np.uint32, np.uint64, np.int8):
        check(TypeError, "indices", mx_b, G3, X3, I3.astype(dt), contains=["int32", "int64"])


@pytest.mark.parametrize("index_dtype", [np.float32, np.int16, "int8", "foo", None, np.uint32])
def test_bad_index_dtype(index_dtype):
    check(TypeError, "index_dtype", mx, X3, index_dtype=index_dtype)


def test_bad_indices_out_dtype_names_indices_out():
    check(TypeError, "indices_out", mx, X3, indices_out=np.empty(Y3.shape, F32))


@pytest.mark.parametrize("layout", [np.ascontiguousarray, channels_last], ids=["dense", "strided"])
def test_out_of_window_index_is_an_index_error_and_nothing_is_written(layout):
    for idt in (np.int32, np.int64):
        _, idx = mx(X3, 2, index_dtype=idt)
        idx = idx.copy()
        idx[1, 2, 0, 1, 1] = 0  # inside the plane, outside this cell's window
        out = layout(np.full(X3.shape, 7.0, F32))
        e = check(IndexError, "indices", mx_b, G3, X3, idx, out=out,
                  contains=["[1, 2, 0, 1, 1]", "= 0"])
        assert "window" in str(e)
        assert (out == 7.0).all()
        for value in (-1, X3[0, 0].size, 2**31 - 1):
            idx2 = idx.copy()
            idx2[1, 2, 0, 1, 1] = idx[1, 2, 0, 1, 0]
            idx2[0, 1, 1, 0, 1] = value
            e = check(IndexError, "indices", mx_b, G3, X3, idx2, out=out,
                      contains=["[0, 1, 1, 0, 1]", f"= {value}"])
            assert (out == 7.0).all()


def _in_window(value, at, in_sizes, out_sizes):
    """Whether flat index ``value`` lies in the window of output cell ``at`` (its spatial
    position), in Python integers: the oracle of the adversarial test below."""
    if not 0 <= value < int(np.prod(in_sizes)):
        return False
    for o, i_size, o_size in zip(reversed(at), reversed(in_sizes), reversed(out_sizes)):
        value, e = divmod(value, i_size)
        lo, hi = window(o, i_size, o_size)
        if not lo <= e < hi:
            return False
    return True


@pytest.mark.parametrize("in_sizes,out_sizes", [
    ((100,), (7,)),            # planes of one row, checked as one run
    ((300,), (70,)),           # planes of one row with 64 outputs or more, plane by plane
    ((12, 10), (5, 3)),        # one division an index
    ((6, 7, 5), (4, 3, 2)),    # two divisions an index
], ids=["1d", "1d-planes", "2d", "3d"])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_indices_outside_their_window_are_rejected_whatever_their_value(
        in_sizes, out_sizes, index_dtype):
    """The sparse max backward divides indices through float reciprocals and recomputes the
    remainders exactly; an int32 index is not clamped first. Values that wrap, round or land in
    another cell's window are all rejected, at their position."""
    rank = len(in_sizes)
    fwd = getattr(ap, f"adaptive_max_pool{rank}d")
    bwd = getattr(ap, f"adaptive_max_pool{rank}d_backward")
    x = np.random.default_rng(5).standard_normal((2, 4, *in_sizes)).astype(F32)
    _, idx = fwd(x, out_sizes, index_dtype=index_dtype)
    g = np.ones(idx.shape, F32)
    plane = int(np.prod(in_sizes))
    at = (1, 2, *[o // 2 for o in out_sizes])
    v = int(idx[at])
    top = np.iinfo(np.int32)
    values = {top.min, top.min + v, -1, -v - 1, plane, plane + v, top.max, v + 2**24,
              v + 2**25 + 1, top.max - (top.max - v) % plane, v - in_sizes[-1],
              v + in_sizes[-1], v + 1, v - 1, v + plane // in_sizes[0]}
    # just outside the window along one axis, inside the plane
    stride, rest = 1, v
    for o, i_size, o_size in zip(reversed(at[2:]), reversed(in_sizes), reversed(out_sizes)):
        rest, e = divmod(rest, i_size)
        lo, hi = window(o, i_size, o_size)
        values |= {v - (e - lo + 1) * stride, v + (hi - e) * stride}
        stride *= i_size
    if index_dtype == np.int64:
        values |= {v + 2**32, v - 2**32, 2**40 + v, np.iinfo(np.int64).min}
    tried = 0
    for value in sorted(values):
        if _in_window(value, at[2:], in_sizes, out_sizes):
            continue
        wrong = idx.copy()
        wrong[at] = value
        check(IndexError, "indices", bwd, g, x, wrong,
              contains=[str(list(at)), f"= {value}"])
        tried += 1
    assert tried >= 10


def test_first_bad_index_is_reported():
    _, idx = mx(X3, 2)
    idx = idx.copy()
    idx[1, 0, 1, 1, 1] = -5
    idx[0, 2, 1, 0, 0] = -4
    check(IndexError, "indices", mx_b, G3, X3, idx, contains=["[0, 2, 1, 0, 0] = -4"])


@pytest.mark.parametrize("fresh", [True, False], ids=["result", "out"])
def test_first_bad_index_among_parallel_chunks_is_reported(knobs, fresh):
    """Bad indices in several chunks of the parallel max backward: the first in C order is the
    one reported, whichever chunk finds one first."""
    x = np.random.default_rng(3).standard_normal((4, 16, 12, 12)).astype(F32)
    _, idx = ap.adaptive_max_pool2d(x, 3)
    g = np.ones(idx.shape, F32)
    out = None if fresh else np.full(x.shape, 7.0, F32)
    for bad in ([(3, 10, 2, 2), (2, 1, 0, 1)], [(0, 0, 0, 0), (3, 15, 2, 2)], [(3, 15, 2, 2)]):
        wrong = idx.copy()
        for k, at in enumerate(bad):
            wrong[at] = -3 - k
        first = min(bad)
        check(IndexError, "indices", ap.adaptive_max_pool2d_backward, g, x, wrong, out=out,
              contains=[f"[{', '.join(map(str, first))}] = {-3 - bad.index(first)}"])
        if out is not None:
            assert (out == 7.0).all()


@pytest.mark.parametrize("fresh", [True, False], ids=["result", "out"])
def test_bad_index_in_a_group_of_long_rows_is_reported(fresh):
    """Rows of 300 outputs (upsampling), 40 of them a group of the sparse max backward, which
    checks such rows one at a time: good indices give the reference's gradient, and the first
    bad index in C order is named wherever it lies in a group, whatever kind of bad it is."""
    x = np.random.default_rng(4).standard_normal((8, 64, 100)).astype(F32)
    _, idx = ap.adaptive_max_pool1d(x, 300)
    g = np.random.default_rng(5).standard_normal(idx.shape).astype(F32)
    out = None if fresh else np.full(x.shape, 7.0, F32)
    # float32 sums in ascending output order (np.add.at adds one at a time, in order)
    want = np.zeros((8 * 64, 100), F32)
    np.add.at(want, (np.arange(8 * 64)[:, None], idx.reshape(-1, 300)), g.reshape(-1, 300))
    got = ap.adaptive_max_pool1d_backward(g, x, idx, out=out)
    np.testing.assert_array_equal(got, want.reshape(x.shape))
    for at, value in (((5, 41, 299), 0), ((0, 39, 17), 100), ((7, 63, 0), -1),
                      ((2, 3, 150), idx[2, 3, 160])):
        wrong = idx.copy()
        wrong[at] = value
        wrong[7, 63, 299] = -2  # a later one, not reported
        if out is not None:
            out[...] = 7.0
        check(IndexError, "indices", ap.adaptive_max_pool1d_backward, g, x, wrong, out=out,
              contains=[f"[{', '.join(map(str, at))}] = {value}"])
        if out is not None:
            assert (out == 7.0).all()


def test_int32_indices_for_a_huge_plane():
    # A zero-stride view: more than 2**31 - 1 elements per plane, no memory.
    big = np.broadcast_to(np.float32(0), (1, 2, 2**11, 2**10, 2**10))
    check(ValueError, "index_dtype", mx, big, 1, contains=["int64"])
    g = np.zeros((1, 2, 1, 1, 1), F32)
    check(ValueError, "indices", mx_b, g, big, np.zeros(g.shape, np.int32), contains=["int64"])
    # exactly 2**31 - 1 elements is still fine for int32 (checked without running a kernel)
    from adaptive_pool.executors import plan_key
    from adaptive_pool.cpu.backend import BACKEND

    plan_key("adaptive_max_pool3d", BACKEND, (1, 1, 1, 1, 2**31 - 1), F32, (1, 1, 1), np.int32)


# -- missing and non-array arguments ------------------------------------------------------------
def test_none_arguments():
    check(TypeError, "x", avg, None, status=MISSING)
    check(TypeError, "x", mx, None, status=MISSING)
    check(TypeError, "grad_output", avg_b, None, X2, status=MISSING)
    check(TypeError, "x", avg_b, G2, None, status=MISSING)
    check(TypeError, "grad_output", mx_b, None, X3, I3, status=MISSING)
    check(TypeError, "x", mx_b, G3, None, I3, status=MISSING)
    check(TypeError, "indices", mx_b, G3, X3, None, status=MISSING)
    e = check(TypeError, "x", avg, None, status=MISSING)
    assert isinstance(e, MissingArgumentError)


class _FakeCudaArray:
    """Looks like a CUDA array to the dispatcher; never reaches a kernel."""

    @property
    def __cuda_array_interface__(self):
        return {"shape": (2, 3, 2, 2), "typestr": "<f4", "data": (0, False), "version": 3}


@pytest.mark.parametrize("kind", ["list", "float", "matrix-like"])
def test_non_array_arguments(kind):
    if kind == "list":
        bad2, bad3 = X2.tolist(), X3.tolist()
    elif kind == "float":
        bad2 = bad3 = 1.0
    else:
        bad2, bad3 = memoryview(X2), memoryview(X3)
    check(TypeError, "x", avg, bad2, contains=["numpy.ndarray"])
    check(TypeError, "x", mx, bad3, contains=["numpy.ndarray"])
    check(TypeError, "grad_output", avg_b, bad2, X2)
    check(TypeError, "x", avg_b, G2, bad2)
    check(TypeError, "indices", mx_b, G3, X3, bad3)
    check(TypeError, "out", avg, X2, out=bad2)
    check(TypeError, "indices_out", mx, X3, indices_out=bad3)


def test_tensors_mixed_with_numpy_arrays(torch):
    # CPU tensors are accepted (adaptive_pool.torch serves them); one call takes one kind
    t2, t3 = torch.from_numpy(X2), torch.from_numpy(X3)
    assert isinstance(avg(t2, 2), torch.Tensor)
    check(TypeError, "out", avg, t2, out=np.empty((2, 3, 2, 2), F32), contains=["torch.Tensor"])
    check(TypeError, "x", avg, X2, out=torch.empty(2, 3, 2, 2), contains=["numpy.ndarray"])
    check(TypeError, "grad_output", avg_b, G2, t2)
    check(TypeError, "indices", mx_b, torch.from_numpy(G3), t3, I3)
    check(TypeError, "indices_out", mx, t3, indices_out=I3.copy())


def test_mixing_cpu_and_cuda_arrays():
    check(TypeError, "out", avg, X2, out=_FakeCudaArray(), contains=["one device"])


# -- outputs ------------------------------------------------------------------------------------
def test_read_only_out():
    out = np.empty((2, 3, 2, 2), F32)
    out.flags.writeable = False
    check(ValueError, "out", avg, X2, out=out, contains=["read-only"])
    gi = np.empty(X3.shape, F32)
    gi.flags.writeable = False
    check(ValueError, "out", mx_b, G3, X3, I3, out=gi)
    check(ValueError, "out", avg, X2, out=np.broadcast_to(np.empty(1, F32), (2, 3, 2, 2)))


def test_out_overlapping_an_input():
    buf = np.zeros((2, 3, 4, 5), F32)
    check(ValueError, "out", avg, buf, out=buf[:, :, :2, :2], contains=["overlaps x"])
    g = np.zeros((2, 3, 4, 5), F32)
    check(ValueError, "out", avg_b, g, X2, out=g, contains=["grad_output"])
    # the backward's x is an input too: writing grad_input over it would modify an input
    x = X2.copy()
    check(ValueError, "out", avg_b, G2, x, out=x, contains=["overlaps x"])
    v = X3.copy()
    check(ValueError, "out", mx_b, G3, v, I3, out=v, contains=["overlaps x"])
    # the indices of the max backward, reinterpreted as its out
    buf = np.zeros(X3.size, np.int32)
    buf[: I3.size] = I3.ravel()
    check(ValueError, "out", mx_b, G3, X3, buf[: I3.size].reshape(I3.shape),
          out=buf.view(F32).reshape(X3.shape), contains=["indices"])
    # max forward: values and indices over the same memory, or over x
    buf = np.zeros(2 * Y3.size, np.float32)
    check(ValueError, "indices_out", mx, X3, out=buf[: Y3.size].reshape(Y3.shape),
          indices_out=buf[: Y3.size].view(np.int32).reshape(Y3.shape), contains=["out"])
    xs = X3.copy()
    check(ValueError, "indices_out", mx, xs,
          indices_out=xs.view(np.int32)[:, :, :2, :2, :2], contains=["x"])


def test_errors_leave_inputs_and_outputs_alone():
    x = X2.copy()
    out = np.full((2, 3, 3, 3), 5.0, F32)
    with pytest.raises(AdaptivePoolError):
        avg(x, (3, -3), out=out)
    with pytest.raises(AdaptivePoolError):
        avg(x, 2, out=out)  # wrong shape
    assert (out == 5.0).all() and (x == X2).all()


# -- ndarray subclasses ---------------------------------------------------------------------------
@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # np.matrix itself
@pytest.mark.parametrize("kind", ["matrix", "record"])
def test_ndarray_subclasses_that_carry_meaning_are_refused(kind):
    if kind == "matrix":
        a, fn = np.matrix(np.ones((3, 4), F32)), ap.adaptive_avg_pool1d
    else:
        a, fn = np.ones((2, 3, 4), F32).view(np.recarray), ap.adaptive_avg_pool1d
    check(TypeError, "x", fn, a, 2, contains=["subclass", "numpy.asarray(x)"])
    check(TypeError, "x", ap.adaptive_max_pool1d_backward, np.ones((2, 3, 2), F32), a,
          np.zeros((2, 3, 2), np.int32))


def test_memory_mapped_arrays_are_plain_data(tmp_path):
    mm = np.memmap(tmp_path / "x.bin", F32, "w+", shape=(2, 3, 9))
    mm[:] = np.arange(mm.size, dtype=F32).reshape(mm.shape)
    y = ap.adaptive_avg_pool1d(mm, 4)
    assert type(y) is np.ndarray
    np.testing.assert_array_equal(y, ap.adaptive_avg_pool1d(np.asarray(mm), 4))


@pytest.mark.parametrize("fresh", [True, False], ids=["result", "out"])
def test_bad_index_of_one_element_windows_is_reported(fresh):
    """Windows of one element (7x7 -> 7x7), whose sparse backward writes every element
    without zeroing the planes first: a bad index is still named, and a caller's out= is left
    as it was."""
    x = np.random.default_rng(6).standard_normal((4, 16, 7, 7)).astype(F32)
    _, idx = ap.adaptive_max_pool2d(x, 7)
    g = np.random.default_rng(7).standard_normal(idx.shape).astype(F32)
    out = None if fresh else np.full(x.shape, 7.0, F32)
    got = ap.adaptive_max_pool2d_backward(g, x, idx, out=out)
    np.testing.assert_array_equal(got, g + np.float32(0.0))
    for at, value in (((3, 15, 6, 6), 47), ((0, 0, 0, 0), 1), ((2, 5, 3, 1), -1)):
        wrong = idx.copy()
        wrong[at] = value
        out = None if fresh else np.full(x.shape, 7.0, F32)
        check(IndexError, "indices", ap.adaptive_max_pool2d_backward, g, x, wrong, out=out,
              contains=[f"[{', '.join(map(str, at))}] = {value}"])
        if out is not None:
            assert (out == 7.0).all()
