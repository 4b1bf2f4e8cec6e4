"""Calling a chunk function from a parallel kernel through its address.

Every CPU kernel is a ``prange`` loop over chunks, each a call of the kernel's chunk function
(:data:`~adaptive_pool.cpu.kernels.CHUNKS`). Called by name, Numba links the chunk's code into
the parfor's gufunc and again into the kernel, and runs LLVM's optimisation and code generation
over it at each level: a cold compile of ``max_pool`` took 3.4 s on top of its chunk function's
own. Called through an address that the kernel receives as an argument (:func:`call`), the
kernel holds an indirect call only, and compiles in 1.1 s: the chunk's code is compiled once,
cached once, and the same machine code runs serially and in parallel.

The address is resolved outside compiled code (:func:`address`), for the chunk compiled for the
exact types of the kernel's arguments, which is the signature the kernel's own typing of
:func:`call` gives the chunk.
"""

from __future__ import annotations

import numba
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

try:  # the key Numba's dispatcher caches argument types under: exact and about 0.3 us an argument
    from numba._dispatcher import compute_fingerprint as _fingerprint
except ImportError:  # pragma: no cover - other Numba versions
    _fingerprint = numba.typeof

__all__ = ["call", "compiled", "address"]


@intrinsic
def call(typingctx, chunk, at, args):
    """``chunk(*args)`` through ``at``, the address of ``chunk``'s compiled code for the types
    of ``args`` (from :func:`address`): the chunk's code is not linked into the caller."""
    if not (isinstance(chunk, types.Dispatcher) and isinstance(args, types.BaseTuple)
            and isinstance(at, types.Integer)):
        return None
    argtys = tuple(args.types)
    restype = typingctx.resolve_function_type(chunk, argtys, {}).return_type

    def codegen(context, builder, sig, llargs):
        _, addr, tup = llargs
        fnty = context.call_conv.get_function_type(restype, argtys)
        fn = builder.inttoptr(addr, fnty.as_pointer())
        values = [builder.extract_value(tup, k) for k in range(len(argtys))]
        status, result = context.call_conv.call_function(builder, fn, restype, argtys, values)
        with cgutils.if_unlikely(builder, status.is_error):
            context.call_conv.return_status_propagate(builder, status)
        return result

    return restype(chunk, at, args), codegen


_ADDRESSES: dict[tuple, int] = {}


def compiled(chunk, args: tuple, index: bool = True):
    """``chunk``'s compile result for ``(int64, *args)`` (a chunk index, then a kernel's
    arguments; ``args`` alone without ``index``), compiled or loaded from Numba's cache now if
    it has none yet."""
    sig = (types.int64,) * index + tuple(map(numba.typeof, args))
    result = chunk.overloads.get(sig)
    if result is None:
        chunk.compile(sig)
        result = chunk.overloads[sig]
    return result


def address(chunk, args: tuple, index: bool = True) -> int:
    """The address of :func:`compiled`'s native code, which :func:`call` takes."""
    key = (chunk, index, *map(_fingerprint, args))
    at = _ADDRESSES.get(key)
    if at is None:
        result = compiled(chunk, args, index)
        at = result.library.get_pointer_to_function(result.fndesc.llvm_func_name)
        _ADDRESSES[key] = at
    return at
