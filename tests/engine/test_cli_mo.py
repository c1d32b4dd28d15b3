"""`sweeplab best` and `sweeplab sweep --pick` of a multi-objective sweep.

The sweep is recorded into a real SQLite MLflow store by a `SweepTracker` fed trial events
directly (no Ray), as `tests/tracking/test_pareto_ranking.py` records it; the CLI then runs as
a subprocess against that store.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from mlflow_store import store_uri
from rich.console import Console
from toy_spec import record_sweep, write_spec

from sweeplab.cli import main
from sweeplab.cli._sweep import _print_outcome
from sweeplab.pareto import Objective
from sweeplab.tracking import SweepSummary, best_config_document
from tests.tracking.test_pareto_ranking import EXPECTED, _feed, _tracker

ENV = {**os.environ, "COLUMNS": "120"}
FRONT = ["t_b", "t_a", "t_f"]  # REPORTS' front 1, in ranking order (t_a and t_f are twins)


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sweeplab.cli", *args],
        cwd=cwd,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path, SweepSummary]:
    """A store holding the multi-objective sweep "mo" (pick rule "lat <= 3, loss") and a
    single-metric sweep "one"; and "mo"'s summary."""
    folder = tmp_path_factory.mktemp("cli_mo")
    uri = store_uri(folder)
    tracker = _tracker(uri, folder / "mo", pick="lat <= 3, loss")
    _feed(tracker)
    summary = tracker.finish()
    record_sweep(uri, folder / "one", "one", [("t0", {"x": 0.5}, [0.3], False)])
    return uri, folder, summary


def test_best_prints_the_front_and_the_pick(store: tuple[str, Path, SweepSummary]) -> None:
    uri, folder, summary = store
    result = cli("best", "mo", "--tracking-uri", uri, cwd=folder)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].strip() == "mo: Pareto front"
    assert lines[1].split() == ["rank", "trial", "loss", "(min)", "lat", "(min)", "config"]
    assert [line.split() for line in lines[2:5]] == [
        ["1", "t_b", "0.3", "4", "x=1"],
        ["2", "t_a", "0.5", "2", "x=0"],
        ["3", "t_f", "0.5", "2", "x=5"],
    ]
    # reference point: the worst loss (t_c's 0.6) and lat (t_d's 9)
    assert lines[5] == (
        "front: 3 trial(s) · objectives loss (min), lat (min) · constraints lat <= 6 · "
        f"hypervolume {summary.hypervolume:.4g} (reference point loss=0.6, lat=9)"
    )
    assert lines[6] == "picked (by 'lat <= 3, loss'): trial t_a · loss = 0.5, lat = 2"
    picked = next(r for r in summary.trials if r.trial_id == "t_a")
    assert f"MLflow run: {picked.run_id}" in lines


def test_best_json_lists_the_front(store: tuple[str, Path, SweepSummary]) -> None:
    uri, folder, summary = store
    result = cli("best", "mo", "--json", "--tracking-uri", uri, cwd=folder)
    assert result.returncode == 0, result.stderr
    listed = json.loads(result.stdout)
    assert [row["trial_id"] for row in listed] == FRONT
    assert [row["rank"] for row in listed] == [1, 2, 3]
    assert listed == best_config_document(summary, "mo")["front"]
    assert set(listed[0]) == {"trial_id", "rank", "values", "config", "checkpoint", "mlflow_run_id"}
    assert listed[0]["values"] == {"loss": 0.3, "lat": 4.0}


def test_best_pick_picks_from_the_recorded_front(store: tuple[str, Path, SweepSummary]) -> None:
    uri, folder, summary = store
    result = cli("best", "mo", "--pick", "loss", "--tracking-uri", uri, cwd=folder)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "picked (by 'loss'): trial t_b · loss = 0.3, lat = 4" in lines
    picked = next(r for r in summary.trials if r.trial_id == "t_b")
    assert f"MLflow run: {picked.run_id}" in lines


def test_a_bad_best_pick_exits_2_with_one_line(store: tuple[str, Path, SweepSummary]) -> None:
    uri, folder, _ = store
    result = cli("best", "mo", "--pick", "lat <= 3", "--tracking-uri", uri, cwd=folder)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.splitlines() == [
        "sweeplab: error: --pick must end with the metric that picks, one of ['loss', 'lat'], "
        "but got 'lat <= 3'."
    ]


@pytest.mark.parametrize(
    ("rule", "picked"),
    [
        ("loss", "t_b"),
        ("lat", "t_a"),  # t_a and t_f tie: the earlier in the ranking
        ("lat >= 3, lat", "t_b"),
        ("loss >= 0.4, lat <= 2, loss", "t_a"),
        ("lat < 1, loss", None),  # no front trial keeps the filter
    ],
)
def test_best_pick_picks_again_from_the_front(
    store: tuple[str, Path, SweepSummary],
    capsys: pytest.CaptureFixture[str],
    rule: str,
    picked: str | None,
) -> None:
    uri, _, _ = store
    assert main(["best", "mo", "--json", "--pick", rule, "--tracking-uri", uri]) == 0
    row = json.loads(capsys.readouterr().out)
    assert (row["trial_id"] if row else None) == picked
    assert main(["best", "mo", "--pick", rule, "--tracking-uri", uri]) == 0
    shown = capsys.readouterr().out
    if picked is None:
        assert f"picked (by {rule!r}): none; no front trial keeps {rule!r}" in shown
        assert "checkpoint:" not in shown
    else:
        assert f"picked (by {rule!r}): trial {picked} · " in shown


