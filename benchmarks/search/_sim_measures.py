"""What the simulated search benchmark measures: anytime curves, budget fractions, regret, and
the issue's checks (issue 22, "Numbers to reach").

Scores are in the problem's own units and direction (``mode``); the helpers of ``_curves``
(lower is better) see them signed.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from benchmarks.search._curves import anytime, fraction_to_reach, summarize
from benchmarks.search._sim_strategies import ASHA_GRACES, BASELINE, BEST_GRACE, DEFAULT_ASHA

__all__ = [
    "CHECK_LIMITS",
    "against_the_field",
    "analyse_problem",
    "anytime_steps",
    "budget_fraction",
    "checks",
    "grace_strategy",
]

# The numbers: (i) fraction of the budget, tasks of 10; (ii) ratio; (iii) p-value.
CHECK_LIMITS = {
    "lcbench_fraction": 0.5,
    "lcbench_tasks": 7,
    "lcbench_of": 10,
    "never_worse_ratio": 1.25,
    "wilcoxon_p": 0.05,
}


def _signed(value: float, mode: str) -> float:
    return value if mode == "min" else -value


def anytime_steps(
    reports: Sequence[tuple[float, float]], *, mode: str, budget: int
) -> list[tuple[int, float, float]]:
    """``(iterations spent, simulated seconds, best score so far)`` at each improvement.

    Args:
        reports: ``(simulated seconds, score)`` of every report, in arrival order; one report
            is one iteration spent.
        mode: ``"min"`` or ``"max"``: the direction of the score.
        budget: Only the first `budget` reports count.
    """
    steps = anytime([(seconds, _signed(score, mode)) for seconds, score in reports], budget)
    return [(spent, seconds, _signed(best, mode)) for spent, seconds, best in steps]


def budget_fraction(
    steps: Sequence[Sequence[float]], target: float | None, *, budget: int, mode: str
) -> float | None:
    """The share of `budget` spent when the anytime curve first reaches `target` (as good or
    better); None if it never does within `budget`, or there is no target."""
    if target is None:
        return None
    signed = [(step[0], step[1], _signed(step[2], mode)) for step in steps]
    return fraction_to_reach(signed, _signed(target, mode), budget)


def grace_strategy(grace: int) -> str:
    """The strategy that runs random search + ASHA at `grace`."""
    return DEFAULT_ASHA.name if grace == 1 else f"random+asha-g{grace}"


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def _best_of(values: Sequence[float], mode: str) -> float:
    return min(values) if mode == "min" else max(values)


def analyse_problem(result: dict[str, Any]) -> None:
    """Targets, fractions, regrets and each strategy's summary over seeds, in place.

    `result` holds ``budget``, ``mode``, ``optimum`` and ``runs`` (strategy -> seed -> run, each
    run with ``steps`` and ``final_best``). Adds ``targets`` (random + FIFO's final best per
    seed), ``asha_median_final``, ``regret_reference``, ``summary`` and ``best_grace``.
    """
    budget, mode, optimum = result["budget"], result["mode"], result["optimum"]
    runs: dict[str, dict[str, dict[str, Any]]] = result["runs"]
    fifo_targets = {
        seed: run["final_best"]
        for seed, run in runs.get(BASELINE.name, {}).items()
        if run.get("final_best") is not None
    }
    asha_finals = [
        run["final_best"]
        for run in runs.get(DEFAULT_ASHA.name, {}).values()
        if run.get("final_best") is not None
    ]
    asha_target = _median(asha_finals)
    # Regret: to the optimum where it is known, else to the best any strategy reached that seed.
    seen: dict[str, list[float]] = {}
    for by_seed in runs.values():
        for seed, run in by_seed.items():
            if run.get("final_best") is not None:
                seen.setdefault(seed, []).append(run["final_best"])
    reference = {
        seed: optimum if optimum is not None else _best_of(values, mode)
        for seed, values in seen.items()
    }
    result["targets"] = fifo_targets
    result["asha_median_final"] = asha_target
    result["regret_reference"] = "optimum" if optimum is not None else "best seen that seed"
    summaries: dict[str, Any] = {}
    for name, by_seed in runs.items():
        to_fifo, to_asha, finals, regrets = [], [], [], []
        for seed, run in by_seed.items():
            if run.get("final_best") is None:
                continue
            run["fraction_fifo"] = budget_fraction(
                run["steps"], fifo_targets.get(seed), budget=budget, mode=mode
            )
            run["fraction_asha_median"] = budget_fraction(
                run["steps"], asha_target, budget=budget, mode=mode
            )
            run["regret"] = abs(_signed(run["final_best"], mode) - _signed(reference[seed], mode))
            if seed in fifo_targets:
                to_fifo.append(run["fraction_fifo"])
            if asha_target is not None:
                to_asha.append(run["fraction_asha_median"])
            finals.append(run["final_best"])
            regrets.append(run["regret"])
        seconds = [run["run_s"] for run in by_seed.values() if "run_s" in run]
        summaries[name] = {
            "to_fifo_target": summarize(to_fifo),
            "to_asha_median_final": summarize(to_asha),
            "final_best_median": _median(finals),
            "regret_median": _median(regrets),
            "trials_median": _median([r["trials"] for r in by_seed.values() if "trials" in r]),
            "budget_used_median": _median(
                [r["budget_used"] / budget for r in by_seed.values() if "budget_used" in r]
            ),
            "errors": sum(1 for run in by_seed.values() if run.get("error")),
            "seeds": len(by_seed),
            "run_s_mean": statistics.fmean(seconds) if seconds else None,
        }
    result["summary"] = summaries
    result["best_grace"] = _best_grace(summaries, mode)
    if result["best_grace"] is not None:
        winner = result["best_grace"]["strategy"]
        summaries[BEST_GRACE] = {**summaries[winner], "grace": result["best_grace"]["grace"]}


def _best_grace(summaries: Mapping[str, Any], mode: str) -> dict[str, Any] | None:
    """The grace of `ASHA_GRACES` whose random + ASHA needed the least budget to reach random +
    FIFO's target (median over seeds); ties go to the better median final best."""
    names = {grace: grace_strategy(grace) for grace in ASHA_GRACES}
    if not all(name in summaries for name in names.values()):
        return None

    def key(grace: int) -> tuple[float, float]:
        summary = summaries[names[grace]]
        final = summary["final_best_median"]
        return (
            summary["to_fifo_target"]["median"],
            math.inf if final is None else _signed(final, mode),
        )

    grace = min(ASHA_GRACES, key=key)
    return {
        "grace": grace,
        "strategy": names[grace],
        "rule": "least median budget fraction to reach random+fifo's final best of the same "
        "seed; ties: better median final best (chosen on the benchmark's own seeds)",
        "by_grace": {
            str(g): {
                "to_fifo_target_median": summaries[names[g]]["to_fifo_target"]["median"],
                "final_best_median": summaries[names[g]]["final_best_median"],
            }
            for g in ASHA_GRACES
        },
    }


