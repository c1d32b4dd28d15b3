"""The report's views of a hand-made multi-objective sweep (no Ray, no MLflow): the Pareto
front, the hypervolume against budget, each objective's views, the table and the HTML."""

from __future__ import annotations

import itertools
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

from sweeplab.pareto import Constraint, Objective
from sweeplab.report import (
    hypervolume_curve,
    objective_study,
    pareto_figures,
    ranked_table,
    sweep_study,
)
from sweeplab.report._html import render_report

LOSS, MS, ACC = Objective("loss", "min"), Objective("ms", "min"), Objective("acc", "max")
FAST = Constraint("ms", "<=", 5.0)

# trial id -> (status, point or None, iterations). The point is the last report's values.
TRIALS: dict[str, tuple[str, dict[str, float] | None, int]] = {
    "t00": ("finished", {"loss": 0.10, "ms": 4.0, "acc": 0.90}, 4),
    "t01": ("finished", {"loss": 0.20, "ms": 2.0, "acc": 0.85}, 4),
    "t02": ("finished", {"loss": 0.30, "ms": 1.0, "acc": 0.70}, 4),
    "t03": ("finished", {"loss": 0.25, "ms": 3.0, "acc": 0.60}, 4),  # t01 dominates it
    "t04": ("finished", {"loss": 0.05, "ms": 8.0, "acc": 0.95}, 4),  # breaks ms <= 5
    "t05": ("stopped_early", {"loss": 0.40, "ms": 0.5, "acc": 0.50}, 1),  # on the front
    "t06": ("errored", None, 1),  # never reported every objective
    "t07": ("finished", {"loss": 0.10, "ms": 4.0, "acc": 0.90}, 4),  # t00's twin
}
# The order the trials ended in (their last timestamp): not the order of their ids.
ENDED = ["t02", "t04", "t00", "t06", "t01", "t05", "t03", "t07"]


def mo_sweep(
    objectives: tuple[Objective, ...],
    pick: str | None = None,
    trials: dict[str, tuple[str, dict[str, float] | None, int]] = TRIALS,
    ended: list[str] = ENDED,
) -> Any:
    """A SweepData as `load_sweep` returns it for a multi-objective sweep with ``ms <= 5``."""
    import pandas as pd

    from sweeplab.tracking import SweepData, SweepSummary, TrialRecord, rank_pareto
    from sweeplab.tracking import best_config_document as document

    records, points = [], []
    for trial_id, (status, point, iterations) in trials.items():
        x = int(trial_id[1:]) / 10
        values = None if point is None else {o.name: point[o.name] for o in objectives}
        records.append(
            TrialRecord(
                trial_id=trial_id,
                run_id=f"run-{trial_id}",
                status=status,
                config={"x": x, "opt": "sgd" if int(trial_id[1:]) % 2 else "adam"},
                iterations=iterations,
                values=values,
            )
        )
        end = pd.Timestamp(1000 + ended.index(trial_id), unit="s")
        for step in range(1, iterations + 1):
            for name in [o.name for o in objectives] if point else ["loss"]:
                final = point[name] if point else 1.0
                points.append(
                    {
                        "trial_id": trial_id,
                        "metric": name,
                        "step": step,
                        "value": final + (iterations - step) * 0.1,
                        "timestamp": end - pd.Timedelta(seconds=iterations - step),
                    }
                )
    ranked = rank_pareto(records, objectives, (FAST,))
    summary = SweepSummary(
        trials=ranked,
        metric=objectives[0].name,
        mode=objectives[0].mode,
        rank_by="best",
        objectives=objectives,
        constraints=(FAST,),
        pick_rule=pick,
    )
    rank_of = {r.trial_id: r.rank for r in ranked}
    history = pd.DataFrame(points)
    history["rank"] = history["trial_id"].map(rank_of)
    history = history[["trial_id", "rank", "metric", "step", "value", "timestamp"]]
    rows = []
    for record in ranked:
        curve = history[(history.trial_id == record.trial_id) & (history.metric == "loss")]
        rows.append(
            {
                "trial_id": record.trial_id,
                "run_id": record.run_id,
                "status": record.status,
                "rank": record.rank,
                "best": curve["value"].min(),
                "last": curve["value"].iloc[-1],
                "iterations": record.iterations,
                "restarts": 0,
                **{f"config.{k}": str(v) for k, v in record.config.items()},
            }
        )
    trials = pd.DataFrame(rows)
    trials["rank"] = trials["rank"].astype("Int64")
    return SweepData(
        name="mo-fake",
        metric=objectives[0].name,
        mode=objectives[0].mode,
        parent_run_id="parent",
        trials=trials,
        history=history,
        best=document(summary, "mo-fake"),
        settings={"searcher": "optuna", "scheduler": "asha", "rank_by": "best"},
        objectives=objectives,
        constraints=(FAST,),
        summary=summary,
    )


