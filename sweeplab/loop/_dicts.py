"""The two dict operations Tune's controller applies to configs and results, as the loop's own.

Tune flattens a trial's results into ``a/b`` keys before a scheduler or searcher sees them, and
merges a searcher's suggestion into the param space. Its functions for both
(``ray.tune.utils.util.flatten_dict`` and ``merge_dicts``) are private and marked deprecated,
so the loop keeps these copies of what they do (Ray 2.60), key order included: a searcher or
scheduler that iterates a result's keys sees them in the order Tune gives them.
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["flatten_result", "merge_suggestion"]


def flatten_result(result: dict[str, Any], delimiter: str = "/") -> dict[str, Any]:
    """`result` with each nested dict's keys joined to its own (``{"a": {"b": 1}}`` gives
    ``{"a/b": 1}``), one level per pass as Tune does: the flattened keys follow the others."""
    flat = dict(result)
    while any(isinstance(v, dict) for v in flat.values()):
        nested = [key for key, value in flat.items() if isinstance(value, dict)]
        added: dict[str, Any] = {}
        for key in nested:
            for subkey, value in flat[key].items():
                added[f"{key}{delimiter}{subkey}"] = value
        flat.update(added)
        for key in nested:
            del flat[key]
    return flat


def merge_suggestion(base: dict[str, Any], suggested: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of `base` with `suggested` merged in: nested dicts merged key by key, any
    other value replaced (new keys allowed)."""
    merged = copy.deepcopy(base)
    _update(merged, suggested)
    return merged


def _update(original: dict[str, Any], new: dict[str, Any]) -> None:
    for key, value in new.items():
        if isinstance(original.get(key), dict) and isinstance(value, dict):
            _update(original[key], value)
        else:
            original[key] = value
