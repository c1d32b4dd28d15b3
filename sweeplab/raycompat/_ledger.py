"""The rows of the ledgers: what each private symbol, table or C function is for.

Every Ray and MLflow symbol outside their public APIs that sweeplab relies on is a
:class:`PrivateUse` row in the module that uses it, each MLflow table a :class:`SchemaUse` row and
each C library function a :class:`LibcUse` row. ``tests/raycompat`` checks every row against the
installed libraries.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

__all__ = ["LibcUse", "PrivateUse", "Purpose", "SchemaUse"]

# "essential": a feature of sweeplab breaks without the symbol. "speed": sweeps run as before
# without it, only slower or with more of the driver's memory.
Purpose = Literal["essential", "speed"]


@dataclasses.dataclass(frozen=True)
class PrivateUse:
    """One Ray (or MLflow) symbol outside its public API that sweeplab relies on.

    Attributes:
        module: The module it is imported from.
        attribute: Its dotted path in `module` (``Class.method``, ``Class.instance_attribute``).
        params: For a callable, the parameters sweeplab passes by name or position (``self``
            excluded); None for an attribute that is read or written.
        why: What sweeplab uses it for, and why no public API serves.
        purpose: ``"essential"`` where a feature breaks without it; ``"speed"`` where it only
            makes sweeps faster or leaner, so that an upgrade may drop its use rather than port it.
        feature: The feature it serves, in a few words.
    """

    module: str
    attribute: str
    params: tuple[str, ...] | None
    why: str
    _: dataclasses.KW_ONLY
    purpose: Purpose
    feature: str


@dataclasses.dataclass(frozen=True)
class SchemaUse:
    """One table of MLflow's SQL store that sweeplab reads or writes, and its columns."""

    table: str
    columns: tuple[str, ...]
    why: str


@dataclasses.dataclass(frozen=True)
class LibcUse:
    """One C library function sweeplab calls through ``ctypes``, and why."""

    function: str
    why: str
