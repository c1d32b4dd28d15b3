"""Fitting a config from an earlier (possibly different) space into a space, saying each change."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sweeplab._numbers import is_number
from sweeplab.errors import SpecError
from sweeplab.space._primitives import (
    PARAM_TYPES,
    Choice,
    Conditional,
    FloatRange,
    IntRange,
    describe_param,
    freeze,
    quantize,
    same_value,
    thaw,
)
from sweeplab.space._space import Space, sample_node
from sweeplab.space._walk import SpaceWalk, split_option

__all__ = ["CHANGE_KINDS", "ConfigChange", "adapt_config"]

CHANGE_KINDS = ("dropped", "clipped", "snapped", "resampled", "filled", "constant")


@dataclass(frozen=True)
class ConfigChange:
    """One change :func:`adapt_config` made to a config.

    Attributes:
        path: Dotted path of the parameter; a conditional branch's parameters carry the option
            name (``optimizer.sgd.momentum``), as in :meth:`Space.describe`.
        kind: ``"dropped"`` (not in the space), ``"clipped"`` (a number outside the bounds,
            moved to the nearest bound), ``"snapped"`` (rounded to an integer or a multiple of
            ``q``), ``"resampled"`` (not a value of the parameter, e.g. an option no longer among
            the choices: drawn anew), ``"filled"`` (missing: drawn from the space) or
            ``"constant"`` (set to the space's constant).
        old: The value in the given config (``None`` for ``"filled"``).
        new: The value in the adapted config (``None`` for ``"dropped"``).
        reason: Why, in words.
    """

    path: str
    kind: str
    old: Any
    new: Any
    reason: str

    def __str__(self) -> str:
        old, new = _text(self.old), _text(self.new)
        text = {
            "dropped": f"{old} dropped",
            "clipped": f"{old} clipped to {new}",
            "snapped": f"{old} snapped to {new}",
            "resampled": f"{old} replaced by a draw, {new}",
            "filled": f"drew {new}",
            "constant": f"{old} set to {new}",
        }[self.kind]
        return f"{self.path}: {text} ({self.reason})"


def _text(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return json.dumps(value, default=str) if isinstance(value, (dict, list)) else repr(value)


class _Adapt(SpaceWalk):
    """Fits ``value`` into each node, noting every change; ``gen`` draws what must be drawn."""

    def __init__(self, gen: random.Random) -> None:
        self.gen = gen
        self.changes: list[ConfigChange] = []

    def note(self, path: str, kind: str, old: Any, new: Any, reason: str) -> None:
        self.changes.append(ConfigChange(path, kind, old, new, reason))

    def draw(self, param: Any, where: str, old: Any, kind: str, reason: str) -> Any:
        new = sample_node(param, self.gen)
        self.note(where, kind, old, new, reason)
        return new

    def group(self, tree: Mapping[str, Any], path: str, value: Any) -> dict[str, Any]:
        if not isinstance(value, Mapping):
            return self.draw(
                tree, path, value, "resampled", "the space holds a group of parameters here"
            )
        out: dict[str, Any] = {}
        for name, param in tree.items():
            where = self.join(path, name)
            if name in value:
                out[name] = self.walk(param, where, value[name])
            elif isinstance(param, dict):
                out[name] = self.group(param, where, {})
            elif isinstance(param, PARAM_TYPES):
                out[name] = self.draw(param, where, None, "filled", "not in the earlier config")
            else:
                out[name] = thaw(param)
        for name in value:
            if name not in tree:
                self.note(
                    self.join(path, str(name)), "dropped", value[name], None, "not in the space"
                )
        return out

    def choice(self, param: Choice, path: str, value: Any) -> Any:
        index = _find(param, value)
        if index is None and isinstance(value, Mapping) and "name" in value:
            # An earlier conditional's option: keep its name, drop its branch's values.
            index = _find(param, value["name"])
            if index is not None:
                for key in value:
                    if key != "name":
                        text = "the space holds a plain choice here"
                        self.note(self.join(path, str(key)), "dropped", value[key], None, text)
        if index is None:
            options = thaw(param.options)
            return self.draw(param, path, value, "resampled", f"not among {options!r}")
        return thaw(param.options[index])

    def constant(self, node: Any, path: str, value: Any) -> Any:
        try:
            same = same_value(node, freeze(value))
        except SpecError:
            same = False
        if not same:
            self.note(path, "constant", value, thaw(node), "the space's constant")
        return thaw(node)

    def range(self, param: FloatRange | IntRange, path: str, value: Any) -> Any:
        if not is_number(value) or not math.isfinite(value):
            reason = f"not a value of {describe_param(param)}"
            return self.draw(param, path, value, "resampled", reason)
        new: float | int = value
        if value < param.low or value > param.high:
            new = min(max(value, param.low), param.high)
            self.note(path, "clipped", value, new, f"outside {describe_param(param)}")
        if isinstance(param, IntRange):
            rounded = round(new)
            if rounded != new:
                self.note(path, "snapped", new, rounded, "an integer parameter")
            new = int(rounded)
        else:
            new = float(new)
        if param.q is not None and param.q != 1:
            snapped = quantize(new, param)
            if not math.isclose(snapped, new, rel_tol=1e-9, abs_tol=1e-12):
                self.note(path, "snapped", new, snapped, f"a multiple of q={param.q}")
            new = snapped
        return new

    def conditional(self, param: Conditional, path: str, value: Any) -> Any:
        # An earlier plain choice of option names reads as that option with an empty branch.
        option, rest = split_option(value)
        if not isinstance(option, str) or option not in param.branches:
            reason = f"the option must be one of {list(param.branches)}"
            return self.draw(param, path, value, "resampled", reason)
        return self.chosen(param, option, path, rest)


def _find(param: Choice, value: Any) -> int | None:
    index = param.find(value)
    if index is None and isinstance(value, str):  # a list option recorded as its JSON text
        try:
            index = param.find(json.loads(value))
        except ValueError:
            return None
    return index


def adapt_config(
    space: Space | Mapping[str, Any], config: Mapping[str, Any], *, gen: random.Random
) -> tuple[dict[str, Any], list[ConfigChange]]:
    """Fits a config (in final nested shape, e.g. from an earlier sweep) into ``space``.

    - A parameter that is not in the space is dropped.
    - A parameter of the space that the config lacks is drawn from the space with ``gen``.
    - A number outside the bounds is clipped to the nearest bound (so a log range stays
      positive); integer parameters get integers and quantized ones a multiple of ``q``.
    - A value that the parameter cannot take (an option no longer among the choices, a string
      for a range) is drawn anew with ``gen``; so is a conditional whose option is gone (with
      its branch). Inside a kept option, the branch is adapted by the same rules.
    - Constants take the space's value.

    Args:
        space: The space to fit the config into.
        config: The config; not changed.
        gen: Draws the missing and re-sampled values (seed it for reproducible results).

    Returns:
        The adapted config, valid for ``space``, and the changes made, in parameter order
        (empty when the config was already a config of the space).
    """
    adapter = _Adapt(gen)
    adapted = adapter.group(Space(space).params, "", config)
    return adapted, adapter.changes
