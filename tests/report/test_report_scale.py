"""The report at scale (no Ray): fANOVA rates a seeded sample of a large sweep's trials, a long
curve is thinned, and a dense sweep's figures stay a few bytes a trial and view."""

from __future__ import annotations

import base64
import html as html_module
import itertools
import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from sweeplab.report import parameter_importance, rung_study, sweep_figures, sweep_study
from sweeplab.report._figures import (
    CURVE_POINTS,
    IMPORTANCE_SAMPLE,
    downsample_curve,
    importance_figure,
    importance_sample,
    learning_curves,
    view_sample,
)
from sweeplab.report._parallel import parallel_coordinates
from sweeplab.report._views import (
    DENSE_TRIALS,
    TYPED_ARRAY_CODES,
    slice_figure,
    sweep_views,
    typed_arrays,
)


def _study(n: int, direction: str) -> Any:
    import optuna
    from optuna.distributions import FloatDistribution

    study = optuna.create_study(direction=direction)
    for i in range(n):
        x = (i * 7919 % n) / n
        study.add_trial(
            optuna.trial.create_trial(
                params={"x": x, "y": (i % 13) / 13},
                distributions={"x": FloatDistribution(0, 1), "y": FloatDistribution(0, 1)},
                value=(x - 0.3) ** 2,
            )
        )
    return study


@pytest.mark.parametrize("direction", ["minimize", "maximize"])
def test_sample_is_seeded_and_keeps_the_best(direction: str) -> None:
    study = _study(IMPORTANCE_SAMPLE * 4, direction)
    sample = importance_sample(study)
    trials = sample.get_trials(deepcopy=False)
    assert len(trials) == IMPORTANCE_SAMPLE
    assert sample.best_value == study.best_value
    numbers = [t.number for t in trials]
    assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers)
    assert [t.params for t in importance_sample(study).get_trials(deepcopy=False)] == [
        t.params for t in trials
    ]


def test_small_study_is_rated_whole() -> None:
    study = _study(IMPORTANCE_SAMPLE, "minimize")
    assert importance_sample(study) is study


def test_large_sweep_importance_and_caption(fake_sweep: Any) -> None:
    n = IMPORTANCE_SAMPLE * 3
    rows = [
        {"value": ((i * 7919 % n) / n - 0.3) ** 2, "config": {"x": (i * 7919 % n) / n, "y": i % 5}}
        for i in range(n)
    ]
    data = fake_sweep(sorted(rows, key=lambda r: r["value"]))
    importance = parameter_importance(sweep_study(data))
    assert importance.index[0] == "x"  # the only param the loss depends on
    assert importance.sum() == pytest.approx(1.0)
    figure = sweep_figures(data)["parameter importance"]
    caption = figure.layout.annotations[0].text
    assert f"seeded sample of {IMPORTANCE_SAMPLE} of the {n} trials" in caption
    assert len(figure.data[0].y) == 2


def test_trials_without_a_value_are_left_out() -> None:
    import optuna
    from optuna.distributions import FloatDistribution
    from optuna.trial import TrialState

    study = _study(10, "minimize")
    study.add_trial(
        optuna.trial.create_trial(
            params={"x": 0.5, "y": 0.5},
            distributions={"x": FloatDistribution(0, 1), "y": FloatDistribution(0, 1)},
            state=TrialState.PRUNED,
        )
    )
    sample = importance_sample(study)
    assert len(sample.get_trials(deepcopy=False)) == 10
    assert all(t.state == TrialState.COMPLETE for t in sample.get_trials(deepcopy=False))


@pytest.mark.slow
def test_reads_at_scale_benchmark_runs_tiny(tmp_path: Any) -> None:
    """The benchmark at 20 trials: its reads succeed and the report holds every trial.

    Two of its five reads run here, each in a fresh interpreter as the benchmark times them: the
    report (whose file size it records) and `load_sweep` (its own script). `best`, `ls` and
    `compare` go through the same timing code, and their commands have tests of their own.
    """
    from benchmarks.reads_at_scale import SWEEP, time_reads, write_sweep

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    written = write_sweep(uri, tmp_path / "sweep", 20)
    assert written["points"] >= 40  # two metrics, at least one report a trial
    reads = time_reads(uri, tmp_path, only=["report", "load_sweep"])
    assert {name: r["rc"] for name, r in reads.items()} == {"report": 0, "load_sweep": 0}
    assert reads["report"]["mb"] > 0
    html = (tmp_path / "report.html").read_text()
    assert all(f"t{i:05d}" in html for i in range(20))
    import sweeplab

    assert len(sweeplab.load_sweep(SWEEP, uri).trials) == 20


# -- a dense sweep: every trial in every view, in a few bytes a trial --------------------------


