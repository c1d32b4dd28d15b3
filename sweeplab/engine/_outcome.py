"""What a finished sweep left behind: ranked trials, ``best_config.json`` and its outcome."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sweeplab.engine._plan import ResourcePlan
from sweeplab.engine._resolved import ResolvedSweep
from sweeplab.engine._warm import WarmStartPlan
from sweeplab.spec import Sweep

if TYPE_CHECKING:
    from sweeplab.tracking import SweepSummary

__all__ = ["SweepOutcome", "rank_untracked", "write_best_config"]


@dataclasses.dataclass(frozen=True)
class SweepOutcome:
    """What a finished sweep left behind.

    `sweep` is the `Sweep` with the options applied; `resolved` the settings it ran with.
    """

    sweep: Sweep
    resolved: ResolvedSweep
    storage_dir: Path
    best: dict[str, Any] | None
    summary: Any
    plan: ResourcePlan
    wall_s: float
    errored: int
    trials: int
    diverged: int = 0
    warm_start: WarmStartPlan | None = None
    warnings: tuple[str, ...] = ()


def rank_untracked(resolved: ResolvedSweep, results: Any) -> SweepSummary:
    """The ranking of an untracked sweep, from Tune's own record of the trials.

    The same ranking as the tracker's, which a tracked sweep uses.
    """
    from sweeplab.tracking import rank_tune_results

    return rank_tune_results(
        results,
        metric=resolved.metric,
        mode=resolved.mode,
        rank_by=resolved.rank_by,
        config_decoder=resolved.config_decoder(),
        max_iterations=resolved.max_iterations,
        objectives=resolved.sweep.objectives,
        constraints=resolved.sweep.constraints,
        pick=resolved.sweep.pick,
    )


def write_best_config(resolved: ResolvedSweep, summary: SweepSummary) -> dict[str, Any] | None:
    """Writes ``best_config.json`` in the run folder and the sweep folder; returns it.

    Of a multi-objective sweep it holds the front and the trial the pick rule picked
    (`sweeplab.tracking.best_config_document`).
    """
    from sweeplab.tracking import best_config_document

    best = best_config_document(summary, resolved.name)
    for folder in (resolved.run_dir, resolved.sweep_dir):
        (folder / "best_config.json").write_text(json.dumps(best, indent=2))
    return best
