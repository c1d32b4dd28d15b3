"""The report's helpers on hand-made sweeps (no Ray): typing, importance, figures, HTML."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sweeplab.report import (
    importance_figure,
    learning_curves,
    parallel_coordinates,
    param_frame,
    parameter_importance,
    ranked_table,
)
from sweeplab.report._html import render_report


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
        "heavy = {'matplotlib', 'pandas', 'mlflow', 'optuna'} & set(sys.modules); "
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
    importance = parameter_importance(fake_sweep(conditional_rows()))
    assert set(importance.index) == {"x", "hidden", "flag", "optimizer.name"}
    assert importance.sum() == pytest.approx(1.0)
    assert importance.index[0] == "x"  # the only param the loss depends on
    assert "optimizer.momentum" in importance.attrs["note"]
    again = parameter_importance(fake_sweep(conditional_rows()))
    assert importance.equals(again)  # seeded


def test_importance_follows_rank_by(fake_sweep: Any) -> None:
    data = fake_sweep(conditional_rows(), rank_by="last")
    data.trials["last"] = data.trials["config.hidden"].astype(float)  # last depends on hidden
    assert parameter_importance(data).index[0] == "hidden"


@pytest.mark.parametrize(
    ("rows", "note"),
    [
        ([], "no trials"),
        ([{"value": 1.0, "config": {"x": 0.1}}], "1 finished trial"),
        (
            [
                {"value": 1.0, "config": {"x": 0.1}},
                {"value": 2.0, "config": {"x": 0.2}, "status": "errored"},
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
    importance = parameter_importance(fake_sweep(rows))
    assert importance.empty
    assert note in importance.attrs["note"]
    assert importance_figure(importance).axes  # draws the note


@pytest.mark.parametrize("rows", [[], conditional_rows(3), conditional_rows()])
@pytest.mark.parametrize("mode", ["min", "max"])
def test_figures_draw(fake_sweep: Any, rows: list[dict[str, Any]], mode: str) -> None:
    data = fake_sweep(rows, mode=mode)
    for figure in (
        learning_curves(data),
        parallel_coordinates(data),
        importance_figure(parameter_importance(data)),
    ):
        figure.canvas.draw()  # lays out and rasterises: fails on any drawing error
        assert figure.axes


def test_learning_curves_best_is_darkest(fake_sweep: Any) -> None:
    from matplotlib.colors import to_rgb

    axes = learning_curves(fake_sweep(conditional_rows())).axes[0]
    lines = {line.get_label(): line for line in axes.get_lines()}
    best = lines["best: t01"]
    assert best is axes.get_lines()[-1]  # drawn on top
    others = [line for line in axes.get_lines() if line is not best]
    assert all(sum(to_rgb(best.get_color())) < sum(to_rgb(o.get_color())) for o in others)


def test_parallel_coordinates_axes(fake_sweep: Any) -> None:
    axes = parallel_coordinates(fake_sweep(conditional_rows())).axes[0]
    labels = [t.get_text() for t in axes.get_xticklabels()]
    assert labels == ["flag", "hidden", "optimizer.momentum", "optimizer.name", "x", "loss (best)"]
    texts = {t.get_text() for t in axes.texts}
    assert {"sgd", "adam", "True", "False", "n/a"} <= texts


def test_html_escapes_text(fake_sweep: Any) -> None:
    rows = conditional_rows(3)
    rows[0]["config"]["note"] = "<script>alert(1)</script>"
    html = render_report(fake_sweep(rows, name="<b>x&y</b>"), wall_time="<1s>")
    assert "<script>" not in html and "<b>x" not in html
    assert "&lt;b&gt;x&amp;y&lt;/b&gt;" in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;1s&gt;" in html


def test_console_check_catches_errors(tmp_path: Path, render: Any) -> None:
    """The Chromium console check used on the report does see a page's script error."""
    page = tmp_path / "bad.html"
    page.write_text("<html><body><script>throw new Error('broken')</script></body></html>")
    rendered = render(page, tmp_path / "bad.png", size="400,300")
    assert any("Uncaught Error: broken" in line for line in rendered.console)
