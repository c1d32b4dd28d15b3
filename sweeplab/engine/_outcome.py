"""What a finished sweep left behind: ranked trials, ``best_config.json`` and its outcome."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sweeplab.engine._plan import ResourcePlan
from sweeplab.engine._resolved import ResolvedSweep
from sweeplab.engine._warm import WarmStartPlan
from sweeplab.spec import Sweep

if TYPE_CHECKING:
    from sweeplab.engine._sinks import Sinks
    from sweeplab.tracking import SweepSummary, TrialRecord

__all__ = ["SweepOutcome", "finish_sweep", "write_best_config"]


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


def finish_sweep(
    resolved: ResolvedSweep,
    summary: SweepSummary,
    *,
    plan: ResourcePlan,
    wall_s: float,
    errored: int,
    trials: int,
    sinks: Sinks,
    warm_start: WarmStartPlan | None = None,
) -> SweepOutcome:
    """The outcome of a ranked sweep: ``best_config.json`` written, each sweep callback told."""
    outcome = SweepOutcome(
        sweep=resolved.sweep,
        resolved=resolved,
        storage_dir=resolved.run_dir,
        best=write_best_config(resolved, summary),
        summary=summary,
        plan=plan,
        wall_s=wall_s,
        errored=errored,
        trials=trials,
        diverged=sum(1 for trial in summary.trials if trial.status == "diverged"),
        warm_start=warm_start,
        warnings=tuple(
            w for w in [sinks.table.data_wait_warning(), unreported_warning(summary.trials)] if w
        ),
    )
    for callback in sinks.callbacks:
        callback.on_sweep_end(outcome)
    return outcome


def unreported_warning(trials: Sequence[TrialRecord]) -> str | None:
    """The warning for trials that finished without a single report, or None.

    Such a trial's ``train_func`` returned without calling ``ray.train.report``: most often it
    reports with ``ray.tune.report``, which reaches Ray Tune's controller only and is a silent
    no-op anywhere else. The trial has nothing to rank, so the sweep says so.
    """
    silent = [t for t in trials if t.status == "finished" and t.iterations == 0]
    if not silent:
        return None
    return (
        f"{len(silent)} of {len(trials)} trial(s) finished without a report (e.g. "
        f"{silent[0].trial_id}): train_func must report with `ray.train.report`; "
        "`ray.tune.report` reaches only Ray Tune's own controller, which sweeplab does not run."
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
