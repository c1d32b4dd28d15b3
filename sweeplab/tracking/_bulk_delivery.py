"""The flusher's path to a SQL store through the bulk writer (:mod:`sweeplab.tracking._bulk`).

:class:`BulkDelivery` writes the trial buffers the writer can take, up to :data:`BULK_RUNS`
runs per transaction. What a write takes leaves its buffers until the write fails, when it goes
back in front of whatever arrived since; the trials it cannot take, and any batch it fails to
write, are left for MLflow's client.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

from sweeplab.tracking._bulk import RUN_NAME_TAG, BulkRun, SqlBulk, new_run_id
from sweeplab.tracking._run_buffer import (
    MAX_PARAM_LENGTH,
    MAX_TAG_LENGTH,
    MetricPoint,
    RunBuffer,
    unlogged,
)

logger = logging.getLogger(__name__)

BULK_RUNS = 200


class BulkDelivery:
    """Writes trial buffers through a bulk writer, :data:`BULK_RUNS` runs per transaction.

    Args:
        bulk: The bulk writer.
        buffers: The flusher's buffers, by trial id.
        lock: The flusher's lock, which guards ``buffers``.
    """

    def __init__(
        self, bulk: SqlBulk, *, buffers: dict[str, RunBuffer], lock: threading.Lock
    ) -> None:
        self._bulk = bulk
        self._buffers = buffers
        self._lock = lock
        self.delivered_points = 0

    def flush(self, trial_ids: list[str]) -> list[str]:
        """Writes the buffers the bulk writer can take; returns the trials left for MLflow's
        client."""
        bulk = self._bulk
        taken: list[_Taken] = []
        rest: list[str] = []
        with self._lock:  # what a bulk write takes leaves the buffers until it fails
            for trial_id in trial_ids:
                buffer = self._buffers[trial_id]
                run = _bulk_run(buffer)
                if run is None or not bulk.accepts(run):
                    rest.append(trial_id)
                    continue
                taken.append(_Taken(buffer, run, buffer.metrics, buffer.params, buffer.tags))
                buffer.metrics, buffer.params, buffer.tags = [], {}, {}
        try:
            reused = [t.run.run_id for t in taken if not t.run.create]
            active = bulk.existing(reused, active=True) if reused else set()
        except Exception:
            self._restore(taken)
            raise
        deleted = [t for t in taken if not t.run.create and t.run.run_id not in active]
        self._restore(deleted)
        rest += [t.buffer.trial_id for t in deleted]
        taken = [t for t in taken if t.run.create or t.run.run_id in active]
        for start in range(0, len(taken), BULK_RUNS):
            rest += self._write(taken[start : start + BULK_RUNS])
        return rest

    def _write(self, batch: list[_Taken]) -> list[str]:
        """Writes one transaction; returns the trials to send through MLflow's client instead."""
        try:
            self._bulk.write([t.run for t in batch])
            written = True
        except Exception:
            logger.debug("a bulk write of %d runs failed", len(batch), exc_info=True)
            created = [t.run.run_id for t in batch if t.run.create]
            try:
                # A commit whose answer was lost: its runs are there.
                written = bool(created) and bool(self._bulk.existing(created))
            except Exception:
                self._restore(batch)
                raise
        if not written:
            self._restore(batch)
            return [t.buffer.trial_id for t in batch]
        with self._lock:
            for t in batch:
                buffer, run = t.buffer, t.run
                if run.create:
                    buffer.run_id = run.run_id
                    buffer.create_tags = {}
                logged = buffer.logged if buffer.logged is not None else {}
                for key, value, _, step in run.metrics:
                    logged.setdefault(key, set()).add((step, value))
                buffer.logged = logged
                if run.terminal is not None and buffer.terminal == run.terminal:
                    buffer.terminal = None
                buffer.since = time.monotonic() if buffer.pending() else None
                self.delivered_points += len(run.metrics)
        return []

    def _restore(self, batch: list[_Taken]) -> None:
        """Puts what a failed bulk write took back into the buffers, before what came since."""
        with self._lock:
            for t in batch:
                t.buffer.metrics[:0] = t.metrics
                t.buffer.params = {**t.params, **t.buffer.params}
                t.buffer.tags = {**t.tags, **t.buffer.tags}


@dataclass
class _Taken:
    """A buffer's data taken for a bulk write: the run to write and what left the buffer."""

    buffer: RunBuffer
    run: BulkRun
    metrics: list[MetricPoint]
    params: dict[str, str]
    tags: dict[str, str]


def _bulk_run(buffer: RunBuffer) -> BulkRun | None:
    """What a bulk write would send for `buffer` (without taking it), or None where it must go
    through MLflow's client: a run to reopen, a creation that failed, a reused run whose logged
    steps are not read yet, params for an existing run."""
    if buffer.reopen or buffer.create_failed or buffer.logged is None:
        return None
    metrics = unlogged(buffer.metrics, buffer.logged)
    tags = {k: v[:MAX_TAG_LENGTH] for k, v in buffer.tags.items()}
    if buffer.run_id is not None:
        if buffer.params:
            return None
        return BulkRun(
            run_id=buffer.run_id,
            tags=tags,
            metrics=metrics,
            terminal=buffer.terminal,
            end_time=buffer.end_time,
        )
    create_tags = {**buffer.create_tags, **tags}
    run_name = create_tags.get(RUN_NAME_TAG, buffer.run_name)
    if run_name is None:
        return None
    create_tags[RUN_NAME_TAG] = run_name
    return BulkRun(
        run_id=new_run_id(),
        tags={k: v[:MAX_TAG_LENGTH] for k, v in create_tags.items()},
        params={k: v[:MAX_PARAM_LENGTH] for k, v in buffer.params.items()},
        metrics=metrics,
        terminal=buffer.terminal,
        end_time=buffer.end_time,
        create=True,
        run_name=run_name,
        start_time=buffer.start_time,
    )
