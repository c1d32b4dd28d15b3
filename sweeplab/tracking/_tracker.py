"""SweepTracker: the MLflow record of one sweep execution (parent run + one child per trial)."""

from __future__ import annotations

import json
import logging
import math
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sweeplab.errors import SweeplabError
from sweeplab.tracking._flatten import flatten, is_number, mask_secrets
from sweeplab.tracking._flusher import MAX_TAG_LENGTH, PARENT_TAG, Flusher, MetricPoint
from sweeplab.tracking._ranking import SweepSummary, TrialRecord, _check, rank_trials

logger = logging.getLogger(__name__)

PARENT_RUN_FILE = "mlflow_parent_run.json"
BEST_CONFIG_FILE = "best_config.json"
UNDELIVERED_FILE = "mlflow_undelivered.jsonl"
RUN_STATUSES = ("FINISHED", "FAILED", "KILLED")

# Keys Tune fills in itself; everything else numeric in a result is the user's metric.
# ``time_total_s`` is deliberately logged.
TUNE_BOOKKEEPING_KEYS = frozenset(
    {
        "training_iteration",
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
        "checkpoint_path",
        "should_checkpoint",
        "__duplicate__",
    }
)


class TrackingError(SweeplabError):
    """The MLflow store cannot hold this sweep (unreachable at start, or unusable state)."""


@dataclass
class _TrialState:
    trial_id: str
    config: dict[str, Any]
    status: str = "running"
    restarts: int = 0
    group_restarts: int = 0  # worker-group restarts inside the trial (Train's max_failures)
    iterations: int = 0
    stopped_at_result: bool = False
    values: dict[int, float] = field(default_factory=dict)
    checkpoints: dict[int, str] = field(default_factory=dict)
    config_changes: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    lineage: list[str] = field(default_factory=list)
    run_id: str | None = None


def _resolve_uri(tracking_uri: str | None) -> str:
    import mlflow

    return tracking_uri or mlflow.get_tracking_uri()


def _result_metrics(result: Mapping[str, Any], prefix: str = "") -> dict[str, float]:
    metrics: dict[str, float] = {}
    for key, value in result.items():
        if not prefix and key in TUNE_BOOKKEEPING_KEYS:
            continue
        if isinstance(value, Mapping):
            metrics.update(_result_metrics(value, prefix=f"{prefix}{key}/"))
        elif is_number(value):
            metrics[f"{prefix}{key}"] = float(value)
    return metrics


