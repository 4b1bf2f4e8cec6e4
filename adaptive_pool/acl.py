"""CANN's two-phase calls (``aclnn*GetWorkspaceSize`` then ``aclnn*``), mirrored for the family.

Phase one validates the arguments, builds (or reuses) the executor and returns the workspace
size in bytes with an executor bound to the arrays. Phase two runs it on a caller's workspace::

    size, executor = acl.adaptive_avg_pool2d_backward_get_workspace_size(grad_output, x, out)
    workspace = numpy.empty(size, numpy.uint8)          # or None: the executor's own
    acl.adaptive_avg_pool2d_backward(workspace, size, executor)

Unlike CANN's, these executors can be run any number of times.
"""

from __future__ import annotations

import numbers
from typing import Any, Callable

import numpy as np

from .arguments import OutputSize, require
from .errors import AdaptivePoolTypeError, AdaptivePoolValueError
from .executors import OPERATORS, Executor
from .functional import backward_executor, forward_executor

#: CANN's documented two-phase adaptive pooling calls (it has no 1-D ones).
CANN_CALLS = frozenset(
    f"adaptive_{kind}_pool{rank}d{suffix}"
    for kind in ("avg", "max")
    for rank in (2, 3)
    for suffix in ("", "_backward")
)

class AclExecutor:
    """An :class:`~adaptive_pool.executors.Executor` bound to the arrays of one call."""

    def __init__(self, executor: Executor, arrays: dict[str, Any]) -> None:
        self.executor = executor
        self.arrays = arrays

    @property
    def workspace_size(self) -> int:
        return self.executor.workspace_size

    def __repr__(self) -> str:
        return f"<AclExecutor bound to {', '.join(self.arrays)}: {self.executor!r}>"

    def _repr_html_(self) -> str:
        """Jupyter's rich display, as the executor's plus the names of the bound arrays."""
        from .display import executor_html  # noqa: PLC0415

        return executor_html(self)


def _bind(ex: Executor, **arrays: Any) -> tuple[int, AclExecutor]:
    # Outputs are checked now, as aclnn*GetWorkspaceSize does, so phase two only runs.
    for name in ("out", "indices_out"):
        if name in arrays:
            require(arrays[name], name)
    outs = {k: arrays[k] for k in ("out", "indices_out") if k in arrays}
    inputs = {k: v for k, v in arrays.items() if k not in outs}
    for name, a in outs.items():
        shape = ex.x_shape if ex.op.backward else ex.y_shape
        dtype = ex.index_dtype if name == "indices_out" else ex.spec.dtype
        ex._check_out(a, name, shape, dtype, inputs)
        inputs = {**inputs, name: a}  # indices_out must not overlap out either
    return ex.workspace_size, AclExecutor(ex, arrays)


def _run(workspace: Any, workspace_size: int, executor: Any, stream: Any, op: str) -> None:
    require(executor, "executor")
    if not isinstance(executor, AclExecutor) or executor.executor.op.name != op:
        raise AdaptivePoolTypeError(
            f"executor must come from {op}_get_workspace_size, got {executor!r}",
            argument="executor",
        )
    need = executor.workspace_size
    if workspace is not None:
        require(workspace_size, "workspace_size")
    if workspace_size is not None:
        if isinstance(workspace_size, (bool, np.bool_)) or not isinstance(
            workspace_size, numbers.Integral
        ):
            raise AdaptivePoolTypeError(
                f"workspace_size must be an int (bytes), got {workspace_size!r}",
                argument="workspace_size",
            )
        if workspace_size < 0:
            raise AdaptivePoolValueError(
                f"workspace_size must be >= 0, got {workspace_size}", argument="workspace_size"
            )
    if workspace is not None and workspace_size < need:
        raise AdaptivePoolValueError(
            f"workspace_size is {workspace_size} bytes; this executor needs {need}",
            argument="workspace_size",
        )
    executor.executor.run(**executor.arrays, workspace=workspace, stream=stream)


def _aclnn(name: str) -> str:
    """``aclnnAdaptiveAvgPool2d`` for ``adaptive_avg_pool2d``, or a note where CANN has none."""
    camel = "".join(part.capitalize() for part in name.split("_")).replace("pool", "Pool")
    call = f"``aclnn{camel}``"
    return call if name in CANN_CALLS else f"{call} (CANN documents no 1-D call; same rules)"


def _phase_two(name: str) -> Callable:
    def run(
        workspace: Any, workspace_size: int, executor: AclExecutor, stream: Any = None
    ) -> None:
        _run(workspace, workspace_size, executor, stream, name)

    run.__name__ = run.__qualname__ = name
    run.__doc__ = f"""Phase two of {_aclnn(name)}: run ``executor`` on ``workspace``.

    Parameters
    ----------
    workspace : array or None
        At least ``workspace_size`` bytes on the executor's device (NumPy ``uint8`` for the CPU,
        a CUDA array for the GPU), or None to use the executor's own.
    workspace_size : int
        The size phase one returned (or more).
    executor : AclExecutor
        From :func:`{name}_get_workspace_size`.
    stream : optional
        CUDA stream for GPU arrays.
    """
    return run


