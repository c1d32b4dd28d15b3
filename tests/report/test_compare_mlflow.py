"""`sweeplab compare` on real MLflow stores: runs recorded by the tracker (fast, no Ray), and two
real ASHA sweeps with different searchers, compared by the CLI and rendered in Chromium (slow)."""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from mlflow_store import store_uri

from sweeplab.cli import main
from sweeplab.report import compare_sweeps

ROOT = Path(__file__).resolve().parents[2]
T0 = 1_900_000_000.0  # seconds since the epoch: the first report of a recorded sweep


def _record(
    uri: str,
    storage: Path,
    name: str,
    trials: dict[str, list[tuple[float, float]]],
    *,
    metric: str = "loss",
    mode: str = "min",
    searcher: str = "random",
) -> str:
    """Records one execution of a sweep as the engine does, without Ray: a `SweepTracker` fed
    with trials ``{trial_id: [(seconds after T0, value), ...]}``. Returns its parent run id."""
    from sweeplab import Space, uniform
    from sweeplab.tracking import SweepTracker

    tracker = SweepTracker(
        tracking_uri=uri,
        sweep_name=name,
        storage_dir=storage,
        metric=metric,
        mode=mode,
        max_iterations=3,
        settings={"searcher": searcher},
        space_yaml=Space({"x": uniform(0, 1)}).to_yaml(),
        drain_timeout_s=60,
    )
    tracker.start()
    for n, (trial_id, reports) in enumerate(trials.items()):
        trial = SimpleNamespace(
            trial_id=trial_id, config={"x": n / 10}, local_path=None, path=None, error_file=None
        )
        tracker.trial_started(trial)
        for step, (seconds, value) in enumerate(reports, start=1):
            result = {metric: value, "training_iteration": step, "timestamp": T0 + seconds}
            tracker.trial_reported(trial, result)
        tracker.trial_ended(trial)
    tracker.finish()
    assert tracker.parent_run_id is not None
    return tracker.parent_run_id


def mlflow_reports(uri: str, parent_run_id: str, metric: str) -> list[float]:
    """The values of ``metric`` every trial of a parent run logged, straight from MlflowClient,
    in the order compare counts them: timestamp, trial id, step."""
    from mlflow import MlflowClient

    client = MlflowClient(uri)
    parent = client.get_run(parent_run_id)
    children = client.search_runs(
        [parent.info.experiment_id],
        filter_string=f"tags.`mlflow.parentRunId` = '{parent_run_id}'",
        max_results=1000,
    )
    points = []
    for child in children:
        trial_id = child.data.tags["sweeplab.trial_id"]
        for point in client.get_metric_history(child.info.run_id, metric):
            points.append((point.timestamp, trial_id, point.step, point.value))
    return [value for *_, value in sorted(points)]


def expected_cell(reports: list[float], target_reports: list[float], mode: str) -> tuple[str, str]:
    """A budget-to-target cell ``(fraction, reports)`` recomputed by hand."""
    pick = min if mode == "min" else max
    target = pick(v for v in target_reports if math.isfinite(v))
    for spent, value in enumerate(reports, start=1):
        if math.isfinite(value) and (value <= target if mode == "min" else value >= target):
            return repr(spent / len(reports)), str(spent)
    return "never", "never"


def html_cells(html: str) -> list[tuple[str, str]]:
    table = html[html.index('<table id="budget-to-target"') :]
    table = table[: table.index("</table>")]
    return re.findall(r'data-fraction="([^"]*)" data-reports="([^"]*)"', table)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """Sweep ``rep`` run twice (the second finds a better loss, faster), and ``acc`` (max)."""
    tmp_path = tmp_path_factory.mktemp("compare_store")
    uri = store_uri(tmp_path)
    first = _record(
        uri,
        tmp_path / "rep1",
        "rep",
        {"t1": [(0, 0.9), (2, 0.7), (4, 0.6)], "t2": [(1, 0.8), (3, 0.75)]},
    )
    second = _record(
        uri,
        tmp_path / "rep2",
        "rep",
        {"t1": [(0, 0.7), (1, 0.5), (2, 0.55)], "t2": [(0.5, 0.65)]},
        searcher="optuna",
    )
    _record(uri, tmp_path / "acc", "acc", {"t1": [(0, 0.5)]}, metric="acc", mode="max")
    return SimpleNamespace(uri=uri, first=first, second=second, folder=tmp_path)


def test_one_name_alone_compares_every_run_of_it(
    store: SimpleNamespace, capsys: pytest.CaptureFixture[str]
) -> None:
    out = store.folder / "out" / "compare.html"
    assert main(["compare", "rep", "--out", str(out), "--tracking-uri", store.uri]) == 0
    lines = capsys.readouterr().out.splitlines()
    first, second = f"rep@{store.first[:8]}", f"rep@{store.second[:8]}"
    assert lines == [
        f"{first}: best loss (min) 0.6 at report 5 of 5",
        f"{second}: best loss (min) 0.5 at report 3 of 4",
        f"comparison written to {out}",
    ]
    html = out.read_text()
    assert first in html and second in html
    runs = [store.first, store.second]
    reports = [mlflow_reports(store.uri, run, "loss") for run in runs]
    assert reports == [[0.9, 0.8, 0.7, 0.75, 0.6], [0.7, 0.65, 0.5, 0.55]]
    expected = [expected_cell(r, t, "min") for r in reports for t in reports]
    assert html_cells(html) == expected
    assert expected[1] == ("never", "never") and expected[2] == ("0.75", "3")


