"""The loop engine's experiment state: what `--resume` continues from, written atomically.

A snapshot holds the trial loop's scheduler and searcher (pickled whole, as Tune pickles
them), the trials not ended yet (config, status, reports) and each one's latest checkpoint. A
journal (``loop_ended.jsonl``) gets a line when a trial is made and when one ends. It is
written to a temporary file in the run folder and renamed over the last one, so a driver
killed while it writes leaves the previous snapshot whole. The engine writes one
after each report that made or ended a trial (what a resume must not make or run again), one
at most every few seconds while trials report, and one at the sweep's end.
"""

from __future__ import annotations

import json
import os
import pickle
import time
from pathlib import Path
from typing import Any

from sweeplab.errors import SpecError
from sweeplab.keys import CHECKPOINT_PATH_KEY
from sweeplab.loop import PAUSED, PENDING, TERMINATED, LoopTrial, TrialLoop

__all__ = ["ENDED_FILE", "STATE_FILE", "LoopSnapshots", "lost_trials", "restore_loop"]

STATE_FILE = "loop_state.pkl"
ENDED_FILE = "loop_ended.jsonl"
# Snapshots take at most 1/20 of the time between them.
_BUDGET = 20.0


class LoopSnapshots:
    """Writes the snapshots of one loop sweep (see the module's docstring).

    Args:
        run_dir: The run folder (the snapshot is ``run_dir/loop_state.pkl``).
        interval_s: The most time between two snapshots while trials only report.
    """

    def __init__(self, run_dir: Path, *, interval_s: float = 5.0) -> None:
        self.path = Path(run_dir) / STATE_FILE
        self.journal = Path(run_dir) / ENDED_FILE
        self.interval_s = interval_s
        self._last = -float("inf")
        self._took = 0.0

    def maybe_save(self, loop: TrialLoop, *, now: bool = False) -> None:
        """A snapshot, unless one was written less than `interval_s` ago. `now` (a trial made
        or ended): unless the snapshots would take more than a twentieth of the driver's time,
        as Tune bounds its own (a snapshot grows with the searcher's and scheduler's state)."""
        since = time.monotonic() - self._last
        if since >= self.interval_s or (now and since >= _BUDGET * self._took):
            self.save(loop)

    def save(self, loop: TrialLoop) -> None:
        import cloudpickle

        backend = loop.backend
        began = time.monotonic()
        live = list(loop.live)
        checkpoints = getattr(backend, "checkpoints", {})
        state = {
            "scheduler": loop.scheduler,
            "source": loop.source,
            "live": live,  # the ended ones are in the journal (`ended`)
            "checkpoints": {t: checkpoints[t] for t in live if t in checkpoints},
        }
        # Renamed over the last one once written whole: a killed driver leaves either. (Not
        # synced to disk: a killed process's writes survive it; a lost machine is not this.)
        temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        with temporary.open("wb") as file:
            cloudpickle.dump(state, file)
        os.replace(temporary, self.path)
        self._last = time.monotonic()
        self._took = self._last - began

    def made(self, trial: LoopTrial) -> None:
        """Journals a trial the searcher made (a resume ends it if no snapshot holds it)."""
        self._journal(trial, made=True)

    def ended(self, trial: LoopTrial) -> None:
        """Journals an ended trial (one line, appended): the snapshots leave ended trials out,
        so that one costs the same at the sweep's 10,000th trial as at its first."""
        self._journal(trial, made=False)

    def _journal(self, trial: LoopTrial, *, made: bool) -> None:
        line = {
            "trial_id": trial.trial_id,
            "index": trial.index,
            "outcome": None if made else trial.outcome,
            "config": trial.config,
        }
        with self.journal.open("a") as file:
            file.write(json.dumps(line, default=str) + "\n")


def restore_loop(loop: TrialLoop, run_dir: Path, trials_dir: Path) -> dict[Any, str]:
    """Puts the snapshot in `run_dir` into the freshly built `loop`; returns each trial's latest
    checkpoint for the backend.

    A trial that was training or paused when the driver died goes on from its latest checkpoint
    still on disk, found in the results it wrote (``trials_dir/<trial_id>/result.json``, which
    may be ahead of the snapshot): its reports after that checkpoint are dropped from the file
    and trained again. One with no checkpoint starts again. The scheduler and the searcher are
    as the snapshot left them.

    Raises:
        SpecError: If the run folder holds no snapshot (the sweep was killed before its first),
            or one this sweeplab cannot read (written by a version with other classes).
    """
    import cloudpickle

    path = Path(run_dir) / STATE_FILE
    if not path.exists():
        raise SpecError(
            f"--resume: {run_dir} holds no {STATE_FILE} (the sweep was stopped before its "
            "first snapshot); run it again without --resume."
        )
    try:
        with path.open("rb") as file:
            state = cloudpickle.load(file)
    except (ImportError, AttributeError, EOFError, pickle.UnpicklingError) as error:
        # Written by a sweeplab whose classes this one no longer has (or not whole).
        raise SpecError(
            f"--resume: {path} cannot be read by this sweeplab ({type(error).__name__}: "
            f"{error}); run the sweep again without --resume (its ended trials stay in MLflow)."
        ) from None
    # A driver killed while it wrote: a snapshot's temporary file left (the snapshot itself is
    # the previous one, whole), or the journal's last line cut short, which the lines this
    # sweep appends next would follow on the same line, unreadable.
    for temporary in path.parent.glob(f".{STATE_FILE}.*.tmp"):
        temporary.unlink(missing_ok=True)
    _cut_to_whole_lines(Path(run_dir) / ENDED_FILE)
    loop.scheduler = state["scheduler"]
    loop.source = state["source"]
    ended = _ended_trials(Path(run_dir) / ENDED_FILE, loop)
    live = [t for t in state["live"] if t.trial_id not in ended]
    for trial in state["live"]:
        if trial.trial_id in ended:
            # It ended after the snapshot: the scheduler and the searcher learn it now.
            _complete_late(loop, trial, ended[trial.trial_id], trials_dir)
    loop.trials = sorted([*ended.values(), *live], key=lambda t: t.index)
    loop.live = {}
    checkpoints: dict[Any, str] = state["checkpoints"]
    for trial in live:
        loop.live[trial] = None
        if trial.status == PENDING and not trial.reports:
            continue
        kept, checkpoint = _latest_checkpoint(trials_dir / trial.trial_id / "result.json")
        trial.reports = [(result, float(result.get("time_total_s") or 0.0)) for result in kept]
        trial.last_result = dict(kept[-1]) if kept else {}
        trial.time_total_s = float(trial.last_result.get("time_total_s") or 0.0)
        trial.status = PAUSED if kept else PENDING
        if checkpoint is None:
            checkpoints.pop(trial, None)
        else:
            checkpoints[trial] = checkpoint
    loop.running = 0
    return checkpoints


