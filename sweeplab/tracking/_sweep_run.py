"""Sweep-level record of a sweep in MLflow: the experiment, the parent run, the best trial and
the model registry."""

from __future__ import annotations

import json
import logging
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from sweeplab.errors import SweeplabError
from sweeplab.keys import (
    BEST_METRIC_TAG,
    BEST_TAG,
    BEST_TRIAL_ID_TAG,
    FRONT_ARTIFACT,
    HYPERVOLUME_METRIC,
    METRIC_TAG,
    RANK_BY_TAG,
    ROLE_SWEEP,
    ROLE_TAG,
    SWEEP_TAG,
    TAG_PREFIX,
    TRIAL_ID_TAG,
    TRIALS_TAG,
    WARM_START_TAG,
)
from sweeplab.tracking._flatten import flatten, mask_secrets
from sweeplab.tracking._flusher import (
    MAX_PARAM_LENGTH,
    MAX_PARAMS_TAGS_PER_BATCH,
    MAX_TAG_LENGTH,
    PARENT_TAG,
)
from sweeplab.tracking._ranking import SweepSummary, TrialRecord

logger = logging.getLogger(__name__)

PARENT_RUN_FILE = "mlflow_parent_run.json"
BEST_CONFIG_FILE = "best_config.json"
# MLflow 3's UI opens an experiment on its GenAI overview unless this tag says it holds
# model training; then it opens on the training runs.
EXPERIMENT_KIND_TAG = "mlflow.experimentKind"
EXPERIMENT_KIND = "custom_model_development"


class TrackingError(SweeplabError):
    """The MLflow store cannot hold this sweep (unreachable at start, or unusable state)."""


