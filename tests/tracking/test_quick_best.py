"""`best_trial` without MLflow's import equals the read through `MlflowClient`, on a real
SQLite store written by the tracker.

The tracking server's REST path is compared in tests/tracking/test_server.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mlflow_store import store_uri

from sweeplab.tracking import SweepTracker
from sweeplab.tracking._quick import quick_best, quick_tracking_uri
from sweeplab.tracking._read import UnknownSweepError, best_trial


class _Trial:
    def __init__(self, trial_id: str, x: float) -> None:
        self.trial_id = trial_id
        self.config = {"x": x, "nested": {"depth": 2}}
        self.local_path = self.path = self.error_file = None


def _sweep(
    uri: str, storage: Path, name: str, losses: dict[str, float], finish: bool = True
) -> Any:
    tracker = SweepTracker(
        tracking_uri=uri, sweep_name=name, storage_dir=storage, metric="loss", mode="min",
        max_iterations=1, drain_timeout_s=60,
    )  # fmt: skip
    tracker.start()
    for n, (trial_id, loss) in enumerate(losses.items()):
        trial = _Trial(trial_id, float(n))
        tracker.trial_started(trial)
        tracker.trial_reported(trial, {"loss": loss, "training_iteration": 1})
        tracker.trial_ended(trial)
    return tracker.finish() if finish else tracker


def _through_mlflow(name: str, uri: str) -> dict[str, Any]:
    from sweeplab.tracking._read import _best_from_parent, latest_sweep_run, tracking_client

    client, resolved = tracking_client(uri)
    return _best_from_parent(client, latest_sweep_run(client, name, resolved), resolved)


@pytest.fixture
def store(tmp_path: Path) -> str:
    """A store with two sweeps; the first one ran twice (its second execution is the latest)."""
    uri = store_uri(tmp_path)
    _sweep(uri, tmp_path / "a1", "alpha", {"t1": 0.5, "t2": 0.25})
    _sweep(uri, tmp_path / "a2", "alpha", {"t3": 0.75, "t4": 0.125})
    _sweep(uri, tmp_path / "b", "beta", {"t5": 0.3})
    return uri


def test_the_quick_read_equals_mlflows(store: str) -> None:
    for name, best in (("alpha", "t4"), ("beta", "t5")):
        quick = quick_best(name, store)
        assert quick is not None and quick["trial_id"] == best
        assert quick == _through_mlflow(name, store)
        assert best_trial(name, store) == quick


def test_the_default_store_of_the_working_folder(
    store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import mlflow

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    assert quick_tracking_uri(None) == mlflow.get_tracking_uri()
    assert quick_best("alpha", None) == _through_mlflow("alpha", mlflow.get_tracking_uri())
    monkeypatch.setenv("MLFLOW_TRACKING_URI", store)
    assert quick_tracking_uri(None) == store
    (tmp_path / "mlruns").mkdir()  # MLflow may choose its file store: ask MLflow
    monkeypatch.delenv("MLFLOW_TRACKING_URI")
    assert quick_tracking_uri(None) is None


def test_a_uri_given_to_mlflow_in_this_process_is_the_one_read(store: str, tmp_path: Path) -> None:
    """A notebook that called `mlflow.set_tracking_uri` reads that store, not the working
    folder's, even where the folder holds a sweep of the same name (MLflow sets
    ``MLFLOW_TRACKING_URI`` too, which the quick read takes)."""
    here = tmp_path / "here"
    here.mkdir()
    _sweep(store_uri(here), here / "s", "alpha", {"elsewhere": 0.01})
    code = (
        "import json, mlflow; "
        f"mlflow.set_tracking_uri({store!r}); "
        "from sweeplab.tracking import best_trial; "
        "print(json.dumps(best_trial('alpha')))"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=here, env=env
    )
    assert done.returncode == 0, done.stderr
    best = json.loads(done.stdout.strip().splitlines()[-1])
    assert best["trial_id"] == "t4" and best["tracking_uri"] == store


def test_what_it_cannot_read_is_left_to_mlflow(
    store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert quick_best("alpha", store) is not None
    monkeypatch.setenv("MLFLOW_ENABLE_WORKSPACES", "true")  # MLflow scopes by workspace
    assert quick_best("alpha", store) is None
    monkeypatch.delenv("MLFLOW_ENABLE_WORKSPACES")
    assert quick_best("nope", store) is None  # MLflow's path says there is no such sweep
    with pytest.raises(UnknownSweepError, match="No sweep named 'nope'"):
        best_trial("nope", store)
    missing = f"sqlite:///{tmp_path / 'other' / 'mlflow.db'}"
    assert quick_best("alpha", missing) is None
    assert not (tmp_path / "other").exists(), "the quick read wrote nothing"
    assert quick_best("alpha", "file:///somewhere") is None
    # A sweep still running has no best tag yet.
    _sweep(store, tmp_path / "g", "gamma", {"t6": 0.1}, finish=False)
    assert quick_best("gamma", store) is None
    with pytest.raises(UnknownSweepError, match="no best trial yet"):
        best_trial("gamma", store)


def test_best_json_does_not_import_mlflow(store: str, tmp_path: Path) -> None:
    code = (
        "import json, sys; from sweeplab.cli import main; "
        f"code = main(['best', 'alpha', '--json', '--tracking-uri', {store!r}]); "
        "print(json.dumps({'code': code, 'mlflow': 'mlflow' in sys.modules}))"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env
    )
    *printed, last = done.stdout.strip().splitlines()
    assert last == '{"code": 0, "mlflow": false}', done.stdout + done.stderr
    assert '"trial_id": "t4"' in "\n".join(printed)


def test_best_tells_the_diverged_trials_from_the_document(
    store: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import argparse

    from sweeplab.cli import main
    from sweeplab.cli._output import new_console
    from sweeplab.cli._reads import _print_diverged

    _sweep(store, tmp_path / "d", "delta", {"t7": float("nan"), "t8": 0.2, "t9": 0.3})
    best = quick_best("delta", store)
    assert best is not None
    assert best["trials"] == 3 and best["diverged"] == ["t7"]
    capsys.readouterr()
    assert main(["best", "delta", "--tracking-uri", store]) == 0
    printed = capsys.readouterr().out
    assert "diverged: 1 of 3 trials (loss NaN or infinite)" in " ".join(printed.split())
    assert printed.rstrip().endswith(": t7")
    # A document written before it listed them: the same line, from every ranked trial.
    older = {k: v for k, v in best.items() if k not in ("trials", "diverged")}
    args = argparse.Namespace(sweep="delta", tracking_uri=store)
    _print_diverged(new_console(), args, older)
    assert capsys.readouterr().out == printed[printed.index("diverged") :]