def _complete_late(loop: TrialLoop, trial: LoopTrial, record: LoopTrial, trials_dir: Path) -> None:
    """Tells the restored scheduler and searcher that `trial` ended, at its last result."""
    kept = _json_lines(trials_dir / trial.trial_id / "result.json")
    trial.status, trial.outcome = TERMINATED, record.outcome
    if record.outcome == "error":
        loop.scheduler.on_trial_error(loop, trial)
        loop.source.on_trial_complete(trial.trial_id, error=True)
    elif kept:
        last = loop.flatten(kept[-1])
        loop.scheduler.on_trial_complete(loop, trial, last)
        loop.source.on_trial_complete(trial.trial_id, result=last)
    else:
        loop.scheduler.on_trial_remove(loop, trial)
        loop.source.on_trial_complete(trial.trial_id)


def _ended_trials(journal: Path, loop: TrialLoop) -> dict[str, LoopTrial]:
    """The ended trials of the journal, as records (their results are their runs')."""
    ended: dict[str, LoopTrial] = {}
    for entry in _json_lines(journal):
        if entry["outcome"] is not None:  # else a trial made
            ended[entry["trial_id"]] = _ended_record(entry, loop, entry["outcome"])
    return ended


def _ended_record(entry: dict[str, Any], loop: TrialLoop, outcome: str) -> LoopTrial:
    """The ended trial of a journal line."""
    config = entry["config"]
    trial = LoopTrial(entry["trial_id"], config, loop.decode(config), index=entry["index"])
    trial.status, trial.outcome = TERMINATED, outcome
    return trial


def _json_lines(path: Path) -> list[dict[str, Any]]:
    """The JSON lines of `path` (a journal, a trial's results), up to one cut short by a kill."""
    text = path.read_text() if path.exists() else ""
    return [entry for entry, _ in _whole_lines(text)]


def _whole_lines(text: str) -> list[tuple[dict[str, Any], str]]:
    """Each whole JSON line of `text` and its text, up to the first that is not (cut short by
    a kill: one without its newline, or one that does not parse)."""
    lines: list[tuple[dict[str, Any], str]] = []
    for line in text.splitlines(keepends=True):
        try:
            entry = json.loads(line)
        except ValueError:
            break
        if not line.endswith("\n"):
            break
        lines.append((entry, line))
    return lines


def _cut_to_whole_lines(path: Path) -> None:
    """Cuts `path` after its last whole JSON line, if anything follows it."""
    if not path.exists():
        return
    text = path.read_text()
    kept = "".join(line for _, line in _whole_lines(text))
    if kept != text:
        _replace_text(path, kept)


def _replace_text(path: Path, text: str) -> None:
    """Writes `text` over `path` atomically: beside it first, then renamed over it."""
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(text)
    os.replace(temporary, path)


def lost_trials(run_dir: Path, loop: TrialLoop) -> list[LoopTrial]:
    """Trials made after the last snapshot and not ended: the restored searcher does not know
    them and makes others in their place. Each is returned as an ended record (``"error"``)."""
    known = {t.trial_id for t in loop.trials}
    lost: dict[str, LoopTrial] = {}
    for entry in _json_lines(Path(run_dir) / ENDED_FILE):
        if entry["trial_id"] in known or entry["outcome"] is not None:
            continue
        trial = _ended_record(entry, loop, "error")
        trial.error = "lost: made after the last snapshot of a killed sweep; made again on resume"
        lost[trial.trial_id] = trial
    return list(lost.values())


def _latest_checkpoint(results: Path) -> tuple[list[dict[str, Any]], str | None]:
    """The results up to the last one whose checkpoint is on disk, and that checkpoint; the
    file is cut there (atomically), as those after it are trained again."""
    lines = _json_lines(results)
    keep, checkpoint = 0, None
    for index, result in enumerate(lines, 1):
        path = result.get(CHECKPOINT_PATH_KEY)
        if isinstance(path, str) and Path(path).is_dir():
            keep, checkpoint = index, path
    if results.exists():
        _replace_text(results, "".join(json.dumps(r) + "\n" for r in lines[:keep]))
    return lines[:keep], checkpoint