@pytest.mark.parametrize(
    ("sweep", "rule", "message"),
    [
        ("mo", "lat <= 3", "--pick must end with the metric that picks"),
        ("mo", "acc", "--pick must end with the metric that picks, one of ['loss', 'lat']"),
        ("mo", "params <= 3, loss", "--pick filters on 'params'"),
        ("mo", "lat =< 3, loss", "--pick must be '<metric> <op> <number>'"),
        ("mo", "", "--pick must be constraints then a metric"),
        ("one", "loss", "--pick 'loss': sweep 'one' ranks one metric ('loss')"),
    ],
)
def test_a_bad_pick_exits_2_with_one_line(
    store: tuple[str, Path, SweepSummary],
    capsys: pytest.CaptureFixture[str],
    sweep: str,
    rule: str,
    message: str,
) -> None:
    uri, _, _ = store
    for json_flag in ([], ["--json"]):
        assert main(["best", sweep, "--pick", rule, *json_flag, "--tracking-uri", uri]) == 2
        captured = capsys.readouterr()
        lines = captured.err.strip().splitlines()
        assert len(lines) == 1 and message in lines[0] and repr(rule) in lines[0], captured.err
        assert captured.out == ""


def test_the_end_of_a_sweep_prints_the_front_and_the_pick(
    store: tuple[str, Path, SweepSummary],
) -> None:
    _, folder, summary = store
    outcome = SimpleNamespace(
        resolved=SimpleNamespace(name="mo", metric="loss", mode="min", rank_by="best"),
        trials=6,
        wall_s=1.0,
        errored=0,
        diverged=0,
        storage_dir=folder / "mo",
        summary=summary,
        best=best_config_document(summary, "mo"),
        warnings=(),
    )
    console = Console(width=120, record=True)
    _print_outcome(console, outcome)
    lines = console.export_text().splitlines()
    start = lines.index(next(line for line in lines if "top trials by Pareto front" in line))
    header = lines[start + 1].split()
    assert header[:4] == ["rank", "trial", "status", "front"]
    rows = [line.split()[:4] for line in lines[start + 2 : start + 7]]
    assert rows == [[str(rank), t, "finished", front or "-"] for t, rank, front, _ in EXPECTED[:5]]
    assert any(line.startswith("front: 3 trial(s) · objectives loss (min)") for line in lines)
    assert "picked (by 'lat <= 3, loss'): trial t_a · loss = 0.5, lat = 2" in lines
    assert "best config" not in console.export_text()


def test_a_sweep_without_a_feasible_front_picks_none() -> None:
    from sweeplab.pareto import parse_constraint
    from sweeplab.tracking import TrialRecord, rank_pareto

    objectives = (Objective("loss", "min"), Objective("lat", "min"))
    constraints = (parse_constraint("lat <= 1"),)
    ranked = rank_pareto(
        [TrialRecord("t_a", values={"loss": 0.5, "lat": 2.0}), TrialRecord("t_b")],
        objectives,
        constraints,
    )
    summary = SweepSummary(
        trials=ranked, metric="loss", mode="min", rank_by="best", objectives=objectives,
        constraints=constraints,
    )  # fmt: skip
    outcome = SimpleNamespace(
        resolved=SimpleNamespace(name="mo", metric="loss", mode="min", rank_by="best"),
        trials=2, wall_s=1.0, errored=0, diverged=0, storage_dir=Path("runs"), summary=summary,
        best=best_config_document(summary, "mo"), warnings=(),
    )  # fmt: skip
    console = Console(width=120, record=True)
    _print_outcome(console, outcome)
    text = console.export_text()
    assert [line.split()[:4] for line in text.splitlines() if line.startswith(" 1 ")] == [
        ["1", "t_a", "running", "infeasible"]
    ]
    assert "front: 0 trial(s) · objectives loss (min), lat (min) · constraints lat <= 1" in text
    assert (
        "picked (the first of the ranking): none; the front is empty: no trial reported every "
        "objective within the constraints"
    ) in text


MO = (
    'name="toy", space={"x": uniform(0, 1)}, metric=["loss", "ms"], mode=["min", "min"], '
    'scheduler="asha"'
)


@pytest.mark.parametrize(
    ("source", "rule", "message"),
    [
        (MO, "ms <= 5", "--pick: Sweep field `pick` must end with the metric that picks"),
        (
            MO.replace('metric=["loss", "ms"], mode=["min", "min"]', 'metric="loss", mode="min"'),
            "loss",
            "--pick: Sweep field `pick` picks one trial of a front; it needs several metrics",
        ),
        # a good rule is taken: the sweep goes on to its resource check, which fails
        (MO + ", workers_per_trial=64", "ms <= 5, loss", "can never hold it"),
    ],
)
def test_sweep_pick_is_validated_before_anything_starts(
    tmp_path: Path, source: str, rule: str, message: str
) -> None:
    spec = write_spec(tmp_path, source)
    result = cli("sweep", str(spec), "--pick", rule, "--no-live", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["toy.py"], "something was written"
