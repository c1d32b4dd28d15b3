"""The report's helpers on hand-made sweeps (no Ray): typing, importance, figures, HTML."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sweeplab.report import (
    param_frame,
    parameter_importance,
    ranked_table,
    space_distributions,
    sweep_figures,
    sweep_study,
)
from sweeplab.report._html import render_report
from sweeplab.space import Space, choice, grid, loguniform, quniform, randint, uniform


def conditional_rows(n: int = 8) -> list[dict[str, Any]]:
    """x drives the loss; sgd trials carry a momentum that adam trials lack."""
    rows = []
    for i in range(n):
        config: dict[str, Any] = {"x": i / n, "hidden": 32 * (1 + i % 3), "flag": i % 2 == 0}
        config["optimizer.name"] = "sgd" if i % 2 else "adam"
        if i % 2:
            config["optimizer.momentum"] = 0.1 * i
        rows.append({"value": (i / n - 0.2) ** 2, "config": config})
    return sorted(rows, key=lambda r: r["value"])


def test_import_stays_light() -> None:
    code = (
        "import sys, sweeplab.report; "
        "heavy = {'matplotlib', 'pandas', 'mlflow', 'optuna', 'plotly'} & set(sys.modules); "
        "print(sorted(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_params_are_typed_back_from_strings(fake_sweep: Any) -> None:
    params = param_frame(fake_sweep(conditional_rows()))
    assert str(params["x"].dtype) == "float64"
    assert str(params["hidden"].dtype) == "Int64"
    assert set(params["flag"]) == {True, False}
    assert set(params["optimizer.name"]) == {"sgd", "adam"}
    assert params["optimizer.momentum"].isna().sum() == 4  # the adam trials
    table = ranked_table(fake_sweep(conditional_rows()))
    assert list(table.columns[:7]) == [
        "rank",
        "trial_id",
        "status",
        "best",
        "last",
        "iterations",
        "restarts",
    ]
    assert list(table["rank"]) == list(range(1, 9))


def test_importance_over_complete_params(fake_sweep: Any) -> None:
    importance = parameter_importance(sweep_study(fake_sweep(conditional_rows())))
    assert set(importance.index) == {"x", "hidden", "flag", "optimizer.name"}
    assert importance.sum() == pytest.approx(1.0)
    assert importance.index[0] == "x"  # the only param the loss depends on
    assert "optimizer.momentum" in importance.attrs["note"]
    again = parameter_importance(sweep_study(fake_sweep(conditional_rows())))
    assert importance.equals(again)  # seeded


def test_importance_follows_rank_by(fake_sweep: Any) -> None:
    data = fake_sweep(conditional_rows(), rank_by="last")
    data.trials["last"] = data.trials["config.hidden"].astype(float)  # last depends on hidden
    assert parameter_importance(sweep_study(data)).index[0] == "hidden"


@pytest.mark.parametrize(
    ("rows", "note"),
    [
        ([], "0 trial(s) with a value"),
        ([{"value": 1.0, "config": {"x": 0.1}}], "1 trial(s) with a value"),
        (
            [
                {"value": 1.0, "config": {"x": 0.1}},
                {"value": 2.0, "config": {"x": 0.2}, "status": "errored"},
            ],
            "1 trial(s) with a value",
        ),
        (
            [
                {"value": 1.0, "config": {"x": 0.1}},
                {"value": 2.0, "config": {"x": 0.2}, "status": "stopped_early"},
            ],
            "1 trial(s) with a value",
        ),
        (
            [{"value": 1.0, "config": {"x": 0.1}}, {"value": 2.0, "config": {"x": 0.1}}],
            "no param varies",
        ),
        (
            [{"value": float("nan"), "config": {"x": 0.1}}, {"value": 1.0, "config": {"x": 0.2}}],
            "1 trial(s) with a value",
        ),
    ],
)
def test_importance_falls_back_to_empty(
    fake_sweep: Any, rows: list[dict[str, Any]], note: str
) -> None:
    importance = parameter_importance(sweep_study(fake_sweep(rows)))
    assert importance.empty
    assert note in importance.attrs["note"]


@pytest.mark.parametrize(
    ("rows", "note"),
    [
        ([], "no trial"),
        ([{"value": 1.0, "config": {"x": 0.1}}], "1 trial(s) with a value"),
        (
            [{"value": 1.0, "config": {"x": 0.1}}, {"value": 2.0, "config": {"x": 0.1}}],
            "no param varies",
        ),
    ],
)
def test_importance_figure_draws_the_note(
    fake_sweep: Any, rows: list[dict[str, Any]], note: str
) -> None:
    figure = sweep_figures(fake_sweep(rows))["parameter importance"]
    assert note in figure.layout.annotations[0].text


def test_study_holds_every_trial(fake_sweep: Any) -> None:
    rows = conditional_rows(4)
    rows[1]["status"] = "stopped_early"
    rows[2]["status"] = "errored"
    rows[3]["status"] = "running"  # still running when its sweep ended: killed
    data = fake_sweep(rows, mode="max")
    study = sweep_study(data)
    assert study.direction.name == "MAXIMIZE"
    by_id = {t.user_attrs["trial_id"]: t for t in study.trials}
    assert [t.state.name for t in (by_id[f"t0{i}"] for i in range(1, 5))] == [
        "COMPLETE",
        "PRUNED",
        "FAIL",
        "FAIL",
    ]
    best = by_id["t01"]
    assert best.value == pytest.approx(rows[0]["value"])
    assert best.user_attrs["rank"] == 1 and best.user_attrs["status"] == "finished"
    assert best.intermediate_values == pytest.approx(
        {s: rows[0]["value"] + 1 / s for s in (1, 2, 3)}
    )
    assert by_id["t02"].value is None and len(by_id["t02"].intermediate_values) == 3
    # Trial numbers follow Tune's trial ids; conditional params are absent where not taken.
    assert [t.user_attrs["trial_id"] for t in study.trials] == ["t01", "t02", "t03", "t04"]
    for trial, row in zip(study.trials, rows, strict=True):
        assert set(trial.params) == set(row["config"])


def test_pbt_trial_shows_its_last_config(fake_sweep: Any) -> None:
    import pandas as pd

    data = fake_sweep(conditional_rows(3))
    mutations = pd.DataFrame(
        [
            {"trial_id": "t01", "rank": 1, "metric": "config.x", "step": s, "value": v}
            for s, v in ((2, 0.5), (3, 0.25))
        ]
    )
    data.history = pd.concat([data.history, mutations], ignore_index=True)
    trials = {t.user_attrs["trial_id"]: t for t in sweep_study(data).trials}
    assert trials["t01"].params["x"] == 0.25
    assert trials["t02"].params["x"] == float(data.trials.loc[1, "config.x"])


SPACE = Space(
    {
        "lr": loguniform(1e-4, 1e-1),
        "x": uniform(0, 1),
        "q": quniform(0.0, 1.0, 0.25),
        "layers": randint(1, 4),
        "widths": choice([[64, 64], [128]]),
        "batch": grid([16, 32]),
        "optimizer": choice(
            {
                "sgd": {"momentum": uniform(0, 0.9), "shared": uniform(0.5, 1)},
                "adam": {"shared": uniform(0, 0.7)},
            }
        ),
        "epochs": 5,
    }
)


def test_space_compiles_to_dotted_distributions() -> None:
    from optuna.distributions import (
        CategoricalDistribution,
        FloatDistribution,
        IntDistribution,
    )

    assert space_distributions(SPACE) == {
        "lr": FloatDistribution(1e-4, 1e-1, log=True),
        "x": FloatDistribution(0, 1),
        "q": FloatDistribution(0, 1, step=0.25),
        "layers": IntDistribution(1, 4),
        "widths": CategoricalDistribution(["[64, 64]", "[128]"]),
        "batch": CategoricalDistribution([16, 32]),
        "optimizer.name": CategoricalDistribution(["sgd", "adam"]),
        "optimizer.momentum": FloatDistribution(0, 0.9),
        "optimizer.shared": FloatDistribution(0, 1),  # both branches' ranges
    }


def space_rows() -> list[dict[str, Any]]:
    rows = []
    for i in range(6):
        config: dict[str, Any] = {
            "lr": 10 ** -(1 + i / 2),
            "x": i / 6,
            "q": 0.25 * (i % 3),
            "layers": 1 + i % 4,
            "widths": [64, 64] if i % 2 else [128],
            "batch": 16 * (1 + i % 2),
            "optimizer.name": "sgd" if i % 2 else "adam",
            "optimizer.shared": 0.6,
            "epochs": 5,
        }
        if i % 2:
            config["optimizer.momentum"] = 0.1 * i
        rows.append({"value": float(i), "config": config})
    return rows


def test_study_uses_the_space(fake_sweep: Any) -> None:
    from optuna.distributions import FloatDistribution

    rows = space_rows()
    rows[0]["config"]["x"] = 1.5  # e.g. a warm-start config from an older space
    study = sweep_study(fake_sweep(rows), space=SPACE)
    trial = study.trials[1]
    assert trial.distributions["lr"] == FloatDistribution(1e-4, 1e-1, log=True)
    assert trial.params["widths"] == "[64, 64]"  # the compiler's label for a list option
    assert trial.params["batch"] == 32 and isinstance(trial.params["batch"], int)  # a grid
    assert "epochs" not in trial.params  # a constant of the space
    assert "optimizer.momentum" in trial.params
    assert "optimizer.momentum" not in study.trials[0].params
    assert study.trials[0].distributions["x"] == FloatDistribution(0, 1.5)  # widened


def trial_lines(figure: Any) -> list[Any]:
    """The parallel coordinates' lines, one per trial."""
    return [t for t in figure.data if (t.hovertemplate or "").startswith("trial ")]


