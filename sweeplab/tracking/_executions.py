"""The executions of a sweep name: every parent run MLflow holds for it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

from sweeplab.tracking._read import (
    SWEEP_FILTER,
    UnknownSweepError,
    tracking_client,
)
from sweeplab.tracking._sweep_run import search_all


@dataclass(frozen=True)
class SweepExecution:
    """One execution of a sweep: a parent run of its MLflow experiment.

    A run of ``sweeplab sweep`` makes a new parent run; ``--resume`` continues the interrupted
    one's parent run, so a resumed execution is still one execution.

    Attributes:
        name: The sweep name (the MLflow experiment).
        run_id: The parent run's id.
        started: When the parent run started (UTC).
        ended: When it ended (UTC); ``None`` while it runs, or if it was killed.
        status: MLflow's status of the parent run (``FINISHED``, ``RUNNING``, ``FAILED``,
            ``KILLED``).
    """

    name: str
    run_id: str
    started: datetime
    ended: datetime | None
    status: str


def _utc(milliseconds: int | None) -> datetime | None:
    if not milliseconds:
        return None
    return datetime.fromtimestamp(milliseconds / 1000, tz=timezone.utc)


def sweep_executions(name: str, tracking_uri: str | None = None) -> list[SweepExecution]:
    """Every execution of the sweep ``name``, oldest first.

    Raises:
        UnknownSweepError: No sweep of that name. A SQLite store that does not exist is not
            created.
    """
    client, uri = tracking_client(tracking_uri, sweep=name)
    experiment = client.get_experiment_by_name(name)
    runs = [] if experiment is None else search_all(client, experiment.experiment_id, SWEEP_FILTER)
    if not runs:
        raise UnknownSweepError(
            f"No sweep named {name!r} in the tracking store {uri!r} "
            "(`sweeplab ls` lists the recorded sweeps)."
        )
    executions = [
        SweepExecution(
            name=name,
            run_id=run.info.run_id,
            started=_utc(run.info.start_time) or datetime.fromtimestamp(0, tz=timezone.utc),
            ended=_utc(run.info.end_time),
            status=run.info.status,
        )
        for run in runs
    ]
    return sorted(executions, key=lambda e: (e.started, e.run_id))
