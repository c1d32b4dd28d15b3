"""Ended trials released from Tune's controller while a stop-only sweep runs.

Tune keeps every trial of a run to its end; `ended_trials_released` lets each ended one go after
the step that ended it, keeping its snapshot entry compressed (`ReleasedTrials`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import shutil
import zlib
from collections.abc import Iterator
from typing import Any

from sweeplab.raycompat._ledger import PrivateUse

__all__ = [
    "RELEASE_HOOK",
    "USES",
    "NewTrials",
    "ReleasedResult",
    "ReleasedTrials",
    "ended_trials_released",
]

USES: tuple[PrivateUse, ...] = (
    PrivateUse(
        "ray.tune.execution.tune_controller",
        "TuneController.step",
        (),
        "one step of Tune's loop; wrapped while a sweep of a stop-only scheduler runs so that "
        "after each step the trials that ended leave the controller (`ended_trials_released`): "
        "Tune keeps every trial, its state and its cached JSON to the end, about 10 KB a trial "
        "on the driver, and has no setting to let them go",
        purpose="speed",
        feature="ended trials released from Tune's controller",
    ),
    PrivateUse(
        "ray.tune.execution.tune_controller",
        "TuneController.save_to_dir",
        (),
        "the experiment snapshot; wrapped to write the released trials' entries too, one at a "
        "time, in Tune's own format, so that a resumed sweep finds every trial",
        purpose="speed",
        feature="ended trials released from Tune's controller",
    ),
    PrivateUse(
        "ray.tune.execution.tune_controller",
        "TuneController._trials",
        None,
        "the controller's list of trials, which a released trial leaves (with the sets "
        "`_live_trials` and `_stopped_trials`, `_trials_to_cache` and `_pending_trials_list`)",
        purpose="speed",
        feature="ended trials released from Tune's controller",
    ),
    PrivateUse(
        "ray.tune.execution.tune_controller",
        "TuneController._trial_metadata",
        None,
        "each trial's snapshot entry (its JSON and its run metadata's JSON); a released trial's "
        "is kept compressed outside the controller",
        purpose="speed",
        feature="ended trials released from Tune's controller",
    ),
    PrivateUse(
        "ray.tune.execution.tune_controller",
        "TuneController._live_trials",
        None,
        "the trials not yet ended; one of them is not released",
        purpose="speed",
        feature="ended trials released from Tune's controller",
    ),
    PrivateUse(
        "ray.tune.execution.tune_controller",
        "TuneController._stopped_trials",
        None,
        "the ended trials, which a released trial leaves",
        purpose="speed",
        feature="ended trials released from Tune's controller",
    ),
    PrivateUse(
        "ray.tune.execution.tune_controller",
        "TuneController._trials_to_cache",
        None,
        "the trials whose snapshot entry is out of date; a released trial's is made then",
        purpose="speed",
        feature="ended trials released from Tune's controller",
    ),
    PrivateUse(
        "ray.tune.execution.tune_controller",
        "TuneController._pending_trials_list",
        None,
        "the queue of waiting trials, which keeps ended trials until it is scanned",
        purpose="speed",
        feature="ended trials released from Tune's controller",
    ),
    PrivateUse(
        "ray.tune.execution.tune_controller",
        "TuneController._get_trial_checkpoints",
        (),
        "the controller's snapshot entries, brought up to date, in its snapshot",
        purpose="speed",
        feature="ended trials released from Tune's controller",
    ),
    PrivateUse(
        "ray.tune.execution.tune_controller",
        "TuneController._search_alg",
        None,
        "the searcher, whose state the snapshot writes beside the trials",
        purpose="speed",
        feature="ended trials released from Tune's controller",
    ),
    PrivateUse(
        "ray.tune.execution.tune_controller",
        "TuneController._session_str",
        None,
        "the session name the searcher's and callbacks' snapshot files carry",
        purpose="speed",
        feature="ended trials released from Tune's controller",
    ),
    PrivateUse(
        "ray.tune.execution.tune_controller",
        "TuneController._start_time",
        None,
        "the experiment's start time, in the snapshot's `stats`",
        purpose="speed",
        feature="ended trials released from Tune's controller",
    ),
    PrivateUse(
        "ray.tune.execution.tune_controller",
        "TuneController._callbacks",
        None,
        "the run's callbacks, whose per-trial state of a released trial is dropped",
        purpose="speed",
        feature="ended trials released from Tune's controller",
    ),
    PrivateUse(
        "ray.tune.execution.tune_controller",
        "TuneController._storage",
        None,
        "where the snapshot is written (`experiment_driver_staging_path`)",
        purpose="speed",
        feature="ended trials released from Tune's controller",
    ),
    PrivateUse(
        "ray.tune.analysis.experiment_analysis",
        "ExperimentAnalysis._load_trials",
        (),
        "at the end of `fit`, Tune reads every trial back from the snapshot when the "
        "controller holds none; with every trial released it returns none instead",
        purpose="speed",
        feature="ended trials released from Tune's controller",
    ),
    PrivateUse(
        "ray.train._internal.syncer",
        "_BackgroundProcess.is_running",
        None,
        "whether Tune's copy of the staging folder to the storage path is running; a released "
        "trial's files leave the staging folder only while none is",
        purpose="speed",
        feature="ended trials released from Tune's controller",
    ),
    PrivateUse(
        "ray.train._internal.syncer",
        "_BackgroundSyncer._sync_process",
        None,
        "the running copy, if any",
        purpose="speed",
        feature="ended trials released from Tune's controller",
    ),
    PrivateUse(
        "ray.tune.utils.serialization",
        "_loads_with_cloudpickle",
        ("s",),
        "reads a released trial's config and last result back from its snapshot entry, as "
        "Tune's own restore does",
        purpose="speed",
        feature="ended trials released from Tune's controller",
    ),
    PrivateUse(
        "ray.tune.logger.csv",
        "CSVLoggerCallback._trial_continue",
        None,
        "Tune's default loggers and progress callback keep a dict or set entry per trial, "
        "keyed by the trial, to the end; `_TRIAL_KEYED_CALLBACK_STATE` names them",
        purpose="speed",
        feature="ended trials released from Tune's controller",
    ),
)


# Per-trial state that Tune's default callbacks keep to the end of a run, keyed by the trial, by
# class name (a subclass's base counts). A released trial's entries are dropped.
_TRIAL_KEYED_CALLBACK_STATE: dict[str, tuple[str, ...]] = {
    "CSVLoggerCallback": ("_trial_continue", "_trial_files", "_trial_csv"),
    "JsonLoggerCallback": ("_trial_configs", "_trial_files"),
    "TBXLoggerCallback": ("_trial_writer", "_trial_result"),
    "TrialProgressCallback": (
        "_last_print",
        "_last_print_iteration",
        "_completed_trials",
        "_last_result_str",
        "_last_result",
    ),
}

# A Tune callback with a method of this name is told of the trials about to be released.
RELEASE_HOOK = "on_trials_released"


@dataclasses.dataclass(frozen=True)
class ReleasedResult:
    """What a sweep reads of a released trial, with the attributes of Tune's ``Result``."""

    metrics: dict[str, Any]
    config: dict[str, Any]
    path: str
    error: None = None