TWO = (LOSS, MS)
THREE = (LOSS, MS, ACC)


def hovered(trace: Any) -> list[dict[str, Any]]:
    """The JSON that Optuna's front plot shows on hover, one per point."""
    return [json.loads(text.replace("<br>", "\n")) for text in trace.text or ()]


def trial_ids(trace: Any) -> set[str]:
    return {h["user_attrs"]["trial_id"] for h in hovered(trace)}


def front_traces(figure: Any) -> dict[str, Any]:
    """Optuna's traces of a front plot with constraints, by what they hold."""
    kinds = {"Best Trial": "front", "Feasible Trial": "dominated", "Infeasible Trial": "grey"}
    found = {}
    for trace in figure.data:
        for label, kind in kinds.items():
            if trace.hovertemplate and f"<extra>{label}</extra>" in trace.hovertemplate:
                found[kind] = trace
    return found


def test_fixture_ranks_as_intended() -> None:
    data = mo_sweep(TWO)
    fronts = {r.trial_id: r.front for r in data.summary.trials}
    assert fronts == {
        "t00": 1,
        "t01": 1,
        "t02": 1,
        "t03": 2,
        "t04": None,
        "t05": 1,
        "t06": None,
        "t07": 1,
    }
    assert [r.trial_id for r in data.summary.trials][-2:] == ["t04", "t06"]


@pytest.mark.parametrize("objectives", [TWO, THREE], ids=["2 objectives", "3 objectives"])
def test_study_is_multi_objective(objectives: tuple[Objective, ...]) -> None:
    data = mo_sweep(objectives)
    study = sweep_study(data)
    assert [d.name for d in study.directions] == [
        "MINIMIZE" if o.mode == "min" else "MAXIMIZE" for o in objectives
    ]
    assert study.metric_names == [o.name for o in objectives]
    by_id = {t.user_attrs["trial_id"]: t for t in study.trials}
    assert [t.user_attrs["trial_id"] for t in study.trials] == sorted(TRIALS)
    for trial_id, (_, point, _) in TRIALS.items():
        trial = by_id[trial_id]
        if point is None:
            assert trial.state.name == "FAIL" and trial.values is None
            continue
        assert trial.state.name == "COMPLETE"  # stopped early or not: it has a point
        assert trial.values == [point[o.name] for o in objectives]
        assert trial.constraints == {"ms <= 5": 0.0 if point["ms"] <= 5 else point["ms"] - 5}
    assert by_id["t05"].user_attrs["status"] == "stopped_early"
    assert by_id["t03"].user_attrs["front"] == 2 and by_id["t04"].user_attrs["front"] is None


