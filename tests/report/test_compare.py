"""`sweeplab compare` on hand-made sweeps: anytime curves, the budget-to-target table, errors."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

import pandas as pd
import pytest

from sweeplab.errors import SpecError
from sweeplab.pareto import Objective
from sweeplab.report import anytime_curve, budget_tables, compare_sweeps, comparison_figures
from sweeplab.report._compare import parse_selector
from sweeplab.report._compare_html import render_comparison
from sweeplab.tracking import SweepData

Report = tuple[float, str, int, float]  # seconds, trial id, step, value


def _history(reports: Sequence[Report], metric: str = "loss") -> pd.DataFrame:
    rows = [
        {
            "trial_id": trial_id,
            "rank": None,
            "metric": metric,
            "step": step,
            "value": value,
            "timestamp": pd.Timestamp("2030-01-01") + pd.Timedelta(seconds=seconds),
        }
        for seconds, trial_id, step, value in reports
    ]
    return pd.DataFrame(rows, columns=["trial_id", "rank", "metric", "step", "value", "timestamp"])


def _sweep(
    name: str,
    reports: Sequence[Report],
    *,
    mode: str = "min",
    metric: str = "loss",
    run: str | None = None,
    objectives: Sequence[tuple[str, str]] = (),
    configs: dict[str, dict[str, Any]] | None = None,
) -> SweepData:
    """A SweepData as load_sweep returns it: params as strings, one row per trial."""
    trial_ids = sorted({r[1] for r in reports})
    configs = configs or {t: {"lr": 0.1 * (n + 1), "opt": "sgd"} for n, t in enumerate(trial_ids)}
    trials = pd.DataFrame(
        [
            {
                "trial_id": t,
                "run_id": f"run-{t}",
                "status": "finished",
                "rank": n + 1,
                **{f"config.{k}": str(v) for k, v in configs[t].items()},
            }
            for n, t in enumerate(trial_ids)
        ]
    )
    return SweepData(
        name=name,
        metric=metric,
        mode=mode,
        parent_run_id=run or f"{name}-run-0123456789",
        trials=trials,
        history=_history(reports, metric),
        settings={"searcher": "random", "scheduler": "asha"},
        objectives=tuple(Objective(n, m) for n, m in objectives) or (Objective(metric, mode),),
    )


# Two trials interleaved in time; a NaN report spends budget and improves nothing.
REPORTS_A: list[Report] = [
    (0.0, "a1", 1, 5.0),
    (1.0, "a2", 1, 4.0),
    (2.0, "a1", 2, float("nan")),
    (3.0, "a2", 2, 4.5),
    (4.0, "a1", 3, 2.0),
    (5.0, "a2", 3, 3.0),
]
REPORTS_B: list[Report] = [
    (0.5, "b1", 1, 3.0),
    (1.5, "b1", 2, 2.5),
    (2.5, "b2", 1, 6.0),
    (3.5, "b2", 2, 1.0),
]


def test_anytime_curve_counts_every_report_in_time_order() -> None:
    shuffled = _history(list(reversed(REPORTS_A)))
    curve = anytime_curve(shuffled, "loss", "min")
    assert curve["budget"].tolist() == [1, 2, 3, 4, 5, 6]
    assert curve["seconds"].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert curve["trial_id"].tolist() == ["a1", "a2", "a1", "a2", "a1", "a2"]
    assert curve["best"].tolist() == [5.0, 4.0, 4.0, 4.0, 2.0, 2.0]
    assert curve["best_trial_id"].tolist() == ["a1", "a2", "a2", "a2", "a1", "a1"]
    assert math.isnan(curve["value"][2])


def test_anytime_curve_max_mode_and_other_metrics_ignored() -> None:
    history = pd.concat([_history(REPORTS_A), _history([(0.2, "a1", 1, 99.0)], "other")])
    curve = anytime_curve(history, "loss", "max")
    assert curve["best"].tolist() == [5.0, 5.0, 5.0, 5.0, 5.0, 5.0]
    assert curve["best_trial_id"].tolist() == ["a1"] * 6
    assert len(curve) == 6, "a report of another metric spends nothing"


def test_anytime_curve_ties_in_time_by_trial_then_step() -> None:
    reports: list[Report] = [(0.0, "t2", 1, 1.0), (0.0, "t1", 2, 3.0), (0.0, "t1", 1, 2.0)]
    curve = anytime_curve(_history(reports), "loss", "min")
    assert list(zip(curve["trial_id"], curve["step"], strict=True)) == [
        ("t1", 1),
        ("t1", 2),
        ("t2", 1),
    ]
    assert curve["best"].tolist() == [2.0, 2.0, 1.0]


def test_anytime_curve_before_a_finite_report_is_nan_and_empty_history_is_empty() -> None:
    reports: list[Report] = [(0.0, "t", 1, float("inf")), (1.0, "t", 2, 3.0)]
    curve = anytime_curve(_history(reports), "loss", "min")
    assert math.isnan(curve["best"][0]) and curve["best"][1] == 3.0
    assert pd.isna(curve["best_trial_id"][0]) and curve["best_trial_id"][1] == "t"
    empty = anytime_curve(_history([]), "loss", "min")
    assert empty.empty and "best" in empty.columns


@pytest.mark.parametrize(
    ("mode", "fractions", "reports"),
    [
        # min: A's final best 2.0, B's 1.0. A reaches 2.0 at report 5 of 6, never 1.0;
        # B reaches 2.0 and 1.0 at report 4 of 4.
        ("min", [[5 / 6, "never"], [1.0, 1.0]], [[5, "never"], [4, 4]]),
        # max: A's final best 5.0 (report 1), B's 6.0 (report 3 of 4); B reaches 5.0 at 3.
        ("max", [[1 / 6, "never"], [3 / 4, 3 / 4]], [[1, "never"], [3, 3]]),
    ],
)
def test_budget_tables(mode: str, fractions: list[list[Any]], reports: list[list[Any]]) -> None:
    curves = {
        "A": anytime_curve(_history(REPORTS_A), "loss", mode),
        "B": anytime_curve(_history(REPORTS_B), "loss", mode),
    }
    got_fractions, got_reports = budget_tables(curves, mode)
    assert got_fractions.index.tolist() == got_fractions.columns.tolist() == ["A", "B"]
    assert got_fractions.values.tolist() == fractions
    assert got_reports.values.tolist() == reports


def test_budget_tables_target_without_a_value_is_not_applicable() -> None:
    curves = {
        "A": anytime_curve(_history(REPORTS_A), "loss", "min"),
        "nan": anytime_curve(_history([(0.0, "t", 1, float("nan"))]), "loss", "min"),
    }
    fractions, reports = budget_tables(curves, "min")
    assert fractions["nan"].tolist() == ["n/a", "n/a"]
    assert fractions.loc["nan", "A"] == reports.loc["nan", "A"] == "never"


def test_compare_sweeps_on_hand_made_data() -> None:
    comparison = compare_sweeps([_sweep("A", REPORTS_A), _sweep("B", REPORTS_B)])
    assert (comparison.metric, comparison.mode) == ("loss", "min")
    assert [s.label for s in comparison.sweeps] == ["A", "B"]
    summary = comparison.summary
    assert summary.loc["A", "final best"] == 2.0 and summary.loc["B", "final best"] == 1.0
    assert summary.loc["A", "reached at report"] == 5 and summary.loc["A", "reached at (s)"] == 4.0
    assert summary.loc["B", "best trial"] == "b2" and summary.loc["B", "reports"] == 4
    assert summary.loc["A", "wall time (s)"] == 5.0
    assert comparison.budget_to_target.loc["A", "B"] == "never"
    # The config of the trial that reached each final best, typed back from MLflow's strings.
    assert comparison.best_configs.loc["lr"].tolist() == [0.1, 0.2]
    assert comparison.best_configs.loc["opt"].tolist() == ["sgd", "sgd"]
    assert comparison.spaces.empty or set(comparison.spaces.stack()) == {"not recorded"}
    figures = comparison_figures(comparison)
    for figure in figures.values():
        assert [trace.name for trace in figure.data] == ["A", "B"]
    assert list(figures["budget"].data[1].y) == [3.0, 2.5, 2.5, 1.0]
    assert list(figures["wall time"].data[0].x) == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]


def test_runs_of_one_name_are_labelled_by_run() -> None:
    first = _sweep("s", REPORTS_A, run="aaaaaaaa1111")
    second = _sweep("s", REPORTS_B, run="aaaaaaaa2222")
    other = _sweep("t", REPORTS_B)
    comparison = compare_sweeps([first, second, other])
    assert [s.label for s in comparison.sweeps] == ["s@aaaaaaaa1111", "s@aaaaaaaa2222", "t"]


def test_multi_objective_sweeps_compare_on_their_first_objective() -> None:
    pareto = _sweep("mo", REPORTS_A, objectives=[("loss", "min"), ("latency", "min")])
    comparison = compare_sweeps([pareto, _sweep("single", REPORTS_B)])
    assert (comparison.metric, comparison.mode) == ("loss", "min")


def _objective_sweeps(objectives: list[tuple[str, str, str]]) -> list[SweepData]:
    """Sweeps that each report ``loss`` and optimise ``(name, metric, mode)``."""
    datas = []
    for name, metric, mode in objectives:
        data = _sweep(name, REPORTS_A, objectives=[(metric, mode)])
        data.metric, data.mode = metric, mode
        datas.append(data)
    return datas


@pytest.mark.parametrize(
    ("sweeps", "metric", "mode", "expected"),
    [
        ([("A", "loss", "min"), ("B", "loss", "min")], "loss", None, ("loss", "min")),
        ([("A", "loss", "max"), ("B", "loss", "max")], None, None, ("loss", "max")),
        ([("A", "loss", "min"), ("B", "acc", "max")], "loss", None, ("loss", "min")),
        ([("A", "loss", "min"), ("B", "loss", "min")], "loss", "max", ("loss", "max")),
    ],
)
def test_objective_of_the_comparison(
    sweeps: list[tuple[str, str, str]], metric: str | None, mode: str | None, expected: Any
) -> None:
    comparison = compare_sweeps(_objective_sweeps(sweeps), metric=metric, mode=mode)
    assert (comparison.metric, comparison.mode) == expected


@pytest.mark.parametrize(
    ("sweeps", "metric", "mode", "message"),
    [
        ([("A", "loss", "min"), ("B", "acc", "max")], None, None, "different objectives"),
        ([("A", "loss", "min"), ("B", "loss", "max")], None, None, "different objectives"),
        ([("A", "loss", "min"), ("B", "loss", "max")], "loss", None, "minimised by one"),
        ([("A", "acc", "max"), ("B", "acc", "max")], "loss", None, "no compared sweep's"),
        ([("A", "loss", "min"), ("B", "loss", "min")], None, "max", "needs a metric"),
        ([("A", "loss", "min"), ("B", "loss", "min")], "loss", "up", "'min' or 'max'"),
        ([("A", "loss", "min"), ("B", "loss", "min")], "val", "min", "reported no metric 'val'"),
    ],
)
def test_objective_errors(
    sweeps: list[tuple[str, str, str]], metric: str | None, mode: str | None, message: str
) -> None:
    with pytest.raises(SpecError, match=re.escape(message)) as raised:
        compare_sweeps(_objective_sweeps(sweeps), metric=metric, mode=mode)
    assert "\n" not in str(raised.value)


def test_no_sweep_and_the_same_run_twice_are_refused() -> None:
    with pytest.raises(SpecError, match="at least one sweep"):
        compare_sweeps([])
    data = _sweep("A", REPORTS_A)
    with pytest.raises(SpecError, match="selected twice"):
        compare_sweeps([data, data])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("quick", ("quick", None)),
        ("quick@3f2a", ("quick", "3f2a")),
        ("a.b-c_1@ff", ("a.b-c_1", "ff")),
    ],
)
def test_parse_selector(text: str, expected: tuple[str, str | None]) -> None:
    assert parse_selector(text) == expected


@pytest.mark.parametrize("text", ["@3f2a", "quick@", "a@b@c", ""])
def test_parse_selector_errors(text: str) -> None:
    with pytest.raises(SpecError, match="NAME@RUN"):
        parse_selector(text)


def test_rendered_comparison_is_self_contained_and_holds_the_table() -> None:
    comparison = compare_sweeps([_sweep("A", REPORTS_A), _sweep("B <b>", REPORTS_B)])
    html = render_comparison(comparison)
    assert not re.search(r"<script[^>]*\ssrc\s*=", html, re.I)
    assert not re.search(r"<(link|img|iframe)\b", html, re.I)
    assert "B <b>" not in html and "B &lt;b&gt;" in html
    table = html[html.index('id="budget-to-target"') :]
    cells = re.findall(r'data-fraction="([^"]*)" data-reports="([^"]*)"', table)
    assert cells == [("0.8333333333333334", "5"), ("never", "never"), ("1.0", "4"), ("1.0", "4")]
    for section in ("Summary", "against budget", "against wall time", "Best configs"):
        assert section in html
