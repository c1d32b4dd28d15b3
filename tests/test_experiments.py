"""Every experiment in experiments/ runs end to end, at tiny scale, through the real CLI.

Each runs `sweeplab sweep` through the CLI's `main` in this process, on the test session's shared
local Ray (whose workers import the experiments' `_data` module as a sweep's own Ray would), which
saves each one an interpreter, its imports and a Ray start. The CLI in its own interpreter with
no `--address`, as `make demo` runs it, starting and stopping its own local Ray, is covered by the
multi-objective sweep test and the SIGKILL resume test.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mlflow_store import store_uri

from sweeplab.cli import main

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
EXPERIMENTS = ROOT / "experiments"

# Each experiment, the flags and environment that make it tiny, and a sanity bound on its metric:
# a floor for a metric that is maximised, a ceiling for one that is minimised.
TINY = {
    "quickstart.py": (["--num-trials", "2"], {"QUICKSTART_EPOCHS": "2"}, 0.5),
    "scale_pytorch.py": (
        ["--num-trials", "1"],
        {"SCALE_EPOCHS": "2", "SCALE_CPUS_PER_WORKER": "0.5"},
        0.5,
    ),
    # eval_loss is minimised: a character model that learned nothing sits near ln(vocab) ~ 3.4.
    "transformers_gpt2.py": (["--num-trials", "1"], {"GPT2_EPOCHS": "2", "GPT2_WORKERS": "1"}, 3.3),
    "tune_at_scale.py": (["--num-trials", "2"], {"TUNE_EPOCHS": "2"}, 0.3),
    "fault_tolerance.py": (["--num-trials", "1"], {"INJECT_FAULT": "1", "FT_EPOCHS": "3"}, 0.8),
    "multi_node.py": (
        ["--num-trials", "1"],
        {"MULTINODE_EPOCHS": "2", "MULTINODE_CPUS_PER_WORKER": "0.5"},
        0.5,
    ),
    # 4 epochs, a PBT round every epoch: a population of 4 exploits.
    "pbt_schedules.py": (["--num-trials", "4"], {"PBT_EPOCHS": "4"}, 0.5),
    "hyperopt_conditional.py": (["--num-trials", "2"], {"HYPEROPT_EPOCHS": "3"}, 0.6),
    # Several metrics: the bound is on the picked trial's first objective (accuracy, max).
    "multi_objective.py": (["--num-trials", "4"], {"MO_EPOCHS": "3", "MO_WORKERS": "1"}, 0.5),
}


def test_every_experiment_has_a_tiny_run() -> None:
    assert sorted(p.name for p in EXPERIMENTS.glob("*.py") if not p.name.startswith("_")) == sorted(
        TINY
    )


@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", sorted(TINY))
def test_experiment_runs(
    name: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    ray_local: None,
) -> None:
    flags, env, bound = TINY[name]
    uri = store_uri(tmp_path)  # the working folder's default store, empty (MLflow's own schema)
    argv = ["sweep", str(EXPERIMENTS / name), "--no-live", *flags]
    monkeypatch.chdir(tmp_path)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    code = main(argv)
    assert code == 0, capsys.readouterr().out[-4000:]
    (best_file,) = tmp_path.glob("sweeplab-runs/*/best_config.json")
    best = json.loads(best_file.read_text())
    if best["mode"] == "max":
        assert best["value"] >= bound
    else:
        assert best["value"] <= bound
    assert Path(best["checkpoint"]).is_dir()
    _check_trials(name, uri, best["sweep"], int(flags[1]))
    # `sweeplab best` in this process: the same command, without a second interpreter.
    capsys.readouterr()
    assert main(["best", best["sweep"], "--json", "--tracking-uri", uri]) == 0
    listed = json.loads(capsys.readouterr().out)
    if "front" in best:  # several metrics: `best --json` lists the front
        assert [row["trial_id"] for row in listed] == [row["trial_id"] for row in best["front"]]
        assert best["trial_id"] in {row["trial_id"] for row in listed}
        return
    assert listed["trial_id"] == best["trial_id"]
    assert listed["config"] == best["config"]


def _check_trials(name: str, uri: str, sweep: str, expected: int) -> None:
    """Every trial is in MLflow, ended well; PBT exploited and the injected fault was retried."""
    import mlflow

    client = mlflow.MlflowClient(uri)
    experiment = client.get_experiment_by_name(sweep)
    trials = [
        run
        for run in client.search_runs([experiment.experiment_id])
        if run.data.tags.get("sweeplab.role") == "trial"
    ]
    assert len(trials) == expected
    assert {run.data.tags["sweeplab.status"] for run in trials} <= {"finished", "stopped_early"}
    if name == "pbt_schedules.py":
        # No trial errored (the status check above): PBT left `hidden` alone, so each exploited
        # trial's width fits its donor's checkpoint (with `scheduler="pbt"`, which mutates it,
        # an exploited trial fails to load the donor's weights).
        assert any(run.data.tags.get("sweeplab.pbt.lineage") for run in trials), "no exploit"
    if name == "fault_tolerance.py":
        assert [run.data.tags["sweeplab.restarts"] for run in trials] == ["1"]