class ParentRun:
    """A sweep execution's experiment and parent run, through an explicit ``MlflowClient``.

    Args:
        client: The ``MlflowClient`` of the tracking store.
        sweep_name: Name of the sweep, used as the MLflow experiment name.
        metric: Metric that ranks trials.
        rank_by: ``"best"`` or ``"last"`` reported value.
        register_model: Name under which the best checkpoint is registered.
    """

    def __init__(
        self, client: Any, *, sweep_name: str, metric: str, rank_by: str, register_model: str | None
    ) -> None:
        self.client = client
        self.sweep_name = sweep_name
        self.metric = metric
        self.rank_by = rank_by
        self.register_model = register_model
        self.run_id: str | None = None
        self.experiment_id: str | None = None

    def create(
        self,
        params: Mapping[str, Any],
        spec_path: Path | None,
        space_yaml: str | None,
        tags: Mapping[str, str] | None = None,
        started_at: float | None = None,
    ) -> None:
        """Creates (or reuses) the experiment and a new parent run with the sweep's settings
        (and ``tags`` beside sweeplab's own), started at `started_at` (epoch seconds; now
        when None)."""
        from mlflow.entities import Param

        client = self.client
        started = time.localtime(started_at)
        experiment = client.get_experiment_by_name(self.sweep_name)
        if experiment is None:
            self.experiment_id = client.create_experiment(
                self.sweep_name, tags={EXPERIMENT_KIND_TAG: EXPERIMENT_KIND}
            )
        else:
            self.experiment_id = experiment.experiment_id
            self._mark_model_training(experiment.tags)
        run = client.create_run(
            self.experiment_id,
            tags={
                ROLE_TAG: ROLE_SWEEP,
                SWEEP_TAG: self.sweep_name,
                RANK_BY_TAG: self.rank_by,
                **(tags or {}),
            },
            run_name=f"{self.sweep_name}-{time.strftime('%Y%m%d-%H%M%S', started)}",
            start_time=None if started_at is None else int(started_at * 1000),
        )
        self.run_id = run.info.run_id
        flat = flatten(mask_secrets(dict(params)))
        items = [Param(k, str(v)[:MAX_PARAM_LENGTH]) for k, v in flat.items()]
        for start in range(0, len(items), MAX_PARAMS_TAGS_PER_BATCH):
            client.log_batch(self.run_id, params=items[start : start + MAX_PARAMS_TAGS_PER_BATCH])
        if spec_path is not None:
            client.log_artifact(self.run_id, str(spec_path), "spec")
        if space_yaml is not None:
            with tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp, "space.yaml")
                path.write_text(space_yaml)
                client.log_artifact(self.run_id, str(path), "spec")

    def reopen(self, parent_run_id: str) -> dict[str, Any]:
        """Sets a recorded parent run running again; returns its child runs by trial id."""
        client = self.client
        run = client.get_run(parent_run_id)
        self.run_id = run.info.run_id
        self.experiment_id = run.info.experiment_id
        self._mark_model_training(client.get_experiment(self.experiment_id).tags)
        client.update_run(self.run_id, status="RUNNING")
        existing: dict[str, Any] = {}
        for child in search_all(
            client, self.experiment_id, f"tags.`{PARENT_TAG}` = '{self.run_id}'"
        ):
            trial_id = child.data.tags.get(TRIAL_ID_TAG)
            if trial_id and trial_id not in existing:
                existing[trial_id] = child
        return existing

    def _mark_model_training(self, tags: Mapping[str, str]) -> None:
        # An experiment made by an older sweeplab, or by hand, lacks the tag.
        if tags.get(EXPERIMENT_KIND_TAG) != EXPERIMENT_KIND:
            assert self.experiment_id is not None
            self.client.set_experiment_tag(self.experiment_id, EXPERIMENT_KIND_TAG, EXPERIMENT_KIND)

    def log_warm_start(self, source: str, document: Mapping[str, Any]) -> None:
        assert self.run_id is not None
        self.client.set_tag(self.run_id, WARM_START_TAG, source[:MAX_TAG_LENGTH])
        self.client.log_dict(self.run_id, dict(document), "warm_start.json")

    def record_best(self, best: TrialRecord | None, doc: Mapping[str, Any], trials: int) -> None:
        """Logs the best trial on the parent run: tags, ``best.*`` params, metric, checkpoint.

        The value logged is the document's (``doc["value"]``).
        """
        from mlflow.entities import Metric, Param, RunTag

        client, parent = self.client, self.run_id
        assert parent is not None
        tags = {RANK_BY_TAG: self.rank_by, TRIALS_TAG: str(trials)}
        stored = {k: v for k, v in doc.items() if k != "tracking_uri"}
        text = json.dumps(stored)
        if len(text) <= MAX_TAG_LENGTH:
            tags[BEST_TAG] = text
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp, BEST_CONFIG_FILE)
            path.write_text(json.dumps(stored, indent=2))
            client.log_artifact(parent, str(path))
        if best is None:
            client.log_batch(parent, tags=[RunTag(k, v) for k, v in tags.items()])
            return
        value = doc["value"]
        tags[BEST_METRIC_TAG] = repr(value)
        tags[BEST_TRIAL_ID_TAG] = best.trial_id
        params = {"best_trial_id": best.trial_id}
        params.update({f"best.{k}": str(v) for k, v in flatten(best.config).items()})
        existing = client.get_run(parent).data.params
        conflicting = [
            k for k, v in params.items() if k in existing and existing[k] != v[:MAX_PARAM_LENGTH]
        ]
        if conflicting:  # a resumed sweep found a new best; params cannot change
            logger.warning("Parent run already has different %s; kept as tags.", conflicting)
            tags.update({f"{TAG_PREFIX}{k}": params.pop(k) for k in conflicting})
        items = [Param(k, v[:MAX_PARAM_LENGTH]) for k, v in params.items() if k not in existing]
        batch = MAX_PARAMS_TAGS_PER_BATCH
        for start in range(0, max(len(items), 1), batch):
            first = start == 0
            client.log_batch(
                parent,
                params=items[start : start + batch],
                tags=[RunTag(k, v[:MAX_TAG_LENGTH]) for k, v in tags.items()] if first else [],
                metrics=[
                    Metric(f"best_{self.metric}", float(value or 0.0), int(time.time() * 1000), 0)
                ]
                if first
                else [],
            )
        checkpoint = best.best_checkpoint
        if checkpoint and Path(checkpoint).is_dir():
            client.log_artifacts(parent, checkpoint, "best_checkpoint")
            if self.register_model:
                self._register_model(best, value)
        elif self.register_model:
            logger.warning("Best trial %s has no checkpoint; nothing registered.", best.trial_id)

    def _register_model(self, best: TrialRecord, value: float | None) -> None:
        from mlflow.exceptions import MlflowException

        client, name = self.client, self.register_model
        assert name is not None and self.run_id is not None
        try:
            client.get_registered_model(name)
        except MlflowException:
            client.create_registered_model(name)
        source = f"{client.get_run(self.run_id).info.artifact_uri}/best_checkpoint"
        client.create_model_version(
            name,
            source=source,
            run_id=self.run_id,
            tags={
                SWEEP_TAG: self.sweep_name,
                TRIAL_ID_TAG: best.trial_id,
                METRIC_TAG: self.metric,
                f"{TAG_PREFIX}{self.metric}": repr(value),
            },
        )

    def record_front(self, summary: SweepSummary) -> None:
        """Logs a multi-objective sweep's front on the parent run: the hypervolume metric and
        the table artifact ``pareto_front.json`` (one row per front-1 trial: ``trial_id,
        run_id, rank, front``, each objective's value, ``config``)."""
        from mlflow.entities import Metric

        assert self.run_id is not None
        if summary.hypervolume is not None:
            metric = Metric(HYPERVOLUME_METRIC, summary.hypervolume, int(time.time() * 1000), 0)
            self.client.log_batch(self.run_id, metrics=[metric])
        rows = [
            {
                "trial_id": record.trial_id,
                "run_id": record.run_id,
                "rank": record.rank,
                "front": record.front,
                **{o.name: (record.values or {}).get(o.name) for o in summary.objectives},
                "config": record.config,
            }
            for record in summary.front
        ]
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp, FRONT_ARTIFACT)
            path.write_text(json.dumps(rows, indent=2, default=str))
            self.client.log_artifact(self.run_id, str(path))

    def terminate(self, status: str) -> None:
        assert self.run_id is not None
        self.client.set_terminated(self.run_id, status=status)


def search_all(client: Any, experiment_id: str, filter_string: str) -> list[Any]:
    """Every run of an experiment that matches ``filter_string``, across result pages."""
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


def with_retries(action: Callable[[], Any], timeout_s: float) -> Any:
    """Runs an MLflow call, retrying with backoff until it succeeds or ``timeout_s`` passed."""
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
