"""CUDA backend, array interop without a GPU: the ``__cuda_array_interface__`` path.

The simulator's arrays have no interface, so the code that real Numba, CuPy and PyTorch arrays
take is checked here on *fake* interface exporters: objects describing the memory of NumPy
arrays. Nothing here dereferences a device pointer or needs a driver: shapes, strides, dtypes
(PyTorch's ``<V2`` bfloat16), flat spans (against the CPU backend's ``flat_geometry``), overlap
tests, workspace validation and argument errors. And the lean launch path's marshalling against
the installed numba-cuda's own, on device arrays that hold an address nothing reads.
"""

from __future__ import annotations

import numba
import numpy as np
import pytest

if numba.config.ENABLE_CUDASIM:
    pytest.skip("interface tests use the real numba.cuda module", allow_module_level=True)

import adaptive_pool as ap  # noqa: E402
from adaptive_pool import bfloat16  # noqa: E402
from adaptive_pool.cpu.backend import flat_geometry  # noqa: E402
from adaptive_pool.cuda import arrays  # noqa: E402
from adaptive_pool.cuda.backend import BACKEND  # noqa: E402
from adaptive_pool.dispatch import backend_for, is_cuda_array  # noqa: E402


class FakeCUDA:
    """A ``__cuda_array_interface__`` exporter describing a NumPy array's memory."""

    def __init__(self, a: np.ndarray, typestr: str | None = None, readonly=False,
                 contiguous_as_none=True, stream=None):
        self.base = a
        ai = a.__array_interface__
        strides = None if (contiguous_as_none and a.flags.c_contiguous) else a.strides
        self.__cuda_array_interface__ = {
            "shape": a.shape,
            "strides": strides,
            "typestr": typestr or a.dtype.str,
            "data": (ai["data"][0], readonly),
            "version": 3,
            "stream": stream,
        }


def views():
    base = np.arange(2 * 3 * 8 * 10, dtype=np.float32).reshape(2, 3, 8, 10)
    return {
        "contiguous": base,
        "sliced": base[:, 1:, 2:7:2, 1::3],
        "negative": base[::-1, :, ::-2, ::-1],
        "channels-last": np.ascontiguousarray(base.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2),
        "broadcast": np.broadcast_to(base[:1, :1], (2, 3, 8, 10)),
        "singletons": base[:1, 2:3, :, 4:5],
    }


@pytest.mark.parametrize("name", list(views()))
def test_span_matches_the_cpu_flat_geometry(name):
    a = views()[name]
    flat, geometry = flat_geometry(a)
    address, n, geom = arrays.span(arrays.device_view(FakeCUDA(a)))
    # strides of length-1 axes never matter; the CUDA side zeroes them
    cpu = (int(geometry[0]),) + tuple(int(g) if n > 1 else 0 for g, n in zip(geometry[1:], a.shape))
    assert geom == cpu
    assert n == flat.size
    assert address == flat.__array_interface__["data"][0]


@pytest.mark.parametrize(
    "typestr, dtype",
    [("<V2", bfloat16), ("<f2", np.float16), ("<f4", np.float32), ("<f8", np.float64),
     ("<i4", np.int32), ("<i8", np.int64), ("|u1", np.uint8)],
)
def test_describe_maps_interface_typestrs(typestr, dtype):
    a = np.zeros((2, 3), np.dtype(typestr.replace("V", "u")) if "V" in typestr else typestr)
    shape, dt = BACKEND.describe(FakeCUDA(a, typestr=typestr))
    assert shape == (2, 3) and dt == np.dtype(dtype)


def test_view5_inserts_singleton_axes_and_reinterprets_storage():
    a = np.zeros((3, 5, 7), np.uint16)
    v = BACKEND.view5(FakeCUDA(a, typestr="<V2"), np.dtype(np.int16), False, 2)
    assert v.shape == (1, 3, 1, 5, 7) and v.dtype == np.int16
    assert (v.strides[1],) + v.strides[3:] == a.strides
    v3 = BACKEND.view5(FakeCUDA(np.zeros((2, 3, 4, 5, 6), np.float32)), None, True, 3)
    assert v3.shape == (2, 3, 4, 5, 6)


