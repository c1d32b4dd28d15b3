"""Trial-level record of a sweep: each trial's state from Tune's events, and its MLflow child run.

:class:`TrialEvents` keeps what the ranking needs (values per step, checkpoints, PBT's config
changes) and, given a :class:`~sweeplab.tracking._flusher.Flusher`, mirrors every event into
the trial's child run. Without one it only keeps the state:
:func:`~sweeplab.tracking._untracked.rank_tune_results` ranks an untracked sweep with it.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from sweeplab._numbers import is_number
from sweeplab.keys import (
    CHECKPOINT_PATH_KEY,
    CONFIG_TAG,
    ERROR_TAG,
    FRONT_INFEASIBLE,
    FRONT_TAG,
    GROUP_RESTARTS_KEY,
    ITERATION_KEY,
    PBT_DONOR_TAG,
    PBT_LINEAGE_TAG,
    RANK_TAG,
    RESTARTS_TAG,
    ROLE_TAG,
    ROLE_TRIAL,
    STATUS_DIVERGED,
    STATUS_ERRORED,
    STATUS_FINISHED,
    STATUS_RUNNING,
    STATUS_STOPPED_EARLY,
    STATUS_TAG,
    STOPPED_AT_ITERATION_TAG,
    STOPPED_BY_TAG,
    TRIAL_ID_TAG,
    TUNE_DUPLICATE_RESULT_KEY,
)
from sweeplab.pareto import Constraint, Objective
from sweeplab.tracking._flatten import flatten, mask_secrets
from sweeplab.tracking._flusher import MAX_TAG_LENGTH, RUN_NAME_TAG, MetricPoint
from sweeplab.tracking._ranking import (
    TrialRecord,
    constraint_violation,
    rank_pareto,
    rank_trials,
)

# Child runs named by rank (``r001 <trial id> <metric>=<value>``): renaming a run costs MLflow's
# SQL store about 3.5 ms beside the 3 ms of its rank tag, so a 10,000-trial sweep renames its
# best 100 and leaves the others named by trial id; every run's rank tag sorts as text.
NAMED_RUNS = 100

# Keys Tune fills in itself; everything else numeric in a result is the user's metric.
# ``time_total_s`` is deliberately logged.
TUNE_BOOKKEEPING_KEYS = frozenset(
    {
        ITERATION_KEY,
        "time_this_iter_s",
        "timestamp",
        "done",
        "trial_id",
        "config",
        "date",
        "hostname",
        "node_ip",
        "pid",
        "experiment_tag",
        "experiment_id",
        "time_since_restore",
        "iterations_since_restore",
        "timesteps_since_restore",
        "timesteps_total",
        "episodes_total",
        "checkpoint_dir_name",
        CHECKPOINT_PATH_KEY,
        "should_checkpoint",
        TUNE_DUPLICATE_RESULT_KEY,
    }
)


class ChildRunSink(Protocol):
    """Where trial events go: the flusher's producer side."""

    def add_run(
        self,
        trial_id: str,
        *,
        tags: dict[str, str],
        params: dict[str, str],
        run_name: str | None = None,
        existing_run_id: str | None = None,
        reopen: bool = False,
    ) -> None: ...

    def reopen(self, trial_id: str) -> None: ...

    def log_metrics(self, trial_id: str, points: Iterable[MetricPoint]) -> None: ...

    def set_tags(self, trial_id: str, tags: dict[str, str]) -> None: ...

    def end_run(self, trial_id: str, status: str) -> None: ...

    def run_id(self, trial_id: str) -> str | None: ...


class _NoRuns:
    """The sink of an untracked sweep: the state is kept, nothing is sent."""

    def add_run(self, trial_id: str, **kwargs: Any) -> None:
        pass

    def reopen(self, trial_id: str) -> None:
        pass

    def log_metrics(self, trial_id: str, points: Iterable[MetricPoint]) -> None:
        pass

    def set_tags(self, trial_id: str, tags: dict[str, str]) -> None:
        pass

    def end_run(self, trial_id: str, status: str) -> None:
        pass

    def run_id(self, trial_id: str) -> str | None:
        return None


