"""Compiling a space to Ray Tune: a searcher, the ``param_space`` and ``num_samples``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sweeplab.errors import SpecError
from sweeplab.space._primitives import PARAM_TYPES, Choice, thaw
from sweeplab.space._space import Space

if TYPE_CHECKING:
    from sweeplab.pareto import Constraint, Objective

__all__ = ["SEARCHERS", "TuneSearch", "build_tune_search"]

SEARCHERS = ("random", "grid", "optuna", "hyperopt")


@dataclass(frozen=True)
class TuneSearch:
    """What to hand to ``ray.tune.Tuner`` for one sweep.

    Use it as ``Tuner(trainable, param_space=ts.param_space,
    tune_config=TuneConfig(search_alg=ts.search_alg, num_samples=ts.num_samples, ...))`` and call
    :func:`decode_config` on the config each trial receives.

    Attributes:
        search_alg: The searcher (None means Tune's default ``BasicVariantGenerator``).
        param_space: The ``param_space`` for ``Tuner``; empty unless Tune's own variant
            generation resolves it (``"grid"``).
        num_samples: ``TuneConfig.num_samples``: the trial count, or for ``"grid"`` the number
            of repeats of the whole grid (``grid_size * num_samples`` trials in all).
    """

    search_alg: Any
    param_space: dict[str, Any] = field(default_factory=dict)
    num_samples: int = 1


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


def build_tune_search(
    space: Space | Mapping[str, Any],
    searcher: str,
    *,
    metric: str,
    mode: str,
    seed: int | None,
    num_trials: int,
    objectives: Sequence[Objective] = (),
    constraints: Sequence[Constraint] = (),
) -> TuneSearch:
    """Compiles ``space`` for ``searcher``.

    Args:
        space: The search space.
        searcher: ``"random"`` (sweeplab's seeded sampler, suggestions already in final shape),
            ``"grid"`` (every ``grid`` parameter exhausted by Tune's ``BasicVariantGenerator``,
            the rest drawn by sweeplab's sampler from Tune's seeded generator), ``"optuna"``
            (``OptunaSearcher()``: ``OptunaSearch`` with a seeded sampler over
            :func:`compile_to_optuna`) or
            ``"hyperopt"`` (``HyperOptSearch`` over :func:`compile_to_hyperopt`). Outside
            ``"grid"``, grid parameters are drawn like a ``choice``.
        metric: The metric to optimise.
        mode: ``"min"`` or ``"max"``.
        seed: Seed for the searcher; the same seed gives the same suggestions.
        num_trials: Trials to run; for ``"grid"`` the number of repeats of the grid.
        objectives: With several metrics, all of them (the first is ``metric`` and ``mode``):
            ``"optuna"`` then models them together, with ``constraints`` (each bounding an
            objective) marking the trials that break them infeasible. ``"random"`` and
            ``"grid"`` learn nothing, so they need neither; ``"hyperopt"`` takes one metric.
        constraints: See ``objectives``.

    Raises:
        SpecError: If ``searcher``, ``mode`` or ``num_trials`` is not allowed, or ``searcher``
            cannot take ``objectives``.
    """
    space = Space(space)
    if searcher not in SEARCHERS:
        raise SpecError(f"searcher must be one of {list(SEARCHERS)}, but got {searcher!r}.")
    if mode not in ("min", "max"):
        raise SpecError(f"mode must be 'min' or 'max', but got {mode!r}.")
    if isinstance(num_trials, bool) or not isinstance(num_trials, int) or num_trials < 1:
        raise SpecError(f"num_trials must be an integer >= 1, but got {num_trials!r}.")
    if len(objectives) > 1 and searcher == "hyperopt":
        raise SpecError(
            f"searcher 'hyperopt' takes one metric, but got {len(objectives)} objectives."
        )

    if searcher == "random":
        from sweeplab.space._tune_ray import RandomSpaceSearcher

        alg: Any = RandomSpaceSearcher(space, metric=metric, mode=mode, seed=seed)
        return TuneSearch(search_alg=alg, param_space={}, num_samples=num_trials)
    if searcher == "grid":
        from ray.tune.search import BasicVariantGenerator

        alg = BasicVariantGenerator(random_state=seed)
        return TuneSearch(
            search_alg=alg, param_space=_grid_param_space(space), num_samples=num_trials
        )
    if searcher == "optuna":
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
    from ray.tune.search.hyperopt import HyperOptSearch

    from sweeplab.space._hyperopt import compile_to_hyperopt

    alg = HyperOptSearch(
        space=compile_to_hyperopt(space), metric=metric, mode=mode, random_state_seed=seed
    )
    return TuneSearch(search_alg=alg, param_space={}, num_samples=num_trials)
