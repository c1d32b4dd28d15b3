"""A real small sweep (local Ray, SQLite MLflow) through the notebook, the CLI and Chromium."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "compare_trials.ipynb"
SCREENSHOT = ROOT / "docs" / "images" / "report.png"
ASHA_SCREENSHOT = ROOT / "docs" / "images" / "report-asha.png"

# Run in the rendered report: reads the parallel coordinates' lines (a trace per trial), clicks
# a view button that is not the active one (a real click on plotly's button), reads them again,
# and writes what it saw, and where the views are on the page, into <pre id="probe">.
PROBE = """
window.addEventListener("load", function () {
  var plot = document.querySelector("#parallel-coordinates .plotly-graph-div");
  var lines = function () {
    return plot.data.filter(function (t) { return (t.hovertemplate || "").startsWith("trial "); });
  };
  var read = function () {
    var seen = {};
    lines().forEach(function (t) { seen[t.hovertemplate.split(" ")[1]] = t.customdata[1][1]; });
    return {label: plot.layout.xaxis.ticktext[1], values: seen};
  };
  var box = function (id) {
    var r = document.getElementById(id).getBoundingClientRect();
    return [r.top + window.scrollY, r.bottom + window.scrollY];
  };
  var seen = {
    lines: lines().length,
    status: plot.layout.annotations.filter(function (a) { return a.x === 0; })
      .map(function (a) { return a.text; }),
    before: read(),
    buttons: [],
    shot: [box("learning-curves")[0], box("parallel-coordinates")[1]]
  };
  var menu = plot.layout.updatemenus[0];
  var target = menu.active === 0 ? menu.buttons.length - 1 : 0;
  var buttons = plot.querySelectorAll("g.updatemenu-button");
  buttons.forEach(function (b) { seen.buttons.push(b.textContent); });
  buttons[target].dispatchEvent(new MouseEvent("click", {bubbles: true}));
  setTimeout(function () {
    seen.after = read();
    seen.title = plot.layout.title.text;
    var out = document.createElement("pre");
    out.id = "probe";
    out.textContent = JSON.stringify(seen);
    document.body.appendChild(out);
  }, 1500);
});
"""


def test_notebook_runs_end_to_end(recorded: Any, tmp_path: Path) -> None:
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(NOTEBOOK, as_version=4)
    assert all(not c.get("outputs") for c in notebook.cells if c.cell_type == "code"), (
        "commit the notebook with its outputs cleared"
    )
    (parameters,) = [c for c in notebook.cells if "parameters" in c.metadata.get("tags", [])]
    assert parameters is next(c for c in notebook.cells if c.cell_type == "code")
    # Inject the parameters as papermill does: replace the tagged cell's values.
    parameters.source = f"SWEEP = {recorded.name!r}\nTRACKING_URI = {recorded.tracking_uri!r}"
    NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": tmp_path}}
    ).execute()
    outputs = [o for c in notebook.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    figures = [o for o in outputs if "application/vnd.plotly.v1+json" in o.get("data", {})]
    assert len(figures) == 5, "learning curves, parallel coords, slice, history, importance"
    html = [o["data"]["text/html"] for o in figures]
    assert all("Plotly.newPlot" in h and "cdn." not in h for h in html), "offline HTML"
    text = "".join(
        o.get("text", "") + str(o.get("data", {}).get("text/plain", "")) for o in outputs
    )
    assert recorded.best_trial_id in text
    nbformat.write(notebook, tmp_path / "compare_trials.executed.ipynb")


def test_report_is_self_contained_and_renders(
    recorded: Any, tmp_path: Path, render: Any, pixel_std: Any
) -> None:
    out = tmp_path / "report.html"
    # The CLI's `main` in this process: the command a user types, without a second interpreter.
    from sweeplab.cli import main

    argv = ["report", recorded.name, "--out", str(out), "--tracking-uri", recorded.tracking_uri]
    assert main(argv) == 0
    html = out.read_text()
    assert not re.search(r"<script[^>]*\ssrc\s*=", html, re.I), "a script fetched from elsewhere"
    assert not re.search(r"<(link|img|iframe)\b", html, re.I)
    from plotly.offline import get_plotlyjs

    assert html.count(get_plotlyjs()[:300]) == 1, "plotly.js inlined exactly once"
    for section in (
        "Trials by rank",
        "Learning curves",
        "Parallel coordinates",
        "Slice",
        "Optimisation history",
        "Parameter importance",
        "Best config",
    ):
        assert section in html
    for word in ("random", "asha", "report-toy", recorded.best_trial_id, "wall time"):
        assert word in html
    assert html.count('class="plotly-graph-div"') == 5

    rendered = render(out, tmp_path / "report.png")
    assert rendered.console == [], "the page logged to the console"
    assert rendered.requests == [], "the page fetched something"
    assert rendered.dom.count('class="main-svg"') >= 5, "plotly drew no figure"
    assert rendered.screenshot.stat().st_size > 10_000
    assert pixel_std(rendered.screenshot) > 0.05, "the screenshot is blank"
    if os.environ.get("SWEEPLAB_UPDATE_SCREENSHOT") == "1":
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(rendered.screenshot, SCREENSHOT)


def test_unknown_sweep_exits_2_with_one_line(
    recorded: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """In-process through the CLI's `main` (the subprocess path is covered above)."""
    from sweeplab.cli import main

    out = tmp_path / "r.html"
    argv = ["report", "nope", "--out", str(out), "--tracking-uri", recorded.tracking_uri]
    assert main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("sweeplab: error: No sweep named 'nope'")
    assert not out.exists()


