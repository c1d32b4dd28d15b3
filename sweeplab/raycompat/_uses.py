"""The record of one Ray (or MLflow) symbol outside its public API that sweeplab relies on."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class PrivateUse:
    """One Ray (or MLflow) symbol outside its public API that sweeplab relies on.

    Attributes:
        module: The module it is imported from.
        attribute: Its dotted path in `module` (``Class.method``, ``Class.instance_attribute``).
        params: For a callable, the parameters sweeplab passes by name or position (``self``
            excluded); None for an attribute that is read or written.
        why: What sweeplab uses it for, and why no public API serves.
    """

    module: str
    attribute: str
    params: tuple[str, ...] | None
    why: str