def test_runs_picked_by_id_prefix_with_their_spaces_and_configs(store: SimpleNamespace) -> None:
    comparison = compare_sweeps(
        [f"rep@{store.first[:5]}", "rep"], tracking_uri=store.uri
    )  # "rep" beside another selector: its latest run
    assert [s.data.parent_run_id for s in comparison.sweeps] == [store.first, store.second]
    assert comparison.summary["searcher"].tolist() == ["random", "optuna"]
    assert comparison.summary["best trial"].tolist() == ["t1", "t1"]
    assert comparison.best_configs.loc["x"].tolist() == [0.0, 0.0]
    assert comparison.spaces.loc["x"].tolist() == ["uniform [0.0, 1.0]"] * 2
    assert comparison.summary["wall time (s)"].tolist() == [4.0, 2.0]
    started = comparison.summary["started"].tolist()
    assert started[0] <= started[1]


def test_executions_of_a_name_and_loading_one_by_run_id(store: SimpleNamespace) -> None:
    from sweeplab.tracking import UnknownSweepError, load_sweep, sweep_executions

    executions = sweep_executions("rep", store.uri)
    assert [e.run_id for e in executions] == [store.first, store.second]
    assert all(e.status == "FINISHED" and e.ended is not None for e in executions)
    assert load_sweep("rep", store.uri).parent_run_id == store.second
    assert load_sweep("rep", store.uri, run_id=store.first).parent_run_id == store.first
    for name, run_id in [("acc", store.first), ("rep", "0" * 32), ("nope", store.first)]:
        with pytest.raises(UnknownSweepError, match=f"No run '{run_id}' of a sweep named"):
            load_sweep(name, store.uri, run_id=run_id)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["nope"], "No sweep named 'nope'"),
        (["rep@ffffffffffff"], "No run 'ffffffffffff' of the sweep 'rep'"),
        (["rep", "acc"], "the sweeps optimise different objectives (rep: min loss; acc: max acc)"),
        (["rep", "acc", "--metric", "loss"], "sweep 'acc' (run "),
        (["rep@", "acc"], "sweep 'rep@': give NAME"),
        (["rep", "rep"], "is selected twice"),
    ],
)
def test_bad_selections_exit_2_with_one_line(
    store: SimpleNamespace, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = store.folder / "bad.html"
    assert main(["compare", *argv, "--out", str(out), "--tracking-uri", store.uri]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("sweeplab: error: ") and message in lines[0], lines[0]
    assert not out.exists()


def test_a_store_that_does_not_exist_is_not_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "none.db"
    argv = ["compare", "a", "b", "--out", str(tmp_path / "c.html"), "--tracking-uri"]
    assert main([*argv, f"sqlite:///{db}"]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert not db.exists()


SPEC = (
    'name="{name}", space={{"x": uniform(0, 1), "lr": loguniform(1e-3, 1e-1)}}, metric="loss",'
    ' mode="min", searcher="{searcher}", scheduler="asha", max_iterations=3, num_trials=6,'
    " seed=3"
)


@pytest.mark.slow
def test_compare_two_real_sweeps_in_chromium(
    ray_local: None, tmp_path: Path, render: Any, pixel_std: Any
) -> None:
    """Random against Optuna on the toy spec, 6 ASHA trials each; `sweeplab compare` through
    the CLI; the page renders offline with both curves, and its budget table is MLflow's."""
    sys.path.insert(0, str(ROOT / "tests" / "engine"))
    try:
        from toy_spec import write_spec
    finally:
        sys.path.remove(str(ROOT / "tests" / "engine"))
    import sweeplab
    from sweeplab.engine import SweepOptions, run_sweep

    uri = store_uri(tmp_path)
    runs = {}
    for searcher in ("random", "optuna"):
        name = f"cmp-{searcher}"
        spec = write_spec(
            tmp_path,
            SPEC.format(name=name, searcher=searcher),
            epochs=3,
            sleep=0.01,
            checkpoint_every=3,
            name=name.replace("-", "_"),
        )
        outcome = run_sweep(
            sweeplab.load_spec(spec),
            SweepOptions(spec_path=spec, storage=tmp_path / "runs", tracking_uri=uri, live=False),
        )
        assert outcome.trials == 6 and outcome.errored == 0
        runs[name] = sweeplab.load_sweep(name, tracking_uri=uri).parent_run_id

    out = tmp_path / "compare.html"
    command = ["compare", *runs, "--out", str(out), "--tracking-uri", uri]
    assert main(command) == 0  # the CLI's `main` in this process
    html = out.read_text()
    assert not re.search(r"<script[^>]*\ssrc\s*=", html, re.I), "a script fetched from elsewhere"
    assert not re.search(r"<(link|img|iframe)\b", html, re.I)

    reports = [mlflow_reports(uri, run, "loss") for run in runs.values()]
    assert all(len(r) >= 6 for r in reports), "every trial reports at least once"
    assert html_cells(html) == [expected_cell(r, t, "min") for r in reports for t in reports]

    rendered = render(out, tmp_path / "compare.png", size="1280,2600")
    assert rendered.console == [], "the page logged to the console"
    assert rendered.requests == [], "the page fetched something"
    assert pixel_std(rendered.screenshot) > 0.05, "the screenshot is blank"
    # Two figures (budget, wall time), one line per sweep in each, named in the legend.
    assert rendered.dom.count('class="main-svg"') >= 2, "plotly drew no figure"
    assert len(re.findall(r'class="trace scatter', rendered.dom)) == 4
    for name in runs:
        assert len(re.findall(rf'class="legendtext"[^>]*>{name}<', rendered.dom)) == 2
    # Each curve is drawn (a path through several points).
    assert (
        len(re.findall(r'class="js-line"[^>]* d="M[\d.,-]+(?:[HVL][\d.,-]+)+"', rendered.dom)) == 4
    )
    summary = html[html.index('<table id="summary"') :]
    for reported in reports:
        assert f"<td>{min(v for v in reported if math.isfinite(v)):.6g}</td>" in summary