def _phase_one(name: str) -> Callable:
    """Phase one, with CANN's argument lists: ``(x, output_size, out[, indices_out])`` for a
    forward, ``(grad_output, x, out)`` for an average backward and ``(grad_output, x, indices,
    grad_input)`` for a max backward."""
    op = OPERATORS[name]
    if not op.backward and not op.max:

        def size(
            x: Any, output_size: OutputSize, out: Any, *, skipna: bool = False
        ) -> tuple[int, AclExecutor]:
            ex = forward_executor(name, x, output_size, skipna=skipna, out=out)
            return _bind(ex, x=x, out=out)

    elif not op.backward:

        def size(
            x: Any, output_size: OutputSize, out: Any, indices_out: Any, *, skipna: bool = False
        ) -> tuple[int, AclExecutor]:
            require(x, "x")
            require(indices_out, "indices_out")  # it decides the index dtype
            ex = forward_executor(
                name, x, output_size, skipna=skipna, out=out, indices_out=indices_out
            )
            return _bind(ex, x=x, out=out, indices_out=indices_out)

    elif not op.max:

        def size(
            grad_output: Any, x: Any, out: Any, *, skipna: bool = False
        ) -> tuple[int, AclExecutor]:
            ex = backward_executor(name, grad_output, x, skipna=skipna, out=out)
            return _bind(ex, grad_output=grad_output, x=x, out=out)

    else:

        def size(
            grad_output: Any, x: Any, indices: Any, grad_input: Any, *, skipna: bool = False
        ) -> tuple[int, AclExecutor]:
            require(grad_input, "grad_input")
            ex = backward_executor(name, grad_output, x, indices, skipna, out=grad_input)
            return _bind(ex, grad_output=grad_output, x=x, indices=indices, out=grad_input)

    size.__name__ = size.__qualname__ = f"{name}_get_workspace_size"
    size.__doc__ = f"""Phase one of {_aclnn(name)}: ``(workspace bytes, executor)``.

    Validates every argument as :func:`adaptive_pool.{name}` does (outputs included), and
    returns the size of the workspace (the window tables) with an executor bound to the arrays,
    for :func:`{name}`. ``skipna`` (keyword only, not in CANN) is the functions' own.
    """
    return size


adaptive_avg_pool1d_get_workspace_size = _phase_one("adaptive_avg_pool1d")
adaptive_avg_pool1d = _phase_two("adaptive_avg_pool1d")
adaptive_avg_pool2d_get_workspace_size = _phase_one("adaptive_avg_pool2d")
adaptive_avg_pool2d = _phase_two("adaptive_avg_pool2d")
adaptive_avg_pool3d_get_workspace_size = _phase_one("adaptive_avg_pool3d")
adaptive_avg_pool3d = _phase_two("adaptive_avg_pool3d")
adaptive_max_pool1d_get_workspace_size = _phase_one("adaptive_max_pool1d")
adaptive_max_pool1d = _phase_two("adaptive_max_pool1d")
adaptive_max_pool2d_get_workspace_size = _phase_one("adaptive_max_pool2d")
adaptive_max_pool2d = _phase_two("adaptive_max_pool2d")
adaptive_max_pool3d_get_workspace_size = _phase_one("adaptive_max_pool3d")
adaptive_max_pool3d = _phase_two("adaptive_max_pool3d")
adaptive_avg_pool1d_backward_get_workspace_size = _phase_one("adaptive_avg_pool1d_backward")
adaptive_avg_pool1d_backward = _phase_two("adaptive_avg_pool1d_backward")
adaptive_avg_pool2d_backward_get_workspace_size = _phase_one("adaptive_avg_pool2d_backward")
adaptive_avg_pool2d_backward = _phase_two("adaptive_avg_pool2d_backward")
adaptive_avg_pool3d_backward_get_workspace_size = _phase_one("adaptive_avg_pool3d_backward")
adaptive_avg_pool3d_backward = _phase_two("adaptive_avg_pool3d_backward")
adaptive_max_pool1d_backward_get_workspace_size = _phase_one("adaptive_max_pool1d_backward")
adaptive_max_pool1d_backward = _phase_two("adaptive_max_pool1d_backward")
adaptive_max_pool2d_backward_get_workspace_size = _phase_one("adaptive_max_pool2d_backward")
adaptive_max_pool2d_backward = _phase_two("adaptive_max_pool2d_backward")
adaptive_max_pool3d_backward_get_workspace_size = _phase_one("adaptive_max_pool3d_backward")
adaptive_max_pool3d_backward = _phase_two("adaptive_max_pool3d_backward")

__all__ = ["AclExecutor", "CANN_CALLS"] + [
    f"{name}{phase}" for name in OPERATORS for phase in ("_get_workspace_size", "")
]
