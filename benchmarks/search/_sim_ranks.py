"""Where each strategy of the simulated search benchmark stands against the others: its rank by
median final best on each problem, averaged over the problems (all, LCBench, synthetic)."""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from typing import Any

from benchmarks.search._sim_strategies import BEST_GRACE

__all__ = ["mean_ranks", "rank_values"]


def rank_values(values: Mapping[str, float], *, mode: str) -> dict[str, float]:
    """The rank of each value (1 = best in `mode`, ``"min"`` or ``"max"``); ties share their
    mean rank."""
    ordered = sorted(values, key=lambda name: values[name] if mode == "min" else -values[name])
    ranks: dict[str, float] = {}
    start = 0
    while start < len(ordered):
        end = start
        while end + 1 < len(ordered) and values[ordered[end + 1]] == values[ordered[start]]:
            end += 1
        for name in ordered[start : end + 1]:
            ranks[name] = (start + end) / 2 + 1
        start = end + 1
    return ranks


def mean_ranks(problems: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Each strategy's mean rank over the analysed `problems` (their ``summary``, ``mode``).

    On each problem the strategies that have a median final best are ranked by it (the
    derived best-grace row is left out: it is one of the graces). A strategy's mean is over the
    problems it was ranked on; ``first`` lists those where it ranked 1.
    """
    by_problem: dict[str, dict[str, float]] = {}
    seeds: dict[str, int] = {}
    for name, result in problems.items():
        finals = {
            strategy: summary["final_best_median"]
            for strategy, summary in result["summary"].items()
            if strategy != BEST_GRACE and summary["final_best_median"] is not None
        }
        by_problem[name] = rank_values(finals, mode=result["mode"])
        for strategy, summary in result["summary"].items():
            seeds[strategy] = max(seeds.get(strategy, 0), summary["seeds"])

    def mean(strategy: str, kind: str | None) -> float | None:
        ranks = [
            ranks[strategy]
            for problem, ranks in by_problem.items()
            if strategy in ranks and (kind is None or _kind(problem) == kind)
        ]
        return statistics.fmean(ranks) if ranks else None

    strategies = sorted({s for ranks in by_problem.values() for s in ranks})
    table = {
        strategy: {
            "mean_rank": mean(strategy, None),
            "mean_rank_lcbench": mean(strategy, "lcbench"),
            "mean_rank_synthetic": mean(strategy, "synthetic"),
            "first": sorted(p for p, ranks in by_problem.items() if ranks.get(strategy) == 1),
            "problems": sum(1 for ranks in by_problem.values() if strategy in ranks),
            "seeds": seeds[strategy],
        }
        for strategy in strategies
    }
    return {
        "rule": "rank of the median final best on each problem (1 = best, ties share), "
        "averaged over the problems",
        "by_strategy": dict(sorted(table.items(), key=lambda item: item[1]["mean_rank"])),
        "by_problem": by_problem,
    }


def _kind(problem: str) -> str:
    return "lcbench" if problem.startswith("lcbench-") else "synthetic"
