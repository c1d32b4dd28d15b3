"""A diverged trial in the tracker's record and the ranking: status ``diverged``, ranked last."""

from __future__ import annotations

import math
import types

import pytest

from sweeplab.tracking import TrialRecord, rank_trials
from sweeplab.tracking._ranking import SweepSummary
from sweeplab.tracking._trials import TrialEvents


class _Sink:
    """Keeps the tags and the end status of each child run (the flusher's producer side)."""

    def __init__(self) -> None:
        self.tags: dict[str, dict[str, str]] = {}
        self.ended: dict[str, str] = {}

    def add_run(self, trial_id: str, **kwargs: object) -> None:
        self.tags.setdefault(trial_id, {})

    def reopen(self, trial_id: str) -> None:
        pass

    def log_metrics(self, trial_id: str, points: object) -> None:
        pass

    def set_tags(self, trial_id: str, tags: dict[str, str]) -> None:
        self.tags.setdefault(trial_id, {}).update(tags)

    def end_run(self, trial_id: str, status: str) -> None:
        self.ended[trial_id] = status

    def run_id(self, trial_id: str) -> str | None:
        return None


@pytest.mark.parametrize("mode", ["min", "max"])
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_diverged_trial_is_recorded_so_and_ranks_last(mode: str, bad: float) -> None:
    sink = _Sink()
    events = TrialEvents(
        metric="loss", mode=mode, rank_by="best", config_decoder=dict,
        scheduler_name="asha", max_iterations=4, sink=sink,
    )  # fmt: skip
    # "bad" reported the best finite value of all before diverging.
    good = 0.1 if mode == "max" else 0.9
    best = 0.9 if mode == "max" else 0.1
    for trial_id, losses, done in (
        ("bad", [best, bad], True),
        ("fine", [0.5] * 4, False),
        ("short", [good], True),
    ):
        trial = types.SimpleNamespace(trial_id=trial_id, config={}, local_path=None, path=None)
        events.on_start(trial)
        for step, loss in enumerate(losses, start=1):
            events.on_result(trial, {"loss": loss, "training_iteration": step, "done": done})
        events.on_complete(trial)
    assert sink.tags["bad"]["sweeplab.status"] == "diverged"
    assert sink.tags["bad"]["sweeplab.stopped_by"] == "divergence"
    assert sink.tags["bad"]["sweeplab.stopped_at_iteration"] == "2"
    assert sink.ended == {"bad": "FAILED", "fine": "FINISHED", "short": "FINISHED"}
    assert sink.tags["short"]["sweeplab.status"] == "stopped_early"
    ranked = events.rank()
    assert [r.trial_id for r in ranked] == ["fine", "short", "bad"]
    assert sink.tags["bad"]["sweeplab.rank"] == "03"
    assert math.isfinite(ranked[-1].best_value or 0.0)  # its finite past is kept for reading


def _rec(trial_id: str, best: float | None, status: str = "finished") -> TrialRecord:
    return TrialRecord(
        trial_id=trial_id, status=status, best_value=best, last_value=best, best_iteration=1
    )


@pytest.mark.parametrize(
    ("records", "expected"),
    [
        ([_rec("a", 0.1, "diverged"), _rec("b", 0.5), _rec("c", None, "errored")], ["b", "c", "a"]),
        ([_rec("a", math.inf), _rec("b", 0.5)], ["b", "a"]),
        ([_rec("a", -math.inf), _rec("b", 0.5)], ["b", "a"]),  # never best in "min"
        ([_rec("b", None, "diverged"), _rec("a", 0.2, "diverged")], ["a", "b"]),
    ],
)  # fmt: skip
def test_diverged_and_infinite_rank_below_every_finite_trial(
    records: list[TrialRecord], expected: list[str]
) -> None:
    assert [r.trial_id for r in rank_trials(records, "loss", "min")] == expected


def test_a_sweep_whose_trials_all_diverged_has_no_best() -> None:
    ranked = rank_trials([_rec("a", 0.1, "diverged")], "loss", "min")
    assert SweepSummary(trials=ranked, metric="loss", mode="min", rank_by="best").best is None
