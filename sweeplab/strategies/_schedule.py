"""The schedule of each named scheduler, computed without starting anything: its rungs, its
budget in iterations and a one-line summary (what ``sweeplab preview`` shows)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

__all__ = [
    "ASHA_REDUCTION_FACTOR",
    "HYPERBAND_REDUCTION_FACTOR",
    "PBT_QUANTILE_FRACTION",
    "PBT_RESAMPLE_PROBABILITY",
    "PlanInputs",
    "Rung",
    "TrialPlan",
    "adaptive_asha_plan",
    "asha_plan",
    "fifo_plan",
    "hyperband_brackets",
    "hyperband_plan",
    "median_grace",
    "median_plan",
    "pbt_interval",
    "pbt_plan",
]

ASHA_REDUCTION_FACTOR = 3
HYPERBAND_REDUCTION_FACTOR = 3
# PBT's bottom and top quantiles (the bottom's trials exploit the top's), and the chance that
# an exploit draws a mutated value afresh instead of perturbing the donor's.
PBT_QUANTILE_FRACTION = 0.25
PBT_RESAMPLE_PROBABILITY = 0.25


@dataclasses.dataclass(frozen=True)
class Rung:
    """One step of a successive-halving schedule: trials reaching `iteration`."""

    bracket: int
    iteration: int
    trials: int


# The rungs of a schedule, its total budget in iterations, and a one-line summary.
TrialPlan = tuple[list[Rung], int, str]


@dataclasses.dataclass(frozen=True, kw_only=True)
class PlanInputs:
    """What a schedule's preview is computed from.

    Attributes:
        trials: Trials the sweep creates (for a grid, its repeats times the grid's size).
        max_iterations: Budget of one trial in reports.
        concurrency: Trials at once (from the resource plan), or None where unknown; it only
            adds to the summary.
        waiting_holds_nothing: Whether a trial that waits holds no resources (warm slots,
            one-worker trials), so that Tune can create every trial up front; None where
            unknown. Only False adds the caveat of a pausing scheduler.
        settings: The scheduler's settings object (a `sweeplab.PBT`), or None for its
            defaults.
    """

    trials: int
    max_iterations: int
    concurrency: int | None = None
    waiting_holds_nothing: bool | None = None
    settings: Any = None


def asha_plan(inputs: PlanInputs) -> TrialPlan:
    rungs = _asha_rungs(inputs.trials, inputs.max_iterations)
    summary = (
        f"ASHA: reduction factor {ASHA_REDUCTION_FACTOR}, grace period 1, "
        f"max {inputs.max_iterations} iterations"
    )
    return rungs, _budget(rungs), summary


def adaptive_asha_plan(inputs: PlanInputs) -> TrialPlan:
    """ASHA's plan with its first rung trusted; until then, trials pass it (see `AdaptiveASHA`).

    The rungs and the budget shown are ASHA's once the first rung is trusted; a first rung
    that is never trusted costs up to the budget of ASHA with grace period 3.
    """
    rungs = _asha_rungs(inputs.trials, inputs.max_iterations)
    eta = ASHA_REDUCTION_FACTOR
    summary = (
        f"adaptive ASHA: reduction factor {eta}, rung 1 on probation (it stops trials once its "
        f"cut keeps the best trials of a higher rung; until then grace period {eta}), "
        f"max {inputs.max_iterations} iterations"
    )
    return rungs, _budget(rungs), summary


def _asha_rungs(n: int, max_t: int) -> list[Rung]:
    eta, iteration, level = ASHA_REDUCTION_FACTOR, 1, 0
    rungs: list[Rung] = []
    while iteration < max_t:
        rungs.append(Rung(0, iteration, max(1, math.ceil(n / eta**level))))
        iteration *= eta
        level += 1
    rungs.append(Rung(0, max_t, max(1, math.ceil(n / eta**level))))
    return rungs


def hyperband_plan(inputs: PlanInputs) -> TrialPlan:
    n, max_t = inputs.trials, inputs.max_iterations
    brackets = hyperband_brackets(n, max_t, HYPERBAND_REDUCTION_FACTOR)
    rungs = [
        Rung(index, iteration, trials)
        for index, bracket in enumerate(brackets)
        for iteration, trials in bracket
    ]
    stopped = n - sum(bracket[-1][1] for bracket in brackets)
    sizes = "/".join(str(bracket[0][1]) for bracket in brackets)
    summary = (
        f"HyperBand: {len(brackets)} bracket(s), {sizes} trials, reduction factor "
        f"{HYPERBAND_REDUCTION_FACTOR}, max {max_t}; stops {stopped} trial(s) early"
    ) + _compares_only_running(inputs)
    return rungs, _budget(rungs), summary


def pbt_plan(inputs: PlanInputs) -> TrialPlan:
    n, max_t, concurrency = inputs.trials, inputs.max_iterations, inputs.concurrency
    caveat = _compares_only_running(inputs)
    on = f", {concurrency} at a time" if concurrency is not None and not caveat else ""
    from sweeplab.strategies._pbt_settings import PBT  # which builds on this module

    settings = inputs.settings or PBT()
    mutated = f", mutating {', '.join(settings.mutate)}" if settings.mutate else ""
    summary = (
        f"PBT: population {n}{on}, synchronous rounds every {settings.interval_for(max_t)} "
        f"iteration(s), bottom/top quantile {settings.quantile_fraction:.0%}{mutated}, "
        f"{max_t} iterations each"
    ) + caveat
    return [], n * max_t, summary


def median_plan(inputs: PlanInputs) -> TrialPlan:
    n, max_t = inputs.trials, inputs.max_iterations
    summary = (
        f"Median stopping: after {median_grace(max_t)} iteration(s) a trial below the "
        f"median of the others stops; at most {max_t} iterations each"
    )
    return [], n * max_t, summary


def fifo_plan(inputs: PlanInputs) -> TrialPlan:
    max_t = inputs.max_iterations
    return [], inputs.trials * max_t, f"FIFO: every trial runs {max_t} iterations"


def _compares_only_running(inputs: PlanInputs) -> str:
    """The caveat of a pausing scheduler whose trials cannot all be created up front.

    Only where a waiting trial holds no resources (warm slots, one-worker trials) can Tune
    create every trial at once; otherwise it creates no more than run at once, and the
    scheduler compares only those.
    """
    if inputs.concurrency is None or inputs.waiting_holds_nothing is not False:
        return ""
    return (
        f" (with a group per trial it compares only the {inputs.concurrency} trial(s) that run "
        "at once)"
    )


def hyperband_brackets(num_trials: int, max_t: int, eta: int) -> list[list[tuple[int, int]]]:
    """The brackets Tune's synchronous HyperBand fills with `num_trials` trials.

    Each bracket is its rungs, ``(iteration, trials reaching it)``; the last rung's trials run
    to the bracket's end. Tune sizes a bracket from `max_t` alone and fills brackets in the
    order trials are created, the one with the fewest halvings first; a bracket whose first
    rung would be iteration 0 is skipped, and a full band of brackets starts the next band.
    A halving keeps ``ceil(capacity / eta)`` of the bracket's trials, so a bracket that is not
    full may keep all of them.
    """
    bands = round(math.log(max_t) / math.log(eta)) + 1 if max_t > 1 else 1
    brackets: list[list[tuple[int, int]]] = []
    left, s = num_trials, 0
    while left > 0:
        first = int(max_t * eta ** (-s))
        if first > 0:
            capacity = math.ceil(bands / (s + 1) * eta**s)
            trials = min(capacity, left)
            left -= trials
            rungs, iteration = [(first, trials)], first
            for _ in range(s):
                capacity = math.ceil(capacity / eta)
                iteration = min(iteration * eta, max_t)
                rungs.append((iteration, min(trials, capacity)))
            brackets.append(rungs)
        s = (s + 1) % bands
    return brackets


def _budget(rungs: Sequence[Rung]) -> int:
    """Iterations spent if each rung's survivors run from the previous rung to this one."""
    total = 0
    previous: dict[int, int] = {}
    for rung in rungs:
        start = previous.get(rung.bracket, 0)
        total += rung.trials * (rung.iteration - start)
        previous[rung.bracket] = rung.iteration
    return total


def pbt_interval(max_iterations: int) -> int:
    """Iterations between two of PBT's synchronous rounds."""
    return max(1, max_iterations // 4)


def median_grace(max_iterations: int) -> int:
    """Iterations before the median stopping rule may stop a trial."""
    return max(1, max_iterations // 4)