@pytest.mark.parametrize(
    ("values", "mode", "best"),
    [
        ([1.0 / (s + 1) for s in range(1000)], "min", 999),  # the best is the last point
        ([abs(s - 412) for s in range(1000)], "min", 412),
        ([-abs(s - 77) for s in range(1000)], "max", 77),
    ],
)
def test_long_curve_is_thinned_through_its_first_last_and_best(
    values: list[float], mode: str, best: int
) -> None:
    steps = list(enumerate(values, start=1))
    thinned = downsample_curve(steps, mode)
    assert CURVE_POINTS - 1 <= len(thinned) <= CURVE_POINTS  # the best may be a spread one
    assert thinned[0] == steps[0] and thinned[-1] == steps[-1]
    assert steps[best] in thinned
    assert [s for s, _ in thinned] == sorted({s for s, _ in thinned})  # by step, no repeat
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(thinned)]
    assert max(gaps) <= 2 * len(steps) / CURVE_POINTS  # evenly spread


def test_short_curve_is_kept_whole() -> None:
    steps = [(s, float(s)) for s in range(1, CURVE_POINTS + 1)]
    assert downsample_curve(steps, "min") == steps


def _dense_sweep(fake_sweep: Any) -> Any:
    n = DENSE_TRIALS + 100
    rows = []
    for i in range(n):
        config: dict[str, Any] = {"x": (i * 7919 % n) / n, "opt.name": "sgd" if i % 2 else "adam"}
        if i % 2:
            config["opt.momentum"] = round(0.5 + (i % 50) / 100, 2)
        steps = 9 if i % 10 == 0 else 3 if i % 3 == 0 else 1
        status = "finished" if steps == 9 else "stopped_early"
        rows.append({"value": config["x"], "steps": steps, "status": status, "config": config})
    return fake_sweep(sorted(rows, key=lambda r: r["value"]))


def unpacked(value: Any) -> Any:
    """A typed array spec (as `typed_arrays` writes it) as its numpy array; else `value`."""
    if isinstance(value, dict) and "bdata" in value:
        names = {code: name for name, code in TYPED_ARRAY_CODES.items()}
        dtype = np.dtype(names[value["dtype"]]).newbyteorder("<")
        return np.frombuffer(base64.b64decode(value["bdata"]), dtype=dtype)
    return value


def test_dense_sweep_draws_every_trial_in_every_view_compactly(fake_sweep: Any) -> None:
    data = _dense_sweep(fake_sweep)
    n = len(data.trials)
    views, default = sweep_views(data)
    assert [v.button for v in views] == ["step 1", "step 3", "step 9", "best so far", "last value"]

    curves = learning_curves(views, "loss")
    assert [t.name for t in curves.data] == ["finished", "stopped_early"]  # a trace a status
    ids = {text for t in curves.data for text in t.text if text is not None}
    assert ids == set(data.trials["trial_id"])
    assert sum(y is not None for t in curves.data for y in t.y) == len(data.history)

    parallel = parallel_coordinates(views, default, "min")
    (menu,) = parallel.layout.updatemenus
    for button in menu.buttons:
        # The colour traces (then the scale's and the legend's), as typed arrays in the page.
        lines = [unpacked(line) for line in button.args[0]["y"][:-2]]
        assert all(line.dtype == np.float32 for line in lines)
        assert sum(int(np.isnan(line).sum()) for line in lines) == n  # a gap ends each line
        assert all(len(line) % 6 == 0 for line in lines)  # status, value, 3 params, gap
    assert len(parallel.to_json()) / n < 800  # bytes a trial, every view in it

    sliced = slice_figure(views, default)
    x_panel = [t for t in sliced.data if t.xaxis == "x3"]  # params by name: momentum, name, x
    assert sum(len(t.x) for t in x_panel) == n
    (menu,) = sliced.layout.updatemenus
    for button in menu.buttons:
        symbols = [s for trace in button.args[0]["marker.symbol"] for s in unpacked(trace)]
        assert set(symbols) <= {0, 100}  # circle, circle-open (ended before the step)
    step9 = menu.buttons[2].args[0]["marker.symbol"]
    assert 100 in {s for trace in step9 for s in unpacked(trace)}  # most trials ended before step 9
    assert len(sliced.to_json()) / n < 1000


def _rated(study: Any) -> list[tuple[dict[str, Any], float]]:
    return [(t.params, t.value) for t in study.get_trials(deepcopy=False) if t.value is not None]


def test_views_read_the_sweep_as_its_rung_studies(fake_sweep: Any) -> None:
    """The views, computed from the sweep's columns, hold each trial's value of its
    rung_study, and fANOVA rates the same sample of it."""
    data = _dense_sweep(fake_sweep)
    views, _ = sweep_views(data)
    for view in views:
        study = rung_study(data, view.key)
        trials = study.get_trials(deepcopy=False)
        assert view.trials.ids == [t.user_attrs["trial_id"] for t in trials]
        assert [row.params for row in view.trials.rows] == [t.params for t in trials]
        assert [view.values[i] for i in view.rated()] == [
            t.value for t in trials if t.value is not None
        ]
        assert _rated(view_sample(view)) == _rated(importance_sample(study))


