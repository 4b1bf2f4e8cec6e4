"""CUDA backend, tier 2: every kernel compiles to PTX, for every dtype and index dtype.

``numba.cuda.compile_ptx`` needs no GPU and no driver, only the NVVM compiler wheels
(``numba-cuda[cu13]``); these tests skip when those are missing. They catch what the simulator
hides (typing, unsupported constructs, helpers that need a driver) and check the arithmetic the
bitwise-equality contract depends on: IEEE division, no flush-to-zero, no fused multiply-add, and
16-bit codecs compiled to integer operations rather than half-precision instructions.

Also here: importing and using the library on NumPy arrays never imports ``numba.cuda``.
"""

from __future__ import annotations

import functools
import re
import subprocess
import sys

import numba
import numpy as np
import pytest

if numba.config.ENABLE_CUDASIM:
    pytest.skip("PTX compiles need the real numba.cuda, not the simulator",
                allow_module_level=True)

from numba import types  # noqa: E402

I64 = types.int64
G6 = types.UniTuple(I64, 6)  # (offset, sN, sC, sD, sH, sW)
G8 = types.UniTuple(I64, 8)  # dims
TAB = types.int64[::1]
STORAGE = {"f32": np.float32, "f64": np.float64, "f16": np.uint16, "bf16": np.int16}
INDEX = {"i32": np.int32, "i64": np.int64}
CCS = [(7, 5), (9, 0)]
CC_IDS = ["sm75", "sm90"]


def _arr(dtype) -> types.Array:
    return types.Array(numba.from_dtype(np.dtype(dtype)), 1, "C")


@functools.cache
def _cuda():
    """``numba.cuda`` if PTX can be compiled here, else skip."""
    from numba import cuda  # noqa: PLC0415

    def probe(a):
        a[0] = 1

    try:
        cuda.compile_ptx(probe, (types.int64[::1],), cc=(7, 5))
    except Exception as exc:  # noqa: BLE001 - any failure means: no compiler here
        pytest.skip(f"numba.cuda.compile_ptx is unavailable ({type(exc).__name__}: {exc})")
    return cuda


@functools.cache
def _ptx(kernel: str, storage: str, index: str | None, cc: tuple[int, int]) -> str:
    """The PTX of one kernel specialisation (compiled once per test run)."""
    cuda = _cuda()
    from adaptive_pool.cuda import kernels as K  # noqa: PLC0415

    a = _arr(STORAGE[storage]) if storage else None
    j = _arr(INDEX[index]) if index else None
    if kernel == "first_bad_index":
        fn, sig = K.first_bad_index, (j, G6, TAB, G8, types.uint64[::1])
    elif kernel == "fill_zero":
        fn, sig = K.fill_zero, (a, G6, types.UniTuple(I64, 5))
    else:
        name, _, skipna = kernel.partition("/")
        fn = getattr(K.kernels_for(STORAGE[storage], skipna == "skipna"), name)
        sig = {
            "avg_pool": (a, G6, a, G6, TAB, G8),
            "avg_pool_warps": (a, G6, a, G6, TAB, G8),
            "avg_pool_backward": (a, G6, a, G6, TAB, G8, a, G6, types.int64[::1]),
            "avg_pool_backward_tiled": (a, G6, a, G6, TAB, G8, a, G6, types.int64[::1]),
            "count_valid": (a, G6, types.int64[::1], TAB, G8),
            "max_pool": (a, G6, a, G6, j, G6, TAB, G8),
            "max_pool_warps": (a, G6, a, G6, j, G6, TAB, G8),
            "max_pool_backward": (a, G6, j, G6, a, G6, TAB, G8),
            "max_pool_backward_scatter": (a, G6, j, G6, a, G6, TAB, G8, types.uint64[::1]),
        }[name]
    ptx, _ = cuda.compile_ptx(fn.py_func, sig, cc=cc)
    return ptx


CASES = (
    [(k, s, None) for k in ("avg_pool", "avg_pool/skipna", "avg_pool_warps",
                            "avg_pool_warps/skipna") for s in STORAGE]
    + [(k, s, None) for k in ("avg_pool_backward", "avg_pool_backward/skipna",
                              "avg_pool_backward_tiled", "avg_pool_backward_tiled/skipna")
       for s in STORAGE]
    + [("count_valid/skipna", s, None) for s in STORAGE]
    + [("max_pool", s, i) for s in STORAGE for i in INDEX]
    + [("max_pool/skipna", s, "i32") for s in STORAGE]
    + [(k, s, i) for k in ("max_pool_warps", "max_pool_warps/skipna") for s in STORAGE
       for i in INDEX]
    + [(k, s, i) for k in ("max_pool_backward", "max_pool_backward_scatter") for s in STORAGE
       for i in INDEX]
    + [("first_bad_index", None, i) for i in INDEX]
    + [("fill_zero", s, None) for s in ("f16", "f32", "f64")]  # uint16/32/64 views in real use
)


def _case_id(case):
    return "-".join(p.replace("/", "-") for p in case if p)


@pytest.mark.parametrize("cc", CCS, ids=CC_IDS)
@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_kernel_compiles_to_ptx(case, cc):
    kernel, storage, index = case
    ptx = _ptx(kernel, storage, index, cc)
    assert f".target sm_{cc[0]}{cc[1]}" in ptx
    assert ".entry" in ptx
    # Bitwise equality with the CPU: correctly rounded arithmetic only.
    assert ".ftz" not in ptx, "flush-to-zero would change subnormal results"
    assert not re.search(r"\bfma\.", ptx), "a fused multiply-add rounds differently"
    assert "div.approx" not in ptx and "div.full" not in ptx
    if kernel.partition("/")[0] in ("avg_pool", "avg_pool_warps", "avg_pool_backward",
                                    "avg_pool_backward_tiled"):
        acc = "f64" if storage == "f64" else "f32"
        assert f"div.rn.{acc}" in ptx
    if storage in ("f16", "bf16") and kernel != "fill_zero":
        # the codecs are bit manipulation: no half-precision types or conversions needed
        assert not re.search(r"\.(b?f16)\b", ptx)
    if kernel in ("first_bad_index", "max_pool_backward_scatter"):
        assert "atom.global.min.u64" in ptx


def test_numpy_use_never_imports_numba_cuda():
    code = (
        "import sys, numpy as np, adaptive_pool as ap\n"
        "ap.adaptive_avg_pool2d(np.ones((1, 2, 3), np.float32), 2)\n"
        "ap.adaptive_max_pool3d(np.ones((1, 2, 2, 2), np.float32), 1)\n"
        "bad = sorted(m for m in sys.modules\n"
        "             if m.startswith(('numba.cuda', 'numba_cuda.numba.cuda'))\n"
        "             or m == 'adaptive_pool.cuda.backend')\n"
        "print(bad)\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[]", res.stdout
