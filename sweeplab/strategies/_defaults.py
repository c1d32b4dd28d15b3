"""The strategy a sweep runs when its spec leaves the searcher, the scheduler or both out.

The choice is the best one measured for the sweep's kind on the simulated search benchmark
(docs/search.md, "The default strategy"), within what the sweep's other fields allow:

=====================================  ===========================  ===========================
sweep                                  searcher left out            scheduler left out
=====================================  ===========================  ===========================
one metric, several reports a trial    ``"optuna"``                 ``"adaptive-asha"``
several metrics, several reports       ``"random"``                 ``"asha"``
one report a trial                     ``"random"``                 ``"fifo"``
=====================================  ===========================  ===========================

What the spec names is kept: with ``searcher="grid"`` the scheduler left out is ``"fifo"`` (a
grid is run whole), and with ``scheduler="pbt"`` the searcher left out is ``"random"`` (PBT
draws its own population).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from sweeplab.strategies._pbt_settings import PBT, names_pbt

__all__ = ["DEFAULTS_DOC", "StrategyChoice", "default_strategy"]

DEFAULTS_DOC = "docs/search.md#the-default-strategy"


@dataclasses.dataclass(frozen=True)
class StrategyChoice:
    """A sweep's searcher and scheduler, with the fields that the defaults filled.

    Attributes:
        searcher: The searcher the sweep runs (a name or the spec's object).
        scheduler: The scheduler the sweep runs (a name or the spec's object).
        chosen: The fields the defaults filled (``"searcher"``, ``"scheduler"``), in that order;
            empty when the spec named both.
        why: One line on what the defaults chose and why; empty when they chose nothing.
    """

    searcher: Any
    scheduler: Any
    chosen: tuple[str, ...]
    why: str


def default_strategy(
    *, searcher: Any, scheduler: Any, objectives: int, max_iterations: int
) -> StrategyChoice:
    """Fill the searcher and the scheduler that a spec left out (None) with the measured best.

    Args:
        searcher: The spec's searcher, or None where it names none.
        scheduler: The spec's scheduler, or None where it names none.
        objectives: How many metrics the sweep optimises.
        max_iterations: Reports a trial makes at most.
    """
    kind = f"{objectives} metrics" if objectives > 1 else "one metric"
    reports = "1 report" if max_iterations == 1 else f"{max_iterations} reports"
    kind = f"{kind} and {reports} a trial"
    chosen: list[str] = []
    if searcher is None:
        chosen.append("searcher")
        if names_pbt(scheduler) or max_iterations == 1 or objectives > 1:
            searcher = "random"
        else:
            searcher = "optuna"
    if scheduler is None:
        chosen.append("scheduler")
        if max_iterations == 1 or searcher == "grid":
            scheduler = "fifo"
        elif objectives > 1:
            scheduler = "asha"
        else:
            scheduler = "adaptive-asha"
    if not chosen:
        return StrategyChoice(searcher, scheduler, (), "")
    names = " + ".join(
        f"{field} {_name(value)}"
        for field, value in (("searcher", searcher), ("scheduler", scheduler))
        if field in chosen
    )
    if max_iterations == 1:
        reason = "nothing to stop early"
    elif searcher == "grid" and "scheduler" in chosen:
        reason = "a grid runs whole"
    elif names_pbt(scheduler) and "searcher" in chosen:
        reason = "PBT draws its own population"
    elif len(chosen) == 2:
        reason = "the best measured"
    else:
        reason = f"the {chosen[0]} that measured best"
    why = f"defaults for {kind}: {names} ({reason}; {DEFAULTS_DOC})"
    return StrategyChoice(searcher, scheduler, tuple(chosen), why)


def _name(value: Any) -> str:
    if isinstance(value, PBT):
        return value.describe()
    return value if isinstance(value, str) else type(value).__name__
