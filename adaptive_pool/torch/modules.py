"""``torch.nn``'s adaptive pooling modules, computed by adaptive_pool, and :func:`swap_modules`.

Each class subclasses PyTorch's own (same constructor, attributes, ``repr`` and
``isinstance`` checks, no parameters or buffers) and only replaces ``forward``. That is what
lets :func:`swap_modules` convert a model in place by changing each module's class: the module
objects, their hooks and every reference to them stay as they were.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from . import functional as F

__all__ = [
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d",
    "AdaptiveAvgPool3d",
    "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d",
    "AdaptiveMaxPool3d",
    "swap_modules",
]


class AdaptiveAvgPool1d(nn.AdaptiveAvgPool1d):
    """:class:`torch.nn.AdaptiveAvgPool1d` with adaptive_pool's deterministic kernels."""

    def forward(self, input: Tensor) -> Tensor:
        return F.adaptive_avg_pool1d(input, self.output_size)


class AdaptiveAvgPool2d(nn.AdaptiveAvgPool2d):
    """:class:`torch.nn.AdaptiveAvgPool2d` with adaptive_pool's deterministic kernels."""

    def forward(self, input: Tensor) -> Tensor:
        return F.adaptive_avg_pool2d(input, self.output_size)


class AdaptiveAvgPool3d(nn.AdaptiveAvgPool3d):
    """:class:`torch.nn.AdaptiveAvgPool3d` with adaptive_pool's deterministic kernels."""

    def forward(self, input: Tensor) -> Tensor:
        return F.adaptive_avg_pool3d(input, self.output_size)


class AdaptiveMaxPool1d(nn.AdaptiveMaxPool1d):
    """:class:`torch.nn.AdaptiveMaxPool1d` with adaptive_pool's deterministic kernels."""

    def forward(self, input: Tensor) -> Any:
        return F.adaptive_max_pool1d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool2d(nn.AdaptiveMaxPool2d):
    """:class:`torch.nn.AdaptiveMaxPool2d` with adaptive_pool's deterministic kernels."""

    def forward(self, input: Tensor) -> Any:
        return F.adaptive_max_pool2d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool3d(nn.AdaptiveMaxPool3d):
    """:class:`torch.nn.AdaptiveMaxPool3d` with adaptive_pool's deterministic kernels."""

    def forward(self, input: Tensor) -> Any:
        return F.adaptive_max_pool3d(input, self.output_size, self.return_indices)


#: PyTorch's module class -> ours.
SWAPS: dict[type, type] = {
    nn.AdaptiveAvgPool1d: AdaptiveAvgPool1d,
    nn.AdaptiveAvgPool2d: AdaptiveAvgPool2d,
    nn.AdaptiveAvgPool3d: AdaptiveAvgPool3d,
    nn.AdaptiveMaxPool1d: AdaptiveMaxPool1d,
    nn.AdaptiveMaxPool2d: AdaptiveMaxPool2d,
    nn.AdaptiveMaxPool3d: AdaptiveMaxPool3d,
}


def swap_modules(model: torch.nn.Module) -> torch.nn.Module:
    """Make every ``torch.nn.AdaptiveAvgPool*d`` / ``AdaptiveMaxPool*d`` in ``model`` ours.

    The modules are converted in place (their class changes; objects, hooks and attributes are
    kept), ``model`` itself included. Subclasses of PyTorch's modules with their own behaviour
    are left alone, and so are direct calls to ``torch.nn.functional`` in a ``forward``.

    Parameters
    ----------
    model : torch.nn.Module
        Any module.

    Returns
    -------
    torch.nn.Module
        ``model``, for chaining: ``model = swap_modules(build_model())``.

    Examples
    --------
    >>> import torch, adaptive_pool.torch as apt
    >>> net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.AdaptiveAvgPool2d(1))
    >>> type(apt.swap_modules(net)[1]).__module__
    'adaptive_pool.torch.modules'
    """
    for module in model.modules():
        ours = SWAPS.get(type(module))
        if ours is not None:
            module.__class__ = ours
    return model