@pytest.mark.parametrize(
    "make_pair",
    [
        lambda b: (b[:, :5], b[:, 5:]),
        lambda b: (b[:, :6], b[:, 5:]),
        lambda b: (b[::2], b[1::2]),
        lambda b: (b[::2], b[::3]),
        lambda b: (b[:, ::-1], b[:, 3]),
        lambda b: (b.T, b[4]),
    ],
)
def test_shares_memory_is_numpys_answer(make_pair):
    b = np.zeros((6, 10), np.float64)
    p, q = make_pair(b)
    assert BACKEND.shares_memory(FakeCUDA(p), FakeCUDA(q)) == np.shares_memory(p, q)


def test_self_overlap_and_writeable():
    b = np.zeros((4, 5), np.float32)
    assert not BACKEND.self_overlapping(FakeCUDA(b[:, ::-2]))
    assert BACKEND.self_overlapping(FakeCUDA(np.broadcast_to(b[:1], (4, 5))))
    assert BACKEND.is_writeable(FakeCUDA(b))
    assert not BACKEND.is_writeable(FakeCUDA(b, readonly=True))


def test_non_element_strides_are_a_clear_error():
    rec = np.zeros(6, dtype=[("a", np.uint8), ("b", np.float32)])
    field = rec["b"]  # stride 5 for 4-byte elements
    v = arrays.device_view(FakeCUDA(field, contiguous_as_none=False))
    with pytest.raises(ValueError, match="not multiples of its itemsize"):
        arrays.flat(v, "x")


def test_bind_workspace_validates_before_touching_the_device():
    tab = np.arange(10, dtype=np.int64)
    size = tab.nbytes
    with pytest.raises(TypeError, match="CUDA array of uint8"):
        BACKEND.bind_workspace(tab, np.zeros(size, np.uint8), size)
    with pytest.raises(TypeError, match="uint8"):
        BACKEND.bind_workspace(tab, FakeCUDA(np.zeros(10, np.int64)), size)
    with pytest.raises(TypeError, match="contiguous 1-D"):
        BACKEND.bind_workspace(tab, FakeCUDA(np.zeros(2 * size, np.uint8)[::2]), size)
    with pytest.raises(ValueError, match="needs 80"):
        BACKEND.bind_workspace(tab, FakeCUDA(np.zeros(size - 1, np.uint8)), size)
    with pytest.raises(ValueError, match="aligned"):
        BACKEND.bind_workspace(tab, FakeCUDA(np.zeros(size + 8, np.uint8)[1:]), size)
    with pytest.raises(ValueError, match="read-only"):
        BACKEND.bind_workspace(tab, FakeCUDA(np.zeros(size, np.uint8), readonly=True), size)


def test_dispatch_recognises_interface_exporters():
    d = FakeCUDA(np.zeros((1, 2, 3, 4), np.float32))
    assert is_cuda_array(d) and BACKEND.owns(d)
    assert backend_for(x=d).name == "cuda"
    with pytest.raises(TypeError, match="one device"):
        backend_for(x=d, out=np.zeros((1, 2, 3, 4), np.float32))

    class GradTensor:  # what PyTorch does for CUDA tensors that require grad
        is_cuda = True

        @property
        def __cuda_array_interface__(self):
            raise RuntimeError("Can't get __cuda_array_interface__ on Variable that requires grad")

    assert is_cuda_array(GradTensor())


def test_unsupported_dtype_on_device_is_a_type_error():
    d = FakeCUDA(np.zeros((1, 2, 3, 4), np.int8))
    with pytest.raises(TypeError, match="accepted dtypes"):
        ap.adaptive_avg_pool2d(d, 2)


def test_bad_stream_is_a_type_error():
    v = arrays.device_view(FakeCUDA(np.zeros(3, np.float32)))
    with pytest.raises(TypeError, match="stream must be"):
        arrays.resolve_stream("stream 0", v)
    with pytest.raises(TypeError, match="stream must be"):
        arrays.resolve_stream(True, v)


# -- the lean launch path (launch.py), against the installed numba-cuda's own marshalling --------
class _Memory:
    """Device memory that is never touched: an address for Numba's device arrays to hold."""

    def __init__(self, address: int) -> None:
        import ctypes  # noqa: PLC0415

        self.device_ctypes_pointer = ctypes.c_void_p(address)
        self.device_pointer_value = address
        self.handle = ctypes.c_void_p(address)