def axis_of(figure: Any, label: str) -> tuple[dict[str, float], dict[str, float]]:
    """An axis of the parallel coordinates: each trial's position (0..1) on it, and its ticks
    (label -> position)."""
    index = list(figure.layout.xaxis.ticktext).index(label)
    positions = {}
    for line in trial_lines(figure):
        trial_id = line.hovertemplate.split()[1]
        positions[trial_id] = line.y[index]
    ticks = {a.text: a.y for a in figure.layout.annotations if a.x == index}
    return positions, ticks


def test_loguniform_param_on_a_log_axis(fake_sweep: Any) -> None:
    """Each axis is scaled to 0..1; a log param's ticks are a decade apart, evenly."""
    data = fake_sweep(space_rows())
    figure = sweep_figures(data, space=SPACE)["parallel coordinates"]
    lr, ticks = axis_of(figure, "lr")  # 10**-1 ... 10**-3.5
    assert ticks["0.01"] - ticks["0.001"] == pytest.approx(ticks["0.1"] - ticks["0.01"])
    assert ticks["0.01"] - ticks["0.001"] == pytest.approx(1 / 2.5)
    assert [lr[f"t{i + 1:02d}"] for i in range(6)] == pytest.approx([1 - i / 5 for i in range(6)])
    x, ticks = axis_of(figure, "x")  # linear
    assert [x[f"t{i + 1:02d}"] for i in range(6)] == pytest.approx([i / 5 for i in range(6)])
    # A conditional param: the trials of the other branch sit on the "none" mark below it.
    momentum, ticks = axis_of(figure, "optimizer.momentum")
    assert ticks["none"] == 0 < min(ticks[t] for t in ticks if t != "none")
    assert [momentum[f"t{i + 1:02d}"] == 0 for i in range(6)] == [i % 2 == 0 for i in range(6)]
    widths, ticks = axis_of(figure, "widths")  # a choice: one tick per option
    assert ticks == {"[64, 64]": 0, "[128]": 1}
    assert [widths[f"t{i + 1:02d}"] for i in range(6)] == [i % 2 == 0 for i in range(6)]


