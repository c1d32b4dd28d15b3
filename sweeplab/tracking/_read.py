"""Read side: sweeps, trials and learning curves from MLflow as pandas frames."""

from __future__ import annotations

import json
import math
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sweeplab.errors import SweeplabError
from sweeplab.keys import (
    BEST_TAG,
    RANK_TAG,
    RESTARTS_TAG,
    ROLE_SWEEP,
    ROLE_TAG,
    STATUS_TAG,
    TRIAL_ID_TAG,
    TRIALS_TAG,
)
from sweeplab.pareto import Constraint, Objective
from sweeplab.tracking._child_runs import child_runs_from_tables
from sweeplab.tracking._flusher import PARENT_TAG
from sweeplab.tracking._history import metric_histories
from sweeplab.tracking._quick import LATEST_FIRST, SWEEP_FILTER, quick_best, quick_tracking_uri
from sweeplab.tracking._ranking import SweepSummary
from sweeplab.tracking._run_records import summary_of_runs, sweep_objectives, trial_config


class UnknownSweepError(SweeplabError, LookupError):
    """No sweep of that name is recorded in the tracking store."""


@dataclass
class SweepData:
    """One execution of a sweep as recorded in MLflow (by default its latest).

    Attributes:
        trials: One row per trial: ``trial_id, run_id, status, rank, best, last, iterations,
            restarts`` and one ``config.<dotted param>`` column per config param, by rank.
        history: Long frame of every metric point: ``trial_id, rank, metric, step, value,
            timestamp``.
        best: The best trial (same content as ``best_config.json``), or ``{}``.
        metric: The ranked metric; ``mode``: ``min``/``max`` (of a multi-objective sweep:
            the first objective).
        parent_run_id: The sweep's parent run.
        settings: The parent run's params.
        objectives: Every objective (one for a single metric).
        constraints: The constraints of a multi-objective sweep.
        summary: The ranked trials as records (`load_summary`): of a multi-objective sweep
            with each trial's values, front, and the front's hypervolume.
    """

    name: str
    metric: str
    mode: str
    parent_run_id: str
    trials: Any
    history: Any
    best: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, str] = field(default_factory=dict)
    objectives: tuple[Objective, ...] = ()
    constraints: tuple[Constraint, ...] = ()
    summary: SweepSummary | None = None


def resolve_tracking_uri(tracking_uri: str | None) -> str:
    """The tracking URI asked for, or MLflow's own (``MLFLOW_TRACKING_URI``, else the default):
    without importing MLflow where `quick_tracking_uri` knows it, so that a store that is not
    there is refused at once."""
    uri = quick_tracking_uri(tracking_uri)
    if uri is not None:
        return uri
    import mlflow

    return mlflow.get_tracking_uri()


def tracking_client(tracking_uri: str | None, *, sweep: str | None = None) -> tuple[Any, str]:
    """An ``MlflowClient`` of an existing tracking store, and the store's resolved URI.

    Every read opens the store here, so no read creates it (see `check_sweep_store`).

    Args:
        tracking_uri: The store (default: MLflow's own resolution).
        sweep: The sweep to be read, named by the error when there is no store.

    Raises:
        TrackingError: A URI MLflow cannot use, or a server that does not answer (see
            `check_tracking_uri`): at once, instead of MLflow's client retrying for minutes;
            or a store MLflow refuses to open (a file store it was not allowed, an old schema).
        UnknownSweepError: A local store that does not exist.
    """
    from sweeplab.tracking._tracker import TrackingError
    from sweeplab.tracking._uri_check import check_sweep_store, check_tracking_uri

    uri = resolve_tracking_uri(tracking_uri)
    check_tracking_uri(uri)
    check_sweep_store(uri, sweep)
    from mlflow import MlflowClient
    from mlflow.exceptions import MlflowException

    try:
        return MlflowClient(uri), uri
    except MlflowException as error:  # raised on one line: the CLI prints one
        raise TrackingError(f"MLflow cannot open the tracking store {uri!r}: {error}") from None


def latest_sweep_run(client: Any, name: str, uri: str) -> Any:
    """The parent run of the sweep `name`'s latest execution; `UnknownSweepError` if none."""
    experiment = client.get_experiment_by_name(name)
    runs = []
    if experiment is not None:
        runs = client.search_runs(
            [experiment.experiment_id],
            filter_string=SWEEP_FILTER,
            order_by=[LATEST_FIRST],
            max_results=1,
        )
    if not runs:
        raise UnknownSweepError(
            f"No sweep named {name!r} in the tracking store {uri!r} "
            "(`sweeplab ls` lists the recorded sweeps)."
        )
    return runs[0]


def sweep_run(client: Any, name: str, uri: str, run_id: str) -> Any:
    """The parent run ``run_id`` of the sweep `name`; `UnknownSweepError` if it is none."""
    from mlflow.exceptions import MlflowException

    experiment = client.get_experiment_by_name(name)
    try:
        run = client.get_run(run_id)
    except MlflowException:
        run = None
    if (
        experiment is None
        or run is None
        or run.info.experiment_id != experiment.experiment_id
        or run.data.tags.get(ROLE_TAG) != ROLE_SWEEP
    ):
        raise UnknownSweepError(
            f"No run {run_id!r} of a sweep named {name!r} in the tracking store {uri!r}."
        )
    return run