@pytest.mark.parametrize("objectives", [TWO, THREE], ids=["2 objectives", "3 objectives"])
def test_front_plots_are_the_front_1_trials(objectives: tuple[Objective, ...]) -> None:
    data = mo_sweep(objectives)
    figures = pareto_figures(data)
    pairs = [(a, b) for i, a in enumerate(objectives) for b in objectives[i + 1 :]]
    assert list(figures) == [f"pareto front: {a.name} vs {b.name}" for a, b in pairs] + [
        "hypervolume"
    ]
    front = {r.trial_id for r in data.summary.front}
    assert front == ({"t00", "t01", "t02", "t05", "t07"} if objectives == TWO else front)
    points = {r.trial_id: r.values for r in data.summary.trials}
    for a, b in pairs:
        figure = figures[f"pareto front: {a.name} vs {b.name}"]
        traces = front_traces(figure)
        assert trial_ids(traces["front"]) == front
        assert sorted(zip(traces["front"].x, traces["front"].y, strict=True)) == sorted(
            (points[t][a.name], points[t][b.name]) for t in front
        )
        assert trial_ids(traces["grey"]) == {"t04"}  # infeasible, greyed
        assert traces["grey"].marker.color == "#cccccc"
        assert trial_ids(traces["dominated"]) == {r.trial_id for r in data.summary.trials} - (
            front | {"t04", "t06"}
        )
        assert figure.layout.xaxis.title.text == f"{a.name} ({a.mode})"
        assert figure.layout.yaxis.title.text == f"{b.name} ({b.mode})"
        figure.to_json()


def test_front_plot_stars_the_picked_trial() -> None:
    data = mo_sweep(TWO, pick="ms <= 3, loss")
    assert data.summary.picked.trial_id == "t01"
    figure = pareto_figures(data)["pareto front: loss vs ms"]
    (star,) = [t for t in figure.data if t.name == "picked: t01"]
    assert (star.x, star.y) == ((0.20,), (2.0,))


@pytest.mark.parametrize("objectives", [TWO, THREE], ids=["2 objectives", "3 objectives"])
def test_hypervolume_curve_ends_at_the_summary(objectives: tuple[Objective, ...]) -> None:
    data = mo_sweep(objectives)
    curve = hypervolume_curve(data)
    assert list(curve["trial_id"]) == ENDED
    budget = [TRIALS[t][2] for t in ENDED]
    assert list(curve["iterations"]) == [sum(budget[: i + 1]) for i in range(len(ENDED))]
    volumes = list(curve["hypervolume"])
    assert volumes[-1] == pytest.approx(data.summary.hypervolume)
    assert data.summary.hypervolume > 0
    assert all(b >= a for a, b in itertools.pairwise(volumes))
    by_trial = dict(zip(ENDED, volumes, strict=True))
    assert by_trial["t04"] == by_trial["t02"]  # infeasible: no volume
    assert by_trial["t07"] == by_trial["t03"]  # a twin of a front point adds nothing

    figure = pareto_figures(data)["hypervolume"]
    (trace,) = figure.data
    assert list(trace.y) == volumes and list(trace.x) == list(curve["iterations"])
    assert figure.layout.xaxis.title.text == "iterations spent (trials in the order they ended)"


def test_hypervolume_by_hand() -> None:
    """Two objectives, reference = the worst value of each over the trials with a point."""
    data = mo_sweep(TWO)
    assert data.summary.reference_point == (0.40, 8.0)
    # Front: (0.1, 4), (0.2, 2), (0.3, 1), (0.4, 0.5) -- the last is on the reference's loss.
    expected = (0.4 - 0.1) * (8 - 4) + (0.4 - 0.2) * (4 - 2) + (0.4 - 0.3) * (2 - 1)
    assert hypervolume_curve(data)["hypervolume"].iloc[-1] == pytest.approx(expected)
    assert hypervolume_curve(data)["hypervolume"].iloc[0] == pytest.approx(0.1 * 7)  # t02


def test_each_objective_has_its_own_study() -> None:
    data = mo_sweep(THREE)
    acc = objective_study(data, "acc")
    assert acc.direction.name == "MAXIMIZE"
    by_id = {t.user_attrs["trial_id"]: t for t in acc.trials}
    assert by_id["t05"].state.name == "COMPLETE" and by_id["t05"].value == 0.50
    assert by_id["t04"].constraints == {"ms <= 5": pytest.approx(3.0)}
    assert by_id["t00"].intermediate_values == pytest.approx({1: 1.2, 2: 1.1, 3: 1.0, 4: 0.9})
    assert by_id["t06"].state.name == "FAIL"
    assert objective_study(data).direction.name == "MINIMIZE"  # the first objective
    with pytest.raises(ValueError, match="must be one of"):
        objective_study(data, "nope")


