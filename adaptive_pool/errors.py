"""Exceptions raised by adaptive_pool.

Every error derives from :class:`AdaptivePoolError` and from the built-in exception a Python user
would expect (``TypeError``, ``ValueError``, ``IndexError``), and carries ``.status``, the aclnn
status code CANN would return for the same mistake.
"""

from __future__ import annotations

__all__ = [
    "ACLNN_ERR_PARAM_NULLPTR",
    "ACLNN_ERR_PARAM_INVALID",
    "AdaptivePoolError",
    "AdaptivePoolTypeError",
    "AdaptivePoolValueError",
    "AdaptivePoolIndexError",
    "MissingArgumentError",
]

#: aclnn status for a missing (null) argument.
ACLNN_ERR_PARAM_NULLPTR = 161001
#: aclnn status for an invalid argument.
ACLNN_ERR_PARAM_INVALID = 161002


class AdaptivePoolError(Exception):
    """Base class of every error raised by adaptive_pool.

    Attributes
    ----------
    status : int
        The aclnn status code (161001 for a missing argument, 161002 for an invalid one).
    argument : str or None
        The name of the offending argument, when there is one.
    """

    status: int = ACLNN_ERR_PARAM_INVALID

    def __init__(self, message: str, *, argument: str | None = None) -> None:
        super().__init__(message)
        self.argument = argument

    def __str__(self) -> str:
        return f"{super().__str__()} [aclnn status {self.status}]"


class AdaptivePoolTypeError(AdaptivePoolError, TypeError):
    """A dtype or an array kind that is not accepted."""


class AdaptivePoolValueError(AdaptivePoolError, ValueError):
    """A shape, size or other value that is not accepted."""


class AdaptivePoolIndexError(AdaptivePoolError, IndexError):
    """An index of the max-pool backward that lies outside its window."""


class MissingArgumentError(AdaptivePoolTypeError):
    """A required argument is ``None``."""

    status = ACLNN_ERR_PARAM_NULLPTR
