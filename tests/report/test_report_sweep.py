"""A real small sweep (local Ray, SQLite MLflow) through the notebook, the CLI and Chromium."""

from __future__ import annotations

import base64
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "compare_trials.ipynb"
SCREENSHOT = ROOT / "docs" / "images" / "report.png"
SPACE = (
    '{"x": uniform(0, 1), "opt": choice({"sgd": {"lr": loguniform(1e-3, 1e-1)}, '
    '"adam": {"beta": uniform(0.8, 0.99)}})}'
)


@dataclass
class RecordedSweep:
    name: str
    folder: Path
    tracking_uri: str
    best_trial_id: str


@pytest.fixture(scope="module")
def recorded(ray_local: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RecordedSweep]:
    """Four one-worker trials of the toy spec, a conditional space, Optuna + ASHA."""
    sys.path.insert(0, str(ROOT / "tests" / "engine"))
    try:
        from toy_spec import write_spec
    finally:
        sys.path.remove(str(ROOT / "tests" / "engine"))
    import sweeplab
    from sweeplab.engine import SweepOptions, run_sweep

    folder = tmp_path_factory.mktemp("report_sweep")
    spec = write_spec(
        folder,
        f'name="report-toy", space={SPACE}, metric="loss", mode="min", searcher="optuna", '
        'scheduler="asha", max_iterations=3, num_trials=4, seed=1',
        epochs=3,
        sleep=0.01,
        checkpoint_every=3,
    )
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    run_sweep(
        sweeplab.load_spec(spec),
        SweepOptions(spec_path=spec, storage=folder / "runs", tracking_uri=uri, live=False),
    )
    best = sweeplab.best_trial("report-toy", tracking_uri=uri)
    yield RecordedSweep("report-toy", folder, uri, best["trial_id"])


def test_notebook_runs_end_to_end(recorded: RecordedSweep, tmp_path: Path) -> None:
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
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) >= 3, "learning curves, parallel coordinates and importance"
    text = "".join(
        o.get("text", "") + str(o.get("data", {}).get("text/plain", "")) for o in outputs
    )
    assert recorded.best_trial_id in text
    nbformat.write(notebook, tmp_path / "compare_trials.executed.ipynb")


def test_report_is_self_contained_and_renders(
    recorded: RecordedSweep, tmp_path: Path, render: Any, pixel_std: Any
) -> None:
    out = tmp_path / "report.html"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "sweeplab.cli",
            "report",
            recorded.name,
            "--out",
            str(out),
            "--tracking-uri",
            recorded.tracking_uri,
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    html = out.read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", html, re.I)
    assert "<script" not in html and "@import" not in html and "url(" not in html
    for section in (
        "Trials by rank",
        "Learning curves",
        "Parallel coordinates",
        "Parameter importance",
        "Best config",
    ):
        assert section in html
    for word in ("optuna", "asha", "report-toy", recorded.best_trial_id, "wall time"):
        assert word in html
    images = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', html)
    assert len(images) == 3
    assert all(base64.b64decode(i).startswith(b"\x89PNG") for i in images)

    rendered = render(out, tmp_path / "report.png")
    assert rendered.console == [], "the page logged to the console"
    assert rendered.screenshot.stat().st_size > 10_000
    assert pixel_std(rendered.screenshot) > 0.05, "the screenshot is blank"
    if os.environ.get("SWEEPLAB_UPDATE_SCREENSHOT") == "1":
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(rendered.screenshot, SCREENSHOT)


def test_unknown_sweep_exits_2_with_one_line(
    recorded: RecordedSweep, tmp_path: Path, capsys: pytest.CaptureFixture[str]
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
