"""The loop's experiment state survives a driver killed while it writes ended trials' state.

A writer process journals trials and writes snapshots as fast as it can and is SIGKILLed at
random moments, five times over the same run folder; after each kill the state is restored as
``--resume`` restores it, and the next writer appends to it. No Ray is started: what is checked
is the files a kill can cut short (the journal's last line, the snapshot's temporary file).
"""

from __future__ import annotations

import json
import os
import pickle
import random
import signal
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest

from sweeplab.engine._loop_state import ENDED_FILE, STATE_FILE, LoopSnapshots, restore_loop
from sweeplab.errors import SpecError
from sweeplab.loop import TERMINATED, BackendReport, LoopTrial, TrialLoop, sweep_loop
from sweeplab.space import uniform
from sweeplab.spec import Sweep

WRITER = """
import sys
from pathlib import Path

from test_loop_state_kill import build_loop, ended_trial, journal_ids

from sweeplab.engine._loop_state import LoopSnapshots

run_dir = Path(sys.argv[1])
loop = build_loop()
snapshots = LoopSnapshots(run_dir)
index = len(journal_ids(run_dir))
while True:
    trial = ended_trial(index)
    snapshots.made(trial)
    snapshots.ended(trial)
    print(trial.trial_id, flush=True)  # its `ended` line is written whole
    snapshots.save(loop)
    index += 1
"""


class _NoBackend:
    def train(self, trial: LoopTrial, iteration: int) -> None:
        raise AssertionError("nothing trains here")

    def next_report(self) -> BackendReport | None:
        return None

    def end(self, trial: LoopTrial) -> None:
        pass

    def copy_checkpoint(self, donor: LoopTrial, trial: LoopTrial) -> None:
        pass


def build_loop() -> TrialLoop:
    sweep = Sweep(
        name="killed",
        train_func=lambda config: None,
        space={"x": uniform(0, 1)},
        metric="loss",
        mode="min",
        searcher="random",
        scheduler="fifo",
        num_trials=1_000_000,
        max_iterations=3,
    )
    return sweep_loop(sweep, _NoBackend(), workers=1)


def ended_trial(index: int) -> LoopTrial:
    """An ended trial whose journal line (about 20 KB) takes several writes of Python's 8 KB
    buffer, so that a kill can land between them."""
    config = {"x": index / 1e6, "notes": "n" * 20_000}
    trial = LoopTrial(f"t{index:06d}", config, config, index=index)
    trial.status, trial.outcome = TERMINATED, "terminated"
    return trial


def journal_ids(run_dir: Path) -> list[str]:
    """The ended trials of the journal, read as `restore_loop` reads it."""
    from sweeplab.engine._loop_state import _json_lines

    return [e["trial_id"] for e in _json_lines(run_dir / ENDED_FILE) if e["outcome"]]


def _restore(run_dir: Path) -> None:
    loop = build_loop()
    restore_loop(loop, run_dir, run_dir / "trials")
    assert loop.live == {}, "an ended trial came back to life"


def test_a_driver_killed_while_it_writes_loses_no_ended_trial(tmp_path: Path) -> None:
    here = str(Path(__file__).parent)
    chance = random.Random(7)
    confirmed: list[str] = []
    for _ in range(5):
        writer = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(tmp_path)],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": here},
        )
        assert writer.stdout is not None
        first = writer.stdout.readline()  # it runs: wait for its first whole trial
        assert first, "the writer did not start"
        time.sleep(chance.uniform(0.05, 0.5))
        os.kill(writer.pid, signal.SIGKILL)
        rest, _ = writer.communicate(timeout=30)
        confirmed += [first.strip(), *rest.split()]
        _restore(tmp_path)  # as --resume does: the snapshot loads, the journal is cut whole
        text = (tmp_path / ENDED_FILE).read_text()
        assert text.endswith("\n")
        assert len(text.splitlines()) == len([json.loads(line) for line in text.splitlines()])
    ids = journal_ids(tmp_path)
    assert len(ids) == len(set(ids)), "a trial journaled twice"
    missing = [trial for trial in confirmed if trial not in set(ids)]
    assert missing == [], f"ended trials lost: {missing[:5]}"
    assert len(ids) >= len(confirmed) > 5
    assert list(tmp_path.glob(f".{STATE_FILE}.*.tmp")) == []


def test_a_journal_line_cut_short_is_cut_off_before_the_next_is_appended(
    tmp_path: Path,
) -> None:
    snapshots = LoopSnapshots(tmp_path)
    snapshots.save(build_loop())
    for index in range(3):
        snapshots.ended(ended_trial(index))
    journal = tmp_path / ENDED_FILE
    text = journal.read_text()
    journal.write_text(text[: len(text) - 1000])  # the third line, cut by a kill
    (tmp_path / f".{STATE_FILE}.123.tmp").write_bytes(b"half a snapshot")
    _restore(tmp_path)
    for index in range(3, 5):  # the resumed sweep ends two more trials
        snapshots.ended(ended_trial(index))
    assert journal_ids(tmp_path) == ["t000000", "t000001", "t000003", "t000004"]
    assert list(tmp_path.glob(f".{STATE_FILE}.*.tmp")) == []


def test_a_snapshot_torn_by_a_kill_leaves_the_last_one_whole(tmp_path: Path) -> None:
    """The snapshot is written beside and renamed: what a kill leaves is the previous one."""
    snapshots = LoopSnapshots(tmp_path)
    snapshots.save(build_loop())
    before = (tmp_path / STATE_FILE).read_bytes()
    (tmp_path / f".{STATE_FILE}.999.tmp").write_bytes(before[: len(before) // 2])
    _restore(tmp_path)
    assert (tmp_path / STATE_FILE).read_bytes() == before


def test_a_snapshot_of_classes_this_sweeplab_lacks_is_refused_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A snapshot written by a sweeplab with other classes (one since removed) is a SpecError
    that says to run without --resume, not a traceback."""
    gone = types.ModuleType("sweeplab.gone")
    gone.Gone = type("Gone", (), {"__module__": "sweeplab.gone"})  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sweeplab.gone", gone)
    (tmp_path / STATE_FILE).write_bytes(pickle.dumps({"scheduler": gone.Gone()}))
    monkeypatch.delitem(sys.modules, "sweeplab.gone")
    with pytest.raises(SpecError) as caught:
        _restore(tmp_path)
    message = str(caught.value)
    assert "cannot be read by this sweeplab (ModuleNotFoundError" in message
    assert message.endswith("without --resume (its ended trials stay in MLflow).")
