"""``numpy.ma.MaskedArray`` in, masked array out: the mask is missing data, as NaN is with
``skipna=True``.

Masked elements of ``x`` become NaN and every operator runs with ``skipna=True``, so masked
elements (and NaN) never take part in a mean or win a maximum. A pooled cell whose window holds
no valid element (unmasked and not NaN) is masked in the result; a backward's result carries
``x``'s mask (those inputs receive no gradient). Masked gradients count as 0.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .executors import OPERATORS

__all__ = ["run"]


def _filled(a: Any, value: float) -> np.ndarray:
    if isinstance(a, np.ma.MaskedArray):
        return np.ma.getdata(a.filled(a.dtype.type(value)))
    return a


def _valid_cells(name: str, x: np.ndarray, output_size: Any) -> np.ndarray:
    """Which output cells pool at least one valid element: the average of the 0/1 validity
    indicator is positive exactly there (a sum of ones, never rounded to 0)."""
    from . import functional  # noqa: PLC0415 - functional imports dispatch, which imports us

    valid = (~np.isnan(x)).astype(np.float32)
    rank = OPERATORS[name].spatial
    return getattr(functional, f"adaptive_avg_pool{rank}d")(valid, output_size) > 0


def run(name: str, *args: Any, skipna: bool = False, **kwargs: Any) -> Any:
    """Run operator ``name`` of the family on masked arrays (``skipna`` is always on)."""
    from . import functional  # noqa: PLC0415

    op = OPERATORS[name]
    fn = getattr(functional, name)
    for key in ("out", "indices_out"):
        if isinstance(kwargs.get(key), np.ma.MaskedArray):
            kwargs[key] = np.ma.getdata(kwargs[key])  # written in place; the mask comes back
    if not op.backward:
        x, output_size = args
        data = _filled(x, np.nan)
        result = fn(data, output_size, skipna=True, **kwargs)
        invalid = ~_valid_cells(name, data, output_size)
        if op.max:
            y, idx = result
            return np.ma.MaskedArray(y, mask=invalid), np.ma.MaskedArray(idx, mask=invalid)
        return np.ma.MaskedArray(result, mask=invalid)
    grad_output, x, *rest = args
    mask = np.ma.getmaskarray(x) if isinstance(x, np.ma.MaskedArray) else False
    # the indices of masked cells still point at their window's first element: keep them
    rest = [np.ma.getdata(r) for r in rest]
    gi = fn(_filled(grad_output, 0.0), _filled(x, np.nan), *rest, skipna=True, **kwargs)
    return np.ma.MaskedArray(gi, mask=mask)
