"""Population Based Training: mutations and the explore function derived from a space.

Ray's PBT ``_explore`` perturbs a value given by a callable or Tune domain by multiplying it with
a perturbation factor and never clips the result, so a mutation alone cannot keep a range in
bounds. :func:`pbt_explore_fn` projects every explored config back into the space.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from typing import Any

from sweeplab.space._primitives import (
    Choice,
    Conditional,
    FloatRange,
    IntRange,
    quantize,
    sample_range,
    thaw,
)
from sweeplab.space._space import Space

__all__ = ["pbt_explore_fn", "pbt_mutations"]


class _ResampleRange:
    """A picklable resampler for one range (PBT calls it with no arguments)."""

    def __init__(self, param: FloatRange | IntRange) -> None:
        self.param = param

    def __call__(self) -> float | int:
        return sample_range(self.param, random.Random())


def _mutations(tree: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, param in tree.items():
        if isinstance(param, dict):
            nested = _mutations(param)
            if nested:
                out[key] = nested
        elif isinstance(param, (FloatRange, IntRange)):
            out[key] = _ResampleRange(param)
        elif isinstance(param, Choice):
            out[key] = [thaw(o) for o in param.options]
        elif isinstance(param, Conditional):
            out[key] = {"name": list(param.branches)}
    return out


def pbt_mutations(space: Space | Mapping[str, Any]) -> dict[str, Any]:
    """Returns ``hyperparam_mutations`` for ``ray.tune.schedulers.PopulationBasedTraining``.

    In final config shape: a range maps to a callable that resamples it within bounds (PBT then
    either resamples or multiplies by a perturbation factor); a ``choice``/``grid`` maps to its
    options (PBT resamples or shifts to a neighbour); a conditional choice maps to
    ``{"name": [options]}`` (PBT switches the option; :func:`pbt_explore_fn` then resamples the
    new branch). Constants are not mutated. Always pass ``custom_explore_fn=pbt_explore_fn(space)``
    too: Ray does not clip perturbed values.
    """
    return _mutations(Space(space).params)


def _project_tree(tree: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(config)
    for key, param in tree.items():
        if key not in config:
            continue
        value = config[key]
        if isinstance(param, dict) and isinstance(value, Mapping):
            out[key] = _project_tree(param, value)
        elif isinstance(param, (FloatRange, IntRange)) and not isinstance(value, bool):
            clipped = min(max(value, param.low), param.high)
            out[key] = quantize(clipped, param) if param.q is not None else float(clipped)
        elif isinstance(param, Conditional) and isinstance(value, Mapping):
            option = value.get("name")
            if not isinstance(option, str) or option not in param.branches:
                continue
            branch = param.branches[option]
            rest = {k: v for k, v in value.items() if k != "name"}
            if set(rest) != set(branch):
                # The option changed: draw the whole new branch.
                rest = Space(branch).sample_one(random.Random())
            out[key] = {"name": option, **_project_tree(branch, rest)}
    return out


class _ProjectIntoSpace:
    """A picklable ``custom_explore_fn`` that moves a config back into its space."""

    def __init__(self, space: Space) -> None:
        self.space = space

    def __call__(self, config: dict[str, Any]) -> dict[str, Any]:
        return _project_tree(self.space.params, config)


def pbt_explore_fn(space: Space | Mapping[str, Any]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """Returns the ``custom_explore_fn`` for PBT that keeps explored configs inside ``space``.

    Ranges are clipped into ``[low, high]`` and snapped to their multiple of ``q`` (integers stay
    integers); a conditional whose option changed gets the new branch drawn afresh. Keys that are
    not in the space are left alone.
    """
    return _ProjectIntoSpace(Space(space))
