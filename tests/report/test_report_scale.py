"""The report at scale (no Ray): fANOVA rates a seeded sample of a large sweep's trials."""

from __future__ import annotations

from typing import Any

import pytest

from sweeplab.report import parameter_importance, sweep_figures, sweep_study
from sweeplab.report._figures import IMPORTANCE_SAMPLE, importance_sample


def _study(n: int, direction: str) -> Any:
    import optuna
    from optuna.distributions import FloatDistribution

    study = optuna.create_study(direction=direction)
    for i in range(n):
        x = (i * 7919 % n) / n
        study.add_trial(
            optuna.trial.create_trial(
                params={"x": x, "y": (i % 13) / 13},
                distributions={"x": FloatDistribution(0, 1), "y": FloatDistribution(0, 1)},
                value=(x - 0.3) ** 2,
            )
        )
    return study


@pytest.mark.parametrize("direction", ["minimize", "maximize"])
def test_sample_is_seeded_and_keeps_the_best(direction: str) -> None:
    study = _study(IMPORTANCE_SAMPLE * 4, direction)
    sample = importance_sample(study)
    trials = sample.get_trials(deepcopy=False)
    assert len(trials) == IMPORTANCE_SAMPLE
    assert sample.best_value == study.best_value
    numbers = [t.number for t in trials]
    assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers)
    assert [t.params for t in importance_sample(study).get_trials(deepcopy=False)] == [
        t.params for t in trials
    ]


def test_small_study_is_rated_whole() -> None:
    study = _study(IMPORTANCE_SAMPLE, "minimize")
    assert importance_sample(study) is study


def test_large_sweep_importance_and_caption(fake_sweep: Any) -> None:
    n = IMPORTANCE_SAMPLE * 3
    rows = [
        {"value": ((i * 7919 % n) / n - 0.3) ** 2, "config": {"x": (i * 7919 % n) / n, "y": i % 5}}
        for i in range(n)
    ]
    data = fake_sweep(sorted(rows, key=lambda r: r["value"]))
    importance = parameter_importance(sweep_study(data))
    assert importance.index[0] == "x"  # the only param the loss depends on
    assert importance.sum() == pytest.approx(1.0)
    figure = sweep_figures(data)["parameter importance"]
    caption = figure.layout.annotations[0].text
    assert f"seeded sample of {IMPORTANCE_SAMPLE} of the {n} trials" in caption
    assert len(figure.data[0].y) == 2


def test_trials_without_a_value_are_left_out() -> None:
    import optuna
    from optuna.distributions import FloatDistribution
    from optuna.trial import TrialState

    study = _study(10, "minimize")
    study.add_trial(
        optuna.trial.create_trial(
            params={"x": 0.5, "y": 0.5},
            distributions={"x": FloatDistribution(0, 1), "y": FloatDistribution(0, 1)},
            state=TrialState.PRUNED,
        )
    )
    sample = importance_sample(study)
    assert len(sample.get_trials(deepcopy=False)) == 10
    assert all(t.state == TrialState.COMPLETE for t in sample.get_trials(deepcopy=False))


@pytest.mark.slow
def test_reads_at_scale_benchmark_runs_tiny(tmp_path: Any) -> None:
    """The benchmark at 20 trials: every read succeeds and the report holds every trial."""
    from benchmarks.reads_at_scale import SWEEP, time_reads, write_sweep

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    written = write_sweep(uri, tmp_path / "sweep", 20)
    assert written["points"] >= 40  # two metrics, at least one report a trial
    reads = time_reads(uri, tmp_path)
    assert {name: r["rc"] for name, r in reads.items()} == dict.fromkeys(reads, 0)
    html = (tmp_path / "report.html").read_text()
    assert all(f"t{i:05d}" in html for i in range(20))
    import sweeplab

    assert len(sweeplab.load_sweep(SWEEP, uri).trials) == 20
