"""Reading a hand-made ASHA-like sweep at a rung (no Ray): the default rung, the rungs offered,
and each trial's state and value in every view."""

from __future__ import annotations

from typing import Any

import pytest

from sweeplab.report import default_rung, rung_study, sweep_study
from sweeplab.report._rungs import MAX_RUNGS, sweep_rungs
from sweeplab.space import OptunaSearcher, Space, choice, loguniform, rung_min_points, uniform

SPACE = Space(
    {
        "x": uniform(0, 1),
        "lr": loguniform(1e-4, 1e-1),
        "optimizer": choice({"sgd": {"momentum": uniform(0, 1)}, "adam": {}}),
    }
)
WIDE = Space({f"p{i}": uniform(0, 1) for i in range(12)})


@pytest.mark.parametrize("space", [SPACE, WIDE])
@pytest.mark.parametrize("num_trials", [1, 4, 12, 60, 99, 250])
def test_min_points_is_the_searchers(space: Space, num_trials: int) -> None:
    """The report's rule is the default `min_points` of the searcher's rung rule."""
    sampler = OptunaSearcher(random_fraction=0.0).make_sampler(space, seed=0, num_trials=num_trials)
    assert rung_min_points(num_trials, space.dimensions) == sampler.min_points


@pytest.mark.parametrize("stopped_at_3", [2, 3, 4])
def test_default_rung_is_the_searchers_rung(fake_sweep: Any, stopped_at_3: int) -> None:
    """The searcher's rung of the sweep's own study: the highest step that `min_points` ended
    trials (finished or stopped, not diverged) reported."""
    steps = [9, 9] + [3] * stopped_at_3 + [1] * (12 - 2 - stopped_at_3)
    rows = [
        {
            "value": i / 10,
            "steps": n,
            "status": "finished" if n == 9 else "stopped_early",
            "config": {"x": i / 12, "lr": 0.01, "optimizer.name": "adam"},
        }
        for i, n in enumerate(steps)
    ]
    rows[2]["status"] = "diverged"  # reported step 3, but the searcher does not count it
    data = fake_sweep(rows)
    sampler = OptunaSearcher(random_fraction=0.0).make_sampler(SPACE, seed=0, num_trials=len(rows))
    expected = sampler.rung(sweep_study(data, space=SPACE).trials)
    assert default_rung(data, space=SPACE) == expected
    assert expected == (3 if 2 + stopped_at_3 - 1 >= sampler.min_points else 1)


def test_asha_sweep_rungs(asha_sweep: Any) -> None:
    # 5 ended trials reported step 3 (min_points 5), 2 reached step 9.
    assert rung_min_points(12, SPACE.dimensions) == 5
    assert default_rung(asha_sweep, space=SPACE) == 3
    assert sweep_rungs(asha_sweep, space=SPACE) == [1, 3, 9]  # where trials stopped


def test_a_small_sweep_counts_every_ended_trial(fake_sweep: Any) -> None:
    """Fewer ended trials than the rule asks: the highest step that all of them reported."""
    rows = [{"value": 0.1 * i, "config": {"x": 0.1 * i}} for i in range(3)]
    rows[0]["steps"] = 2
    assert default_rung(fake_sweep(rows)) == 2
    assert default_rung(fake_sweep([])) is None


def test_many_stops_are_spread(fake_sweep: Any) -> None:
    """A median rule stops trials at any step: the report offers at most `MAX_RUNGS`."""
    rows = [
        {"value": 0.1, "steps": n, "status": "stopped_early", "config": {"x": n / 30}}
        for n in range(1, 31)
    ]
    data = fake_sweep(rows)
    rungs = sweep_rungs(data)
    assert len(rungs) <= MAX_RUNGS
    assert rungs[0] == 1 and rungs[-1] == 30
    assert default_rung(data) in rungs


def test_rung_study_reads_each_trial_at_the_step(asha_sweep: Any) -> None:
    study = rung_study(asha_sweep, 3, space=SPACE)
    by_id = {t.user_attrs["trial_id"]: t for t in study.trials}
    assert len(by_id) == 12
    for row in asha_sweep.trials.itertuples():
        trial = by_id[row.trial_id]
        x = float(row.best)
        if row.iterations >= 3:
            assert trial.state.name == "COMPLETE"
            assert trial.value == pytest.approx(x + 1 / 3)
            assert max(trial.intermediate_values) == 3  # cut at the step
        else:  # ended at step 1: PRUNED, its steps kept
            assert trial.state.name == "PRUNED"
            assert list(trial.intermediate_values) == [1]
        assert trial.user_attrs["status"] == row.status

    def seen(trials: list[Any]) -> list[tuple[Any, ...]]:
        return [(t.state, t.value, t.intermediate_values, t.params) for t in trials]

    assert seen(rung_study(asha_sweep, space=SPACE).trials) == seen(study.trials)  # the default


@pytest.mark.parametrize(
    ("rung", "value"),
    [
        (1, lambda x, n: x + 1),
        ("best", lambda x, n: x + 1 / n),  # the loss falls at every step
        ("last", lambda x, n: x + 1 / n),
    ],
)
def test_every_trial_has_a_value_in_the_views_by_value(
    asha_sweep: Any, rung: int | str, value: Any
) -> None:
    study = rung_study(asha_sweep, rung)
    for trial, row in zip(study.trials, asha_sweep.trials.itertuples(), strict=True):
        if rung == "last" and row.status == "diverged":
            assert trial.state.name == "FAIL"  # its last value was not finite
            continue
        assert trial.state.name == "COMPLETE"
        assert trial.value == pytest.approx(value(row.best, row.iterations))


def test_best_follows_the_mode(fake_sweep: Any) -> None:
    rows = [{"value": 1.0, "config": {"x": 0.5}}]  # 2, 1.5, 1.33: falling
    assert rung_study(fake_sweep(rows, mode="max"), "best").trials[0].value == pytest.approx(2)
    assert rung_study(fake_sweep(rows, mode="min"), "best").trials[0].value == pytest.approx(4 / 3)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"rung": 0}, "`rung` must be a step >= 1"),
        ({"rung": -3}, "`rung` must be a step >= 1"),
        ({"rung": 2.5}, "`rung` must be a step >= 1"),
        ({"rung": True}, "`rung` must be a step >= 1"),
        ({"rung": "first"}, "`rung` must be a step >= 1"),
        ({"objective": "acc"}, "`objective` must be one of ['loss']"),
    ],
)
def test_bad_arguments_raise(asha_sweep: Any, kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        rung_study(asha_sweep, **kwargs)