@dataclass
class _TrialState:
    trial_id: str
    config: dict[str, Any]
    status: str = STATUS_RUNNING
    restarts: int = 0
    group_restarts: int = 0  # worker-group restarts inside the trial (Train's max_failures)
    iterations: int = 0
    stopped_at_result: bool = False
    values: dict[int, float] = field(default_factory=dict)
    checkpoints: dict[int, str] = field(default_factory=dict)
    config_changes: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    lineage: list[str] = field(default_factory=list)
    run_id: str | None = None
    # A multi-objective trial's point: its last report that held every objective, and its step.
    point: dict[str, float] | None = None
    point_step: int | None = None


def result_metrics(result: Mapping[str, Any], prefix: str = "") -> dict[str, float]:
    """The user's numeric metrics of one Tune result; nested mappings become ``a/b`` keys."""
    metrics: dict[str, float] = {}
    for key, value in result.items():
        if not prefix and key in TUNE_BOOKKEEPING_KEYS:
            continue
        if isinstance(value, Mapping):
            metrics.update(result_metrics(value, prefix=f"{prefix}{key}/"))
        elif is_number(value):
            metrics[f"{prefix}{key}"] = float(value)
    return metrics


def ranked_run_name(record: TrialRecord, metric: str, rank_by: str, width: int) -> str:
    """``r01 trial_abc loss=0.123``: a child run's name that sorts by rank in the MLflow UI."""
    return f"r{record.rank:0{width}d} {record.trial_id} {metric}={_shown(record.value(rank_by))}"


def pareto_run_name(record: TrialRecord, objectives: Sequence[Objective], width: int) -> str:
    """``r01 trial_abc val_loss=0.12 latency_ms=3.4``: the name of a multi-objective trial."""
    values = record.values or {}
    shown = " ".join(f"{o.name}={_shown(values.get(o.name))}" for o in objectives)
    return f"r{record.rank:0{width}d} {record.trial_id} {shown}"


def _shown(value: float | None) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.4g}"


