"""How a CPU kernel runs its chunk function: through the function's address, on Numba's threads.

Every CPU kernel is one call of :func:`run_chunks`: the kernel's chunk function
(:data:`~adaptive_pool.cpu.kernels.CHUNKS`) for each of ``nchunk`` chunks, in one parallel
region of Numba's threading layer. The chunk is called through an address that the kernel
receives as an argument, not by name: called by name, Numba would link the chunk's code into
the kernel and run LLVM's optimisation and code generation over it again. So the chunk's code is
compiled once, cached once, and the same machine code runs serially (called from Python on the
calling thread) and in parallel. The kernels were ``prange`` loops of :func:`call` until
2026-12-07: each compiled a parfor around the call (0.2-0.6 s cold) and computed a schedule at
each launch (about 0.3 us more than this region, docs/small-calls.md).

The address is resolved outside compiled code (:func:`address`), for the chunk compiled for the
exact types of the kernel's arguments, which is the signature the kernel's own typing of
:func:`call` or :func:`run_chunks` gives the chunk.
"""

from __future__ import annotations

import hashlib

import numba
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

try:  # the key Numba's dispatcher caches argument types under: exact and about 0.3 us an argument
    from numba._dispatcher import compute_fingerprint as _fingerprint
except ImportError:  # pragma: no cover - other Numba versions
    _fingerprint = numba.typeof

__all__ = ["call", "compiled", "address", "run_chunks"]


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
        values = cgutils.unpack_tuple(builder, tup, len(argtys))
        return _call_at(context, builder, addr, restype, argtys, values, True)

    return restype(chunk, at, args), codegen


def _call_at(context, builder, addr, restype, argtys, values, propagate):
    """The result of the function of Numba's calling convention at ``addr`` (its status where
    not ``propagate``: else an exception it raised returns from the caller)."""
    fnty = context.call_conv.get_function_type(restype, argtys)
    status, result = context.call_conv.call_function(
        builder, builder.inttoptr(addr, fnty.as_pointer()), restype, argtys, values)
    if not propagate:
        return status
    with cgutils.if_unlikely(builder, status.is_error):
        context.call_conv.return_status_propagate(builder, status)
    return result


def _reload_threads() -> None:
    """Starts Numba's threading layer, whose ``numba_parallel_for`` and ``get_num_threads``
    the kernels link to, before a kernel is loaded from the cache (a reload hook, as Numba's
    parfors have; pickled by reference with the kernel)."""
    from numba.np.ufunc.parallel import _launch_threads  # noqa: PLC0415

    _launch_threads()


_I64 = ir.IntType(64)
_BYTES = ir.IntType(8).as_pointer()


