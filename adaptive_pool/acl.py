"""CANN's two-phase calls (``aclnn*GetWorkspaceSize`` then ``aclnn*``), mirrored.

Phase one validates the arguments, builds (or reuses) the executor and returns the workspace
size in bytes with an executor bound to the arrays. Phase two runs it on a caller's workspace::

    size, executor = acl.adaptive_avg_pool2d_backward_get_workspace_size(grad_output, x, out)
    workspace = numpy.empty(size, numpy.uint8)          # or None: the executor's own
    acl.adaptive_avg_pool2d_backward(workspace, size, executor)

Unlike CANN's, these executors can be run any number of times.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from .arguments import OutputSize, require
from .errors import AdaptivePoolTypeError, AdaptivePoolValueError
from .executors import Executor
from .functional import backward_executor, forward_executor

__all__ = [
    "AclExecutor",
    "adaptive_avg_pool2d_get_workspace_size",
    "adaptive_avg_pool2d",
    "adaptive_avg_pool2d_backward_get_workspace_size",
    "adaptive_avg_pool2d_backward",
    "adaptive_max_pool3d_get_workspace_size",
    "adaptive_max_pool3d",
    "adaptive_max_pool3d_backward_get_workspace_size",
    "adaptive_max_pool3d_backward",
]


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


def adaptive_avg_pool2d_get_workspace_size(
    x: Any, output_size: OutputSize, out: Any
) -> tuple[int, AclExecutor]:
    """Phase one of ``aclnnAdaptiveAvgPool2d``: ``(workspace bytes, executor)``."""
    ex = forward_executor("adaptive_avg_pool2d", x, output_size, out=out)
    return _bind(ex, x=x, out=out)


def adaptive_avg_pool2d(
    workspace: Any, workspace_size: int, executor: AclExecutor, stream: Any = None
) -> None:
    """Phase two of ``aclnnAdaptiveAvgPool2d``: run on ``workspace`` (or None)."""
    _run(workspace, workspace_size, executor, stream, "adaptive_avg_pool2d")


def adaptive_avg_pool2d_backward_get_workspace_size(
    grad_output: Any, x: Any, out: Any
) -> tuple[int, AclExecutor]:
    """Phase one of ``aclnnAdaptiveAvgPool2dBackward``: ``(workspace bytes, executor)``."""
    ex = backward_executor("adaptive_avg_pool2d_backward", grad_output, x, out=out)
    return _bind(ex, grad_output=grad_output, x=x, out=out)


def adaptive_avg_pool2d_backward(
    workspace: Any, workspace_size: int, executor: AclExecutor, stream: Any = None
) -> None:
    """Phase two of ``aclnnAdaptiveAvgPool2dBackward``: run on ``workspace`` (or None)."""
    _run(workspace, workspace_size, executor, stream, "adaptive_avg_pool2d_backward")


def adaptive_max_pool3d_get_workspace_size(
    x: Any, output_size: OutputSize, out: Any, indices_out: Any
) -> tuple[int, AclExecutor]:
    """Phase one of ``aclnnAdaptiveMaxPool3d``; the index dtype is ``indices_out``'s."""
    require(x, "x")
    require(indices_out, "indices_out")
    ex = forward_executor(
        "adaptive_max_pool3d", x, output_size, out=out, indices_out=indices_out
    )
    return _bind(ex, x=x, out=out, indices_out=indices_out)


def adaptive_max_pool3d(
    workspace: Any, workspace_size: int, executor: AclExecutor, stream: Any = None
) -> None:
    """Phase two of ``aclnnAdaptiveMaxPool3d``: run on ``workspace`` (or None)."""
    _run(workspace, workspace_size, executor, stream, "adaptive_max_pool3d")


def adaptive_max_pool3d_backward_get_workspace_size(
    grad_output: Any, x: Any, indices: Any, grad_input: Any
) -> tuple[int, AclExecutor]:
    """Phase one of ``aclnnAdaptiveMaxPool3dBackward``: ``(workspace bytes, executor)``."""
    require(grad_input, "grad_input")
    ex = backward_executor(
        "adaptive_max_pool3d_backward", grad_output, x, indices, out=grad_input
    )
    return _bind(ex, grad_output=grad_output, x=x, indices=indices, out=grad_input)


def adaptive_max_pool3d_backward(
    workspace: Any, workspace_size: int, executor: AclExecutor, stream: Any = None
) -> None:
    """Phase two of ``aclnnAdaptiveMaxPool3dBackward``: run on ``workspace`` (or None)."""
    _run(workspace, workspace_size, executor, stream, "adaptive_max_pool3d_backward")