@pytest.mark.parametrize("rows", [[], conditional_rows(3), conditional_rows()])
@pytest.mark.parametrize("mode", ["min", "max"])
def test_figures_draw(fake_sweep: Any, rows: list[dict[str, Any]], mode: str) -> None:
    figures = sweep_figures(fake_sweep(rows, mode=mode))
    assert list(figures) == [
        "optimization history",
        "learning curves",
        "parallel coordinates",
        "slice",
        "parameter importance",
    ]
    for figure in figures.values():
        assert figure.data or figure.layout.annotations
        figure.to_json()  # validates every trace and layout property


def test_html_inlines_plotly_once_and_fetches_nothing(fake_sweep: Any) -> None:
    import re

    from plotly.offline import get_plotlyjs

    html = render_report(fake_sweep(conditional_rows()))
    bundle_head = get_plotlyjs()[:300]
    assert html.count(bundle_head) == 1
    assert html.count("Plotly.newPlot(") == 5
    assert html.count('class="plotly-graph-div"') == 5
    assert not re.search(r"<script[^>]*\ssrc\s*=", html, re.I)
    assert not re.search(r"<(link|img|iframe)\b", html, re.I)


def test_html_escapes_text(fake_sweep: Any) -> None:
    rows = conditional_rows(3)
    rows[0]["config"]["note"] = "<script>alert(1)</script>"
    html = render_report(fake_sweep(rows, name="<b>x&y</b>"), wall_time="<1s>")
    assert "<script>alert" not in html and "<b>x" not in html
    assert "&lt;b&gt;x&amp;y&lt;/b&gt;" in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;1s&gt;" in html