@intrinsic
def run_chunks(typingctx, chunk, at, args, nchunk):
    """``chunk(np.int64(ch), *args)`` for every ``ch < nchunk``, on Numba's threads: one
    parallel region of the threading layer (``numba_parallel_for``, as a parfor's gufunc), each
    thread calling the chunk's code through ``at`` (:func:`call`) for a contiguous block of
    chunks, at most as many threads as the calling thread's ``numba.get_num_threads()``. One
    chunk, or one thread, runs on the calling thread. A chunk that raises is run again on the
    calling thread after the region, which raises its exception (chunks write what they are
    given to write, so a second run writes the same).

    The region is the one a parfor's gufunc launches (every threading layer has it, with its
    checks: GNU OpenMP's after a ``fork``), without the parfor's schedule.
    """
    if not (isinstance(chunk, types.Dispatcher) and isinstance(args, types.BaseTuple)
            and isinstance(at, types.Integer) and isinstance(nchunk, types.Integer)):
        return None
    _reload_threads()  # the symbols the code links to, for this compile
    argtys = (types.int64, *args.types)
    restype = typingctx.resolve_function_type(chunk, argtys, {}).return_type

    def codegen(context, builder, sig, llargs):
        _, addr, tup, n = llargs
        n = context.cast(builder, n, sig.args[3], types.int64)
        context.active_code_library._reload_init.add(_reload_threads)
        mod = builder.module
        # what the threads share: the chunk's address, its arguments, a flag for an exception
        shared = ir.LiteralStructType([_I64, context.get_value_type(args), _I64])
        body = _chunk_body(context, mod, shared, restype, argtys)
        data = cgutils.alloca_once(builder, shared)
        builder.store(addr, cgutils.gep_inbounds(builder, data, 0, 0))
        builder.store(tup, cgutils.gep_inbounds(builder, data, 0, 1))
        err = cgutils.gep_inbounds(builder, data, 0, 2)
        builder.store(_I64(0), err)
        threads = builder.call(cgutils.get_or_insert_function(
            mod, ir.FunctionType(_I64, []), "get_num_threads"), [])
        threads = builder.select(builder.icmp_signed("<", n, threads), n, threads)
        values = cgutils.unpack_tuple(builder, tup, len(argtys) - 1)

        def serially():
            with cgutils.for_range(builder, n) as loop:
                _call_at(context, builder, addr, restype, argtys, [loop.index, *values], True)

        with builder.if_else(builder.icmp_signed(">", threads, _I64(1))) as (par, ser):
            with par:
                # the threading layer hands a block of iterations from r on the pointer
                # ``data + r`` (its one "array", of step 1): the body takes its chunks from that
                ptr = builder.bitcast(data, _BYTES)
                argv = cgutils.alloca_once_value(builder, ptr)
                dims = cgutils.alloca_once_value(builder, n)
                steps = cgutils.alloca_once_value(builder, _I64(1))
                parallel_for = cgutils.get_or_insert_function(
                    mod, ir.FunctionType(ir.VoidType(), [_BYTES] * 5 + [_I64] * 3),
                    "numba_parallel_for")
                builder.call(parallel_for, [
                    builder.bitcast(body, _BYTES), builder.bitcast(argv, _BYTES),
                    builder.bitcast(dims, _BYTES), builder.bitcast(steps, _BYTES), ptr,
                    _I64(0), _I64(1), threads,
                ])
                with cgutils.if_unlikely(builder, builder.icmp_unsigned(
                        "!=", builder.load(err), _I64(0))):
                    serially()  # (raises the exception a chunk raised)
            with ser:
                serially()
        return context.get_dummy_value()

    return types.none(chunk, at, args, nchunk), codegen


def _chunk_body(context, mod, shared, restype, argtys):
    """The gufunc-shaped function ``numba_parallel_for`` calls for each block of chunks:
    ``(args, dims, steps, data)``, chunks ``args[0] - data`` on, ``dims[0]`` of them. One per
    module and chunk signature (it calls the chunk through the address in ``data``)."""
    key = f"{restype}{argtys}".encode()
    name = "adaptive_pool.chunk_body." + hashlib.sha1(key).hexdigest()[:16]
    fn = cgutils.get_or_insert_function(mod, ir.FunctionType(
        ir.VoidType(), [_BYTES.as_pointer(), _I64.as_pointer(), _I64.as_pointer(), _BYTES]), name)
    if not fn.is_declaration:
        return fn
    fn.linkage = "internal"
    b = ir.IRBuilder(fn.append_basic_block())
    argv, dims, _, data = fn.args
    first = b.sub(b.ptrtoint(b.load(argv), _I64), b.ptrtoint(data, _I64))
    sh = b.bitcast(data, shared.as_pointer())
    at = b.load(cgutils.gep_inbounds(b, sh, 0, 0))
    values = cgutils.unpack_tuple(b, b.load(cgutils.gep_inbounds(b, sh, 0, 1)), len(argtys) - 1)
    # a block of chunks: OpenMP's layer hands out one at a time, workqueue's and TBB's ranges
    with cgutils.for_range(b, b.load(dims)) as loop:
        status = _call_at(context, b, at, restype, argtys, [b.add(first, loop.index), *values],
                          False)
        with b.if_then(status.is_error, likely=False):
            b.store_atomic(_I64(1), cgutils.gep_inbounds(b, sh, 0, 2), "monotonic", 8)
    b.ret_void()
    return fn


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
