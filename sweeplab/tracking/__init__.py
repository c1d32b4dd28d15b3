"""MLflow tracking of sweeps: run hierarchy, batched logging, ranking and best-config selection.

Light names (ranking, records) import eagerly; everything that needs MLflow, Ray or pandas is
loaded on first use, so ``import sweeplab`` stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sweeplab.tracking._ranking import (
    SweepSummary,
    TrialRecord,
    best_config_document,
    front_hypervolume,
    pick_trial,
    rank_pareto,
    rank_trials,
)

if TYPE_CHECKING:
    from sweeplab.tracking._bench import benchmark_logging
    from sweeplab.tracking._bulk import DATABASE_ENV
    from sweeplab.tracking._executions import SweepExecution, sweep_executions
    from sweeplab.tracking._new_store import TEMPLATE_ENV, open_store_in_background
    from sweeplab.tracking._read import (
        RankedConfig,
        SweepData,
        SweepRanking,
        UnknownSweepError,
        best_trial,
        latest_sweep_run,
        list_sweeps,
        load_summary,
        load_sweep,
        ranked_configs,
        resolve_tracking_uri,
        tracking_client,
    )
    from sweeplab.tracking._sqlite import sqlite_store_path, write_ahead_log
    from sweeplab.tracking._tracker import WRITER_ENV, SweepTracker, TrackingError, writer_for
    from sweeplab.tracking._untracked import UntrackedRanking, rank_tune_results
    from sweeplab.tracking._uri_check import check_sweep_store, check_tracking_uri

__all__ = [
    "DATABASE_ENV",
    "TEMPLATE_ENV",
    "WRITER_ENV",
    "RankedConfig",
    "SweepData",
    "SweepExecution",
    "SweepRanking",
    "SweepSummary",
    "SweepTracker",
    "TrackingError",
    "TrialRecord",
    "UnknownSweepError",
    "UntrackedRanking",
    "benchmark_logging",
    "best_config_document",
    "best_trial",
    "check_sweep_store",
    "check_tracking_uri",
    "front_hypervolume",
    "latest_sweep_run",
    "list_sweeps",
    "load_summary",
    "load_sweep",
    "open_store_in_background",
    "pick_trial",
    "rank_pareto",
    "rank_trials",
    "rank_tune_results",
    "ranked_configs",
    "resolve_tracking_uri",
    "sqlite_store_path",
    "sweep_executions",
    "tracking_client",
    "write_ahead_log",
    "writer_for",
]

_LAZY = {
    "sqlite_store_path": "sweeplab.tracking._sqlite",
    "write_ahead_log": "sweeplab.tracking._sqlite",
    "SweepTracker": "sweeplab.tracking._tracker",
    "TrackingError": "sweeplab.tracking._tracker",
    "WRITER_ENV": "sweeplab.tracking._tracker",
    "DATABASE_ENV": "sweeplab.tracking._bulk",
    "TEMPLATE_ENV": "sweeplab.tracking._new_store",
    "open_store_in_background": "sweeplab.tracking._new_store",
    "check_tracking_uri": "sweeplab.tracking._uri_check",
    "writer_for": "sweeplab.tracking._tracker",
    "rank_tune_results": "sweeplab.tracking._untracked",
    "UntrackedRanking": "sweeplab.tracking._untracked",
    "benchmark_logging": "sweeplab.tracking._bench",
    "RankedConfig": "sweeplab.tracking._read",
    "SweepData": "sweeplab.tracking._read",
    "SweepRanking": "sweeplab.tracking._read",
    "UnknownSweepError": "sweeplab.tracking._read",
    "best_trial": "sweeplab.tracking._read",
    "list_sweeps": "sweeplab.tracking._read",
    "load_summary": "sweeplab.tracking._read",
    "load_sweep": "sweeplab.tracking._read",
    "ranked_configs": "sweeplab.tracking._read",
    "check_sweep_store": "sweeplab.tracking._uri_check",
    "latest_sweep_run": "sweeplab.tracking._read",
    "resolve_tracking_uri": "sweeplab.tracking._read",
    "tracking_client": "sweeplab.tracking._read",
    "SweepExecution": "sweeplab.tracking._executions",
    "sweep_executions": "sweeplab.tracking._executions",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
