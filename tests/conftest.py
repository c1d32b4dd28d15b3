"""Fixtures shared by the whole suite: one real local Ray per test session."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")


@pytest.fixture(scope="session")
def ray_local() -> Iterator[None]:
    """A real local Ray with 2 CPUs, started the way `sweeplab sweep` starts it.

    Its workers import from the repository, the tests' folder and experiments/ (the folder a
    sweep of an experiment would ship), so in-process sweeps of any of them run on it.
    """
    import ray

    from sweeplab.engine import start_local_ray

    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(ROOT), str(ROOT / "tests"), str(ROOT / "experiments"), saved])
    )
    try:
        start_local_ray(
            num_cpus=2, log_to_driver=False, include_dashboard=True, dashboard_host="127.0.0.1"
        )
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved
    try:
        yield
    finally:
        ray.shutdown()


@pytest.fixture
def idle_ray(ray_local: None) -> None:
    """The shared local Ray with every CPU free, for a test that times a wait.

    The placement group of an earlier test's trial slot goes a moment after its sweep returns
    (0.1-0.4 s here, longer on a loaded machine); a stall watchdog with a limit of seconds
    would otherwise see the next trial wait for those CPUs, as it rightly would on a cluster.
    """
    import time

    import ray

    total = ray.cluster_resources().get("CPU", 0)
    deadline = time.monotonic() + 60
    while ray.available_resources().get("CPU", 0) < total and time.monotonic() < deadline:
        time.sleep(0.1)


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Runs the test in tmp_path, so MLflow's default store and sweep storage land there."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


# Ray Train's controllers ask one detached actor for their resources (Ray Data's
# AutoscalingCoordinator); a request of a controller that was killed, not shut down, holds its
# share until it expires after 180 s, and an elastic group that comes next waits for that
# (measured: 189 s instead of 35 s after the SIGKILL test). A fresh one per test isolates them.
COORDINATOR = ("AutoscalingCoordinator", "AutoscalingCoordinator")  # name, namespace


@pytest.fixture(autouse=True)
def _fresh_autoscaling_coordinator(request: pytest.FixtureRequest) -> Iterator[None]:
    """After a test on the shared local Ray, removes the autoscaling coordinator it left (it is
    created again on demand), so no stale resource request outlives the test."""
    yield
    if "ray_local" not in request.fixturenames:
        return
    import ray

    if not ray.is_initialized():
        return
    try:
        coordinator = ray.get_actor(COORDINATOR[0], namespace=COORDINATOR[1])
    except ValueError:
        return  # no trainer asked for resources
    ray.kill(coordinator)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that starts the shared local Ray is slow, marked or not: `make check` starts none."""
    for item in items:
        if "ray_local" in getattr(item, "fixturenames", ()) and not item.get_closest_marker("slow"):
            item.add_marker(pytest.mark.slow)


# How many lines of each failure the run's last screen repeats (its error and where it came from).
_FAILURE_TAIL_LINES = 15


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, exitstatus: int, config: pytest.Config
) -> None:
    """End the run with each failed test's name and the last lines of its report.

    `make test` runs for many minutes; the failures' tracebacks scroll far above the end, so
    the last screen says which tests failed and why.
    """
    failed = [
        report
        for key in ("failed", "error")
        for report in terminalreporter.stats.get(key, [])
        if isinstance(report, pytest.TestReport)
    ]
    if not failed:
        return
    terminalreporter.section(f"{len(failed)} failed: the last lines of each", sep="=")
    for report in failed:
        lines = str(report.longrepr).rstrip().splitlines()
        terminalreporter.write_line(f"--- {report.nodeid} ({report.when})", bold=True)
        for line in lines[-_FAILURE_TAIL_LINES:]:
            terminalreporter.write_line(f"    {line}")
