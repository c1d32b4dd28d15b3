"""SweepTracker: the MLflow record of one sweep execution (parent run + one child per trial).

It coordinates the two records of a sweep: the sweep-level one (experiment, parent run, best
trial, model registry; :mod:`sweeplab.tracking._sweep_run`) and the trial-level one (child
runs, metrics, status, ranks; :mod:`sweeplab.tracking._trials`).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any

from sweeplab.errors import SweeplabError
from sweeplab.keys import CONSTRAINTS_TAG, OBJECTIVES_TAG
from sweeplab.pareto import Constraint, Objective, parse_pick
from sweeplab.tracking._bulk import sql_bulk
from sweeplab.tracking._flusher import Flusher
from sweeplab.tracking._new_store import prepare_store
from sweeplab.tracking._ranking import (
    SweepSummary,
    TrialRecord,
    _check,
    _check_objectives,
    best_config_document,
)
from sweeplab.tracking._sweep_run import (
    BEST_CONFIG_FILE,
    PARENT_RUN_FILE,
    ParentRun,
    TrackingError,
    with_retries,
)
from sweeplab.tracking._trials import TrialEvents
from sweeplab.tracking._writer import WriterProcess

__all__ = [
    "BEST_CONFIG_FILE",
    "PARENT_RUN_FILE",
    "WRITER_ENV",
    "SweepTracker",
    "TrackingError",
    "writer_for",
]

logger = logging.getLogger(__name__)

UNDELIVERED_FILE = "mlflow_undelivered.jsonl"
RUN_STATUSES = ("FINISHED", "FAILED", "KILLED")
WRITERS = ("thread", "process")
WRITER_ENV = "SWEEPLAB_TRACKING_WRITER"
PROCESS_WRITER_FROM_TRIALS = 100


def writer_for(num_trials: int) -> str:
    """Where a sweep of ``num_trials`` trials writes its child runs from.

    From :data:`PROCESS_WRITER_FROM_TRIALS` trials on, a child process: there MLflow's ~30 ms
    of Python per trial no longer competes with Tune's event loop for the driver's GIL, which
    pays for the process's start (about 3 CPU-seconds). ``SWEEPLAB_TRACKING_WRITER=thread`` or
    ``=process`` overrides the choice. Off POSIX systems, always a thread.
    """
    if os.name != "posix":
        return "thread"
    chosen = os.environ.get(WRITER_ENV, "").strip().lower()
    if chosen in WRITERS:
        return chosen
    if chosen:
        logger.warning(
            "%s=%r is neither of %s; choosing by the trial count.", WRITER_ENV, chosen, WRITERS
        )
    return "process" if num_trials >= PROCESS_WRITER_FROM_TRIALS else "thread"


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
        objectives: Several objectives make a multi-objective sweep: trials are ranked by
            Pareto front, each child run is tagged with its front, and the parent run holds
            the objectives, the constraints, the front (artifact ``pareto_front.json``) and its
            hypervolume. The first must be ``metric``/``mode``. Empty or one: a single metric.
        constraints: Bounds on the objectives' values; a trial that breaks one is infeasible.
        pick: The rule that picks the best trial from the front (`sweeplab.pareto.parse_pick`);
            ``None``: the first trial of the ranking.
        writer: Where the child runs are written from: ``"thread"`` (a thread of this process)
            or ``"process"`` (a child process, which keeps MLflow's work off this process's
            GIL; it costs an interpreter and MLflow's import, about 3 CPU-seconds, at start).
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
        objectives: tuple[Objective, ...] = (),
        constraints: tuple[Constraint, ...] = (),
        pick: str | None = None,
        writer: str = "thread",
    ) -> None:
        _check(mode, rank_by)
        if writer not in WRITERS:
            raise ValueError(f"`writer` must be one of {WRITERS}, but got {writer=!r}.")
        self.writer = writer
        if len(objectives) > 1:
            _check_objectives(objectives)
            if objectives[0] != Objective(metric, mode):
                raise ValueError(
                    f"The first objective must be the metric, but got {objectives[0]} "
                    f"for {metric=!r}, {mode=!r}."
                )
            if pick is not None:
                parse_pick(pick, objectives)
        elif constraints or pick is not None:
            raise ValueError(
                "`constraints` and `pick` need several objectives, but got "
                f"{objectives=!r} with {constraints=!r}, {pick=!r}."
            )
        self.objectives = tuple(objectives) if len(objectives) > 1 else ()
        self.constraints = tuple(constraints)
        self.pick = pick
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
        self._parent: ParentRun | None = None
        self._events: TrialEvents | None = None
        self._flusher: Flusher | WriterProcess | None = None
        self._resolved_uri = ""

    # -- lifecycle ---------------------------------------------------------------------------

    def _new_client(self) -> Any:
        from mlflow import MlflowClient

        return MlflowClient(self._resolved_uri)

    def start(self, started_at: float | None = None) -> None:
        """Creates the experiment and the parent run, or reopens them with ``resume=True``.

        Args:
            started_at: When the sweep started (epoch seconds), the new parent run's start
                time; now when None.
        """
        self._resolved_uri = prepare_store(self.tracking_uri)
        self.storage_dir.mkdir(parents=True, exist_ok=True)
        record = self.storage_dir / PARENT_RUN_FILE
        existing: dict[str, Any] = {}
        try:
            # MLflow opens the store here: a store it cannot open is reported as below.
            parent = ParentRun(
                self._new_client(),
                sweep_name=self.sweep_name,
                metric=self.metric,
                rank_by=self.rank_by,
                register_model=self.register_model,
            )
            if self.resume and record.exists():
                existing = parent.reopen(json.loads(record.read_text())["parent_run_id"])
            else:
                if self.resume:
                    logger.warning(
                        "No %s in %s; starting a new parent run.", record.name, record.parent
                    )
                parent.create(
                    self._parent_params(),
                    self.spec_path,
                    self.space_yaml,
                    self._parent_tags(),
                    started_at=started_at,
                )
        except SweeplabError:
            raise
        except Exception as error:
            raise TrackingError(
                f"Cannot record sweep {self.sweep_name!r} in MLflow at {self._resolved_uri!r}: "
                f"{str(error).splitlines()[0] if str(error) else type(error).__name__}"
            ) from error
        assert parent.run_id is not None and parent.experiment_id is not None
        self._parent = parent
        self.parent_run_id, self.experiment_id = parent.run_id, parent.experiment_id
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
        if self.writer == "process":
            self._flusher = WriterProcess(
                tracking_uri=self._resolved_uri,
                experiment_id=self.experiment_id,
                parent_run_id=self.parent_run_id,
            )
        else:
            self._flusher = Flusher(
                client_factory=self._new_client,
                experiment_id=self.experiment_id,
                parent_run_id=self.parent_run_id,
                bulk_factory=partial(
                    sql_bulk, self._resolved_uri, self.experiment_id, self.parent_run_id
                ),
            )
        self._events = TrialEvents(
            metric=self.metric,
            mode=self.mode,
            rank_by=self.rank_by,
            config_decoder=self.config_decoder,
            scheduler_name=self.scheduler_name,
            max_iterations=self.max_iterations,
            backfill=self.resume,
            sink=self._flusher,
            existing=existing,
            objectives=self.objectives,
            constraints=self.constraints,
        )
        self._flusher.start()

    def _parent_params(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "mode": self.mode,
            "rank_by": self.rank_by,
            "scheduler": self.scheduler_name,
            **({"max_iterations": self.max_iterations} if self.max_iterations else {}),
            **self.settings,
        }

    def _parent_tags(self) -> dict[str, str]:
        if not self.objectives:
            return {}
        return {
            OBJECTIVES_TAG: json.dumps([[o.name, o.mode] for o in self.objectives]),
            CONSTRAINTS_TAG: json.dumps([str(c) for c in self.constraints]),
        }

    def log_warm_start(self, source: str, document: Mapping[str, Any]) -> None:
        """Records where a warm start's configs came from on the parent run.

        Sets the tag ``sweeplab.warm_start`` to ``source`` and logs ``document`` as the
        artifact ``warm_start.json``.
        """
        if self._parent is None:
            raise TrackingError("SweepTracker.start() must be called before log_warm_start().")
        self._parent.log_warm_start(source, document)

    def tune_callback(self) -> Any:
        """The ``ray.tune.Callback`` to pass in ``ray.tune.RunConfig(callbacks=[...])``."""
        if self._flusher is None:
            raise TrackingError("SweepTracker.start() must be called before tune_callback().")
        from sweeplab.tracking._callback import MlflowTrialCallback

        return MlflowTrialCallback(self)

    # -- events (driver thread): the tracker's own interface ------------------------------------
    # The engine's Tune callback (or, with plain Ray Tune, `tune_callback()`) calls these with
    # Tune's own record of the trial: its config as Tune holds it, its folder for a resumed
    # sweep's backfill. None of them blocks on I/O: the flusher delivers.

    def _trial_events(self) -> TrialEvents:
        if self._events is None:
            raise TrackingError("SweepTracker.start() must be called before trial events.")
        return self._events

    def trial_added(self, trial: Any) -> None:
        """The sweep learned of `trial` (a Tune trial): sampled, or found by a resumed sweep."""
        self._trial_events().register(trial)

    def trial_started(self, trial: Any) -> None:
        """`trial` started, or resumed after a pause, a retry or a resumed sweep."""
        self._trial_events().on_start(trial)

    def trial_retried(self, trial: Any) -> None:
        """`trial` failed and will restart from its latest checkpoint."""
        self._trial_events().on_recover(trial)

    def trial_reported(self, trial: Any, result: Mapping[str, Any]) -> None:
        """`trial` reported `result` (its metrics, with Tune's ``training_iteration``)."""
        self._trial_events().on_result(trial, result)

    def trial_ended(self, trial: Any) -> None:
        """`trial` ended: finished, stopped early or diverged, told apart from its results."""
        self._trial_events().on_complete(trial)

    def trial_failed(self, trial: Any, error: str | None) -> None:
        """`trial` failed for good; `error` is its error file's text, if any."""
        self._trial_events().on_error(trial, error)

    def note_exploit(
        self, trial_id: str, donor_id: str, iteration: int, new_config: dict[str, Any]
    ) -> None:
        """Records that PBT replaced a trial's config (and weights) with a donor's.

        Call it on the driver when the exploit happens. ``new_config`` is the trial's new
        Tune config (it goes through ``config_decoder``). Numeric values are logged as metrics
        ``config.<param>`` at step ``iteration``; other values that changed as tags
        ``sweeplab.config.<param>@<iteration>``.
        """
        events = self._trial_events()
        if trial_id not in events.trials:
            raise TrackingError(f"note_exploit: trial {trial_id!r} is unknown to the tracker.")
        events.note_exploit(trial_id, donor_id, iteration, new_config)

    # -- the end ------------------------------------------------------------------------------

    def records(self) -> list[TrialRecord]:
        """The current (unranked) records of the trials."""
        return self._events.records() if self._events is not None else []

    def finish(self, status: str = "FINISHED") -> SweepSummary:
        """Delivers everything, ranks the trials, records the best one and ends the runs.

        The child runs get their rank (tag ``sweeplab.rank``) and a run name that sorts by it
        (``r01 <trial id> <metric>=<value>``); the parent run and ``best_config.json`` in
        ``storage_dir`` get the best trial (:func:`~sweeplab.tracking.best_config_document`).
        A multi-objective sweep's child runs also get their front (``sweeplab.front``), and
        its parent run the front as the artifact ``pareto_front.json`` and its hypervolume.

        Args:
            status: Final status of the parent run: ``FINISHED``, ``FAILED`` or ``KILLED``.

        Returns:
            The ranked trials.
        """
        if status not in RUN_STATUSES:
            raise ValueError(f"`status` must be one of {RUN_STATUSES}, but got {status=!r}.")
        flusher, events, parent = self._flusher, self._events, self._parent
        if flusher is None or events is None or parent is None:
            raise TrackingError("SweepTracker.start() must be called before finish().")
        events.end_running(status)
        flusher.drain(self.drain_timeout_s)
        ranked = events.rank()
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
            tracking_uri=self._resolved_uri,
            objectives=self.objectives,
            constraints=self.constraints,
            pick_rule=self.pick,
        )
        best_doc = best_config_document(summary, self.sweep_name)
        (self.storage_dir / BEST_CONFIG_FILE).write_text(json.dumps(best_doc, indent=2))
        with_retries(
            lambda: parent.record_best(summary.best, best_doc, len(events.trials)),
            self.drain_timeout_s,
        )
        if summary.multi_objective:
            with_retries(lambda: parent.record_front(summary), self.drain_timeout_s)
        with_retries(lambda: parent.terminate(status), self.drain_timeout_s)
        return summary
