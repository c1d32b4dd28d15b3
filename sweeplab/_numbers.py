"""The one test of "is this value a number" that sweeplab applies everywhere.

A metric a training function reports, a bound in a search space and a resource count in a
``Sweep`` all go through it, so a ``numpy.float32`` loss is a number in every place or in none.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

__all__ = ["is_finite_number", "is_number"]


def is_number(value: Any) -> bool:
    """Whether ``value`` is a real number: Python or NumPy ints and floats, not bools.

    ``numbers.Real`` covers NumPy's scalar types (``numpy.float32``, ``numpy.int64``, ...),
    which do not subclass Python's ``float``; ``bool`` is a Python ``int``, and a flag is not a
    measurement. ``numpy.bool_`` is not registered as a ``numbers.Real`` at all. NaN and the
    infinities are numbers here (see :func:`is_finite_number`).
    """
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def is_finite_number(value: Any) -> bool:
    """Whether ``value`` is a number (see :func:`is_number`) that is neither NaN nor infinite."""
    return is_number(value) and math.isfinite(value)