def _never_is_inf(fraction: float | None) -> float:
    """A budget fraction as `checks` compares it: "never" (None once read back from the JSON)
    is infinite."""
    return math.inf if fraction is None else fraction


def checks(problems: Mapping[str, dict[str, Any]], candidate: str) -> dict[str, Any]:
    """The issue's four checks of `candidate` against random + ASHA, each a boolean with its
    figures (None where the problems it needs were not run)."""
    asha = DEFAULT_ASHA.name
    limits = CHECK_LIMITS
    ran = {
        name: result
        for name, result in problems.items()
        if candidate in result.get("summary", {}) and asha in result.get("summary", {})
    }

    lcbench: dict[str, float] = {
        name: _never_is_inf(result["summary"][candidate]["to_asha_median_final"]["median"])
        for name, result in ran.items()
        if name.startswith("lcbench-")
    }
    within = sorted(
        name for name, fraction in lcbench.items() if fraction <= limits["lcbench_fraction"]
    )
    needed = math.ceil(limits["lcbench_tasks"] * len(lcbench) / limits["lcbench_of"])
    check_i = {
        "rule": f"on LCBench dev tasks, reaches random+asha's median final within <= "
        f"{limits['lcbench_fraction']} of the budget on >= {limits['lcbench_tasks']} of "
        f"{limits['lcbench_of']} tasks",
        "passed": (len(within) >= needed) if lcbench else None,
        "tasks_within": len(within),
        "tasks": len(lcbench),
        "complete": len(lcbench) == limits["lcbench_of"],
        "median_fraction_by_task": lcbench,
    }

    ratios: dict[str, dict[str, float]] = {}
    for name, result in ran.items():
        mine = _never_is_inf(result["summary"][candidate]["to_fifo_target"]["median"])
        theirs = _never_is_inf(result["summary"][asha]["to_fifo_target"]["median"])
        ratios[name] = {
            "candidate": mine,
            "random+asha": theirs,
            "ok": mine <= limits["never_worse_ratio"] * theirs,
        }
    failing = sorted(name for name, row in ratios.items() if not row["ok"])
    check_ii = {
        "rule": f"on no problem needs more than {limits['never_worse_ratio']}x random+asha's "
        "median budget to reach random+fifo's final best",
        "passed": (not failing) if ratios else None,
        "failing": failing,
        "by_problem": ratios,
    }

    check_iii = _wilcoxon_check(ran, candidate)

    mislead = ran.get("mislead")
    check_iv: dict[str, Any] = {
        "rule": "on `mislead`, needs at most random+asha's median budget to reach random+fifo's "
        "final best",
        "passed": None,
    }
    if mislead is not None:
        mine = _never_is_inf(mislead["summary"][candidate]["to_fifo_target"]["median"])
        theirs = _never_is_inf(mislead["summary"][asha]["to_fifo_target"]["median"])
        check_iv.update(passed=mine <= theirs, candidate=mine, **{"random+asha": theirs})
        if math.isinf(mine) and math.isinf(theirs):
            check_iv["note"] = "neither reaches the target on most seeds: passes as a tie"
    return {
        "candidate": candidate,
        "i_lcbench_half_budget": check_i,
        "ii_never_much_worse": check_ii,
        "iii_regret_wilcoxon": check_iii,
        "iv_mislead": check_iv,
    }


