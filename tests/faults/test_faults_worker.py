"""Faults inside a running sweep on the local Ray: a training worker SIGKILLed mid-trial, an
elastic group that starts below its maximum. Secrets in the config stay masked throughout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from toy_spec_path import progress_rows, run_toy_sweep

pytestmark = pytest.mark.slow

SECRET = "sk-do-not-log-4242"


def test_sigkilled_worker_group_restarts_from_checkpoint(ray_local: None, in_tmp: Path) -> None:
    """A worker of a 2-worker group dies by SIGKILL at epoch 3: Train restarts the group from
    the latest checkpoint; epochs go on without a gap or a repeat; one MLflow child run."""
    import mlflow

    outcome = run_toy_sweep(
        in_tmp,
        'name="killed-worker", '
        f'space={{"x": 0.5, "fail_at": 3, "fail_how": "sigkill", "marker_dir": "{in_tmp}", '
        f'"db": {{"api_key": "{SECRET}", "password": "{SECRET}"}}, "token": "{SECRET}"}}, '
        'metric="loss", mode="min", num_trials=1, max_iterations=6, max_failures=1, '
        "workers_per_trial=2",
        epochs=6,
    )
    assert (in_tmp / "failed-once").exists(), "the fault was not injected"
    assert outcome.errored == 0
    (trial,) = progress_rows(outcome).values()
    assert [r["epoch"] for r in trial] == [0, 1, 2, 3, 4, 5]
    assert len({r["origin"] for r in trial}) == 1, "the group restarted from scratch"
    assert {r["sweeplab_workers"] for r in trial} == {2}
    assert trial[-1]["sweeplab_group_restarts"] == 1  # the slot's group, inside the trial

    client = mlflow.MlflowClient(f"sqlite:///{in_tmp / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("killed-worker")
    runs = client.search_runs([experiment.experiment_id])
    children = [r for r in runs if r.data.tags.get("sweeplab.role") == "trial"]
    (child,) = children  # the restart continued the trial's run
    assert child.info.status == "FINISHED"
    # The group restart happened inside the trial (Train's FailureConfig, unseen by Tune); the
    # driver counts it and the run's restart tag shows it.
    assert child.data.tags["sweeplab.restarts"] == "1"
    epochs = client.get_metric_history(child.info.run_id, "epoch")
    assert sorted(m.value for m in epochs) == [0, 1, 2, 3, 4, 5]

    # Secret-looking keys are masked in MLflow params and in best_config.json.
    for run_ in runs:
        for key, value in run_.data.params.items():
            assert SECRET not in value, key
    assert child.data.params["token"] == "***"
    assert child.data.params["db.api_key"] == "***"
    assert child.data.params["db.password"] == "***"
    for best_file in (outcome.storage_dir / "best_config.json", in_tmp / "runs" /
                      "killed-worker" / "best_config.json"):  # fmt: skip
        text = best_file.read_text()
        assert SECRET not in text
        assert json.loads(text)["config"]["token"] == "***"


def test_elastic_group_starts_below_its_maximum(ray_local: None, in_tmp: Path) -> None:
    """`workers_per_trial=(1, 4)` on 2 CPUs: the group starts with the 2 workers that fit (a
    group of the trial's own)."""
    outcome = run_toy_sweep(
        in_tmp,
        'name="elastic", space={"x": 0.5}, metric="loss", mode="min", num_trials=1, '
        "max_iterations=3, workers_per_trial=(1, 4)",
        epochs=3,
    )
    assert outcome.errored == 0
    assert outcome.plan.concurrency == 1 and outcome.plan.max_workers == 4
    assert (outcome.resolved.run_dir / "loop_state.pkl").exists()  # run by the trial loop
    (trial,) = progress_rows(outcome).values()
    assert len(trial) == 3
    workers = {r["sweeplab_workers"] for r in trial}
    assert all(1 <= w < 4 for w in workers), workers
    assert {r["world_size"] for r in trial} == workers