class TrialEvents:
    """Per-trial state built from Tune's events, mirrored into MLflow child runs by ``sink``.

    Args:
        metric: Metric that ranks trials (the first objective of a multi-objective sweep).
        mode: ``"min"`` or ``"max"``.
        rank_by: ``"best"`` or ``"last"`` reported value.
        config_decoder: Turns a Tune (backend-shaped) config into the nested user config.
        scheduler_name: Named in ``sweeplab.stopped_by`` of early-stopped trials.
        max_iterations: A trial's budget in reports; a trial that reached it counts as finished.
        backfill: Re-read each trial's ``result.json`` when it is first seen (a resumed sweep).
        sink: Receives the child-run data; ``None`` keeps the state only.
        existing: Child runs of a resumed parent run, by trial id (mlflow ``Run`` objects).
        objectives: Several objectives rank the trials by Pareto front (`rank_pareto`), each
            trial at its last report that held all of them; the first must be ``metric``.
            Empty or one: the single metric.
        constraints: Bounds on the objectives' values of a multi-objective sweep.
    """

    def __init__(
        self,
        *,
        metric: str,
        mode: str,
        rank_by: str,
        config_decoder: Callable[[dict], dict],
        scheduler_name: str,
        max_iterations: int | None,
        backfill: bool = False,
        sink: ChildRunSink | None = None,
        existing: Mapping[str, Any] | None = None,
        objectives: Sequence[Objective] = (),
        constraints: Sequence[Constraint] = (),
    ) -> None:
        if len(objectives) > 1 and objectives[0] != Objective(metric, mode):
            raise ValueError(
                f"The first objective must be the metric, but got {objectives[0]} "
                f"for {metric=!r}, {mode=!r}."
            )
        self.objectives = tuple(objectives) if len(objectives) > 1 else ()
        self.constraints = tuple(constraints) if self.objectives else ()
        self._objective_names = [o.name for o in self.objectives]
        self.metric = metric
        self.mode = mode
        self.rank_by = rank_by
        self.config_decoder = config_decoder
        self.scheduler_name = scheduler_name
        self.max_iterations = max_iterations
        self.backfill = backfill
        self.sink: ChildRunSink = sink if sink is not None else _NoRuns()
        self.existing = dict(existing or {})
        self.trials: dict[str, _TrialState] = {}

    def register(self, trial: Any) -> _TrialState:
        state = self.trials.get(trial.trial_id)
        if state is not None:
            return state
        config = mask_secrets(self.config_decoder(dict(trial.config)))
        state = _TrialState(trial_id=trial.trial_id, config=config)
        self.trials[trial.trial_id] = state
        existing = self.existing.get(trial.trial_id)
        if existing is not None:
            tags = existing.data.tags
            state.run_id = existing.info.run_id
            state.status = tags.get(STATUS_TAG, STATUS_RUNNING)
            state.restarts = int(tags.get(RESTARTS_TAG, "0") or 0)
            state.lineage = [s for s in tags.get(PBT_LINEAGE_TAG, "").split("; ") if s]
            self.sink.add_run(
                trial.trial_id, tags={}, params={}, existing_run_id=existing.info.run_id
            )
        else:
            self.sink.add_run(
                trial.trial_id,
                run_name=trial.trial_id,
                tags={
                    ROLE_TAG: ROLE_TRIAL,
                    TRIAL_ID_TAG: trial.trial_id,
                    STATUS_TAG: STATUS_RUNNING,
                    RESTARTS_TAG: "0",
                },
                params={k: str(v) for k, v in flatten(config).items()},
            )
        if self.backfill:
            self._backfill(trial, state)
        return state

    def _backfill(self, trial: Any, state: _TrialState) -> None:
        """Re-reads the results Tune recorded, so points a killed driver lost reach MLflow."""
        for base in (trial.local_path, trial.path):
            if not base:
                continue
            path = Path(base, "result.json")
            if not path.exists():
                continue
            with path.open(encoding="utf-8") as file:
                for line in file:
                    if line.strip():
                        try:
                            self.ingest(state, json.loads(line))
                        except ValueError:
                            continue  # a line cut short by the kill
            return

    def on_start(self, trial: Any) -> None:
        state = self.register(trial)
        if state.status != STATUS_RUNNING or state.run_id is not None:
            state.status = STATUS_RUNNING
            self.sink.reopen(trial.trial_id)
        self.sink.set_tags(trial.trial_id, {STATUS_TAG: STATUS_RUNNING})

    def on_recover(self, trial: Any) -> None:
        state = self.register(trial)
        state.restarts += 1
        self.sink.set_tags(
            trial.trial_id, {RESTARTS_TAG: str(state.restarts + state.group_restarts)}
        )

    def on_result(self, trial: Any, result: Mapping[str, Any]) -> None:
        self.ingest(self.register(trial), result)

    def ingest(self, state: _TrialState, result: Mapping[str, Any]) -> None:
        step = int(result.get(ITERATION_KEY) or state.iterations + 1)
        timestamp = int(float(result.get("timestamp") or time.time()) * 1000)
        metrics = result_metrics(result)
        group_restarts = result.get(GROUP_RESTARTS_KEY)
        if isinstance(group_restarts, int) and group_restarts > state.group_restarts:
            state.group_restarts = group_restarts
            total = state.restarts + state.group_restarts
            self.sink.set_tags(state.trial_id, {RESTARTS_TAG: str(total)})
        points: list[MetricPoint] = [(k, v, timestamp, step) for k, v in metrics.items()]
        if points:
            self.sink.log_metrics(state.trial_id, points)
        # A PBT recipient continues at its donor's iteration, so a step can come again: the
        # later report (the trial's present lineage) wins.
        if self.metric in metrics:
            state.values[step] = metrics[self.metric]
        if self._objective_names and all(name in metrics for name in self._objective_names):
            state.point = {name: metrics[name] for name in self._objective_names}
            state.point_step = step
        checkpoint = result.get(CHECKPOINT_PATH_KEY)
        if isinstance(checkpoint, str) and checkpoint:
            state.checkpoints[step] = checkpoint
        state.iterations = step
        state.stopped_at_result = bool(result.get("done"))

    def on_complete(self, trial: Any) -> None:
        state = self.register(trial)
        # Tune marks a result ``done`` when at the time of the result the scheduler (or a
        # stopper) decided to stop the trial; a trainable that returned by itself has its last
        # result marked ``done`` only afterwards. ASHA also "stops" a trial that reached its
        # budget, hence the ``max_iterations`` check (both measured with a real ASHA run).
        # A NaN or infinite last value: sweeplab's divergence stopper ended the trial there.
        stopped = state.stopped_at_result
        reached = self.max_iterations is not None and state.iterations >= self.max_iterations
        last = state.values.get(state.iterations)
        tags = {RESTARTS_TAG: str(state.restarts + state.group_restarts)}
        run_status = "FINISHED"
        if last is not None and not math.isfinite(last):
            state.status = STATUS_DIVERGED
            tags[STOPPED_BY_TAG] = "divergence"
            tags[STOPPED_AT_ITERATION_TAG] = str(state.iterations)
            run_status = "FAILED"
        elif reached or not stopped:
            state.status = STATUS_FINISHED
        else:
            state.status = STATUS_STOPPED_EARLY
            tags[STOPPED_BY_TAG] = self.scheduler_name
            tags[STOPPED_AT_ITERATION_TAG] = str(state.iterations)
        tags[STATUS_TAG] = state.status
        self.sink.set_tags(trial.trial_id, tags)
        self.sink.end_run(trial.trial_id, run_status)

    def on_error(self, trial: Any, error: str | None) -> None:
        state = self.register(trial)
        state.status = STATUS_ERRORED
        self.sink.set_tags(
            trial.trial_id,
            {
                STATUS_TAG: STATUS_ERRORED,
                ERROR_TAG: _error_tag(error),
                RESTARTS_TAG: str(state.restarts + state.group_restarts),
            },
        )
        self.sink.end_run(trial.trial_id, "FAILED")

    def note_exploit(
        self, trial_id: str, donor_id: str, iteration: int, new_config: dict[str, Any]
    ) -> None:
        """Records that PBT replaced a trial's config (and weights) with a donor's.

        Numeric values of the new config are logged as metrics ``config.<param>`` at step
        ``iteration``; other values that changed as tags ``sweeplab.config.<param>@<iteration>``.

        Raises:
            KeyError: If the trial is unknown.
        """
        state = self.trials[trial_id]
        nested = mask_secrets(self.config_decoder(dict(new_config)))
        previous = flatten(state.config_changes[-1][1] if state.config_changes else state.config)
        timestamp = int(time.time() * 1000)
        points: list[MetricPoint] = []
        tags: dict[str, str] = {}
        for key, value in flatten(nested).items():
            if is_number(value):
                points.append((f"config.{key}", float(value), timestamp, iteration))
            elif previous.get(key) != value:
                tags[f"{CONFIG_TAG}.{key}@{iteration}"] = str(value)
        state.config_changes.append((iteration, nested))
        state.lineage.append(f"step {iteration}: from {donor_id}")
        tags[PBT_DONOR_TAG] = donor_id
        tags[PBT_LINEAGE_TAG] = "; ".join(state.lineage)
        self.sink.log_metrics(trial_id, points)
        self.sink.set_tags(trial_id, tags)

    def end_running(self, status: str) -> None:
        """Ends the child runs of trials still running when the sweep ends with ``status``."""
        for state in self.trials.values():
            if state.status == STATUS_RUNNING:
                self.sink.end_run(state.trial_id, "KILLED" if status != "FAILED" else "FAILED")

    def records(self) -> list[TrialRecord]:
        """The current (unranked) records of the trials."""
        return [self._record(state) for state in self.trials.values()]

    def _record(self, state: _TrialState) -> TrialRecord:
        values = {s: v for s, v in state.values.items() if math.isfinite(v)}
        best_value = best_iteration = last_value = None
        if values:
            pick = min if self.mode == "min" else max
            best_value = pick(values.values())
            best_iteration = min(s for s, v in values.items() if v == best_value)
            last_value = state.values[max(state.values)]
        anchor = best_iteration if self.rank_by == "best" else state.iterations
        if self.objectives:  # rank_by does not apply: the trial is ranked at its point
            anchor = state.point_step
        checkpoint = _checkpoint_at(state.checkpoints, anchor)
        config = state.config
        for changed_at, changed in state.config_changes:
            if anchor is not None and changed_at <= anchor:
                config = changed
        return TrialRecord(
            trial_id=state.trial_id,
            run_id=state.run_id or self.sink.run_id(state.trial_id),
            status=state.status,
            config=config,
            best_value=best_value,
            last_value=last_value,
            best_iteration=best_iteration,
            iterations=state.iterations,
            best_checkpoint=checkpoint,
            restarts=state.restarts + state.group_restarts,
            values=dict(state.point) if state.point is not None else None,
            violation=constraint_violation(state.point, self.constraints),
        )

    def rank(self) -> list[TrialRecord]:
        """Ranks the trials and tags each child run with its rank, zero-padded so that it sorts
        as text; the best :data:`NAMED_RUNS` runs are also named by rank.

        A multi-objective sweep's trials are ranked by Pareto front, and each child run with a
        point is also tagged with its front (or as infeasible).
        """
        if self.objectives:
            ranked = rank_pareto(self.records(), self.objectives, self.constraints)
        else:
            ranked = rank_trials(self.records(), self.metric, self.mode, self.rank_by)
        width = max(2, len(str(len(ranked))))
        for position, record in enumerate(ranked, start=1):  # record.rank == position
            tags = {RANK_TAG: f"{position:0{width}d}"}
            named = position <= NAMED_RUNS
            if self.objectives:
                if named:
                    tags[RUN_NAME_TAG] = pareto_run_name(record, self.objectives, width)
                if record.front is not None:
                    tags[FRONT_TAG] = str(record.front)
                elif record.has_point:
                    tags[FRONT_TAG] = FRONT_INFEASIBLE
            elif named:
                tags[RUN_NAME_TAG] = ranked_run_name(record, self.metric, self.rank_by, width)
            config = json.dumps(record.config, default=str)
            if len(config) <= MAX_TAG_LENGTH:  # longer ones are read back from the params
                tags[CONFIG_TAG] = config
            self.sink.set_tags(record.trial_id, tags)
        return ranked


def _checkpoint_at(checkpoints: Mapping[int, str], step: int | None) -> str | None:
    """The checkpoint reported at ``step``, else the latest before it, else the last one."""
    existing = {s: p for s, p in checkpoints.items() if Path(p).exists()}
    if not existing:
        return None
    if step is not None:
        earlier = [s for s in existing if s <= step]
        if earlier:
            return existing[max(earlier)]
    return existing[max(existing)]


def _error_tag(text: str | None) -> str:
    """The error's last line, then its text, in MLflow's tag limit."""
    lines = [line for line in (text or "").splitlines() if line.strip()]
    if not lines:
        return "unknown error"
    last = lines[-1].strip()
    return f"{last}\n{text}"[:500]