def test_console_check_catches_errors(tmp_path: Path, render: Any) -> None:
    """The Chromium console check used on the report does see a page's script error."""
    page = tmp_path / "bad.html"
    page.write_text("<html><body><script>throw new Error('broken')</script></body></html>")
    rendered = render(page, tmp_path / "bad.png", size="400,300")
    assert any("Uncaught Error: broken" in line for line in rendered.console)


def test_network_check_catches_a_fetch(tmp_path: Path, render: Any) -> None:
    """The request check used on the report does see a page fetch a script from a CDN."""
    page = tmp_path / "cdn.html"
    page.write_text(
        '<html><body><script src="https://cdn.plot.ly/plotly.min.js"></script></body></html>'
    )
    rendered = render(page, tmp_path / "cdn.png", size="400,300")
    assert rendered.requests == ["https://cdn.plot.ly/plotly.min.js"]


def test_report_draws_offline(fake_sweep: Any, tmp_path: Path, render: Any) -> None:
    page = tmp_path / "report.html"
    page.write_text(render_report(fake_sweep(conditional_rows())))
    rendered = render(page, tmp_path / "report.png")
    assert rendered.console == []
    assert rendered.requests == []
    assert rendered.dom.count('class="plotly-graph-div') == 5
    assert rendered.dom.count('class="main-svg"') >= 5  # plotly.js ran and drew them


# -- every trial in every view, read at a rung (an ASHA-like sweep, see conftest.ASHA_STEPS) ----


def curve_value(data: Any, trial_id: str, step: int) -> float:
    """The fake sweep's loss of a trial at a step: x + 1 / step."""
    (x,) = data.trials.loc[data.trials["trial_id"] == trial_id, "best"]
    return float(x) + 1 / step


def test_parallel_coordinates_hold_every_trial_by_status(asha_sweep: Any) -> None:
    figure = sweep_figures(asha_sweep)["parallel coordinates"]
    lines = trial_lines(figure)
    assert sorted(t.hovertemplate.split()[1] for t in lines) == sorted(
        asha_sweep.trials["trial_id"]
    )
    axes = list(figure.layout.xaxis.ticktext)
    assert axes[:2] == ["status", "loss at step 3"]
    assert all(len(t.y) == len(axes) for t in lines)
    positions, ticks = axis_of(figure, "status")
    assert list(ticks) == ["finished", "stopped_early", "diverged"]
    statuses = dict(zip(asha_sweep.trials["trial_id"], asha_sweep.trials["status"], strict=True))
    for line in lines:
        trial_id, status = line.hovertemplate.split("<br>")[0].split()[1:]
        assert status == f"({statuses[trial_id]})"
        assert positions[trial_id] == ticks[statuses[trial_id]]


