"""Issue 42's checks of the default strategy in the simulated search benchmark: quick to random
+ FIFO's result on every LCBench task, first in the field's mean rank, and a lower final regret
than random + ASHA and the best Syne Tune baseline."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["DEFAULT_LIMITS", "default_checks"]

# The numbers, on the LCBench dev tasks.
DEFAULT_LIMITS = {
    "fifo_fraction": 0.5,  # random + FIFO's final best within half the budget, every task
    "adaptive_ratio": 1.1,  # and never more than 1.1x random + adaptive-asha's budget to it
    "wilcoxon_p": 0.05,
}
ADAPTIVE = "random+adaptive-asha"
ASHA = "random+asha"
SYNE_TUNE = "synetune-"


def _fraction(value: float | None) -> float:
    """A median budget fraction as the JSON holds it: never reached (None, or NaN before any
    seed ran) is infinite."""
    return math.inf if value is None or math.isnan(value) else value


def default_checks(report: Mapping[str, Any], candidate: str) -> dict[str, Any]:
    """The checks of `candidate` on the analysed `report` (its ``problems``, ``ranks`` and
    ``field``), each with its figures and ``passed`` (None where what it needs was not run)."""
    lcbench = {
        name: result["summary"]
        for name, result in report["problems"].items()
        if name.startswith("lcbench-") and candidate in result.get("summary", {})
    }
    fractions = {
        name: _fraction(summary[candidate]["to_fifo_target"]["median"])
        for name, summary in lcbench.items()
    }
    slow = sorted(name for name, f in fractions.items() if f > DEFAULT_LIMITS["fifo_fraction"])
    quick = {
        "rule": f"on every LCBench task, reaches random+fifo's final best within "
        f"{DEFAULT_LIMITS['fifo_fraction']} of the budget (median over seeds)",
        "passed": (not slow) if fractions else None,
        "tasks": len(fractions),
        "failing": slow,
        "range": [min(fractions.values()), max(fractions.values())] if fractions else None,
    }

    ratios = {
        name: fractions[name] / _fraction(summary[ADAPTIVE]["to_fifo_target"]["median"])
        for name, summary in lcbench.items()
        if ADAPTIVE in summary
    }
    worse = sorted(n for n, r in ratios.items() if not r <= DEFAULT_LIMITS["adaptive_ratio"])
    against_adaptive = {
        "rule": f"on no LCBench task needs more than {DEFAULT_LIMITS['adaptive_ratio']}x "
        f"{ADAPTIVE}'s budget to reach random+fifo's final best",
        "passed": (not worse) if ratios else None,
        "tasks": len(ratios),
        "failing": worse,
        "range": [min(ratios.values()), max(ratios.values())] if ratios else None,
    }

    ranked = {
        name: row["mean_rank_lcbench"]
        for name, row in report["ranks"]["by_strategy"].items()
        if row["mean_rank_lcbench"] is not None
    }
    best_other = min((r for n, r in ranked.items() if n != candidate), default=None)
    first = {
        "rule": "first in mean rank of the median final best over the LCBench tasks, among "
        "every strategy run",
        "passed": None
        if candidate not in ranked or best_other is None
        else (ranked[candidate] < best_other),
        "candidate": ranked.get(candidate),
        "next_best": best_other,
        "strategies": len(ranked),
    }

    syne_tune = {n: r for n, r in ranked.items() if n.startswith(SYNE_TUNE)}
    best_syne_tune = min(syne_tune, key=syne_tune.__getitem__) if syne_tune else None
    field = report["field"]["by_strategy"]
    regret: dict[str, Any] = {
        "rule": f"final regret lower than {ASHA}'s and than the best Syne Tune baseline's (by "
        f"mean rank), paired by LCBench task and seed, one-sided Wilcoxon p < "
        f"{DEFAULT_LIMITS['wilcoxon_p']} each, decided where both ran every seed",
        "against": {name: field[name] for name in (ASHA, best_syne_tune) if name and name in field},
    }
    # Search quality is decided on every seed of the run (20 by default): a baseline capped to
    # fewer (the slow Syne Tune ones) is shown, not decided on.
    seeds = len(report["config"]["seeds"])
    capped = sorted(
        name for name in regret["against"] if report["ranks"]["by_strategy"][name]["seeds"] < seeds
    )
    regret["undecided"] = capped
    found = [row["p"] for row in regret["against"].values()]
    regret["passed"] = (
        all(p is not None and p < DEFAULT_LIMITS["wilcoxon_p"] for p in found)
        if len(found) == 2 and not capped
        else None
    )
    return {
        "candidate": candidate,
        "quick_to_fifo": quick,
        "against_adaptive_asha": against_adaptive,
        "first_in_rank": first,
        "regret": regret,
    }