def _wilcoxon_check(ran: Mapping[str, dict[str, Any]], candidate: str) -> dict[str, Any]:
    """One-sided Wilcoxon signed-rank test: the candidate's final regret is lower than random +
    ASHA's, paired by problem and seed. Each pair's difference is in its problem's own units
    (LCBench: accuracy points), so the same test over the LCBench tasks alone is given too."""
    check: dict[str, Any] = {
        "rule": "final regret lower than random+asha's, paired over problems x seeds, one-sided "
        f"Wilcoxon p < {CHECK_LIMITS['wilcoxon_p']}",
        **_wilcoxon(ran, candidate),
    }
    lcbench = {name: result for name, result in ran.items() if name.startswith("lcbench-")}
    if lcbench and len(lcbench) < len(ran):
        check["lcbench_only"] = _wilcoxon(lcbench, candidate)
    return check


def against_the_field(problems: Mapping[str, dict[str, Any]], candidate: str) -> dict[str, Any]:
    """The candidate's final regret against each other strategy's on the LCBench tasks, paired
    by task and seed (one-sided Wilcoxon: lower), wherever both ran; the grace search's members
    are left out (the best grace is among them)."""
    lcbench = {
        name: result
        for name, result in problems.items()
        if name.startswith("lcbench-") and candidate in result.get("runs", {})
    }
    others = sorted(
        {
            strategy
            for result in lcbench.values()
            for strategy in result["runs"]
            if strategy != candidate and not strategy.startswith("random+asha-g")
        }
    )
    return {
        "rule": f"{candidate}'s final regret lower than each strategy's on the LCBench tasks, "
        "paired by task and seed, one-sided Wilcoxon",
        "by_strategy": {other: _wilcoxon(lcbench, candidate, other) for other in others},
    }


def _wilcoxon(
    ran: Mapping[str, dict[str, Any]], candidate: str, other_name: str = DEFAULT_ASHA.name
) -> dict[str, Any]:
    from scipy.stats import wilcoxon

    mine, theirs = [], []
    for result in ran.values():
        if other_name not in result["runs"]:
            continue
        for seed, run in result["runs"][candidate].items():
            other = result["runs"][other_name].get(seed, {})
            if run.get("regret") is not None and other.get("regret") is not None:
                mine.append(run["regret"])
                theirs.append(other["regret"])
    found: dict[str, Any] = {
        "passed": None,
        "pairs": len(mine),
        "lower": sum(1 for a, b in zip(mine, theirs, strict=True) if a < b),
        "higher": sum(1 for a, b in zip(mine, theirs, strict=True) if a > b),
        "p": None,
    }
    if not mine:
        return found
    if all(a == b for a, b in zip(mine, theirs, strict=True)):
        found.update(passed=False, note="every pair ties: no evidence either way")
        return found
    p = float(wilcoxon(mine, theirs, alternative="less").pvalue)
    found.update(p=p, passed=p < CHECK_LIMITS["wilcoxon_p"])
    return found
