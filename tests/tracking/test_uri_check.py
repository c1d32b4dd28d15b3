"""A tracking URI is checked before anything starts or is written (exit 2, one line)."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest
from refused import closed_port, refused_line

from sweeplab.tracking import TrackingError, check_tracking_uri

SPEC = Path(__file__).resolve().parents[2] / "experiments" / "quickstart.py"


@pytest.mark.parametrize("uri", ["bogus://x", "s3://bucket/mlflow", "postgres://h/db"])
def test_an_unknown_scheme_names_the_scheme_and_the_forms(uri: str) -> None:
    scheme = uri.split(":", 1)[0]
    with pytest.raises(TrackingError, match=rf"no tracking store of scheme '{scheme}'; use "):
        check_tracking_uri(uri)


@pytest.mark.parametrize(
    ("template", "what"),
    [
        ("http://127.0.0.1:{port}", "MLflow tracking server"),
        ("https://127.0.0.1:{port}/prefix", "MLflow tracking server"),
        ("postgresql+psycopg://sweeper:hunter2@127.0.0.1:{port}/mlflow", "postgresql database"),
        ("mysql://127.0.0.1:{port}/mlflow", "mysql database"),
    ],
)
def test_a_server_that_does_not_answer_fails_at_once_without_its_password(
    template: str, what: str
) -> None:
    uri = template.format(port=closed_port())
    started = time.monotonic()
    with pytest.raises(TrackingError, match=f"no {what} answers at --tracking-uri") as error:
        check_tracking_uri(uri)
    assert time.monotonic() - started < 5
    assert "hunter2" not in str(error.value)


def test_stores_mlflow_can_open_pass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        check_tracking_uri(f"http://127.0.0.1:{port}")
        check_tracking_uri(f"postgresql://u@127.0.0.1:{port}/db")
    check_tracking_uri(f"sqlite:///{tmp_path / 'new' / 'deeper' / 'mlflow.db'}")
    check_tracking_uri(f"file:{tmp_path / 'mlruns'}")
    check_tracking_uri(str(tmp_path / "mlruns"))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    check_tracking_uri(None)
    # Nothing was created by the check.
    assert list(tmp_path.iterdir()) == []


def test_mlflows_own_variable_is_checked_when_no_uri_is_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "bogus://x")
    with pytest.raises(TrackingError, match="scheme 'bogus'"):
        check_tracking_uri(None)


def test_a_sqlite_store_under_a_file_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")
    with pytest.raises(TrackingError, match=r"cannot make the store's folder, .*a-file is a file"):
        check_tracking_uri(f"sqlite:///{tmp_path / 'a-file' / 'x' / 'mlflow.db'}")


@pytest.mark.parametrize(
    ("command", "kind"),
    [("sweep", "scheme"), ("sweep", "server"), ("ls", "server"), ("best", "server")],
)
def test_the_cli_exits_2_with_one_line_and_writes_nothing(
    command: str, kind: str, tmp_path: Path
) -> None:
    uri = "bogus://x" if kind == "scheme" else f"http://127.0.0.1:{closed_port()}"
    args = {"sweep": ["sweep", str(SPEC)], "ls": ["ls"], "best": ["best", "quickstart"]}[command]
    assert uri in refused_line([*args, "--tracking-uri", uri], tmp_path)
