"""The tracker's writer process against a real SQLite MLflow store, fed trial events (no Ray)."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from mlflow_store import store_uri

from sweeplab.tracking import WRITER_ENV, SweepTracker, writer_for
from sweeplab.tracking._writer import WriterProcess


class _Trial:
    """The attributes of a Tune trial the tracker reads."""

    def __init__(self, trial_id: str, x: float) -> None:
        self.trial_id = trial_id
        self.config = {"x": x, "opt": {"name": "sgd"}}
        self.local_path = self.path = self.error_file = None


def _tracker(uri: str, storage: Path, writer: str) -> SweepTracker:
    return SweepTracker(
        tracking_uri=uri, sweep_name="w", storage_dir=storage, metric="loss", mode="min",
        max_iterations=3, drain_timeout_s=60, writer=writer,
    )  # fmt: skip


def _trials(tracker: SweepTracker, count: int, start: int = 0) -> None:
    for n in range(start, start + count):
        trial = _Trial(f"t_{n:03d}", float(n))
        tracker.trial_added(trial)
        tracker.trial_started(trial)
        for step in range(1, 1 + n % 3 + 1):
            loss = (n * 7 % 11) / (step + 1)
            tracker.trial_reported(
                trial, {"loss": loss, "acc": 1 - loss, "training_iteration": step}
            )
        if n == 5:
            tracker.trial_failed(trial, "ValueError: boom")
        else:
            tracker.trial_ended(trial)


def _content(uri: str) -> dict[str, Any]:
    """Every child run's name, status, tags, params and metric histories, by trial id."""
    from mlflow import MlflowClient

    client = MlflowClient(uri)
    (experiment,) = [e for e in client.search_experiments() if e.name == "w"]
    runs = client.search_runs(
        [experiment.experiment_id], filter_string="tags.`sweeplab.role` = 'trial'"
    )
    content = {}
    for run in runs:
        tags = {k: v for k, v in run.data.tags.items() if k != "mlflow.parentRunId"}
        histories = {
            key: sorted((m.step, m.value) for m in client.get_metric_history(run.info.run_id, key))
            for key in run.data.metrics
        }
        content[tags["sweeplab.trial_id"]] = {
            "name": run.info.run_name,
            "status": run.info.status,
            "tags": tags,
            "params": run.data.params,
            "metrics": histories,
        }
    return content


def test_process_writer_records_what_the_thread_writer_records(tmp_path: Path) -> None:
    contents, documents = [], []
    for writer in ("thread", "process"):
        uri = store_uri(tmp_path / writer)
        tracker = _tracker(uri, tmp_path / writer / "run", writer)
        tracker.start()
        _trials(tracker, 12)
        summary = tracker.finish()
        assert all(record.run_id for record in summary.trials)
        contents.append(_content(uri))
        document = json.loads((tmp_path / writer / "run" / "best_config.json").read_text())
        documents.append(
            {
                k: v
                for k, v in document.items()
                if k not in ("mlflow_run_id", "parent_run_id", "tracking_uri")
            }
        )
    thread, process = contents
    assert len(thread) == 12 and thread["t_005"]["status"] == "FAILED"
    assert thread["t_004"]["metrics"]["loss"] == [(1, 4 * 7 % 11 / 2), (2, 4 * 7 % 11 / 3)]
    assert process == thread
    assert documents[0] == documents[1]


def test_writer_ignores_ctrl_c_and_a_killed_writer_is_reported(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    uri = store_uri(tmp_path)
    tracker = _tracker(uri, tmp_path / "run", "process")
    tracker.start()
    writer = tracker._flusher
    assert isinstance(writer, WriterProcess) and writer._process is not None
    _trials(tracker, 2)
    assert writer.drain(60)
    os.kill(writer._process.pid, signal.SIGINT)  # Ctrl-C is the driver's to handle
    _trials(tracker, 2, start=2)
    assert writer.drain(60)
    assert writer._process.poll() is None
    with caplog.at_level(logging.ERROR, logger="sweeplab.tracking"):
        os.kill(writer._process.pid, signal.SIGKILL)
        deadline = time.monotonic() + 20
        while writer._broken is None and time.monotonic() < deadline:
            time.sleep(0.05)
        _trials(tracker, 3, start=4)
        summary = tracker.finish()
    (error,) = [r.getMessage() for r in caplog.records if "writer process" in r.getMessage()]
    assert "exited with code -9" in error and "missing from MLflow" in error
    assert len(summary.trials) == 7
    assert (tmp_path / "run" / "best_config.json").exists()
    written = _content(uri)
    assert sorted(written) == [f"t_{n:03d}" for n in range(4)]  # delivered before the kill


DRIVER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from sweeplab.tracking import SweepTracker

    tracker = SweepTracker(tracking_uri=sys.argv[1], sweep_name="w", storage_dir=Path(sys.argv[2]),
                           metric="loss", mode="min", writer="process")
    tracker.start()
    print(tracker._flusher._process.pid, flush=True)
    time.sleep(600)
    """
)


def test_writer_exits_when_its_driver_is_killed(tmp_path: Path) -> None:
    driver = subprocess.Popen(
        [sys.executable, "-c", DRIVER, store_uri(tmp_path), str(tmp_path / "run")],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert driver.stdout is not None
        child = int(driver.stdout.readline())
        driver.kill()
        driver.wait(timeout=10)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and _alive(child):
            time.sleep(0.1)
        assert not _alive(child), "the writer outlived its driver"
    finally:
        driver.kill()


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
    return status != "Z"


def test_writer_for_chooses_by_trial_count_and_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(WRITER_ENV, raising=False)
    assert (writer_for(99), writer_for(100)) == ("thread", "process")
    monkeypatch.setenv(WRITER_ENV, "process")
    assert writer_for(1) == "process"
    monkeypatch.setenv(WRITER_ENV, "thread")
    assert writer_for(10_000) == "thread"
    monkeypatch.setenv(WRITER_ENV, "fast")
    assert writer_for(10_000) == "process"
    with pytest.raises(ValueError, match="`writer` must be one of"):
        SweepTracker(
            tracking_uri=None, sweep_name="w", storage_dir=Path("."), metric="m", mode="min",
            writer="fast",
        )  # fmt: skip


def test_an_unreachable_store_is_logged_here_and_what_waits_is_kept(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")  # the child's first try fails
    writer = WriterProcess(
        tracking_uri="http://127.0.0.1:1", experiment_id="1", parent_run_id="p", hold_s=0
    )
    with caplog.at_level(logging.WARNING, logger="sweeplab.tracking"):
        writer.start()
        try:
            writer.add_run("t1", tags={"sweeplab.trial_id": "t1"}, params={"x": "1"})
            writer.log_metrics("t1", [("loss", 0.5, 1, 1)])
            # The child's first attempt comes after it has imported MLflow, which takes longer
            # than any fixed wait on a loaded machine: drain until its warning has reached here.
            deadline = time.monotonic() + 120
            while not _warnings(caplog, "not reachable") and time.monotonic() < deadline:
                assert not writer.drain(1)
            path = tmp_path / "undelivered.jsonl"
            assert writer.write_undelivered(path) == 3  # the run, its param, its point
        finally:
            writer.abandon()
    kinds = [json.loads(line)["kind"] for line in path.read_text().splitlines()]
    assert sorted(kinds) == ["metric", "param", "run"]
    (warning,) = _warnings(caplog, "not reachable")
    assert warning.name == "sweeplab.tracking._flusher"  # the child's record, logged here


def _warnings(caplog: pytest.LogCaptureFixture, phrase: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if phrase in r.getMessage()]