def _children(client: Any, parent: Any, uri: str) -> list[Any]:
    """The sweep's child runs: from a SQL store's tables where it is one, else searched
    through MLflow."""
    runs: list[Any] | None = child_runs_from_tables(uri, parent)
    if runs is not None:
        return runs
    runs = []
    token = None
    while True:
        page = client.search_runs(
            [parent.info.experiment_id],
            filter_string=f"tags.`{PARENT_TAG}` = '{parent.info.run_id}'",
            max_results=1000,
            page_token=token,
        )
        runs.extend(page)
        token = page.token
        if not token:
            return runs


def _trial_count(client: Any, parent: Any, uri: str) -> int:
    """The number of trials: the count an ended sweep recorded, else its child runs counted."""
    recorded = parent.data.tags.get(TRIALS_TAG, "")
    return int(recorded) if recorded.isdigit() else len(_children(client, parent, uri))


def list_sweeps(tracking_uri: str | None = None) -> Any:
    """The sweeps in a tracking store, one row per sweep (its latest execution).

    Returns:
        A DataFrame with columns ``sweep, status, trials, best_metric, metric, started,
        parent_run_id``, newest first.
    """
    client, uri = tracking_client(tracking_uri)
    import pandas as pd

    rows = []
    for experiment in client.search_experiments():
        runs = client.search_runs(
            [experiment.experiment_id],
            filter_string=SWEEP_FILTER,
            order_by=[LATEST_FIRST],
            max_results=1,
        )
        if not runs:
            continue
        parent = runs[0]
        metric = parent.data.params.get("metric", "")
        best = parent.data.metrics.get(f"best_{metric}")
        rows.append(
            {
                "sweep": experiment.name,
                "status": parent.info.status,
                "trials": _trial_count(client, parent, uri),
                "best_metric": best if best is not None else math.nan,
                "metric": metric,
                "started": pd.to_datetime(parent.info.start_time, unit="ms"),
                "parent_run_id": parent.info.run_id,
            }
        )
    columns = ["sweep", "status", "trials", "best_metric", "metric", "started", "parent_run_id"]
    frame = pd.DataFrame(rows, columns=columns)
    return frame.sort_values("started", ascending=False, ignore_index=True)


def _best_from_parent(client: Any, parent: Any, uri: str) -> dict[str, Any]:
    text = parent.data.tags.get(BEST_TAG)
    if text is None:
        with tempfile.TemporaryDirectory() as tmp:
            try:
                path = client.download_artifacts(parent.info.run_id, "best_config.json", tmp)
            except Exception:
                return {}
            text = Path(path).read_text()
    return {**json.loads(text), "tracking_uri": uri}


def best_trial(name: str, tracking_uri: str | None = None) -> dict[str, Any]:
    """The best trial of a sweep's latest execution, as in its ``best_config.json``.

    Raises:
        UnknownSweepError: No such sweep, or it has not finished ranking yet.
    """
    quick = quick_best(name, tracking_uri)  # a local SQLite store or a server: no MLflow import
    if quick is not None:
        return quick
    client, uri = tracking_client(tracking_uri, sweep=name)
    parent = latest_sweep_run(client, name, uri)
    best = _best_from_parent(client, parent, uri)
    if not best:
        raise UnknownSweepError(
            f"Sweep {name!r} has no best trial yet (its latest run "
            f"{parent.info.run_id} is {parent.info.status})."
        )
    return best


