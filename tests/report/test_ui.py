"""`sweeplab ui`: the sweep's runs page, and no server process left behind (real processes)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sweeplab.cli import main
from sweeplab.report._ui import runs_url

# A server with a worker in its process group, as uvicorn runs its workers; the worker may
# ignore SIGTERM, as a stuck one would.
FAKE_SERVER = textwrap.dedent(
    """
    import os, subprocess, sys, time
    worker = subprocess.Popen([sys.executable, "-c", sys.argv[2]])
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write(f"{os.getpid()} {worker.pid}")
    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    time.sleep(600)
    """
)
WORKER = "import time; time.sleep(600)"
STUCK_WORKER = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"  # a zombie holds nothing


def _wait_gone(pids: list[int], timeout_s: float) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not any(_alive(p) for p in pids):
            return []
        time.sleep(0.1)
    return [p for p in pids if _alive(p)]


def test_runs_url() -> None:
    assert runs_url("http://127.0.0.1:5000/", "7") == (
        "http://127.0.0.1:5000/#/experiments/7/runs"
        "?orderByKey=tags.%60sweeplab.rank%60&orderByAsc=true"
    )


def test_unknown_sweep_exits_2_and_starts_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "mlflow.db"
    assert main(["ui", "nope", "--tracking-uri", f"sqlite:///{store}"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sweeplab: error: No sweep named 'nope'")
    assert not store.exists()


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize(
    ("sig", "worker", "status"),
    [
        (signal.SIGINT, WORKER, 0),  # Ctrl-C
        (signal.SIGTERM, WORKER, 0),
        (signal.SIGKILL, WORKER, -signal.SIGKILL),
        (signal.SIGKILL, STUCK_WORKER, -signal.SIGKILL),  # SIGKILL after the grace period
    ],
)
def test_ending_the_ui_ends_the_server_group(
    tmp_path: Path, sig: signal.Signals, worker: str, status: int
) -> None:
    script, pids_file = tmp_path / "server.py", tmp_path / "pids"
    script.write_text(FAKE_SERVER)
    command = [sys.executable, str(script), str(pids_file), worker]
    ui = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from sweeplab.report._ui import serve; "
            f"sys.exit(serve({command!r}, grace_s=1.0))",
        ],
        start_new_session=True,  # a signal to it alone, as a terminal's Ctrl-C would be
        # With SIGINT at its default, as in a terminal's foreground. A process that inherits it
        # ignored (from a script's background job, or a test worker that ignores it) rightly
        # ignores Ctrl-C, and twice in full runs here `sweeplab ui` then outlived the wait.
        preexec_fn=_default_sigint,
    )
    try:
        deadline = time.monotonic() + 60
        while not pids_file.exists():
            assert ui.poll() is None and time.monotonic() < deadline, "the server never started"
            time.sleep(0.05)
        pids = [int(p) for p in pids_file.read_text().split()]
        assert all(_alive(p) for p in pids)
        ui.send_signal(sig)
        assert ui.wait(timeout=30) == status
        assert _wait_gone(pids, timeout_s=15) == [], "server processes left behind"
    finally:
        if ui.poll() is None:
            os.killpg(ui.pid, signal.SIGKILL)


def test_a_server_that_exits_gives_its_status() -> None:
    from sweeplab.report._ui import serve

    assert serve([sys.executable, "-c", "raise SystemExit(3)"], grace_s=1.0) == 3


# -- end to end: a real sweep, `sweeplab ui SWEEP`, headless Chromium --------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except (FileNotFoundError, ProcessLookupError):
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def _descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        for child in _children(todo.pop()):
            found.append(child)
            todo.append(child)
    return found


@pytest.fixture
def ui_process(recorded: Any, tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], int]]:
    port = _free_port()
    ui = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "sweeplab.cli",
            "ui",
            recorded.name,
            "--port",
            str(port),
            "--tracking-uri",
            recorded.tracking_uri,
        ],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        yield ui, port
    finally:
        if ui.poll() is None:
            ui.kill()
        ui.wait(timeout=30)


@pytest.mark.slow
def test_ui_opens_the_sweeps_runs_and_leaves_nothing_behind(
    recorded: Any,
    ui_process: tuple[subprocess.Popen[str], int],
    tmp_path: Path,
    chromium_dom: Any,
) -> None:
    from mlflow import MlflowClient

    ui, port = ui_process
    assert ui.stdout is not None
    root = f"http://127.0.0.1:{port}"
    first, second = ui.stdout.readline(), ui.stdout.readline()
    assert root in first
    client = MlflowClient(recorded.tracking_uri)
    experiment = client.get_experiment_by_name(recorded.name)
    assert experiment is not None
    url = runs_url(root, experiment.experiment_id)
    assert second.split() == ["sweep", f"{recorded.name}:", url]

    deadline = time.monotonic() + 240
    while True:
        try:
            with urllib.request.urlopen(root, timeout=5) as response:
                if response.status == 200:
                    break
        except OSError:
            pass
        assert ui.poll() is None and time.monotonic() < deadline, "the MLflow UI never answered"
        time.sleep(1)

    trials = client.search_runs(
        [experiment.experiment_id], filter_string="tags.`sweeplab.role` = 'trial'"
    )
    assert len(trials) == recorded.num_trials
    dom = chromium_dom(url, tmp_path / "chromium-profile", budget_ms=30_000)
    assert "Training runs" in dom
    names = sorted(run.info.run_name for run in trials)
    for name in names:  # not folded under the parent run
        assert name in dom, f"trial run {name} not listed"
    positions = [dom.index(name) for name in names]
    assert positions == sorted(positions), "listed by rank"
    assert "loss=" in names[0], "the run name shows the metric"

    server = _descendants(ui.pid)
    assert len(server) >= 3, "guard, MLflow's CLI, uvicorn"
    ui.kill()  # SIGKILL: no chance to clean up itself
    ui.wait(timeout=30)
    assert _wait_gone(server, timeout_s=30) == [], "server processes left behind"
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
