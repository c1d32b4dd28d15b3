"""A real multi-objective sweep through the CLI: two metrics and a constraint, on a local Ray
and a local MLflow store; its front in MLflow, `sweeplab best --json` and the report's front
plot in headless Chromium."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mlflow_store import store_uri

pytestmark = pytest.mark.slow

SPEC = """
import json
import os
import tempfile
import time

from ray import train

import sweeplab
from sweeplab import uniform

EPOCHS = 4


def train_func(config):
    x = config["x"]
    for epoch in range(EPOCHS):
        time.sleep(0.05)
        # loss is best at x = 0.2, ms at x = 1: the front is x in [0.2, 1].
        loss = (x - 0.2) ** 2 + 1.0 / (epoch + 1)
        ms = 1.0 + 10.0 * (1.0 - x) ** 2
        with tempfile.TemporaryDirectory() as folder:
            with open(os.path.join(folder, "state.json"), "w") as f:
                json.dump({"epoch": epoch}, f)
            train.report(
                {"loss": loss, "ms": ms}, checkpoint=train.Checkpoint.from_directory(folder)
            )


sweep = sweeplab.Sweep(
    name="mo-sweep",
    train_func=train_func,
    space={"x": uniform(0, 1)},
    metric=["loss", "ms"],
    mode=["min", "min"],
    constraints=["ms <= 5"],
    pick="ms <= 3, loss",
    scheduler="asha",
    num_trials=10,
    max_iterations=EPOCHS,
    max_concurrent_trials=2,
    seed=3,
)
"""


def cli(*args: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sweeplab.cli", *args],
        cwd=cwd,
        env={**os.environ, "COLUMNS": "160"},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def points_from_mlflow(uri: str) -> dict[str, dict[str, Any]]:
    """Each child run's tags and the point MLflow holds: the last step with both metrics."""
    from mlflow import MlflowClient

    from sweeplab.keys import FRONT_TAG, RANK_TAG, ROLE_TAG, ROLE_TRIAL, TRIAL_ID_TAG

    client = MlflowClient(uri)
    (experiment,) = [e for e in client.search_experiments() if e.name == "mo-sweep"]
    runs = client.search_runs([experiment.experiment_id], max_results=1000)
    out = {}
    for run in runs:
        if run.data.tags.get(ROLE_TAG) != ROLE_TRIAL:
            continue
        history = {
            name: {m.step: m.value for m in client.get_metric_history(run.info.run_id, name)}
            for name in ("loss", "ms")
        }
        steps = set(history["loss"]) & set(history["ms"])
        last = max(steps) if steps else None
        out[run.data.tags[TRIAL_ID_TAG]] = {
            "front": run.data.tags.get(FRONT_TAG),
            "rank": int(run.data.tags[RANK_TAG]),
            "point": None if last is None else (history["loss"][last], history["ms"][last]),
        }
    return out


def non_dominated(points: dict[str, tuple[float, float]]) -> set[str]:
    """The trials no other trial dominates (both minimised), straight from the definition."""
    return {
        trial
        for trial, (a, b) in points.items()
        if not any(
            (c <= a and d <= b) and (c < a or d < b)
            for other, (c, d) in points.items()
            if other != trial
        )
    }


def test_two_metric_sweep_with_a_constraint(
    tmp_path: Path, render: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """The sweep runs the CLI in its own interpreter (its own local Ray, no flags); `best` and
    `report` run the CLI's `main` in this one, on the same store."""
    from sweeplab.cli import main

    spec = tmp_path / "mo_sweep.py"
    spec.write_text(SPEC)
    result = cli("sweep", str(spec), "--no-live", cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    uri = store_uri(tmp_path)

    trials = points_from_mlflow(uri)
    assert len(trials) == 10
    feasible = {t: v["point"] for t, v in trials.items() if v["point"] and v["point"][1] <= 5}
    infeasible = {t for t, v in trials.items() if v["point"] and v["point"][1] > 5}
    assert feasible and infeasible, trials  # the seed gives both kinds
    # The front in MLflow is the non-dominated set of MLflow's own values.
    front = {t for t, v in trials.items() if v["front"] == "1"}
    assert front == non_dominated(feasible)
    # Infeasible trials are tagged so, and rank after every feasible one.
    assert all(trials[t]["front"] == "infeasible" for t in infeasible)
    assert min(trials[t]["rank"] for t in infeasible) > max(trials[t]["rank"] for t in feasible)

    capsys.readouterr()
    assert main(["best", "mo-sweep", "--json", "--tracking-uri", uri]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert {row["trial_id"] for row in listed} == front
    (best_file,) = tmp_path.glob("sweeplab-runs/*/best_config.json")
    best = json.loads(best_file.read_text())
    picked = [t for t in front if feasible[t][1] <= 3]
    expected = min(picked, key=lambda t: feasible[t][0]) if picked else None
    assert best["trial_id"] == expected
    assert best["hypervolume"] is not None and best["hypervolume"] > 0
    assert not math.isnan(best["hypervolume"])

    out = tmp_path / "report.html"
    assert main(["report", "mo-sweep", "--out", str(out), "--tracking-uri", uri]) == 0
    rendered = render(out, tmp_path / "report.png")
    assert rendered.console == [], "the page logged to the console"
    assert "Pareto front" in out.read_text()
    assert rendered.dom.count('class="plotly-graph-div') >= 2