class SweepTracker:
    """Records a sweep in MLflow: one parent run per execution and one child run per trial.

    All MLflow calls go through an explicit ``MlflowClient``; the fluent active-run state is
    never touched. Trial data is buffered and delivered by a background thread (see
    :mod:`sweeplab.tracking._flusher`).

    Args:
        tracking_uri: MLflow tracking URI; ``None`` uses MLflow's own resolution
            (``MLFLOW_TRACKING_URI``, else ``sqlite:///mlflow.db`` in the working folder).
        sweep_name: Name of the sweep, used as the MLflow experiment name.
        storage_dir: The sweep's storage folder (parent run id, ``best_config.json``).
        metric: Metric that ranks trials.
        mode: ``"min"`` or ``"max"``.
        rank_by: ``"best"`` or ``"last"`` reported value.
        settings: Flat sweep settings logged as parent params (searcher, scheduler, ...).
        spec_path: Spec file logged as a parent artifact.
        space_yaml: Search space as YAML text, logged as ``spec/space.yaml``.
        config_decoder: Turns a Tune (backend-shaped) config into the nested user config.
        scheduler_name: Named in ``sweeplab.stopped_by`` of early-stopped trials.
        max_iterations: A trial's budget in reports; a trial that reached it counts as finished.
        resume: Reuse the parent run recorded in ``storage_dir`` and its child runs.
        register_model: Name under which the best checkpoint is registered.
    """

    def __init__(
        self,
        *,
        tracking_uri: str | None,
        sweep_name: str,
        storage_dir: Path,
        metric: str,
        mode: str,
        rank_by: str = "best",
        settings: Mapping[str, Any] | None = None,
        spec_path: Path | None = None,
        space_yaml: str | None = None,
        config_decoder: Callable[[dict], dict] = lambda config: config,
        scheduler_name: str = "fifo",
        max_iterations: int | None = None,
        resume: bool = False,
        register_model: str | None = None,
        drain_timeout_s: float = 600.0,
    ) -> None:
        _check(mode, rank_by)
        self.tracking_uri = tracking_uri
        self.sweep_name = sweep_name
        self.storage_dir = Path(storage_dir)
        self.metric = metric
        self.mode = mode
        self.rank_by = rank_by
        self.settings = dict(settings or {})
        self.spec_path = spec_path
        self.space_yaml = space_yaml
        self.config_decoder = config_decoder
        self.scheduler_name = scheduler_name
        self.max_iterations = max_iterations
        self.resume = resume
        self.register_model = register_model
        self.drain_timeout_s = drain_timeout_s
        self.parent_run_id: str | None = None
        self.experiment_id: str | None = None
        self._trials: dict[str, _TrialState] = {}
        self._existing: dict[str, Any] = {}  # trial_id -> mlflow Run (resume)
        self._flusher: Flusher | None = None
        self._client: Any = None
        self._resolved_uri = ""

    # -- lifecycle ---------------------------------------------------------------------------

    def _new_client(self) -> Any:
        from mlflow import MlflowClient

        return MlflowClient(self._resolved_uri)

    def start(self) -> None:
        """Creates the experiment and the parent run, or reopens them with ``resume=True``."""
        self._resolved_uri = _resolve_uri(self.tracking_uri)
        self._client = client = self._new_client()
        self.storage_dir.mkdir(parents=True, exist_ok=True)
        record = self.storage_dir / PARENT_RUN_FILE
        try:
            if self.resume and record.exists():
                self._reopen_parent(json.loads(record.read_text()))
            else:
                if self.resume:
                    logger.warning(
                        "No %s in %s; starting a new parent run.", record.name, record.parent
                    )
                self._create_parent()
        except SweeplabError:
            raise
        except Exception as error:
            raise TrackingError(
                f"Cannot record sweep {self.sweep_name!r} in MLflow at {self._resolved_uri!r}: "
                f"{str(error).splitlines()[0] if str(error) else type(error).__name__}"
            ) from error
        assert self.parent_run_id is not None and self.experiment_id is not None
        record.write_text(
            json.dumps(
                {
                    "sweep": self.sweep_name,
                    "parent_run_id": self.parent_run_id,
                    "experiment_id": self.experiment_id,
                    "tracking_uri": self._resolved_uri,
                },
                indent=2,
            )
        )
        del client
        self._flusher = Flusher(
            client_factory=self._new_client,
            experiment_id=self.experiment_id,
            parent_run_id=self.parent_run_id,
        )
        self._flusher.start()

    def _create_parent(self) -> None:
        from mlflow.entities import Param

        client = self._client
        experiment = client.get_experiment_by_name(self.sweep_name)
        if experiment is None:
            self.experiment_id = client.create_experiment(self.sweep_name)
        else:
            self.experiment_id = experiment.experiment_id
        run = client.create_run(
            self.experiment_id,
            tags={
                "sweeplab.role": "sweep",
                "sweeplab.sweep": self.sweep_name,
                "sweeplab.rank_by": self.rank_by,
            },
            run_name=f"{self.sweep_name}-{time.strftime('%Y%m%d-%H%M%S')}",
        )
        self.parent_run_id = run.info.run_id
        params = {
            "metric": self.metric,
            "mode": self.mode,
            "rank_by": self.rank_by,
            "scheduler": self.scheduler_name,
            **({"max_iterations": self.max_iterations} if self.max_iterations else {}),
            **self.settings,
        }
        flat = flatten(mask_secrets(params))
        items = [Param(k, "***" if v == "***" else str(v)[:6000]) for k, v in flat.items()]
        for start in range(0, len(items), 100):
            client.log_batch(self.parent_run_id, params=items[start : start + 100])
        if self.spec_path is not None:
            client.log_artifact(self.parent_run_id, str(self.spec_path), "spec")
        if self.space_yaml is not None:
            with tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp, "space.yaml")
                path.write_text(self.space_yaml)
                client.log_artifact(self.parent_run_id, str(path), "spec")

    def _reopen_parent(self, record: Mapping[str, Any]) -> None:
        client = self._client
        run = client.get_run(record["parent_run_id"])
        self.parent_run_id = run.info.run_id
        self.experiment_id = run.info.experiment_id
        client.update_run(self.parent_run_id, status="RUNNING")
        for child in _search_all(
            client, self.experiment_id, f"tags.`{PARENT_TAG}` = '{self.parent_run_id}'"
        ):
            trial_id = child.data.tags.get("sweeplab.trial_id")
            if trial_id and trial_id not in self._existing:
                self._existing[trial_id] = child

    def log_warm_start(self, source: str, document: Mapping[str, Any]) -> None:
        """Records where a warm start's configs came from on the parent run.

        Sets the tag ``sweeplab.warm_start`` to ``source`` and logs ``document`` as the
        artifact ``warm_start.json``.
        """
        if self.parent_run_id is None:
            raise TrackingError("SweepTracker.start() must be called before log_warm_start().")
        client = self._new_client()
        client.set_tag(self.parent_run_id, "sweeplab.warm_start", source[:MAX_TAG_LENGTH])
        client.log_dict(self.parent_run_id, dict(document), "warm_start.json")

    def tune_callback(self) -> Any:
        """The ``ray.tune.Callback`` to pass in ``ray.tune.RunConfig(callbacks=[...])``."""
        if self._flusher is None:
            raise TrackingError("SweepTracker.start() must be called before tune_callback().")
        from sweeplab.tracking._callback import MlflowTrialCallback

        return MlflowTrialCallback(self)

    # -- events (driver thread) ---------------------------------------------------------------

    def _register(self, trial: Any) -> _TrialState:
        state = self._trials.get(trial.trial_id)
        if state is not None:
            return state
        assert self._flusher is not None
        config = mask_secrets(self.config_decoder(dict(trial.config)))
        state = _TrialState(trial_id=trial.trial_id, config=config)
        self._trials[trial.trial_id] = state
        existing = self._existing.get(trial.trial_id)
        if existing is not None:
            tags = existing.data.tags
            state.run_id = existing.info.run_id
            state.status = tags.get("sweeplab.status", "running")
            state.restarts = int(tags.get("sweeplab.restarts", "0") or 0)
            state.lineage = [s for s in tags.get("sweeplab.pbt.lineage", "").split("; ") if s]
            self._flusher.add_run(
                trial.trial_id, tags={}, params={}, existing_run_id=existing.info.run_id
            )
        else:
            self._flusher.add_run(
                trial.trial_id,
                run_name=trial.trial_id,
                tags={
                    "sweeplab.role": "trial",
                    "sweeplab.trial_id": trial.trial_id,
                    "sweeplab.status": "running",
                    "sweeplab.restarts": "0",
                },
                params={k: str(v) for k, v in flatten(config).items()},
            )
        if self.resume:
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
                            self._ingest(state, json.loads(line))
                        except ValueError:
                            continue  # a line cut short by the kill
            return

    def _on_start(self, trial: Any) -> None:
        assert self._flusher is not None
        state = self._register(trial)
        if state.status != "running" or state.run_id is not None:
            state.status = "running"
            self._flusher.reopen(trial.trial_id)
        self._flusher.set_tags(trial.trial_id, {"sweeplab.status": "running"})

    def _on_recover(self, trial: Any) -> None:
        assert self._flusher is not None
        state = self._register(trial)
        state.restarts += 1
        self._flusher.set_tags(
            trial.trial_id, {"sweeplab.restarts": str(state.restarts + state.group_restarts)}
        )

    def _on_result(self, trial: Any, result: Mapping[str, Any]) -> None:
        self._ingest(self._register(trial), result)

    def _ingest(self, state: _TrialState, result: Mapping[str, Any]) -> None:
        assert self._flusher is not None
        step = int(result.get("training_iteration") or state.iterations + 1)
        timestamp = int(float(result.get("timestamp") or time.time()) * 1000)
        metrics = _result_metrics(result)
        group_restarts = result.get("sweeplab_group_restarts")
        if isinstance(group_restarts, int) and group_restarts > state.group_restarts:
            state.group_restarts = group_restarts
            total = state.restarts + state.group_restarts
            self._flusher.set_tags(state.trial_id, {"sweeplab.restarts": str(total)})
        points: list[MetricPoint] = [(k, v, timestamp, step) for k, v in metrics.items()]
        if points:
            self._flusher.log_metrics(state.trial_id, points)
        # A PBT recipient continues at its donor's iteration, so a step can come again: the
        # later report (the trial's present lineage) wins.
        if self.metric in metrics:
            state.values[step] = metrics[self.metric]
        checkpoint = result.get("checkpoint_path")
        if isinstance(checkpoint, str) and checkpoint:
            state.checkpoints[step] = checkpoint
        state.iterations = step
        state.stopped_at_result = bool(result.get("done"))

    def _on_complete(self, trial: Any) -> None:
        assert self._flusher is not None
        state = self._register(trial)
        # Tune marks a result ``done`` when at the time of the result the scheduler (or a
        # stopper) decided to stop the trial; a trainable that returned by itself has its last
        # result marked ``done`` only afterwards. ASHA also "stops" a trial that reached its
        # budget, hence the ``max_iterations`` check (both measured with a real ASHA run).
        stopped = state.stopped_at_result
        reached = self.max_iterations is not None and state.iterations >= self.max_iterations
        tags = {"sweeplab.restarts": str(state.restarts + state.group_restarts)}
        if reached or not stopped:
            state.status = "finished"
        else:
            state.status = "stopped_early"
            tags["sweeplab.stopped_by"] = self.scheduler_name
            tags["sweeplab.stopped_at_iteration"] = str(state.iterations)
        tags["sweeplab.status"] = state.status
        self._flusher.set_tags(trial.trial_id, tags)
        self._flusher.end_run(trial.trial_id, "FINISHED")

    def _on_error(self, trial: Any) -> None:
        assert self._flusher is not None
        state = self._register(trial)
        state.status = "errored"
        self._flusher.set_tags(
            trial.trial_id,
            {
                "sweeplab.status": "errored",
                "sweeplab.error": _error_text(trial),
                "sweeplab.restarts": str(state.restarts + state.group_restarts),
            },
        )
        self._flusher.end_run(trial.trial_id, "FAILED")

    def note_exploit(
        self, trial_id: str, donor_id: str, iteration: int, new_config: dict[str, Any]
    ) -> None:
        """Records that PBT replaced a trial's config (and weights) with a donor's.

        Call it on the driver when the exploit happens. ``new_config`` is the trial's new
        Tune config (it goes through ``config_decoder``). Numeric values are logged as metrics
        ``config.<param>`` at step ``iteration``; other values that changed as tags
        ``sweeplab.config.<param>@<iteration>``.
        """
        assert self._flusher is not None
        state = self._trials.get(trial_id)
        if state is None:
            raise TrackingError(f"note_exploit: trial {trial_id!r} is unknown to the tracker.")
        nested = mask_secrets(self.config_decoder(dict(new_config)))
        previous = flatten(state.config_changes[-1][1] if state.config_changes else state.config)
        timestamp = int(time.time() * 1000)
        points: list[MetricPoint] = []
        tags: dict[str, str] = {}
        for key, value in flatten(nested).items():
            if is_number(value):
                points.append((f"config.{key}", float(value), timestamp, iteration))
            elif previous.get(key) != value:
                tags[f"sweeplab.config.{key}@{iteration}"] = str(value)
        state.config_changes.append((iteration, nested))
        state.lineage.append(f"step {iteration}: from {donor_id}")
        tags["sweeplab.pbt.donor"] = donor_id
        tags["sweeplab.pbt.lineage"] = "; ".join(state.lineage)
        self._flusher.log_metrics(trial_id, points)
        self._flusher.set_tags(trial_id, tags)

    # -- the end ------------------------------------------------------------------------------

    def records(self) -> list[TrialRecord]:
        """The current (unranked) records of the trials."""
        return [self._record(state) for state in self._trials.values()]

    def _record(self, state: _TrialState) -> TrialRecord:
        values = {s: v for s, v in state.values.items() if not math.isnan(v)}
        best_value = best_iteration = last_value = None
        if values:
            pick = min if self.mode == "min" else max
            best_value = pick(values.values())
            best_iteration = min(s for s, v in values.items() if v == best_value)
            last_value = state.values[max(state.values)]
        anchor = best_iteration if self.rank_by == "best" else state.iterations
        checkpoint = _checkpoint_at(state.checkpoints, anchor)
        config = state.config
        for changed_at, changed in state.config_changes:
            if anchor is not None and changed_at <= anchor:
                config = changed
        run_id = state.run_id or (self._flusher.run_id(state.trial_id) if self._flusher else None)
        return TrialRecord(
            trial_id=state.trial_id,
            run_id=run_id,
            status=state.status,
            config=config,
            best_value=best_value,
            last_value=last_value,
            best_iteration=best_iteration,
            iterations=state.iterations,
            best_checkpoint=checkpoint,
            restarts=state.restarts + state.group_restarts,
        )

    def finish(self, status: str = "FINISHED") -> SweepSummary:
        """Delivers everything, ranks the trials, records the best one and ends the runs.

        Args:
            status: Final status of the parent run: ``FINISHED``, ``FAILED`` or ``KILLED``.

        Returns:
            The ranked trials.
        """
        if status not in RUN_STATUSES:
            raise ValueError(f"`status` must be one of {RUN_STATUSES}, but got {status=!r}.")
        flusher, client = self._flusher, self._client
        if flusher is None or self.parent_run_id is None:
            raise TrackingError("SweepTracker.start() must be called before finish().")
        for state in self._trials.values():
            if state.status == "running":
                flusher.end_run(state.trial_id, "KILLED" if status != "FAILED" else "FAILED")
        flusher.drain(self.drain_timeout_s)
        ranked = rank_trials(self.records(), self.metric, self.mode, self.rank_by)
        for record in ranked:
            tags = {"sweeplab.rank": str(record.rank)}
            config = json.dumps(record.config, default=str)
            if len(config) <= MAX_TAG_LENGTH:  # longer ones are read back from the params
                tags["sweeplab.config"] = config
            flusher.set_tags(record.trial_id, tags)
        delivered = flusher.drain(self.drain_timeout_s)
        flusher.stop()
        if not delivered:
            path = self.storage_dir / UNDELIVERED_FILE
            count = flusher.write_undelivered(path)
            logger.error(
                "MLflow at %s stayed unreachable; %d undelivered records were written to %s.",
                self._resolved_uri,
                count,
                path,
            )
        for record in ranked:  # run ids created late by the flusher
            record.run_id = record.run_id or flusher.run_id(record.trial_id)
        summary = SweepSummary(
            trials=ranked,
            metric=self.metric,
            mode=self.mode,
            rank_by=self.rank_by,
            parent_run_id=self.parent_run_id,
        )
        best = summary.best
        best_doc = self._best_document(best)
        (self.storage_dir / BEST_CONFIG_FILE).write_text(json.dumps(best_doc, indent=2))
        _with_retries(lambda: self._record_best(client, best, best_doc), self.drain_timeout_s)
        _with_retries(
            lambda: client.set_terminated(self.parent_run_id, status=status), self.drain_timeout_s
        )
        return summary

    def _best_document(self, best: TrialRecord | None) -> dict[str, Any]:
        return {
            "sweep": self.sweep_name,
            "trial_id": best.trial_id if best else None,
            "metric": self.metric,
            "mode": self.mode,
            "rank_by": self.rank_by,
            "value": best.value(self.rank_by) if best else None,
            "config": best.config if best else None,
            "checkpoint": best.best_checkpoint if best else None,
            "mlflow_run_id": best.run_id if best else None,
            "parent_run_id": self.parent_run_id,
            "tracking_uri": self._resolved_uri,
        }

    def _record_best(self, client: Any, best: TrialRecord | None, doc: dict[str, Any]) -> None:
        from mlflow.entities import Metric, Param, RunTag

        parent = self.parent_run_id
        assert parent is not None
        tags = {"sweeplab.rank_by": self.rank_by, "sweeplab.trials": str(len(self._trials))}
        stored = {k: v for k, v in doc.items() if k != "tracking_uri"}
        text = json.dumps(stored)
        if len(text) <= 8000:
            tags["sweeplab.best"] = text
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp, BEST_CONFIG_FILE)
            path.write_text(json.dumps(stored, indent=2))
            client.log_artifact(parent, str(path))
        if best is None:
            client.log_batch(parent, tags=[RunTag(k, v) for k, v in tags.items()])
            return
        value = best.value(self.rank_by)
        tags["sweeplab.best_metric"] = repr(value)
        tags["sweeplab.best_trial_id"] = best.trial_id
        params = {"best_trial_id": best.trial_id}
        params.update({f"best.{k}": str(v) for k, v in flatten(best.config).items()})
        existing = client.get_run(parent).data.params
        conflicting = [k for k, v in params.items() if k in existing and existing[k] != v[:6000]]
        if conflicting:  # a resumed sweep found a new best; params cannot change
            logger.warning("Parent run already has different %s; kept as tags.", conflicting)
            tags.update({f"sweeplab.{k}": params.pop(k) for k in conflicting})
        items = [Param(k, v[:6000]) for k, v in params.items() if k not in existing]
        for start in range(0, max(len(items), 1), 100):
            client.log_batch(
                parent,
                params=items[start : start + 100],
                tags=[RunTag(k, v[:8000]) for k, v in tags.items()] if start == 0 else [],
                metrics=[
                    Metric(f"best_{self.metric}", float(value or 0.0), int(time.time() * 1000), 0)
                ]
                if start == 0
                else [],
            )
        checkpoint = best.best_checkpoint
        if checkpoint and Path(checkpoint).is_dir():
            client.log_artifacts(parent, checkpoint, "best_checkpoint")
            if self.register_model:
                self._register_model(client, best)
        elif self.register_model:
            logger.warning("Best trial %s has no checkpoint; nothing registered.", best.trial_id)

    def _register_model(self, client: Any, best: TrialRecord) -> None:
        from mlflow.exceptions import MlflowException

        name = self.register_model
        assert name is not None and self.parent_run_id is not None
        try:
            client.get_registered_model(name)
        except MlflowException:
            client.create_registered_model(name)
        source = f"{client.get_run(self.parent_run_id).info.artifact_uri}/best_checkpoint"
        client.create_model_version(
            name,
            source=source,
            run_id=self.parent_run_id,
            tags={
                "sweeplab.sweep": self.sweep_name,
                "sweeplab.trial_id": best.trial_id,
                "sweeplab.metric": self.metric,
                f"sweeplab.{self.metric}": repr(best.value(self.rank_by)),
            },
        )


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


def _error_text(trial: Any) -> str:
    text = ""
    try:
        if trial.error_file and Path(trial.error_file).exists():
            text = Path(trial.error_file).read_text(errors="replace")
    except OSError:
        pass
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return "unknown error"
    last = lines[-1].strip()
    return f"{last}\n{text}"[:500]


def _search_all(client: Any, experiment_id: str, filter_string: str) -> list[Any]:
    runs: list[Any] = []
    token = None
    while True:
        page = client.search_runs(
            [experiment_id], filter_string=filter_string, max_results=1000, page_token=token
        )
        runs.extend(page)
        token = page.token
        if not token:
            return runs


def _with_retries(action: Callable[[], Any], timeout_s: float) -> Any:
    deadline = time.monotonic() + timeout_s
    delay = 0.5
    while True:
        try:
            return action()
        except Exception as error:
            if time.monotonic() + delay > deadline:
                raise
            logger.warning("MLflow call failed (retrying in %.1f s): %s", delay, error)
            time.sleep(delay)
            delay = min(delay * 2, 30.0)
