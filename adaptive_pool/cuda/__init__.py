"""The CUDA backend: ``@cuda.jit`` kernels for Numba, CuPy and PyTorch CUDA arrays.

This package is the only place that imports ``numba.cuda``, and :mod:`adaptive_pool.dispatch`
imports :mod:`adaptive_pool.cuda.backend` only when a CUDA array is first seen. Importing this
package itself is cheap: it imports nothing until :func:`to_device` or :func:`to_host` (the
copies in and out that also carry bfloat16, which Numba's own refuses) is first used.

* :mod:`.kernels` -- one kernel body per algorithm, instantiated per storage dtype by a factory
  that binds the shared 16-bit codecs of :mod:`adaptive_pool.dtypes`.
* :mod:`.arrays` -- CUDA array interop: the ``__cuda_array_interface__`` (and the simulator's
  arrays), flat aliases with element-stride geometry, allocation of like-kind results, streams.
* :mod:`.backend` -- :data:`~adaptive_pool.cuda.backend.BACKEND`, driven by the executors.
"""


def __getattr__(name: str):
    if name in ("to_device", "to_host"):
        from . import backend  # noqa: PLC0415 - imports numba.cuda

        return getattr(backend, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