def test_study_of_the_recorded_sweep(recorded: Any) -> None:
    from optuna.distributions import FloatDistribution

    import sweeplab
    from sweeplab.report import read_space, sweep_study

    data = sweeplab.load_sweep(recorded.name, tracking_uri=recorded.tracking_uri)
    space = read_space(data, tracking_uri=recorded.tracking_uri)
    assert space is not None, "the sweep's logged space"
    study = sweep_study(data, space=space)
    assert len(study.trials) == len(data.trials) == recorded.num_trials
    states = {t.user_attrs["trial_id"]: t.state.name for t in study.trials}
    expected = {"finished": "COMPLETE", "stopped_early": "PRUNED"}
    assert states == {
        row.trial_id: expected.get(row.status, "FAIL") for row in data.trials.itertuples()
    }
    lr = [t.distributions["opt.lr"] for t in study.trials if "opt.lr" in t.params]
    assert all(d == FloatDistribution(1e-3, 1e-1, log=True) for d in lr)
    assert all(t.intermediate_values for t in study.trials)


def test_report_of_an_asha_sweep_shows_every_trial(
    recorded: Any, tmp_path: Path, render: Any, chromium_dom: Any, pixel_std: Any
) -> None:
    """Most trials of the ASHA sweep stopped early; every one is a line of the parallel
    coordinates, and the view buttons switch its data in the page."""
    import html as html_lib
    import json

    import sweeplab
    from sweeplab.report import write_report

    data = sweeplab.load_sweep(recorded.name, tracking_uri=recorded.tracking_uri)
    statuses = list(data.trials["status"])
    assert len(statuses) == recorded.num_trials >= 8
    assert statuses.count("stopped_early") > len(statuses) / 2, statuses
    out = write_report(recorded.name, tmp_path / "report.html", tracking_uri=recorded.tracking_uri)

    rendered = render(out, tmp_path / "report.png", size="1280,4200")
    assert rendered.console == [], "the page logged to the console"
    assert rendered.requests == [], "the page fetched something"
    assert rendered.dom.count('class="main-svg"') >= 5, "plotly drew no figure"

    probe = tmp_path / "probe" / "report.html"
    probe.parent.mkdir()
    probe.write_text(out.read_text().replace("</body>", f"<script>{PROBE}</script></body>"))
    dom = chromium_dom(
        probe.as_uri(),
        tmp_path / "probe" / "profile",
        budget_ms=20_000,
        extra=["--window-size=1280,4200"],
    )
    found = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.S)
    assert found, "the probe did not run"
    seen = json.loads(html_lib.unescape(found.group(1)))
    trial_ids = set(data.trials["trial_id"])
    assert seen["lines"] == len(trial_ids), "a line per trial"
    assert set(seen["before"]["values"]) == set(seen["after"]["values"]) == trial_ids
    assert set(seen["status"]) >= set(statuses)  # the status axis's ticks
    assert seen["buttons"][-2:] == ["best so far", "last value"]
    assert seen["buttons"][0].startswith("step ")
    assert seen["after"]["label"] != seen["before"]["label"]
    assert seen["after"]["values"] != seen["before"]["values"], "the button switched the data"
    assert seen["title"].endswith(seen["after"]["label"])

    # The README's picture: the learning curves and the parallel coordinates.
    import matplotlib.image

    top, bottom = (round(y) for y in seen["shot"])
    picture = tmp_path / "report-asha.png"
    matplotlib.image.imsave(picture, matplotlib.image.imread(rendered.screenshot)[top:bottom])
    assert pixel_std(picture) > 0.05, "the screenshot is blank"
    if os.environ.get("SWEEPLAB_UPDATE_SCREENSHOT") == "1":
        shutil.copyfile(picture, ASHA_SCREENSHOT)
