"""adaptive_pool: adaptive pooling operators, forward and backward, for CPUs and NVIDIA GPUs.

The family: average and max pooling over 1, 2 or 3 trailing axes, forward and backward, on
NumPy arrays (run on the CPU) or CUDA arrays (run on the GPU)::

    y = adaptive_avg_pool2d(x, (5, 7))
    gx = adaptive_avg_pool2d_backward(gy, x)
    y, idx = adaptive_max_pool3d(v, (2, 3, 4))
    gv = adaptive_max_pool3d_backward(gy, v, idx)
    y, idx = adaptive_max_pool1d(s, 16)         # and adaptive_avg_pool1d, _3d, max 2-D, ...

:mod:`adaptive_pool.acl` mirrors CANN's two-phase aclnn API; :func:`get_executor` and
:class:`Executor` expose the precomputed plans (the workspace).
"""

from . import acl
from .dtypes import bfloat16
from .errors import (
    AdaptivePoolError,
    AdaptivePoolIndexError,
    AdaptivePoolTypeError,
    AdaptivePoolValueError,
    MissingArgumentError,
)
from .executors import Executor, clear_cache
from .functional import (
    adaptive_avg_pool1d,
    adaptive_avg_pool1d_backward,
    adaptive_avg_pool2d,
    adaptive_avg_pool2d_backward,
    adaptive_avg_pool3d,
    adaptive_avg_pool3d_backward,
    adaptive_max_pool1d,
    adaptive_max_pool1d_backward,
    adaptive_max_pool2d,
    adaptive_max_pool2d_backward,
    adaptive_max_pool3d,
    adaptive_max_pool3d_backward,
)
from .viz import plot_gradient, plot_windows  # matplotlib is imported only when they are called

__version__ = "0.1.0"

__all__ = [
    "acl",
    "bfloat16",
    "AdaptivePoolError",
    "AdaptivePoolIndexError",
    "AdaptivePoolTypeError",
    "AdaptivePoolValueError",
    "MissingArgumentError",
    "Executor",
    "clear_cache",
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_avg_pool3d",
    "adaptive_max_pool1d",
    "adaptive_max_pool2d",
    "adaptive_max_pool3d",
    "adaptive_avg_pool1d_backward",
    "adaptive_avg_pool2d_backward",
    "adaptive_avg_pool3d_backward",
    "adaptive_max_pool1d_backward",
    "adaptive_max_pool2d_backward",
    "adaptive_max_pool3d_backward",
    "plot_windows",
    "plot_gradient",
]