class NewTrials:
    """Which of the controller's trials a Tune callback has not seen, at each step.

    Tune appends each new trial to its list (a retried trial moves to its end), so the new
    ones are those after the ones seen: a pass over the whole list at every step would be
    quadratic in the sweep's length. A released trial leaves the list; `released` keeps the
    count right.
    """

    def __init__(self) -> None:
        self._seen = 0
        self._list: list[Any] = []

    def since_last(self, trials: list[Any]) -> list[Any]:
        """The trials of `trials` (the controller's list) added since the last call."""
        new = trials[self._seen :]
        self._seen, self._list = len(trials), trials
        return new

    def released(self, trials: list[Any]) -> None:
        """`trials` are about to leave the list last seen."""
        gone = {id(trial) for trial in trials}
        self._seen -= sum(1 for trial in self._list[: self._seen] if id(trial) in gone)


class ReleasedTrials:
    """The ended trials that a sweep's Tune controller let go of (`ended_trials_released`).

    Each is kept as its snapshot entry, the JSON text Tune writes for it (the trial's JSON and
    its run metadata's JSON), one line each in a single compressed stream: neighbouring entries
    share most of their text, so a trial costs a few hundred bytes instead of Tune's live
    objects and their cached JSON. Reading the stream back decompresses it a chunk at a time,
    so neither a snapshot nor the sweep's ranking holds more than a chunk of it.
    """

    _CHUNK = 1 << 16

    def __init__(self) -> None:
        self._stream = bytearray()
        self._compressor = zlib.compressobj(1)
        self._paths: list[str] = []
        self._controller: Any = None
        self._files: list[tuple[str, str]] = []  # (staging folder, storage folder) to move

    def __len__(self) -> int:
        return len(self._paths)

    def add(self, path: str, entry: tuple[str, str]) -> None:
        """Keeps a released trial's snapshot entry and its path."""
        line = json.dumps(list(entry)) + "\n"  # JSON text holds no raw newline
        self._stream += self._compressor.compress(line.encode())
        self._stream += self._compressor.flush(zlib.Z_SYNC_FLUSH)
        self._paths.append(path)

    def _text(self) -> Iterator[bytes]:
        decompressor = zlib.decompressobj()
        for start in range(0, len(self._stream), self._CHUNK):
            yield decompressor.decompress(bytes(self._stream[start : start + self._CHUNK]))

    def lines(self) -> Iterator[bytes]:
        """Each released trial's snapshot entry as JSON text, in the order released."""
        rest = b""
        for chunk in self._text():
            *whole, rest = (rest + chunk).split(b"\n")
            yield from whole

    def write_entries(self, out: Any, after_others: bool) -> None:
        """Writes the entries to the text file `out` as elements of a JSON array (after a comma
        when other elements come before them), a chunk at a time."""
        if not self._paths:
            return
        if after_others:
            out.write(", ")
        ended = False  # the text so far ends with an entry's newline
        for chunk in self._text():
            text = chunk.decode("ascii")  # `json.dumps` escapes every non-ASCII character
            if not text:
                continue
            if ended:
                out.write(", ")
            ended = text.endswith("\n")
            out.write((text[:-1] if ended else text).replace("\n", ", "))

    def results(self) -> Iterator[ReleasedResult]:
        """Each released trial's config, last result and path, as ``Tuner.fit``'s results
        would give them."""
        from ray.tune.utils.serialization import _loads_with_cloudpickle

        def field(document: str, key: str) -> dict[str, Any]:
            # Only this field is decoded as Tune would (a value JSON cannot hold is pickled in
            # it); the rest of the trial's JSON (its storage context, pickled) is not unpickled.
            value = json.loads(document).get(key) or {}
            return dict(_loads_with_cloudpickle(json.dumps(value)))

        for path, line in zip(self._paths, self.lines(), strict=True):
            trial_json, metadata_json = json.loads(line)
            yield ReleasedResult(
                metrics=field(metadata_json, "last_result"),
                config=field(trial_json, "config"),
                path=path,
            )

    def release_from(self, controller: Any) -> None:
        """Releases the trials of `controller` that ended and hold no actor."""
        from ray.tune.experiment import Trial

        if self._controller is None:
            self._controller = controller
        if controller is not self._controller:
            return  # another Tune run in this process: left as Tune keeps it
        self._hand_over_files(controller)
        held = controller._trial_to_actor
        ended = [
            trial
            for trial in controller._trials
            if trial.status == Trial.TERMINATED
            and trial not in held
            and trial not in controller._live_trials
        ]
        if not ended:
            return
        for callback in controller._callbacks._callbacks:
            hook = getattr(callback, RELEASE_HOOK, None)
            if hook is not None:
                hook(ended)
            for klass in type(callback).__mro__:
                for name in _TRIAL_KEYED_CALLBACK_STATE.get(klass.__name__, ()):
                    state = getattr(callback, name, None)
                    for trial in ended:
                        if isinstance(state, dict):
                            state.pop(trial, None)
                        elif isinstance(state, set):
                            state.discard(trial)
        for trial in ended:
            self.add(str(trial.path), trial.get_json_state())
            controller._trial_metadata.pop(trial.trial_id, None)
            controller._trials_to_cache.discard(trial)
            controller._stopped_trials.discard(trial)
            if _on_local_disk(trial):
                self._files.append((str(trial.local_path), str(trial.path)))
        gone = {id(trial) for trial in ended}
        controller._trials[:] = [t for t in controller._trials if id(t) not in gone]
        controller._pending_trials_list[:] = [
            t for t in controller._pending_trials_list if id(t) not in gone
        ]

    def _hand_over_files(self, controller: Any) -> None:
        """Moves the released trials' files (their results, params and progress, which Tune's
        loggers write to the driver's staging folder) to the storage path, while Tune is not
        copying that folder there.

        Tune copies the whole staging folder, every trial's files, at each snapshot: at 6,000
        trials a copy held 42 MB of the driver's memory, and it grows with the sweep. A released
        trial's files are complete (its loggers closed them when it ended), so they move once.
        """
        if not self._files:
            return
        running = getattr(controller._storage.syncer, "_sync_process", None)
        if running is not None and running.is_running:
            return  # moved at a later step, once the copy is done
        for staging, storage in self._files:
            with contextlib.suppress(OSError):  # what is left, Tune's next snapshot copies
                _move_tree(staging, storage)
        self._files.clear()

    def save_to_dir(self, controller: Any) -> None:
        """Tune's experiment snapshot (``TuneController.save_to_dir``), with the released
        trials' entries after the controller's own, written a chunk at a time."""
        from ray.tune.utils.serialization import TuneFunctionEncoder

        live = list(controller._get_trial_checkpoints().values())
        staging = controller._storage.experiment_driver_staging_path
        os.makedirs(staging, exist_ok=True)
        with open(os.path.join(staging, controller.experiment_state_file_name), "w") as f:
            f.write('{"trial_data": [')
            f.write(", ".join(json.dumps(list(entry)) for entry in live))
            self.write_entries(f, after_others=bool(live))
            f.write('], "runner_data": ')
            json.dump(controller.__getstate__(), f, cls=TuneFunctionEncoder)
            f.write(', "stats": ')
            json.dump({"start_time": controller._start_time}, f)
            f.write("}")
        controller._search_alg.save_to_dir(staging, session_str=controller._session_str)
        controller._callbacks.save_to_dir(staging, session_str=controller._session_str)


