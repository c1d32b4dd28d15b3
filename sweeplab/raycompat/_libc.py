"""The C library, through ctypes: Linux functions that no Python module wraps."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from sweeplab.raycompat._ledger import LibcUse

__all__ = [
    "LIBC_USES",
    "libc_function",
]

LIBC_USES: tuple[LibcUse, ...] = (
    LibcUse(
        "malloc_trim",
        "gives the freed pages of the driver's heap back to the system while a sweep runs "
        "(`engine/_heap.py`); glibc keeps them in its arenas, and Python has no call for it",
    ),
    LibcUse(
        "prctl",
        "makes the report server's guard a child subreaper (`PR_SET_CHILD_SUBREAPER`), so it "
        "reaps the server's orphaned workers (`report/_ui_guard.py`); the `os` module has no prctl",
    ),
)


def libc_function(name: str) -> Callable[..., Any] | None:
    """The C library's function `name` (a row of :data:`LIBC_USES`), or None off Linux or
    where the C library lacks it (musl has no ``malloc_trim``)."""
    if name not in {use.function for use in LIBC_USES}:
        raise ValueError(f"{name} is not a row of LIBC_USES")
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        function: Callable[..., Any] = getattr(ctypes.CDLL(None, use_errno=True), name)
    except (OSError, AttributeError):
        return None
    return function
