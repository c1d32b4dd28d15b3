"""Population Based Training: mutations and the explore function derived from a space.

Ray's PBT ``_explore`` perturbs a value given by a callable or Tune domain by multiplying it with
a perturbation factor and never clips the result, so a mutation alone cannot keep a range in
bounds. :func:`pbt_explore_fn` projects every explored config back into the space.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Collection, Mapping
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
from sweeplab.space._walk import SpaceWalk, split_option

__all__ = ["pbt_explore_fn", "pbt_mutable_paths", "pbt_mutations"]


class _ResampleRange:
    """A picklable resampler for one range (PBT calls it with no arguments)."""

    def __init__(self, param: FloatRange | IntRange) -> None:
        self.param = param

    def __call__(self, rng: random.Random | None = None) -> float | int:
        """A fresh draw of the range; from `rng` where given (a seeded sweep's PBT in the loop)."""
        return sample_range(self.param, rng if rng is not None else random.Random())


class _Mutations(SpaceWalk):
    """The mutation of each node (None for a constant, or one not in `only`); groups without
    one are left out."""

    def __init__(self, only: Collection[str] | None = None) -> None:
        self.only = None if only is None else frozenset(only)

    def group(self, tree: Mapping[str, Any], path: str, value: Any) -> dict[str, Any]:
        children = super().group(tree, path, value)
        return {key: m for key, m in children.items() if m is not None and m != {}}

    def _kept(self, path: str) -> bool:
        return self.only is None or path in self.only

    def range(self, param: FloatRange | IntRange, path: str, value: Any) -> Any:
        return _ResampleRange(param) if self._kept(path) else None

    def choice(self, param: Choice, path: str, value: Any) -> Any:
        return [thaw(o) for o in param.options] if self._kept(path) else None

    def conditional(self, param: Conditional, path: str, value: Any) -> Any:
        return {"name": list(param.branches)} if self._kept(path) else None


class _MutablePaths(SpaceWalk):
    """The dotted path of every range, choice and conditional choice (not inside a branch)."""

    def __init__(self) -> None:
        self.paths: list[str] = []

    def range(self, param: FloatRange | IntRange, path: str, value: Any) -> None:
        self.paths.append(path)

    def choice(self, param: Choice, path: str, value: Any) -> None:
        self.paths.append(path)

    def conditional(self, param: Conditional, path: str, value: Any) -> None:
        self.paths.append(path)


def pbt_mutable_paths(space: Space | Mapping[str, Any]) -> list[str]:
    """What PBT can mutate in `space`, by dotted path: each range and choice, and each
    conditional choice by its own path (a new option draws its branch afresh)."""
    walk = _MutablePaths()
    walk.walk(Space(space).params)
    return walk.paths


def pbt_mutations(
    space: Space | Mapping[str, Any], *, only: Collection[str] | None = None
) -> dict[str, Any]:
    """Returns ``hyperparam_mutations`` for ``ray.tune.schedulers.PopulationBasedTraining``.

    In final config shape: a range maps to a callable that resamples it within bounds (PBT then
    either resamples or multiplies by a perturbation factor); a ``choice``/``grid`` maps to its
    options (PBT resamples or shifts to a neighbour); a conditional choice maps to
    ``{"name": [options]}`` (PBT switches the option; :func:`pbt_explore_fn` then resamples the
    new branch). Constants are not mutated, nor, where `only` is given, any parameter whose
    path (see :func:`pbt_mutable_paths`) it does not hold. Always pass
    ``custom_explore_fn=pbt_explore_fn(space)`` too: Ray does not clip perturbed values.
    """
    return _Mutations(only).walk(Space(space).params) or {}


class _Project(SpaceWalk):
    """Moves ``value`` into each node; what cannot be read as the node's value is left alone."""

    def __init__(self, rng: random.Random | None = None) -> None:
        self.rng = rng if rng is not None else random.Random()

    def group(self, tree: Mapping[str, Any], path: str, value: Any) -> Any:
        if not isinstance(value, Mapping):
            return value
        out = dict(value)
        for key, node in tree.items():
            if key in value:
                out[key] = self.walk(node, self.join(path, key), value[key])
        return out

    def range(self, param: FloatRange | IntRange, path: str, value: Any) -> Any:
        if isinstance(value, bool):
            return value
        clipped = min(max(value, param.low), param.high)
        return quantize(clipped, param) if param.q is not None else float(clipped)

    def choice(self, param: Choice, path: str, value: Any) -> Any:
        return value

    def conditional(self, param: Conditional, path: str, value: Any) -> Any:
        option, rest = split_option(value)
        if not isinstance(value, Mapping) or not isinstance(option, str):
            return value
        if option not in param.branches:
            return value
        branch = param.branches[option]
        if set(rest) != set(branch):
            # The option changed: draw the whole new branch.
            rest = Space(branch).sample_one(self.rng)
        return self.chosen(param, option, path, rest)

    def constant(self, node: Any, path: str, value: Any) -> Any:
        return value


class _ProjectIntoSpace:
    """A picklable ``custom_explore_fn`` that moves a config back into its space."""

    def __init__(self, space: Space) -> None:
        self.space = space

    def __call__(self, config: dict[str, Any], rng: random.Random | None = None) -> dict[str, Any]:
        """`config` moved into the space; a new conditional branch is drawn from `rng` where
        given (Tune's PBT calls it with the config alone)."""
        return _Project(rng).walk(self.space.params, "", config)


def pbt_explore_fn(space: Space | Mapping[str, Any]) -> Callable[..., dict[str, Any]]:
    """Returns the ``custom_explore_fn`` for PBT that keeps explored configs inside ``space``.

    Ranges are clipped into ``[low, high]`` and snapped to their multiple of ``q`` (integers stay
    integers); a conditional whose option changed gets the new branch drawn afresh. Keys that are
    not in the space are left alone.
    """
    return _ProjectIntoSpace(Space(space))
