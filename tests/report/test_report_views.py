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
        ([], "0 finished trial"),
        ([{"value": 1.0, "config": {"x": 0.1}}], "1 finished trial"),
        (
            [
                {"value": 1.0, "config": {"x": 0.1}},
                {"value": 2.0, "config": {"x": 0.2}, "status": "errored"},
            ],
            "1 finished trial",
        ),
        (
            [
                {"value": 1.0, "config": {"x": 0.1}},
                {"value": 2.0, "config": {"x": 0.2}, "status": "stopped_early"},
            ],
            "1 finished trial",
        ),
        (
            [{"value": 1.0, "config": {"x": 0.1}}, {"value": 2.0, "config": {"x": 0.1}}],
            "no param varies",
        ),
        (
            [{"value": float("nan"), "config": {"x": 0.1}}, {"value": 1.0, "config": {"x": 0.2}}],
            "1 finished trial",
        ),
    ],
)
def test_importance_falls_back_to_empty(
    fake_sweep: Any, rows: list[dict[str, Any]], note: str
) -> None:
    study = sweep_study(fake_sweep(rows))
    importance = parameter_importance(study)
    assert importance.empty
    assert note in importance.attrs["note"]
    figure = sweep_figures(study)["parameter importance"]
    assert note in figure.layout.annotations[0].text  # draws the note


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


def test_loguniform_param_on_a_log_axis(fake_sweep: Any) -> None:
    """Optuna draws each axis scaled to 0..1 with its tick labels as annotations at x = axis."""
    study = sweep_study(fake_sweep(space_rows()), space=SPACE)
    figure = sweep_figures(study, metric="loss")["parallel coordinates"]
    axes = list(figure.layout.xaxis.ticktext)
    assert "optimizer.momentum" in axes  # a conditional param, with a mark for trials without

    def ticks(name: str) -> dict[str, float]:
        return {a.text: a.y for a in figure.layout.annotations if a.x == axes.index(name)}

    lr = ticks("lr")  # 1e-1 ... 10**-3.5: one decade is one equal step
    assert lr["0.01"] - lr["0.001"] == pytest.approx(lr["0.1"] - lr["0.01"])
    assert lr["0.01"] - lr["0.001"] == pytest.approx(1 / 2.5)
    x = ticks("x")  # linear
    assert x["0.417"] - x["0.208"] == pytest.approx(x["0.833"] - x["0.625"])


@pytest.mark.parametrize("rows", [[], conditional_rows(3), conditional_rows()])
@pytest.mark.parametrize("mode", ["min", "max"])
def test_figures_draw(fake_sweep: Any, rows: list[dict[str, Any]], mode: str) -> None:
    figures = sweep_figures(sweep_study(fake_sweep(rows, mode=mode)), metric="loss")
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