def test_rung_buttons_switch_the_data(asha_sweep: Any) -> None:
    """One button per view; each sets each trial's value, colour and hover to that view's."""
    figure = sweep_figures(asha_sweep)["parallel coordinates"]
    (menu,) = figure.layout.updatemenus
    labels = [b.label for b in menu.buttons]
    assert labels == ["step 1", "step 3", "step 9", "best so far", "last value"]
    assert labels[menu.active] == "step 3"  # the default rung
    iterations = dict(
        zip(asha_sweep.trials["trial_id"], asha_sweep.trials["iterations"], strict=True)
    )

    def values(restyle: dict[str, Any]) -> dict[str, tuple[float | None, str]]:
        """Each trial's value on the value axis (as its hover shows it) and its colour."""
        found = {}
        for custom, template, color in zip(
            restyle["customdata"], restyle["hovertemplate"], restyle["line.color"], strict=True
        ):
            if template:
                label, text = custom[1]
                assert label == restyle["marker.colorbar.title.text"][0]  # the view's axis
                found[template.split()[1]] = (None if text == "none" else float(text), color)
        return found

    per_view = {b.label: values(b.args[0]) for b in menu.buttons}
    shown = {
        line.hovertemplate.split()[1]: (float(line.customdata[1][1]), line.line.color)
        for line in trial_lines(figure)
    }
    assert per_view["step 3"] == shown
    assert len(per_view["step 1"]) == 12
    for trial_id, (value, color) in per_view["step 3"].items():
        reached = iterations[trial_id] >= 3
        step = 3 if reached else iterations[trial_id]  # ended before: its last value
        assert value == pytest.approx(curve_value(asha_sweep, trial_id, step), rel=1e-3)
        assert (color != "#c7c7c7") is reached  # grey if not
    for trial_id, (value, _) in per_view["step 1"].items():
        assert value == pytest.approx(curve_value(asha_sweep, trial_id, 1), rel=1e-3)
    # The data differ per view (the fake losses fall at every step, so a trial's best value is
    # its last one, and its value at step 9 if it got there; the diverged one has no last).
    assert per_view["step 1"] != per_view["step 3"] != per_view["step 9"]
    assert per_view["best so far"] != per_view["last value"]
    assert per_view["last value"]["t07"][0] is None  # diverged: on the "none" mark
    assert figure.layout.title.text == "Parallel coordinates: loss at step 3"
    relayouts = [b.args[1] for b in menu.buttons]
    assert relayouts[3]["title.text"] == "Parallel coordinates: best loss so far"
    assert relayouts[3]["xaxis.ticktext"][1] == "best loss so far"


@pytest.mark.parametrize(("rung", "label"), [(1, "step 1"), ("best", "best so far"), (5, "step 5")])
def test_the_first_view_can_be_chosen(asha_sweep: Any, rung: int | str, label: str) -> None:
    for key in ("parallel coordinates", "slice", "parameter importance"):
        menu = sweep_figures(asha_sweep, rung=rung)[key].layout.updatemenus[0]
        assert menu.buttons[menu.active].label == label


def test_slice_marks_status_and_trials_that_ended_before(asha_sweep: Any) -> None:
    figure = sweep_figures(asha_sweep)["slice"]
    points = [t for t in figure.data if t.x != (None,)]
    x_panel = [t for t in points if t.xaxis == "x4"]  # params by name: lr, momentum, name, x
    assert sorted(t.name for t in x_panel) == ["diverged", "finished", "stopped_early"]
    assert sum(len(t.x) for t in x_panel) == 12  # every trial has x
    for trace in x_panel:
        for text, symbol in zip(trace.text, trace.marker.symbol, strict=True):
            assert (symbol == "circle-open") is ("ended at step 1" in text)
    legend = {t.name for t in figure.data if t.showlegend is not False}
    assert {"finished", "stopped_early", "diverged", "ended before the step"} <= legend
    momentum = [t for t in points if t.xaxis == "x2"]
    assert sum(len(t.x) for t in momentum) == 6  # the sgd branch only


def test_learning_curves_and_history_hold_every_trial(fake_sweep: Any) -> None:
    rows = conditional_rows(5)
    statuses = ["finished", "stopped_early", "diverged", "errored", "running"]
    for row, status in zip(rows, statuses, strict=True):
        row["status"] = status
    figures = sweep_figures(fake_sweep(rows))
    curves = figures["learning curves"].data
    assert len(curves) == 5
    assert {t.name for t in curves} == set(statuses)
    assert len({t.line.color for t in curves}) == 5  # a colour per status
    history = figures["optimization history"].data
    assert sum(len(t.x) for t in history if t.name in statuses) == 5
    (best,) = [t for t in history if t.name == "best so far"]
    assert best.y[-1] == pytest.approx(min(r["value"] for r in rows if r["status"] != "diverged"))


def test_importance_per_view(asha_sweep: Any) -> None:
    figure = sweep_figures(asha_sweep, space=None)["parameter importance"]
    (menu,) = figure.layout.updatemenus
    notes = {b.label: b.args[1]["annotations"][0]["text"] for b in menu.buttons}
    assert "over the 5 trial(s)" in notes["step 3"]
    assert "over the 12 trial(s)" in notes["step 1"]
    assert "1 trial(s) with a value" not in notes["step 9"]  # 2 trials reached it
    bars = {b.label: b.args[0]["x"][0] for b in menu.buttons}
    assert sum(bars["step 1"]) == pytest.approx(1.0, abs=0.05)  # shares (Optuna's rounding)