def test_single_metric_sweep_has_no_front(fake_sweep: Any) -> None:
    data = fake_sweep([{"value": 1.0, "config": {"x": 0.1}}])
    with pytest.raises(ValueError, match="has one objective"):
        pareto_figures(data)
    assert objective_study(data).direction.name == "MINIMIZE"


def test_table_shows_fronts_and_values() -> None:
    data = mo_sweep(TWO)
    table = ranked_table(data)
    assert list(table.columns[:9]) == [
        "rank",
        "trial_id",
        "status",
        "front",
        "loss",
        "ms",
        "violation",
        "iterations",
        "restarts",
    ]
    rows = {row.trial_id: row for row in table.itertuples()}
    assert rows["t03"].front == 2 and rows["t04"].front == "infeasible"
    assert rows["t06"].front is None and math.isnan(rows["t06"].loss)
    assert rows["t04"].violation == pytest.approx(3.0)
    assert (rows["t01"].loss, rows["t01"].ms) == (0.20, 2.0)
    assert list(table["rank"]) == list(range(1, 9))


@pytest.mark.parametrize(
    ("objectives", "fronts"), [(TWO, 1), (THREE, 3)], ids=["2 objectives", "3 objectives"]
)
def test_html_holds_the_views(objectives: tuple[Objective, ...], fronts: int) -> None:
    data = mo_sweep(objectives, pick="ms <= 3, loss")
    html = render_report(data, wall_time="1m")
    views = fronts + 1 + 5 * len(objectives)  # fronts, hypervolume, 5 views per objective
    assert html.count('class="plotly-graph-div"') == views
    assert html.count("Plotly.newPlot(") == views
    for text in ("Pareto front", "Hypervolume against budget", "Objective acc (max)"):
        assert (text in html) == (text != "Objective acc (max)" or objectives == THREE)
    assert "ms &lt;= 5" in html  # the constraint
    assert f"{data.summary.hypervolume:.6g}" in html
    assert "t01: loss 0.2, ms 2" in html  # the pick
    assert re.search(r'<tr class="best"><td>\d+</td><td class="text">t01</td>', html)
    assert len(set(re.findall(r'<section id="([^"]+)"', html))) == len(
        re.findall(r'<section id="([^"]+)"', html)
    )  # unique anchors


def test_report_of_a_large_sweep_has_few_front_traces() -> None:
    """The front and hypervolume figures keep a fixed number of traces."""
    import random

    rng = random.Random(0)
    trials: dict[str, tuple[str, dict[str, float] | None, int]] = {
        f"t{i:03d}": ("finished", {"loss": rng.random(), "ms": 10 * rng.random(), "acc": 0.5}, 2)
        for i in range(300)
    }
    data = mo_sweep(TWO, trials=trials, ended=list(trials))
    figures = pareto_figures(data)
    assert len(figures["pareto front: loss vs ms"].data) == 4  # Optuna's 3 and the star
    assert len(figures["hypervolume"].data) == 1
    assert figures["hypervolume"].data[0].y[-1] == pytest.approx(data.summary.hypervolume)


def test_two_objective_report_renders(tmp_path: Path, render: Any) -> None:
    page = tmp_path / "report.html"
    page.write_text(render_report(mo_sweep(TWO)))
    rendered = render(page, tmp_path / "report.png", size="1280,4000")
    assert rendered.console == []
    assert rendered.requests == []
    assert rendered.dom.count('class="plotly-graph-div') == 12
    # plotly.js drew the front: its title is an SVG text of the drawn figure.
    assert re.search(r'class="gtitle"[^>]*>Pareto front: loss vs ms<', rendered.dom)
    assert rendered.dom.count('class="main-svg"') >= 12
