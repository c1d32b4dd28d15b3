"""A real Tune sweep (local Ray, ASHA, an erroring trial) recorded in a real SQLite store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _helpers import N_ITER, children, make_trainable
from mlflow_store import store_uri

from sweeplab.tracking import (
    SweepTracker,
    TrialRecord,
    UnknownSweepError,
    best_trial,
    list_sweeps,
    load_sweep,
    rank_trials,
)

pytestmark = pytest.mark.slow
N_TRIALS = 6


def _decoder(config: dict) -> dict:
    return {k: v for k, v in config.items() if k != "unused"}


def test_sweep_is_recorded_in_mlflow(ray_local: None, in_tmp: Path) -> None:
    from mlflow import MlflowClient
    from ray import tune
    from ray.tune.schedulers import ASHAScheduler

    uri = store_uri(in_tmp)
    spec = in_tmp / "spec.py"
    spec.write_text("sweep = None\n")
    storage = in_tmp / "sweep"
    tracker = SweepTracker(
        tracking_uri=uri,
        sweep_name="demo",
        storage_dir=storage,
        metric="loss",
        mode="min",
        settings={"searcher": "grid", "num_trials": N_TRIALS, "workers_per_trial": 1},
        spec_path=spec,
        space_yaml="x: {grid: [0, 1, 2, 3, 4, 5]}\n",
        config_decoder=_decoder,
        scheduler_name="asha",
        max_iterations=N_ITER,
        register_model="demo-model",
        # The thread writer is what every smaller sweep of the suite uses through `run_sweep`.
        writer="process",
    )
    tracker.start()
    tuner = tune.Tuner(
        make_trainable(in_tmp / "ckpt", fail_x=0),
        param_space={
            "x": tune.grid_search(list(range(N_TRIALS))),
            "optimizer": {"name": "sgd", "momentum": 0.9},
            "api_token": "hunter2",
            "unused": 1,
        },
        tune_config=tune.TuneConfig(
            metric="loss",
            mode="min",
            scheduler=ASHAScheduler(max_t=N_ITER, grace_period=4, reduction_factor=2),
        ),
        run_config=tune.RunConfig(
            name="demo", storage_path=str(in_tmp / "ray"), callbacks=[tracker.tune_callback()],
            verbose=0,
        ),
    )  # fmt: skip
    grid = tuner.fit()
    summary = tracker.finish()

    tune_rows = {
        r.metrics["trial_id"]: r.metrics_dataframe for r in grid if r.metrics_dataframe is not None
    }
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("demo")
    assert experiment is not None
    parents = client.search_runs(
        [experiment.experiment_id], filter_string="tags.`sweeplab.role` = 'sweep'"
    )
    assert len(parents) == 1
    parent = parents[0]
    assert parent.info.status == "FINISHED"
    assert parent.data.params["searcher"] == "grid"
    assert parent.data.params["scheduler"] == "asha"
    assert parent.data.params["metric"] == "loss"
    assert parent.data.params["num_trials"] == str(N_TRIALS)
    assert parent.data.tags["sweeplab.rank_by"] == "best"
    spec_files = {a.path for a in client.list_artifacts(parent.info.run_id, "spec")}
    assert spec_files == {"spec/spec.py", "spec/space.yaml"}

    runs = children(client, parent.info.run_id, experiment.experiment_id)
    assert len(runs) == N_TRIALS
    by_trial = {r.data.tags["sweeplab.trial_id"]: r for r in runs}
    assert set(by_trial) == set(tune_rows) and len(by_trial) == N_TRIALS

    statuses: dict[str, str] = {}
    records = []
    for trial_id, run in by_trial.items():
        tags, params = run.data.tags, run.data.params
        assert tags["sweeplab.role"] == "trial"
        assert tags["mlflow.parentRunId"] == parent.info.run_id
        assert params["optimizer.name"] == "sgd"
        assert params["optimizer.momentum"] == "0.9"
        assert params["api_token"] == "***"
        assert "unused" not in params
        # every Tune result is in MLflow exactly once, step = training_iteration
        expected_steps = list(tune_rows[trial_id]["training_iteration"])
        history = client.get_metric_history(run.info.run_id, "loss")
        assert sorted(m.step for m in history) == expected_steps
        assert [m.value for m in sorted(history, key=lambda m: m.step)] == list(
            tune_rows[trial_id]["loss"]
        )
        assert {"loss", "acc", "time_total_s"} <= set(run.data.metrics)
        assert not {"training_iteration", "note", "flag", "pid"} & set(run.data.metrics)
        status = statuses[trial_id] = tags["sweeplab.status"]
        if params["x"] == "0":
            assert status == "errored"
            assert "boom" in tags["sweeplab.error"] and len(tags["sweeplab.error"]) <= 500
            assert run.info.status == "FAILED"
        else:
            assert status in ("finished", "stopped_early")
            assert run.info.status == "FINISHED"
        if status == "stopped_early":
            assert tags["sweeplab.stopped_by"] == "asha"
            assert int(tags["sweeplab.stopped_at_iteration"]) == len(expected_steps) < N_ITER
        if status == "finished":
            assert len(expected_steps) == N_ITER
        values = [m.value for m in sorted(history, key=lambda m: m.step)]
        best = min(values)
        records.append(
            TrialRecord(
                trial_id=trial_id, best_value=best, last_value=values[-1],
                best_iteration=1 + values.index(best), iterations=len(values),
            )
        )  # fmt: skip
        assert tags["sweeplab.restarts"] == "0"
    # x=0 fails before ASHA's first rung (4); x=1 is best at every rung, so it runs to the
    # budget (ASHA stops it at max_t with done=True: it still counts as finished); x=5 is the
    # worst at rung 4 and is stopped there. The others depend on arrival order.
    x_status = {by_trial[t].data.params["x"]: s for t, s in statuses.items()}
    assert x_status["0"] == "errored" and x_status["1"] == "finished"
    assert x_status["5"] == "stopped_early"
    assert list(statuses.values()).count("errored") == 1

    ranked = rank_trials(records, "loss", "min")
    assert {r.trial_id: r.rank for r in ranked} == {
        t: int(r.data.tags["sweeplab.rank"]) for t, r in by_trial.items()
    }
    assert [r.trial_id for r in summary.trials] == [r.trial_id for r in ranked]
    best = summary.best
    assert best is not None and best.trial_id == ranked[0].trial_id
    best_x = int(by_trial[best.trial_id].data.params["x"])
    assert best.config == {"x": best_x, "optimizer": {"name": "sgd", "momentum": 0.9},
                           "api_token": "***"}  # fmt: skip

    parent = client.get_run(parent.info.run_id)
    assert parent.data.params["best_trial_id"] == best.trial_id
    assert parent.data.params["best.x"] == str(best_x)
    assert parent.data.params["best.optimizer.name"] == "sgd"
    assert parent.data.params["best.api_token"] == "***"
    assert parent.data.metrics["best_loss"] == pytest.approx(best.best_value)
    assert float(parent.data.tags["sweeplab.best_metric"]) == best.best_value
    ckpt_files = [a.path for a in client.list_artifacts(parent.info.run_id, "best_checkpoint")]
    assert ckpt_files == ["best_checkpoint/weights.txt"]
    assert best.best_checkpoint is not None and best.best_checkpoint.endswith(
        f"step_{best.best_iteration:03d}"
    )
    versions = client.search_model_versions("name='demo-model'")
    assert len(versions) == 1 and versions[0].tags["sweeplab.trial_id"] == best.trial_id

    written = json.loads((storage / "best_config.json").read_text())
    assert written == best_trial("demo", tracking_uri=uri)
    assert written["trial_id"] == best.trial_id and written["tracking_uri"] == uri
    assert written["mlflow_run_id"] == by_trial[best.trial_id].info.run_id
    assert written["parent_run_id"] == parent.info.run_id

    data = load_sweep("demo", tracking_uri=uri)
    assert data.metric == "loss" and data.mode == "min"
    assert data.parent_run_id == parent.info.run_id
    assert list(data.trials["rank"]) == list(range(1, N_TRIALS + 1))
    assert list(data.trials["trial_id"]) == [r.trial_id for r in ranked]
    assert data.trials.loc[0, "best"] == pytest.approx(best.best_value)
    assert {"config.x", "config.optimizer.name"} <= set(data.trials.columns)
    loss_points = data.history[data.history["metric"] == "loss"]
    assert len(loss_points) == sum(len(frame) for frame in tune_rows.values())
    assert data.best == written
    assert data.settings["searcher"] == "grid"

    sweeps = list_sweeps(uri)
    row = sweeps[sweeps["sweep"] == "demo"].iloc[0]
    assert row["trials"] == N_TRIALS and row["status"] == "FINISHED"
    assert row["best_metric"] == pytest.approx(best.best_value)
    assert row["parent_run_id"] == parent.info.run_id

    with pytest.raises(UnknownSweepError, match="nope"):
        load_sweep("nope", tracking_uri=uri)