def _on_local_disk(trial: Any) -> bool:
    """Whether `trial`'s storage path is on this machine's file system."""
    import pyarrow.fs

    filesystem = getattr(trial.storage, "storage_filesystem", None)
    return isinstance(filesystem, pyarrow.fs.LocalFileSystem) and bool(trial.local_path)


def _move_tree(source: str, target: str) -> None:
    """Moves every file under `source` to the same place under `target` (replacing what is
    there), then removes `source`."""
    for folder, _, files in os.walk(source):
        into = os.path.join(target, os.path.relpath(folder, source))
        os.makedirs(into, exist_ok=True)
        for name in files:
            shutil.move(os.path.join(folder, name), os.path.join(into, name))
    shutil.rmtree(source, ignore_errors=True)


@contextlib.contextmanager
def ended_trials_released(enabled: bool = True) -> Iterator[ReleasedTrials]:
    """While a sweep runs: the trials that ended leave Tune's controller after each step.

    Tune keeps every trial of a run to its end: the `Trial` object, its storage context, its
    last result, its cached JSON, and an entry in each default callback. On the driver that was
    about 10 KB a trial, so a sweep's memory grew with its length. Inside this context each
    trial that ended (``TERMINATED``, no actor) is released after the step that ended it: its
    snapshot entry is kept compressed (`ReleasedTrials`), written with the others at each
    experiment snapshot, so a resumed sweep restores it as Tune would; the results that
    ``Tuner.fit`` returns then hold only the trials not released, and `ReleasedTrials.results`
    gives the others. Only for a scheduler that only stops trials: one that pauses or exploits
    (HyperBand, PBT) may come back to an ended trial. A trial that errored is not released.
    A callback with a method ``on_trials_released(trials)`` is told first. When every trial was
    released, ``fit`` would read them all back from the snapshot for its results (Tune does so
    when it is given no trials): it does not.
    """
    released = ReleasedTrials()
    if not enabled:
        yield released
        return
    from ray.tune.analysis.experiment_analysis import ExperimentAnalysis
    from ray.tune.execution.tune_controller import TuneController

    step, save = TuneController.step, TuneController.save_to_dir
    load = ExperimentAnalysis._load_trials

    @functools.wraps(step)
    def releasing_step(self: Any) -> None:
        step(self)
        released.release_from(self)

    @functools.wraps(save)
    def saving(self: Any) -> None:
        if self is released._controller and len(released):
            released.save_to_dir(self)
        else:
            save(self)

    @functools.wraps(load)
    def loading(self: Any) -> list[Any]:
        return [] if len(released) else list(load(self))

    TuneController.step, TuneController.save_to_dir = releasing_step, saving
    ExperimentAnalysis._load_trials = loading
    try:
        yield released
    finally:
        TuneController.step, TuneController.save_to_dir = step, save
        ExperimentAnalysis._load_trials = load
