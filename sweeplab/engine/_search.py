"""The search a sweep's Tuner runs: its strategy's search, warm-started where planned."""

from __future__ import annotations

from sweeplab.engine._warm import WarmStartPlan
from sweeplab.space import OptunaSearcher, TuneSearch
from sweeplab.spec import Sweep
from sweeplab.strategies import build_search as build_strategy_search

__all__ = ["build_search"]


def build_search(sweep: Sweep, warm_start: WarmStartPlan | None = None) -> TuneSearch:
    """The `TuneSearch` (search algorithm, param space, num_samples) of `sweep`.

    With a warm-start plan (see `plan_warm_start`), its configs are suggested first, then the
    strategy's search (see `sweeplab.strategies.build_search`) takes over.
    """
    search = build_strategy_search(sweep)
    if warm_start is None or not warm_start.configs:
        return search
    from sweeplab.engine._warm_searcher import WarmStartSearcher

    return TuneSearch(
        search_alg=WarmStartSearcher(
            search.search_alg,
            [warm.config for warm in warm_start.configs],
            metric=sweep.metric,
            mode=sweep.mode,
            # Only sweeplab's own compilations have a known encoding to add history in.
            space=sweep.space if isinstance(sweep.searcher, (str, OptunaSearcher)) else None,
            max_iterations=sweep.max_iterations,
            objectives=sweep.objectives,
        ),
        param_space=search.param_space,
        num_samples=search.num_samples,
    )