def test_dense_sweep_rates_other_views_with_fewer_trees(fake_sweep: Any) -> None:
    data = _dense_sweep(fake_sweep)
    views, default = sweep_views(data)
    (menu,) = importance_figure(views, default, "loss").layout.updatemenus
    captions = [b.args[1]["annotations"][0]["text"] for b in menu.buttons]
    assert [("a forest of 16 trees" in c) for c in captions] == [
        i != default for i in range(len(views))
    ]
    assert all(sum(b.args[0]["x"][0]) == pytest.approx(1.0, abs=0.05) for b in menu.buttons)


# Run in the page: each figure's traces as plotly.js holds them (decoded, in `_fullData`) after
# newPlot and again after a real click on its last view button: (points, gaps, symbols 100).
_TYPED_PROBE = """
window.addEventListener("load", function () {
  var plots = Array.from(document.querySelectorAll(".plotly-graph-div"));
  var read = function (plot) {
    return plot._fullData.map(function (t) {
      var y = t.y || [], symbols = (t.marker && t.marker.symbol) || [];
      var gaps = 0, open = 0;
      for (var i = 0; i < y.length; i++) { if (typeof y[i] !== "number" || isNaN(y[i])) gaps++; }
      for (var j = 0; j < symbols.length; j++) { if (symbols[j] === 100) open++; }
      return [y.length, gaps, open];
    });
  };
  var seen = plots.map(function (plot) { return {before: read(plot)}; });
  plots.forEach(function (plot) {
    var buttons = plot.querySelectorAll("g.updatemenu-button");
    buttons[buttons.length - 1].dispatchEvent(new MouseEvent("click", {bubbles: true}));
  });
  setTimeout(function () {
    plots.forEach(function (plot, index) { seen[index].after = read(plot); });
    var out = document.createElement("pre");
    out.id = "probe";
    out.textContent = JSON.stringify(seen);
    document.body.appendChild(out);
  }, 2000);
});
"""


def _expected(figure: Any, restyle: dict[str, Any] | None) -> list[list[int]]:
    """(points, gaps, symbols 100) per trace: of the figure's data, with a button's update."""
    rows = []
    for index, trace in enumerate(figure.data):
        y, symbols = trace.y, trace.marker.symbol
        if restyle is not None and index < len(restyle["y"]):
            y = unpacked(restyle["y"][index])
            symbols = unpacked(restyle.get("marker.symbol", [symbols] * (index + 1))[index])
        values = [math.nan if v is None else float(v) for v in (y if y is not None else ())]
        open_ = sum(1 for s in (symbols if symbols is not None else ()) if s == 100)
        rows.append([len(values), sum(1 for v in values if math.isnan(v)), open_])
    return rows


def test_dense_figures_typed_arrays_draw_and_switch_in_a_browser(
    fake_sweep: Any, tmp_path: Path, chromium_dom: Any
) -> None:
    """plotly writes the dense views' numpy arrays as typed arrays (base64): plotly.js reads
    them in its first drawing and in a button's update alike."""
    from sweeplab.report._html import _div, _document

    data = _dense_sweep(fake_sweep)
    views, default = sweep_views(data)
    figures = [parallel_coordinates(views, default, "min"), slice_figure(views, default)]
    page = tmp_path / "dense.html"
    html = _document("dense", [_div(f) for f in figures])
    assert html.count('"bdata"') > 10
    page.write_text(html.replace("</body>", f"<script>{_TYPED_PROBE}</script></body>"))
    dom = chromium_dom(page.resolve().as_uri(), tmp_path / "profile")
    found = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.S)
    assert found, dom[-2000:]
    seen = json.loads(html_module.unescape(found.group(1)))
    for figure, drawn in zip(figures, seen, strict=True):
        (menu,) = figure.layout.updatemenus
        assert drawn["before"] == _expected(figure, None)
        assert drawn["after"] == _expected(figure, menu.buttons[-1].args[0])
        assert drawn["after"] != drawn["before"]


def test_typed_arrays_are_the_arrays_bytes_and_leave_the_rest() -> None:
    floats = np.array([0.5, np.nan, -2.0], dtype=np.float32)
    value = {"y": [floats, [1, None]], "x": (np.array([3, 0], dtype=np.uint8),), "t": "a"}
    typed = typed_arrays(value)
    assert typed["y"][0]["dtype"] == "f4" and typed["x"][0]["dtype"] == "u1"
    np.testing.assert_array_equal(unpacked(typed["y"][0]), floats)
    assert list(unpacked(typed["x"][0])) == [3, 0]
    assert typed["y"][1] == [1, None] and typed["t"] == "a"
    empty, grid = np.array([], dtype=np.float32), np.zeros((2, 2), dtype=np.float32)
    assert typed_arrays([empty, grid])[0] is empty  # plotly.js takes an empty list as is
    assert typed_arrays([empty, grid])[1] is grid  # and a 1-d spec only
