"""Background delivery of trial runs, metrics, params and tags to MLflow.

The sweep's events arrive on the driver's trial loop, so they must never wait for MLflow. It only
appends to per-trial buffers; one daemon thread creates child runs and sends the buffers with
``MlflowClient.log_batch``. When the store cannot be reached the data stays in the buffers and
the thread retries with exponential backoff (capped), so a tracking server may go away for
minutes without losing a point.

Each MLflow call costs the driver milliseconds of CPU, so a running trial's data is held up to
``hold_s`` and sent in one go: a trial that ends within that time is recorded with three calls
(``create_run`` with every tag, one ``log_batch`` with its params and metrics,
``set_terminated``). A trial that has ended, a drain and a large backlog are sent at once.

Where a bulk writer is given (:mod:`sweeplab.tracking._bulk`, for a SQL store), the buffers it
can take are written through it instead (:mod:`sweeplab.tracking._bulk_delivery`), many runs
per transaction; the rest, and any batch it fails to write, go through MLflow's client.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from sweeplab.keys import TRIAL_ID_TAG
from sweeplab.tracking._bulk import RUN_NAME_TAG, SqlBulk
from sweeplab.tracking._bulk_delivery import BulkDelivery
from sweeplab.tracking._run_buffer import (
    MAX_METRICS_PER_BATCH,
    MAX_PARAM_LENGTH,
    MAX_PARAMS_TAGS_PER_BATCH,
    MAX_TAG_LENGTH,
    MetricPoint,
    RunBuffer,
    unlogged,
)

logger = logging.getLogger(__name__)

QUIET_URLS = "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT"  # mlflow.environment_variables
PARENT_TAG = "mlflow.parentRunId"


def _is_permanent(error: Exception) -> bool:
    """Whether retrying cannot help (MLflow rejected the request itself)."""
    from mlflow.exceptions import MlflowException

    if not isinstance(error, MlflowException):
        return False
    status = error.get_http_status_code()
    return 400 <= status < 500


class Flusher:
    """Sends trial data to MLflow from a background thread.

    Args:
        client_factory: Builds the ``MlflowClient`` used by the thread.
        experiment_id: Experiment of the child runs.
        parent_run_id: Parent (sweep) run of the child runs.
        interval_s: How often the thread looks for buffers to send.
        max_backoff_s: Longest wait between two attempts while the store is unreachable.
        hold_s: How long a running trial's data may wait, to be sent in fewer calls.
        wake_at: Pending records at which everything is sent at once.
        bulk_factory: Builds the bulk writer used by the thread
            (:func:`~sweeplab.tracking._bulk.sql_bulk`), or None where there is none.
    """

    def __init__(
        self,
        *,
        client_factory: Callable[[], Any],
        experiment_id: str,
        parent_run_id: str,
        interval_s: float = 0.5,
        max_backoff_s: float = 30.0,
        hold_s: float = 2.0,
        wake_at: int = 5000,
        bulk_factory: Callable[[], SqlBulk | None] | None = None,
    ) -> None:
        self._bulk_factory = bulk_factory
        self._bulk: BulkDelivery | None = None
        self._client_factory = client_factory
        self._experiment_id = experiment_id
        self._parent_run_id = parent_run_id
        self._interval_s = interval_s
        self._max_backoff_s = max_backoff_s
        self._hold_s = hold_s
        self._wake_at = wake_at
        self._draining = 0
        self._buffers: dict[str, RunBuffer] = {}
        # The buffers that may hold data to send: a sweep's ended trials leave it, so that the
        # work per event and per flush does not grow with the number of trials.
        self._waiting: dict[str, RunBuffer] = {}
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._busy = False
        self._failures = 0
        self._next_attempt = 0.0
        self._thread: threading.Thread | None = None
        self._url_printing: str | None = None
        self.dropped: list[dict[str, Any]] = []
        self._client_points = 0

    @property
    def delivered_points(self) -> int:
        """The metric points delivered so far, through MLflow's client and the bulk writer."""
        return self._client_points + (self._bulk.delivered_points if self._bulk is not None else 0)

    # -- producer side (any thread; never blocks on I/O) ------------------------------------

    def start(self) -> None:
        # With a tracking server, `set_terminated` reads each child run back to print two
        # "View run" lines: a request and two lines of output per trial. MLflow's switch turns
        # that off while the flusher runs; the parent run's link is still printed at the end.
        self._url_printing = os.environ.get(QUIET_URLS)
        os.environ[QUIET_URLS] = "true"
        self._thread = threading.Thread(target=self._run, name="sweeplab-mlflow", daemon=True)
        self._thread.start()

    def add_run(
        self,
        trial_id: str,
        *,
        tags: dict[str, str],
        params: dict[str, str],
        run_name: str | None = None,
        existing_run_id: str | None = None,
        reopen: bool = False,
    ) -> None:
        """Registers a trial: creates its child run later, or reuses ``existing_run_id``."""
        with self._lock:
            if trial_id in self._buffers:
                return
            buffer = RunBuffer(trial_id=trial_id, run_id=existing_run_id, run_name=run_name)
            if existing_run_id is None:
                buffer.create_tags = {**tags, PARENT_TAG: self._parent_run_id}
                buffer.start_time = int(time.time() * 1000)
                buffer.params = dict(params)
                buffer.logged = {}
            else:
                buffer.reopen = reopen
            self._note_waiting(buffer)
            self._buffers[trial_id] = buffer

    def reopen(self, trial_id: str) -> None:
        with self._lock:
            buffer = self._buffers[trial_id]
            buffer.terminal = None
            buffer.reopen = buffer.run_id is not None
            self._note_waiting(buffer)

    def log_metrics(self, trial_id: str, points: Iterable[MetricPoint]) -> None:
        with self._lock:
            buffer = self._buffers[trial_id]
            buffer.metrics.extend(points)
            self._note_waiting(buffer)
            if self._pending_locked() >= self._wake_at:
                self._wake.set()

    def set_tags(self, trial_id: str, tags: dict[str, str]) -> None:
        with self._lock:
            buffer = self._buffers[trial_id]
            buffer.tags.update(tags)
            self._note_waiting(buffer)

    def end_run(self, trial_id: str, status: str) -> None:
        with self._lock:
            buffer = self._buffers[trial_id]
            buffer.terminal = status
            buffer.end_time = int(time.time() * 1000)
            self._note_waiting(buffer)

    def run_id(self, trial_id: str) -> str | None:
        with self._lock:
            buffer = self._buffers.get(trial_id)
            return buffer.run_id if buffer else None

    def run_ids(self) -> dict[str, str]:
        """The child run id of every trial whose run exists."""
        with self._lock:
            return {t: b.run_id for t, b in self._buffers.items() if b.run_id is not None}

    def pending(self) -> int:
        with self._lock:
            return self._pending_locked()

    def _pending_locked(self) -> int:
        return sum(buffer.pending() for buffer in self._waiting.values())

    def _note_waiting(self, buffer: RunBuffer) -> None:
        buffer.note_waiting()
        self._waiting[buffer.trial_id] = buffer

    def drain(self, timeout_s: float) -> bool:
        """Waits until everything was delivered; returns whether it was within ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        self._next_attempt = 0.0
        with self._idle:
            self._draining += 1
            self._wake.set()
            try:
                while self._pending_locked() or self._busy:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return False
                    self._idle.wait(min(remaining, 0.2))
                    self._wake.set()
            finally:
                self._draining -= 1
        return True

    def abandon(self) -> None:
        """Stops the thread without delivering what is pending, as a killed driver would."""
        self._next_attempt = float("inf")
        self._stop.set()
        self._wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        if self._url_printing is None:
            os.environ.pop(QUIET_URLS, None)
        else:
            os.environ[QUIET_URLS] = self._url_printing

    def write_undelivered(self, path: Path) -> int:
        """Appends what could not be delivered to ``path`` (JSON lines); returns the count."""
        lines: list[dict[str, Any]] = list(self.dropped)
        with self._lock:
            for b in self._buffers.values():
                base = {"trial_id": b.trial_id, "run_id": b.run_id}
                if b.run_id is None:
                    lines.append({**base, "kind": "run", "tags": b.create_tags})
                lines += [
                    {**base, "kind": "param", "key": k, "value": v} for k, v in b.params.items()
                ]
                lines += [{**base, "kind": "tag", "key": k, "value": v} for k, v in b.tags.items()]
                lines += [
                    {**base, "kind": "metric", "key": k, "value": v, "timestamp": t, "step": s}
                    for k, v, t, s in b.metrics
                ]
                if b.terminal is not None:
                    lines.append({**base, "kind": "status", "value": b.terminal})
        if lines:
            with path.open("a", encoding="utf-8") as file:
                for line in lines:
                    file.write(json.dumps(line, default=str) + "\n")
        return len(lines)

    # -- consumer side (the flusher thread) -------------------------------------------------

    def _run(self) -> None:
        client = self._client_factory()
        if self._bulk_factory is not None:
            bulk = self._bulk_factory()
            if bulk is not None:
                self._bulk = BulkDelivery(bulk, buffers=self._buffers, lock=self._lock)
        while True:
            self._wake.wait(self._interval_s)
            self._wake.clear()
            stopping = self._stop.is_set()
            if time.monotonic() >= self._next_attempt:
                self._flush_all(client)
            if stopping:
                return

    def _flush_all(self, client: Any) -> None:
        with self._lock:
            now = time.monotonic()
            everything = (
                self._draining or self._stop.is_set() or self._pending_locked() >= self._wake_at
            )
            held_since = now - self._hold_s
            trial_ids = [
                t
                for t, b in self._waiting.items()
                if b.pending()
                and (
                    everything or b.terminal is not None or b.since is None or b.since <= held_since
                )
            ]
            self._busy = True
        try:
            if self._bulk is not None:
                trial_ids = self._bulk.flush(trial_ids)
            for trial_id in trial_ids:
                self._flush_one(client, trial_id)
        except Exception as error:
            self._failures += 1
            delay = min(0.5 * 2**self._failures, self._max_backoff_s)
            self._next_attempt = time.monotonic() + delay
            log = logger.warning if self._failures in (1, 5, 10) else logger.debug
            log(
                "MLflow is not reachable (attempt %d, retrying in %.1f s; nothing is lost): %s",
                self._failures,
                delay,
                str(error).splitlines()[0][:300] if str(error) else type(error).__name__,
            )
        else:
            if self._failures:
                logger.warning("MLflow is reachable again; delivering the buffered data.")
            self._failures = 0
        finally:
            with self._idle:
                for trial_id in [t for t, b in self._waiting.items() if not b.pending()]:
                    del self._waiting[trial_id]
                self._busy = False
                self._idle.notify_all()

    def _flush_one(self, client: Any, trial_id: str) -> None:
        from mlflow.entities import Metric, Param, RunTag

        with self._lock:
            buffer = self._buffers[trial_id]
            run_id = buffer.run_id
            create_failed = buffer.create_failed
            if run_id is None and not create_failed:
                # The tags set before the run exists go with its creation.
                buffer.create_tags.update(buffer.tags)
                buffer.tags = {}
                buffer.run_name = buffer.create_tags.pop(RUN_NAME_TAG, buffer.run_name)
            create_tags, run_name, start_time = (
                buffer.create_tags,
                buffer.run_name,
                buffer.start_time,
            )
        if run_id is None:
            run_id = self._find_run(client, trial_id) if create_failed else None
            if run_id is None:
                try:
                    run = client.create_run(
                        self._experiment_id,
                        start_time=start_time,
                        tags={k: v[:MAX_TAG_LENGTH] for k, v in create_tags.items()},
                        run_name=run_name,
                    )
                except Exception:
                    with self._lock:
                        buffer.create_failed = True
                    raise
                run_id = run.info.run_id
            with self._lock:
                buffer.run_id = run_id
        if buffer.reopen:
            client.update_run(run_id, status="RUNNING")
            with self._lock:
                buffer.reopen = False
        if buffer.logged is None and buffer.metrics:
            buffer.logged = self._read_logged_steps(client, run_id)

        with self._lock:
            metrics, buffer.metrics = buffer.metrics, []
            params, buffer.params = buffer.params, {}
            tags, buffer.tags = buffer.tags, {}
            if metrics and buffer.logged is None:  # arrived after the check above
                buffer.metrics, metrics = metrics, []
            logged = buffer.logged if buffer.logged is not None else {}
        fresh = unlogged(metrics, logged)
        for key, value, _, step in fresh:
            logged.setdefault(key, set()).add((step, value))
        param_items = [Param(k, v[:MAX_PARAM_LENGTH]) for k, v in params.items()]
        tag_items = [RunTag(k, v[:MAX_TAG_LENGTH]) for k, v in tags.items()]
        sent_metrics = 0
        try:
            while fresh[sent_metrics:] or param_items or tag_items:
                batch_params = param_items[:MAX_PARAMS_TAGS_PER_BATCH]
                batch_tags = tag_items[:MAX_PARAMS_TAGS_PER_BATCH]
                room = MAX_METRICS_PER_BATCH - len(batch_params) - len(batch_tags)
                chunk = fresh[sent_metrics : sent_metrics + room]
                try:
                    client.log_batch(
                        run_id,
                        metrics=[Metric(k, v, t, s) for k, v, t, s in chunk],
                        params=batch_params,
                        tags=batch_tags,
                    )
                except Exception as error:
                    if not _is_permanent(error):
                        raise
                    logger.warning("MLflow rejected a batch for trial %s: %s", trial_id, error)
                    self.dropped.append(
                        {
                            "trial_id": trial_id,
                            "run_id": run_id,
                            "kind": "rejected",
                            "error": str(error)[:500],
                        }
                    )
                sent_metrics += len(chunk)
                self._client_points += len(chunk)
                del param_items[: len(batch_params)]
                del tag_items[: len(batch_tags)]
        except Exception:
            with self._lock:
                for key, value, _, step in fresh[sent_metrics:]:
                    logged.get(key, set()).discard((step, value))
                buffer.metrics[:0] = fresh[sent_metrics:]
                buffer.params = {**{p.key: p.value for p in param_items}, **buffer.params}
                buffer.tags = {**{t.key: t.value for t in tag_items}, **buffer.tags}
            raise

        with self._lock:
            terminal, end_time = buffer.terminal, buffer.end_time
            ready = terminal is not None and not buffer.metrics and not buffer.tags
        if ready:
            client.set_terminated(run_id, status=terminal, end_time=end_time)
            with self._lock:
                if buffer.terminal == terminal:
                    buffer.terminal = None
        with self._lock:
            buffer.since = time.monotonic() if buffer.pending() else None

    def _find_run(self, client: Any, trial_id: str) -> str | None:
        """Looks for a run whose creation may have succeeded although its request failed."""
        runs = client.search_runs(
            [self._experiment_id],
            filter_string=(
                f"tags.`{PARENT_TAG}` = '{self._parent_run_id}' "
                f"and tags.`{TRIAL_ID_TAG}` = '{trial_id}'"
            ),
            max_results=1,
        )
        return runs[0].info.run_id if runs else None

    @staticmethod
    def _read_logged_steps(client: Any, run_id: str) -> dict[str, set[tuple[int, float]]]:
        run = client.get_run(run_id)
        return {
            key: {(m.step, m.value) for m in client.get_metric_history(run_id, key)}
            for key in run.data.metrics
        }
