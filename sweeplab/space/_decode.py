"""Turning what a backend suggests into a config in final nested shape."""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Mapping
from typing import Any

from sweeplab.errors import SpecError
from sweeplab.space._primitives import (
    PARAM_TYPES,
    Choice,
    Conditional,
    FloatRange,
    IntRange,
    quantize,
    thaw,
)
from sweeplab.space._space import Space
from sweeplab.space._walk import SpaceWalk, split_option

__all__ = ["OPTION_KEY", "decode_config"]

OPTION_KEY = "_option"
"""Key of the chosen option in the encoded (Optuna) form of a conditional choice."""


def _unflatten(config: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in config.items():
        parts = key.split("/") if isinstance(key, str) else [key]
        node = out
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        last = parts[-1]
        if isinstance(value, Mapping) and isinstance(node.get(last), dict):
            node[last].update(_unflatten(value))
        else:
            node[last] = _unflatten(value) if isinstance(value, Mapping) else value
    return out


class _Decode(SpaceWalk):
    """Turns ``value`` (what a backend suggested for a node) into the node's final shape."""

    def group(self, tree: Mapping[str, Any], path: str, value: Any) -> dict[str, Any]:
        if not isinstance(value, Mapping):
            raise SpecError(f"{path or '<config>'}: expected a mapping, but got {value!r}.")
        out = {}
        for name, node in tree.items():
            where = self.join(path, name)
            if isinstance(node, PARAM_TYPES) and name not in value:
                raise SpecError(f"{where}: the config has no value for this parameter.")
            out[name] = self.walk(node, where, value.get(name, {}))
        return out

    def constant(self, node: Any, path: str, value: Any) -> Any:
        return thaw(node)

    def range(self, param: FloatRange | IntRange, path: str, value: Any) -> Any:
        if not isinstance(value, numbers.Real) or isinstance(value, bool):
            raise SpecError(f"{path}: expected a number, but got {value!r}.")
        value = float(value)
        try:
            if param.q is not None:
                return quantize(value, param)
            # Clip float noise such as exp(log(high)) > high, relative to the range's width and to
            # its magnitude (a range a few ulps wide); real violations still fail below.
            span = (param.high - param.low) or abs(param.high) or 1.0
            noise = 1e-9 * span + 4 * math.ulp(max(abs(param.low), abs(param.high)))
            if param.low - noise <= value <= param.high + noise:
                return min(max(value, param.low), param.high)
            return value
        except SpecError as error:
            raise SpecError(f"{path}: {error}") from None

    def choice(self, param: Choice, path: str, value: Any) -> Any:
        index = param.find(value)
        if index is None and isinstance(value, str):
            try:
                index = param.find(json.loads(value))
            except ValueError:
                index = None
        if index is None:
            raise SpecError(
                f"{path}: the value must be one of {thaw(param.options)!r}, but got {value!r}."
            )
        return thaw(param.options[index])

    def conditional(self, param: Conditional, path: str, value: Any) -> Any:
        if not isinstance(value, Mapping):
            raise SpecError(
                f"{path}: expected a mapping with the chosen option, but got {value!r}."
            )
        if OPTION_KEY in value:
            option, rest = value[OPTION_KEY], value.get(value[OPTION_KEY], {})
        else:
            option, rest = split_option(value)
        if option not in param.branches:
            raise SpecError(
                f"{path}: the chosen option must be one of {list(param.branches)}, "
                f"but got {option!r}."
            )
        return self.chosen(param, option, path, rest)


def decode_config(space: Space, config: Mapping[str, Any]) -> dict[str, Any]:
    """Turns a config from any backend into the final nested shape, then validates it.

    Accepts configs from :meth:`Space.sample` (returned unchanged), from the searchers of
    :func:`compile_random_search` and its siblings, from an Optuna trial of
    :func:`compile_to_optuna` (``trial.params`` with '/'-joined keys, flat or unflattened) and
    from :func:`compile_to_hyperopt`. Quantized values are snapped to their multiple of ``q``
    (stepping at most one ``q`` into range), integers become ``int``, constants are filled in
    from the space and keys that are not in the space are dropped.

    Raises:
        SpecError: If the config cannot be decoded, or the result is not a config of the space.
    """
    space = Space(space)
    decoded = _Decode().group(space.params, "", _unflatten(config))
    space.validate_config(decoded)
    return decoded
