"""Sweep callbacks (the adapter from Tune's events) and scheduler traits (actor reuse)."""

from __future__ import annotations

import json
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

import sweeplab
from sweeplab.engine import SweepOutcome, TrialView


class Recorder(sweeplab.SweepCallback):
    """Every event as ``(event, trial_id, status, iteration)``, plus the views and the end."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, int]] = []
        self.views: dict[str, TrialView] = {}
        self.ends: list[SweepOutcome] = []

    def _note(self, event: str, trial: TrialView) -> None:
        self.events.append((event, trial.trial_id, trial.status, trial.iteration))
        self.views[trial.trial_id] = trial

    def on_trial_add(self, trial: TrialView) -> None:
        self._note("add", trial)

    def on_trial_start(self, trial: TrialView) -> None:
        self._note("start", trial)

    def on_trial_result(self, trial: TrialView, result: Mapping[str, Any]) -> None:
        assert trial.metrics == result
        self._note("result", trial)

    def on_trial_complete(self, trial: TrialView) -> None:
        self._note("complete", trial)

    def on_trial_stop(self, trial: TrialView) -> None:
        self._note("stop", trial)

    def on_trial_retry(self, trial: TrialView) -> None:
        self._note("retry", trial)

    def on_trial_error(self, trial: TrialView) -> None:
        self._note("error", trial)

    def on_sweep_end(self, outcome: SweepOutcome) -> None:
        self.ends.append(outcome)

    def of(self, trial_id: str) -> list[str]:
        return [event for event, tid, _, _ in self.events if tid == trial_id]


def test_public_surface() -> None:
    assert {"SweepCallback", "TrialView", "SweepOutcome"} <= set(sweeplab.__all__)
    callback = sweeplab.SweepCallback()
    view = TrialView(trial_id="t", config={"x": 1}, status="RUNNING")
    for event in ("add", "start", "complete", "stop", "retry", "error"):
        getattr(callback, f"on_trial_{event}")(view)  # every event is a no-op by default
    callback.on_trial_result(view, {})


# --- the events, on trials shaped as the loop's observer shapes them ---------------------


def tune_trial(trial_id: str, tmp_path: Path, **fields: Any) -> Any:
    return types.SimpleNamespace(
        trial_id=trial_id,
        config={"x": 0.5},
        status="PENDING",
        local_path=str(tmp_path),
        error_file=None,
        last_result={},
        **fields,
    )


def run_events(tmp_path: Path, **adapter: Any) -> Recorder:
    from sweeplab.engine._events import SweepEvents

    recorder = Recorder()
    events = SweepEvents([recorder], max_iterations=4, **adapter)
    done, stopped, short, failed = (
        tune_trial(t, tmp_path) for t in ("done", "stop", "short", "err")
    )
    (tmp_path / "error.txt").write_text("Traceback...\nRuntimeError: boom\n")
    failed.error_file = str(tmp_path / "error.txt")
    for trial in (done, stopped, short, done):
        events.add_trial(trial)  # each trial is added once
    for trial, reports, last_done in ((done, 4, True), (stopped, 1, True), (short, 2, False)):
        events.on_trial_start(trial)
        for step in range(1, reports + 1):
            result = {"training_iteration": step, "loss": 1.0 / step}
            if step == reports and last_done:
                result["done"] = True  # the mark of the scheduler's (or budget's) stop
            events.on_trial_result(trial, result)
        events.on_trial_complete(trial)
    events.on_trial_start(failed)  # added on its first event
    events.on_trial_recover(failed)
    events.on_trial_start(failed)
    events.on_trial_error(failed)
    return recorder


def test_adapter_orders_and_classifies_events(tmp_path: Path) -> None:
    recorder = run_events(tmp_path)
    assert recorder.of("done") == ["add", "start", *["result"] * 4, "complete"]
    assert recorder.of("stop") == ["add", "start", "result", "stop"]
    # Ended by itself short of max_iterations (its last result was not marked done).
    assert recorder.of("short") == ["add", "start", "result", "result", "complete"]
    assert recorder.of("err") == ["add", "start", "retry", "start", "error"]
    ends = {tid: (status, iteration) for event, tid, status, iteration in recorder.events}
    assert ends == {
        "done": ("TERMINATED", 4),
        "stop": ("STOPPED", 1),
        "short": ("TERMINATED", 2),
        "err": ("ERROR", 0),
    }
    assert recorder.views["err"].error is not None
    assert "RuntimeError: boom" in recorder.views["err"].error
    assert recorder.views["stop"].metrics["loss"] == 1.0
    assert recorder.views["done"].path == str(tmp_path)


def test_adapter_decodes_the_config(tmp_path: Path) -> None:
    recorder = run_events(tmp_path, decode=lambda config: {"nested": dict(config)})
    assert recorder.views["done"].config == {"nested": {"x": 0.5}}
    assert run_events(tmp_path).views["done"].config == {"x": 0.5}


# --- scheduler traits and actor reuse ------------------------------------------------------


def schedulers() -> list[tuple[str, Any, tuple[bool, bool] | None]]:
    from ray.tune.schedulers import (
        ASHAScheduler,
        FIFOScheduler,
        HyperBandForBOHB,
        HyperBandScheduler,
        MedianStoppingRule,
        PopulationBasedTraining,
        TrialScheduler,
    )

    from sweeplab.strategies import build_scheduler

    class Custom(TrialScheduler):
        pass

    class MyFIFO(FIFOScheduler):
        pass

    pbt = {"time_attr": "training_iteration", "hyperparam_mutations": {"x": [1, 2]}}
    named_pbt = sweeplab.Sweep(
        name="s",
        train_func=lambda config: None,
        space={"x": sweeplab.uniform(0, 1)},
        metric="loss",
        mode="min",
        scheduler="pbt",
        searcher="random",
    )
    return [
        ("fifo", FIFOScheduler(), (False, False)),
        ("asha", ASHAScheduler(max_t=4), (False, False)),
        (
            "asha configured",
            ASHAScheduler(max_t=9, grace_period=2, reduction_factor=2),
            (False, False),
        ),
        ("median", MedianStoppingRule(), (False, False)),
        ("median pausing", MedianStoppingRule(hard_stop=False), (True, False)),
        ("hyperband", HyperBandScheduler(max_t=4), (True, False)),
        ("bohb", HyperBandForBOHB(max_t=4), (True, False)),
        ("pbt", PopulationBasedTraining(**pbt), (True, True)),
        ("sweeplab's pbt", build_scheduler(named_pbt), (True, True)),
        # Traits are never guessed: another class must declare them (see tests/strategies).
        ("unknown", Custom(), None),
        ("fifo subclass", MyFIFO(), None),
    ]


def test_scheduler_traits_come_from_the_class() -> None:
    from sweeplab.strategies import scheduler_traits

    for name, scheduler, expected in schedulers():
        if expected is None:
            with pytest.raises(sweeplab.SpecError, match="`scheduler`"):
                scheduler_traits(scheduler)
            continue
        traits = scheduler_traits(scheduler)
        assert (traits.pauses, traits.exploits) == expected, name


@pytest.mark.slow
def test_callbacks_see_a_configured_asha_sweep(ray_local: None, in_tmp: Path) -> None:
    from ray.tune.schedulers import ASHAScheduler
    from toy_spec import progress_rows, write_spec

    from sweeplab.engine import SweepOptions, run_sweep
    from sweeplab.spec import load_spec

    spec = write_spec(
        in_tmp,
        'name="callbacks", space={"x": uniform(0, 1)}, metric="loss", mode="min", '
        "num_trials=6, max_iterations=4, seed=3",
        epochs=4,
    )
    sweep = load_spec(spec).replace(
        scheduler=ASHAScheduler(
            time_attr="training_iteration", max_t=4, grace_period=1, reduction_factor=2
        )
    )
    recorder = Recorder()
    options = SweepOptions(
        spec_path=spec,
        storage=in_tmp / "runs",
        live=False,
        track=False,
        callbacks=[recorder],
    )
    outcome = run_sweep(sweep, options)
    assert recorder.ends == [outcome]
    rows = progress_rows(outcome)
    assert sorted(recorder.views) == sorted(rows) and len(rows) == 6 == outcome.trials
    # Each trial's results are written (`trials/<id>/result.json`), no TensorBoard event file.
    trials = outcome.storage_dir / "trials"
    assert all((trials / trial_id / "result.json").is_file() for trial_id in rows)
    assert not list(outcome.storage_dir.rglob("events.out.tfevents*"))
    pids = set()
    for trial_id, trial_rows in rows.items():
        events = recorder.of(trial_id)
        assert events[:2] == ["add", "start"], events
        assert events.count("result") == len(trial_rows)
        assert events[-1] in ("complete", "stop") and events.count(events[-1]) == 1
        view = recorder.views[trial_id]
        assert view.iteration == len(trial_rows)
        assert (view.status, view.iteration < 4) in (("TERMINATED", False), ("STOPPED", True))
        assert view.config == json.loads(trial_rows[0]["config_json"])  # decoded
        pids.add(view.metrics["worker_pid"])
    assert any(recorder.of(t)[-1] == "stop" for t in rows), "ASHA stopped no trial early"
    # A configured ASHA object runs on the slots like "asha": 6 trials in fewer processes.
    assert len(pids) < len(rows), pids
