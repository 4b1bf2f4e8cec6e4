"""Planning limits: what a plan's window tables and results need, checked against the memory
there is before anything large is allocated, so that an impossible ``output_size`` is an error
naming it rather than NumPy's ``MemoryError`` about an array nobody asked for."""

from __future__ import annotations

import os
from typing import Callable

from .errors import AdaptivePoolValueError

__all__ = ["host_memory_available", "require_memory", "describe_bytes"]

#: Allocations below this many bytes are not checked: reading the free memory costs a system
#: call, and a small allocation that fails is not what a user needs protecting from.
CHECKED_BYTES = 1 << 28


def host_memory_available() -> int | None:
    """Bytes of host memory available to new allocations (Linux ``MemAvailable``; elsewhere
    the physical memory), or None when the system does not say."""
    try:
        with open("/proc/meminfo", "rb") as f:
            for line in f:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def describe_bytes(n: int) -> str:
    """``n`` bytes in binary units: ``32.0 TiB``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{n} B"
        n /= 1024
    raise AssertionError("unreachable")


def require_memory(
    nbytes: int,
    available: Callable[[], int | None],
    what: str,
    argument: str,
    given: object,
    fits: Callable[[int], str],
) -> None:
    """An :class:`AdaptivePoolValueError` naming ``argument`` when ``nbytes`` exceed the memory
    that ``available()`` reports (None: unknown, no check).

    ``what`` says what would be allocated; ``fits(available_bytes)`` what would fit instead.
    """
    if nbytes < CHECKED_BYTES:
        return
    free = available()
    if free is None or nbytes <= free:
        return
    raise AdaptivePoolValueError(
        f"{argument}={given!r} cannot be planned: {what} would need {describe_bytes(nbytes)} "
        f"({nbytes} bytes) and {describe_bytes(free)} of memory is available; {fits(free)}",
        argument=argument,
    )