def load_sweep(
    name: str, tracking_uri: str | None = None, *, run_id: str | None = None
) -> SweepData:
    """Loads a sweep's latest execution (or its parent run ``run_id``): trials, learning curves
    and the best trial."""
    import pandas as pd

    client, uri = tracking_client(tracking_uri, sweep=name)
    if run_id is None:
        parent = latest_sweep_run(client, name, uri)
    else:
        parent = sweep_run(client, name, uri, run_id)
    settings = dict(parent.data.params)
    metric, mode = settings.get("metric", ""), settings.get("mode", "min")
    rows, points, histories = [], [], []
    children = _children(client, parent, uri)
    by_run = metric_histories(client, uri, children)
    for child in children:
        tags, run_id = child.data.tags, child.info.run_id
        trial_id = tags.get(TRIAL_ID_TAG, run_id)
        rank = int(tags[RANK_TAG]) if tags.get(RANK_TAG) else None
        curve: dict[int, float] = {}
        fetched = by_run[run_id]
        histories.append(fetched)
        for key in child.data.metrics:
            for point in fetched[key]:
                points.append(
                    {
                        "trial_id": trial_id,
                        "rank": rank,
                        "metric": key,
                        "step": point.step,
                        "value": point.value,
                        "timestamp": point.timestamp,
                    }
                )
                if key == metric:
                    curve.setdefault(point.step, point.value)
        values = [v for v in curve.values() if math.isfinite(v)]
        best = (min if mode == "min" else max)(values) if values else math.nan
        row = {
            "trial_id": trial_id,
            "run_id": run_id,
            "status": tags.get(STATUS_TAG, ""),
            "rank": rank,
            "best": best,
            "last": curve[max(curve)] if curve else math.nan,
            "iterations": max(curve) if curve else 0,
            "restarts": int(tags.get(RESTARTS_TAG, "0") or 0),
        }
        row.update({f"config.{k}": v for k, v in sorted(child.data.params.items())})
        rows.append(row)
    trials = pd.DataFrame(rows)
    if not trials.empty:
        trials = trials.sort_values(["rank", "trial_id"], na_position="last", ignore_index=True)
        trials["rank"] = trials["rank"].astype("Int64")
    history = pd.DataFrame(
        points, columns=["trial_id", "rank", "metric", "step", "value", "timestamp"]
    )
    # One conversion of the whole column: per point, pandas' conversion was most of the read.
    history["timestamp"] = pd.to_datetime(history["timestamp"], unit="ms")
    if not history.empty:
        history = history.sort_values(["trial_id", "metric", "step"], ignore_index=True)
    best_doc = _best_from_parent(client, parent, uri)
    summary = summary_of_runs(parent, list(zip(children, histories, strict=True)), best_doc, uri)
    return SweepData(
        name=name,
        metric=metric,
        mode=mode,
        parent_run_id=parent.info.run_id,
        trials=trials,
        history=history,
        best=best_doc,
        settings=settings,
        objectives=summary.objectives or (Objective(metric, mode),),
        constraints=summary.constraints,
        summary=summary,
    )


def load_summary(name: str, tracking_uri: str | None = None) -> SweepSummary:
    """The ranked trials of a sweep's latest execution, as the sweep's own summary holds them.

    Read from MLflow's own values: each trial's rank (and front) tags, its config, and the
    objective metrics at its last step that holds all of them; the hypervolume and the picked
    trial are computed from these. Of a multi-objective sweep, the summary has its
    objectives, constraints and pick rule.

    Raises:
        UnknownSweepError: No sweep of that name.
    """
    client, uri = tracking_client(tracking_uri, sweep=name)
    parent = latest_sweep_run(client, name, uri)
    objectives, _ = sweep_objectives(parent)
    children = _children(client, parent, uri)
    by_run = metric_histories(client, uri, children, keys={o.name for o in objectives})
    runs = [(child, by_run[child.info.run_id]) for child in children]
    return summary_of_runs(parent, runs, _best_from_parent(client, parent, uri), uri)


@dataclass(frozen=True)
class RankedConfig:
    """One ranked trial of a recorded sweep and the config it was ranked with.

    Attributes:
        rank: 1 for the best trial.
        trial_id: Tune's trial id.
        status: ``finished``, ``stopped_early``, ``diverged``, ``errored`` or ``running``
            (killed).
        config: The nested config (secrets masked as ``***``).
        last_value: The last reported value of the sweep's metric, ``None`` if it reported none.
    """

    rank: int
    trial_id: str
    status: str
    config: dict[str, Any]
    last_value: float | None


@dataclass(frozen=True)
class SweepRanking:
    """The ranked trials of a sweep's latest execution (``trials[0]`` is the best)."""

    name: str
    metric: str
    mode: str
    rank_by: str
    parent_run_id: str
    trials: list[RankedConfig]


def ranked_configs(name: str, tracking_uri: str | None = None) -> SweepRanking:
    """The ranked trials of a sweep's latest execution with their configs, best first.

    Only trials with a rank are listed (ranks are recorded when the execution ends). A trial's
    config is its ``sweeplab.config`` tag: the config it was ranked with, with its types (for a
    PBT trial, the config in effect at its ranked iteration). Runs recorded without that tag
    give their params back, each read as a Python literal where it parses as one (``0.01``,
    ``3``, ``True``, ``[64, 64]``) and as a string otherwise.

    Raises:
        UnknownSweepError: No sweep of that name. A SQLite store that does not exist is not
            created.
    """
    client, uri = tracking_client(tracking_uri, sweep=name)
    parent = latest_sweep_run(client, name, uri)
    settings = parent.data.params
    metric = settings.get("metric", "")
    trials = []
    for child in _children(client, parent, uri):
        tags = child.data.tags
        if not tags.get(RANK_TAG):
            continue
        trials.append(
            RankedConfig(
                rank=int(tags[RANK_TAG]),
                trial_id=tags.get(TRIAL_ID_TAG, child.info.run_id),
                status=tags.get(STATUS_TAG, ""),
                config=trial_config(child),
                last_value=child.data.metrics.get(metric),
            )
        )
    trials.sort(key=lambda trial: (trial.rank, trial.trial_id))
    return SweepRanking(
        name=name,
        metric=metric,
        mode=settings.get("mode", "min"),
        rank_by=settings.get("rank_by", "best"),
        parent_run_id=parent.info.run_id,
        trials=trials,
    )
