"""The commands that read write nothing where what they read is not there (real CLI processes).

`ls`, `best`, `report`, `compare` and `ui` read a tracking store, which MLflow creates on
opening it when it is not there; `status` reads a spec file and a Ray cluster. Each refuses in
one line (exit 2) and leaves the folder as it was: no ``mlflow.db``, no ``mlruns/``, no report.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from urllib.request import pathname2url

import pytest
from mlflow_store import store_uri
from refused import closed_port

from sweeplab.tracking import UnknownSweepError, check_sweep_store

NO_STORE = "missing"  # nothing in the folder
SQLITE = "sqlite"  # an empty SQLite store at ./mlflow.db: no sweep in it
FILE_STORE = "file store"  # an MLflow file store at ./mlruns: no sweep in it

CASES = [
    # No store; the default URI is ./mlflow.db.
    pytest.param("ls", [], NO_STORE, "No sweeps: the tracking store", {}, id="ls"),
    pytest.param("best", ["nope"], NO_STORE, "No sweep named 'nope': the", {}, id="best"),
    pytest.param(
        "report", ["nope", "--out", "r.html"], NO_STORE, "No sweep named 'nope'", {}, id="report"
    ),
    pytest.param(
        "compare", ["nope", "--out", "c.html"], NO_STORE, "No sweep named 'nope'", {}, id="compare"
    ),
    pytest.param("ui", [], NO_STORE, "No sweeps: the tracking store", {}, id="ui"),
    pytest.param("ui", ["nope"], NO_STORE, "No sweep named 'nope'", {}, id="ui-sweep"),
    # `status` reads no tracking store: what it reads is a spec file and a cluster.
    pytest.param("status", ["nope.py"], NO_STORE, "nope.py: no such spec", {}, id="status-spec"),
    pytest.param(
        "status",
        ["--address", "127.0.0.1:{port}"],
        NO_STORE,
        "no Ray cluster answers",
        {},
        id="status-address",
    ),
    # No store, named otherwise: a SQLite file in a folder that is not there, a file store
    # (`file:` or a path), the environment's URI.
    pytest.param(
        "ls",
        ["--tracking-uri", "sqlite:///{tmp}/sub/x.db"],
        NO_STORE,
        "does not exist",
        {},
        id="ls-sqlite-uri",
    ),
    pytest.param(
        "best",
        ["nope", "--tracking-uri", "file:{tmp}/mlruns"],
        NO_STORE,
        "does not exist",
        {},
        id="best-file-uri",
    ),
    pytest.param(
        "report",
        ["nope", "--out", "r.html", "--tracking-uri", "{tmp}/mlruns"],
        NO_STORE,
        "does not exist",
        {},
        id="report-path-uri",
    ),
    pytest.param(
        "compare",
        ["nope", "--out", "c.html"],
        NO_STORE,
        "does not exist",
        {"MLFLOW_TRACKING_URI": "sqlite:///{tmp}/env.db"},
        id="compare-env-uri",
    ),
    # A store without the sweep.
    pytest.param("best", ["nope"], SQLITE, "No sweep named 'nope' in the", {}, id="best-store"),
    pytest.param(
        "report",
        ["nope", "--out", "r.html"],
        SQLITE,
        "No sweep named 'nope' in the",
        {},
        id="report-store",
    ),
    pytest.param(
        "compare",
        ["nope", "--out", "c.html"],
        SQLITE,
        "No sweep named 'nope' in the",
        {},
        id="compare-store",
    ),
    pytest.param("ui", ["nope"], SQLITE, "No sweep named 'nope' in the", {}, id="ui-store"),
    pytest.param(
        "best",
        ["nope", "--tracking-uri", "file:{tmp}/mlruns"],
        FILE_STORE,
        "No sweep named 'nope' in the",
        {"MLFLOW_ALLOW_FILE_STORE": "true"},
        id="best-file-store",
    ),
    # A file store MLflow refuses to open (by default it picks ./mlruns, which holds data).
    pytest.param(
        "ls", [], FILE_STORE, "MLflow cannot open the tracking store", {}, id="ls-file-store"
    ),
]


def _files(folder: Path) -> list[str]:
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*"))


def _file_store(folder: Path) -> None:
    import mlflow

    saved = os.environ.get("MLFLOW_ALLOW_FILE_STORE")
    os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"
    try:
        mlflow.MlflowClient(f"file:{folder}").create_experiment("other")
    finally:
        if saved is None:
            del os.environ["MLFLOW_ALLOW_FILE_STORE"]
        else:
            os.environ["MLFLOW_ALLOW_FILE_STORE"] = saved


@pytest.mark.parametrize(
    ("command", "args", "store", "message", "env"),
    CASES,
)
def test_a_read_of_what_is_not_there_writes_nothing(
    tmp_path: Path,
    command: str,
    args: list[str],
    store: str,
    message: str,
    env: dict[str, str],
) -> None:
    if store == SQLITE:
        store_uri(tmp_path)
    elif store == FILE_STORE:
        _file_store(tmp_path / "mlruns")
    before = _files(tmp_path)
    values = {"tmp": tmp_path, "port": closed_port()}
    environ = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("MLFLOW_") and k not in ("RAY_ADDRESS", "SWEEPLAB_TRACKING_DATABASE")
    }
    environ.update({k: v.format(**values) for k, v in env.items()})
    result = subprocess.run(
        [sys.executable, "-m", "sweeplab.cli", command, *(a.format(**values) for a in args)],
        cwd=tmp_path,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("sweeplab: error: ") and message in lines[0], lines[0]
    assert _files(tmp_path) == before


def test_a_store_is_found_by_its_percent_encoded_uri(tmp_path: Path) -> None:
    """MLflow's default URI of a folder whose name has a space is %-encoded (`my%20runs`), and
    SQLAlchemy decodes it: the store there exists, the one beside it does not."""
    folder = tmp_path / "my runs"
    store_uri(folder)
    encoded = "sqlite:///" + pathname2url(str(folder / "mlflow.db"))
    assert "%20" in encoded
    check_sweep_store(encoded, "nope")
    with pytest.raises(UnknownSweepError, match="does not exist"):
        check_sweep_store(encoded.replace("mlflow.db", "other.db"), "nope")
