"""End-to-end sweeps on a real local Ray: every scheduler, conditional spaces, faults, PBT."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from toy_spec import progress_rows as results
from toy_spec import run_toy_sweep as sweep
from toy_spec import trial_errors

from sweeplab.engine import SweepOutcome
from sweeplab.spec import load_spec

pytestmark = pytest.mark.slow


def check_mlflow_record(
    tmp_path: Path, outcome: SweepOutcome, rows: dict[str, list[dict[str, Any]]]
) -> list[Any]:
    """The sweep's MLflow record follows the data model; returns the child runs."""
    import mlflow

    from sweeplab.space import flatten_config

    client = mlflow.MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    experiment = client.get_experiment_by_name(outcome.sweep.name)
    runs = client.search_runs([experiment.experiment_id])
    (parent,) = [r for r in runs if r.data.tags.get("sweeplab.role") == "sweep"]
    children = [r for r in runs if r.data.tags.get("sweeplab.role") == "trial"]
    assert parent.info.status == "FINISHED"
    # The parent run starts when the sweep did, before it wrote its settings (and before its
    # tracker started, once the slots were up).
    assert parent.info.start_time / 1000 <= (outcome.storage_dir / "sweep.json").stat().st_mtime
    assert parent.info.start_time <= min(r.info.start_time for r in children)
    assert parent.data.params["searcher"] == outcome.sweep.searcher_name
    assert parent.data.params["scheduler"] == outcome.sweep.scheduler_name
    artifacts = {a.path for a in client.list_artifacts(parent.info.run_id, "spec")}
    assert {"spec/toy.py", "spec/space.yaml"} <= artifacts
    assert sorted(r.data.tags["sweeplab.trial_id"] for r in children) == sorted(rows)
    assert sorted(int(r.data.tags["sweeplab.rank"]) for r in children) == list(
        range(1, len(rows) + 1)
    )
    best = json.loads((outcome.storage_dir / "best_config.json").read_text())
    assert parent.data.params["best_trial_id"] == best["trial_id"]
    for key, value in flatten_config(best["config"]).items():
        assert parent.data.params[f"best.{key}"] == str(value)
    for run in children:
        assert run.data.tags["mlflow.parentRunId"] == parent.info.run_id
        trial_rows = rows[run.data.tags["sweeplab.trial_id"]]
        first_config = json.loads(trial_rows[0]["config_json"])
        for key, value in flatten_config(first_config).items():
            assert run.data.params[key] == str(value)  # starting config, flattened with dots
        history = client.get_metric_history(run.info.run_id, "loss")
        # Every report, at step = its training_iteration (a PBT recipient repeats steps).
        assert sorted(m.step for m in history) == sorted(
            r["training_iteration"] for r in trial_rows
        )
    return children


CONDITIONAL = (
    '{"x": uniform(0, 1), "opt": choice({"sgd": {"lr": loguniform(1e-3, 1e-1)}, '
    '"adam": {"beta": uniform(0.8, 0.99)}})}'
)


@pytest.mark.parametrize(
    ("searcher", "scheduler", "space"),
    [
        (
            "optuna",
            "asha",
            CONDITIONAL,
        ),
        (
            "hyperopt",
            "hyperband",
            CONDITIONAL,
        ),
        ("random", "median", '{"x": uniform(0, 1), "lr": quniform(0.01, 0.1, 0.01)}'),
        ("grid", "fifo", '{"x": grid([0.1, 0.5]), "lr": randint(1, 3)}'),
    ],
)
def test_scheduler_and_searcher(
    ray_local: None, in_tmp: Path, searcher: str, scheduler: str, space: str
) -> None:
    outcome = sweep(
        in_tmp,
        f'name="s-{scheduler}", space={space}, metric="loss", mode="min", '
        f'searcher="{searcher}", scheduler="{scheduler}", max_iterations=4, seed=1, '
        f"num_trials={2 if searcher == 'grid' else 6}"
        + (', warm_start=[{"x": 0.3, "lr": 0.05}]' if searcher == "random" else ""),
        epochs=4,
    )
    rows = results(outcome)
    expected = 4 if searcher == "grid" else 6  # grid: 2 combinations x 2 repeats
    assert len(rows) == expected == outcome.trials
    assert outcome.errored == 0, trial_errors(outcome)
    for trial_rows in rows.values():
        assert [r["training_iteration"] for r in trial_rows] == list(range(1, len(trial_rows) + 1))
        assert all(r["loss"] == r["loss"] for r in trial_rows)
        received = json.loads(trial_rows[0]["config_json"])
        spec_space = load_spec(in_tmp / "toy.py").space
        spec_space.validate_config(received)  # the train_func got the final nested shape
        if "opt" in space:
            branch = received["opt"]
            assert set(branch) == ({"name", "lr"} if branch["name"] == "sgd" else {"name", "beta"})
    if searcher == "random":  # the warm-start config ran as one of the trials
        received = [json.loads(trial_rows[0]["config_json"]) for trial_rows in rows.values()]
        assert {"x": 0.3, "lr": 0.05} in received
    check_mlflow_record(in_tmp, outcome, rows)
    if scheduler == "asha":
        assert min(len(r) for r in rows.values()) < 4, "the scheduler stopped no trial early"
    best = json.loads((outcome.storage_dir / "best_config.json").read_text())
    values = [min(r["loss"] for r in trial) for trial in rows.values()]
    assert best["value"] == pytest.approx(min(values))
    assert Path(best["checkpoint"]).is_dir()


@pytest.mark.parametrize(
    ("workers", "fail_how", "reuse"),
    # The killed worker of a warm 2-worker slot (2, "sigkill", True) is the same sweep as
    # tests/faults/test_faults_worker.py's, which checks it with its MLflow record.
    [(1, "raise", True), (2, "raise", True), (2, "raise", False)],
)
def test_fault_heals_from_checkpoint(
    ray_local: None, in_tmp: Path, workers: int, fail_how: str, reuse: bool
) -> None:
    """A worker failing mid-trial: the trial goes on from its latest checkpoint and the epoch
    counter continues where it stopped.

    On a warm slot a `train_func` that raises fails its trial's run, which the loop retries
    from its checkpoint while the slot serves on; a killed worker restarts the slot's group
    inside the run. With a group per trial (`reuse_groups=False`) the retry starts a new group
    of its own: no group restarted inside a run."""
    outcome = sweep(
        in_tmp,
        f'name="faulty", space={{"x": 0.5, "fail_at": 3, "marker_dir": "{in_tmp}", '
        f'"fail_how": "{fail_how}"}}, metric="loss", mode="min", num_trials=1, '
        f"max_iterations=6, max_failures=1, workers_per_trial={workers}, reuse_groups={reuse}",
        epochs=6,
    )
    (trial_rows,) = results(outcome).values()
    assert (in_tmp / "failed-once").exists(), "the fault was not injected"
    assert outcome.errored == 0, trial_errors(outcome)
    # The epoch counter continues where the checkpoint left it: no epoch reported twice.
    assert [r["epoch"] for r in trial_rows] == [0, 1, 2, 3, 4, 5]
    assert {r["sweeplab_workers"] for r in trial_rows} == {workers}
    group_restarted = workers == 2 and fail_how == "sigkill"
    assert trial_rows[-1].get("sweeplab_group_restarts", 0) == (1 if group_restarted else 0)
