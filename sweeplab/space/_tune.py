"""Compiling a space to a Ray Tune search: a searcher, the ``param_space`` and ``num_samples``.

One compile function per searcher, each with the same keyword arguments (`SearchCompiler`).
Which names a sweep may use, and which function each name means, is the strategies registry's
to say (``sweeplab.strategies.SEARCHERS``), not this layer's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from sweeplab.errors import SpecError
from sweeplab.space._primitives import PARAM_TYPES, Choice, thaw
from sweeplab.space._space import Space

if TYPE_CHECKING:
    from sweeplab.pareto import Constraint, Objective

__all__ = [
    "SearchCompiler",
    "TuneSearch",
    "compile_grid_search",
    "compile_hyperopt_search",
    "compile_optuna_search",
    "compile_random_search",
]


@dataclass(frozen=True)
class TuneSearch:
    """What to hand to ``ray.tune.Tuner`` for one sweep.

    Use it as ``Tuner(trainable, param_space=ts.param_space,
    tune_config=TuneConfig(search_alg=ts.search_alg, num_samples=ts.num_samples, ...))`` and call
    :func:`decode_config` on the config each trial receives.

    Attributes:
        search_alg: The searcher (None means Tune's default ``BasicVariantGenerator``).
        param_space: The ``param_space`` for ``Tuner``; empty unless Tune's own variant
            generation resolves it (grid search).
        num_samples: ``TuneConfig.num_samples``: the trial count, or for grid search the number
            of repeats of the whole grid (``grid_size * num_samples`` trials in all).
    """

    search_alg: Any
    param_space: dict[str, Any] = field(default_factory=dict)
    num_samples: int = 1


class SearchCompiler(Protocol):
    """A searcher's compile function: ``space`` to the `TuneSearch` of one sweep.

    Args:
        space: The search space.
        metric: The metric to optimise.
        mode: ``"min"`` or ``"max"``.
        seed: Seed for the searcher; the same seed gives the same suggestions.
        num_trials: Trials to run; for grid search the number of repeats of the grid.
        objectives: With several metrics, all of them (the first is ``metric`` and ``mode``).
        constraints: With several metrics, each bounding an objective.

    Raises:
        SpecError: If ``mode`` or ``num_trials`` is not allowed, or the searcher cannot take
            ``objectives``.
    """

    def __call__(
        self,
        space: Space | Mapping[str, Any],
        *,
        metric: str,
        mode: str,
        seed: int | None,
        num_trials: int,
        objectives: Sequence[Objective] = (),
        constraints: Sequence[Constraint] = (),
    ) -> TuneSearch: ...


def compile_random_search(
    space: Space | Mapping[str, Any],
    *,
    metric: str,
    mode: str,
    seed: int | None,
    num_trials: int,
    objectives: Sequence[Objective] = (),
    constraints: Sequence[Constraint] = (),
) -> TuneSearch:
    """Random search: sweeplab's seeded sampler, its suggestions already in final shape.

    Grid parameters are drawn like a ``choice``. It learns nothing, so it needs neither
    ``objectives`` nor ``constraints``. See `SearchCompiler` for the arguments.
    """
    space = _checked_space(space, mode=mode, num_trials=num_trials)
    from sweeplab.space._tune_ray import RandomSpaceSearcher

    alg = RandomSpaceSearcher(space, metric=metric, mode=mode, seed=seed)
    return TuneSearch(search_alg=alg, param_space={}, num_samples=num_trials)


def compile_grid_search(
    space: Space | Mapping[str, Any],
    *,
    metric: str,
    mode: str,
    seed: int | None,
    num_trials: int,
    objectives: Sequence[Objective] = (),
    constraints: Sequence[Constraint] = (),
) -> TuneSearch:
    """Grid search: every ``grid`` parameter exhausted by Tune's ``BasicVariantGenerator``.

    The rest is drawn by sweeplab's sampler from Tune's seeded generator; ``num_trials`` is the
    number of repeats of the whole grid. It learns nothing, so it needs neither ``objectives``
    nor ``constraints``. See `SearchCompiler` for the arguments.
    """
    space = _checked_space(space, mode=mode, num_trials=num_trials)
    from ray.tune.search import BasicVariantGenerator

    alg = BasicVariantGenerator(random_state=seed)
    return TuneSearch(search_alg=alg, param_space=_grid_param_space(space), num_samples=num_trials)


def compile_optuna_search(
    space: Space | Mapping[str, Any],
    *,
    metric: str,
    mode: str,
    seed: int | None,
    num_trials: int,
    objectives: Sequence[Objective] = (),
    constraints: Sequence[Constraint] = (),
) -> TuneSearch:
    """``OptunaSearcher()``: ``OptunaSearch`` with a seeded sampler over :func:`compile_to_optuna`.

    Grid parameters are drawn like a ``choice``. With several ``objectives`` it models them
    together, and ``constraints`` mark the trials that break them infeasible. See
    `SearchCompiler` for the arguments.
    """
    space = _checked_space(space, mode=mode, num_trials=num_trials)
    from sweeplab.space._optuna_searcher import OptunaSearcher

    alg = OptunaSearcher().build(
        space,
        metric=metric,
        mode=mode,
        seed=seed,
        num_trials=num_trials,
        objectives=objectives,
        constraints=constraints,
    )
    return TuneSearch(search_alg=alg, param_space={}, num_samples=num_trials)


def compile_hyperopt_search(
    space: Space | Mapping[str, Any],
    *,
    metric: str,
    mode: str,
    seed: int | None,
    num_trials: int,
    objectives: Sequence[Objective] = (),
    constraints: Sequence[Constraint] = (),
) -> TuneSearch:
    """``HyperOptSearch`` over :func:`compile_to_hyperopt`; it takes one metric.

    Grid parameters are drawn like a ``choice``. See `SearchCompiler` for the arguments.
    """
    space = _checked_space(space, mode=mode, num_trials=num_trials)
    if len(objectives) > 1:
        raise SpecError(
            f"searcher 'hyperopt' takes one metric, but got {len(objectives)} objectives."
        )
    from ray.tune.search.hyperopt import HyperOptSearch

    from sweeplab.space._hyperopt import compile_to_hyperopt

    alg = HyperOptSearch(
        space=compile_to_hyperopt(space), metric=metric, mode=mode, random_state_seed=seed
    )
    return TuneSearch(search_alg=alg, param_space={}, num_samples=num_trials)


def _checked_space(space: Space | Mapping[str, Any], *, mode: str, num_trials: int) -> Space:
    """``space`` as a `Space`, once ``mode`` and ``num_trials`` are known to be allowed."""
    space = Space(space)
    if mode not in ("min", "max"):
        raise SpecError(f"mode must be 'min' or 'max', but got {mode!r}.")
    if isinstance(num_trials, bool) or not isinstance(num_trials, int) or num_trials < 1:
        raise SpecError(f"num_trials must be an integer >= 1, but got {num_trials!r}.")
    return space


def _grid_param_space(space: Space) -> dict[str, Any]:
    from ray import tune

    from sweeplab.space._tune_ray import SpaceDomain

    def compile_tree(tree: Mapping[str, Any], top: bool) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, param in tree.items():
            if isinstance(param, Choice) and param.grid:
                out[key] = tune.grid_search([thaw(o) for o in param.options])
            elif isinstance(param, dict) and _has_grid(param):
                out[key] = compile_tree(param, False)
            elif not isinstance(param, (dict, *PARAM_TYPES)):
                out[key] = thaw(param)
            elif top:
                out[key] = SpaceDomain(space, key)
            else:
                out[key] = SpaceDomain(Space({key: param}), key)
        return out

    return compile_tree(space.params, True)


def _has_grid(tree: Mapping[str, Any]) -> bool:
    return any(
        (isinstance(v, Choice) and v.grid) or (isinstance(v, dict) and _has_grid(v))
        for v in tree.values()
    )
