"""The one test of "is this value a number" that sweeplab applies everywhere.

A metric a training function reports, a bound in a search space and a resource count in a
``Sweep`` all go through it, so a ``numpy.float32`` loss is a number in every place or in none.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import Any

__all__ = ["diverged", "is_finite_number", "is_number"]


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


def diverged(result: Mapping[str, Any] | None, metric: str) -> bool:
    """Whether `result` reports `metric` as NaN or infinite (``a/b`` reaches nested dicts).

    The one divergence check of a trial's report: the engine's `DivergenceStopper`, its trial
    events and the simulator all apply it.
    """
    value: Any = result
    for part in [metric] if result and metric in result else metric.split("/"):
        if not isinstance(value, Mapping) or part not in value:
            return False
        value = value[part]
    return is_number(value) and not is_finite_number(value)