def _flat(address: int, n: int, dtype) -> "launch.Flat":
    from numba.cuda.cudadrv.devicearray import DeviceNDArray  # noqa: PLC0415

    from adaptive_pool.cuda import launch  # noqa: PLC0415

    dtype = np.dtype(dtype)
    alias = DeviceNDArray((n,), (dtype.itemsize,), dtype, gpu_data=_Memory(address))
    return launch.Flat(address, n, dtype, None, alias)


class _Kernel:
    """A compiled kernel as launch.py sees one; ``prepare`` marshals like Numba (default)."""

    debug = cooperative = False
    _codelibrary = None

    def __init__(self, argument_types, prepare=None):
        from numba.cuda import dispatcher  # noqa: PLC0415

        self.argument_types = argument_types
        self.extensions = []
        self._prepare = prepare or dispatcher._Kernel._prepare_args

    def _prepare_args(self, ty, val, stream, retr, kernelargs):
        return self._prepare(self, ty, val, stream, retr, kernelargs)


class _Dispatcher:
    """A dispatcher holding one overload; launching it records the call."""

    extensions = None

    def __init__(self, kernel):
        self.kernel, self.calls = kernel, []

    def typeof_pyval(self, a):
        from numba.cuda.typing.typeof import Purpose, typeof  # noqa: PLC0415

        return typeof(a, Purpose.argument)

    @property
    def overloads(self):
        return {tuple(self.kernel.argument_types): self.kernel}

    def __getitem__(self, config):
        return lambda *args: self.calls.append((config, args))


def _kernel_arguments():
    """A forward's arguments in every storage and index dtype, as the kernels take them."""
    from numba import types  # noqa: PLC0415

    cases = []
    for storage in (np.float32, np.float64, np.uint16, np.int16):
        for index in (np.int32, np.int64):
            args = (_flat(0x1000, 60, storage), (3, 60, 20, 20, 5, -1),
                    _flat(0x9000, 12, storage), (0, 12, 4, 4, 2, 1),
                    _flat(0x5000, 12, index), (0, 12, 4, 4, 2, 1),
                    _flat(0x7000, 40, np.int64), (1, 3, 1, 4, 5, 1, 2, 2))
            tys = [types.UniTuple(types.int64, len(a)) if isinstance(a, tuple)
                   else types.Array(numba.from_dtype(a.dtype), 1, "C") for a in args]
            cases.append((args, tys))
    return cases


def test_lean_marshalling_equals_numbas_own():
    """For every kernel signature, the installed numba-cuda marshals exactly what launch.py
    would pass: later launches may bypass its dispatcher (no GPU needed to check this)."""
    from adaptive_pool.cuda import launch  # noqa: PLC0415

    for args, tys in _kernel_arguments():
        lean = launch._checked(_Dispatcher(_Kernel(tys)), args, 0)
        assert lean, [str(t) for t in tys]


def test_launches_stay_on_numbas_path_where_its_marshalling_differs(monkeypatch):
    """A numba-cuda that lays arguments out otherwise (here: 32-bit integers in tuples) keeps
    every launch on its own dispatcher: slower, never wrong. So does a debug build."""
    import ctypes  # noqa: PLC0415

    from numba.cuda import dispatcher  # noqa: PLC0415

    from adaptive_pool.cuda import launch  # noqa: PLC0415

    def narrow(self, ty, val, stream, retr, kernelargs):
        if isinstance(val, tuple):
            kernelargs.extend(ctypes.c_int32(v) for v in val)
        else:
            dispatcher._Kernel._prepare_args(self, ty, val, stream, retr, kernelargs)

    monkeypatch.setattr(launch, "LEAN", True)
    monkeypatch.setattr(launch, "_LEAN", {})
    args, tys = _kernel_arguments()[0]
    for kernel in (_Kernel(tys, narrow), _Kernel(tys)):
        if kernel._prepare is not narrow:
            kernel.debug = True
        d = _Dispatcher(kernel)
        for _ in range(3):
            launch.launch(d, 128, 128, 0, args)
        assert len(d.calls) == 3, "every launch went through the dispatcher"
        assert d.calls[0][0] == (128, 128, 0)
        assert d.calls[0][1][0] is args[0].numba and d.calls[0][1][1] == args[1]
    assert not any(launch._LEAN.values())
