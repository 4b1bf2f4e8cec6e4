"""adaptive_pool for PyTorch: differentiable, ``torch.compile``-ready, deterministic on CUDA.

Mirrors ``torch.nn.functional`` and ``torch.nn``::

    import adaptive_pool.torch as apt

    y = apt.adaptive_avg_pool2d(x, (7, 7))                       # as torch.nn.functional
    y, idx = apt.adaptive_max_pool3d(v, 4, return_indices=True)  # int64 indices
    pool = apt.AdaptiveMaxPool2d((5, 5))                          # as torch.nn
    model = apt.swap_modules(model)     # every nn.AdaptiveAvgPool*d / AdaptiveMaxPool*d -> ours

Every forward and backward is a ``torch.library.custom_op`` in the ``adaptive_pool`` namespace
(:mod:`adaptive_pool.torch.ops`) with fake, autograd and vmap rules, so the gradients (and the
gradients of gradients) are adaptive_pool's deterministic gathers on the CPU and on CUDA. The
top-level functions of :mod:`adaptive_pool` accept tensors too (:func:`run` serves them).

PyTorch is an optional dependency (``pip install adaptive_pool[torch]``); importing
:mod:`adaptive_pool` does not import it, this module does.
"""

from . import ops
from .functional import (
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_avg_pool3d,
    adaptive_max_pool1d,
    adaptive_max_pool2d,
    adaptive_max_pool3d,
)
from .layer import run
from .modules import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AdaptiveAvgPool3d,
    AdaptiveMaxPool1d,
    AdaptiveMaxPool2d,
    AdaptiveMaxPool3d,
    swap_modules,
)

__all__ = [
    "ops",
    "run",
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_avg_pool3d",
    "adaptive_max_pool1d",
    "adaptive_max_pool2d",
    "adaptive_max_pool3d",
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d",
    "AdaptiveAvgPool3d",
    "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d",
    "AdaptiveMaxPool3d",
    "swap_modules",
]
