"""The stall watchdog on a real local Ray: a trial that never reports again stalls the sweep."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

STUCK_SPEC = """
import time

from ray import train

import sweeplab
from sweeplab import uniform


def train_func(config):
    train.report({"loss": config["x"]})
    time.sleep(3600)  # never reports again, never ends


sweep = sweeplab.Sweep(
    train_func=train_func, name="stuck", space={"x": uniform(0, 1)}, metric="loss",
    mode="min", num_trials=1, max_iterations=5,
)
"""


def test_fail_on_stall_names_the_stuck_trial_and_exits_1(
    idle_ray: None, in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from sweeplab.cli import main

    spec = in_tmp / "stuck.py"
    spec.write_text(STUCK_SPEC)
    started = time.monotonic()
    code = main(
        [
            "sweep",
            str(spec),
            "--no-live",
            "--storage",
            str(in_tmp / "runs"),
            "--tracking-uri",
            f"sqlite:///{in_tmp / 'mlflow.db'}",
            "--stall-timeout",
            # Past the trial actor's start, which took over 3 s on a loaded 2-core machine.
            "10",
            "--fail-on-stall",
        ]
    )
    elapsed = time.monotonic() - started
    err = capsys.readouterr().err
    assert code == 1, err
    assert elapsed < 60, f"the stalled sweep took {elapsed:.0f}s to fail"
    lines = [line for line in err.splitlines() if line.startswith("sweeplab: sweep stalled:")]
    assert len(lines) == 1, err
    match = re.search(r"waiting for (\S+) RUNNING at iteration 1, last report \d+s ago;", lines[0])
    assert match, lines[0]
    trial_id = match.group(1)
    assert "limit 10s" in lines[0]
    (report,) = (in_tmp / "runs" / "stuck").glob("run-*/stall.txt")
    trials = report.parent / "trials"
    assert [p for p in trials.iterdir() if trial_id in p.name], "not a trial"
    assert trial_id in report.read_text()
    assert "CPU:" in report.read_text()  # what the cluster has free, from Ray
    assert trial_id in (report.parent / "ray.log").read_text()


WAITING_SPEC = """
import ray.train

import sweeplab


def train_func(config):
    ray.train.report({"loss": 1.0})


sweep = sweeplab.Sweep(
    train_func=train_func, name="starved", space={"x": 1}, metric="loss", mode="min",
    num_trials=1, max_iterations=1,
)
"""


@pytest.mark.timeout(120)  # a slot start the watchdog does not see waits for ever
def test_a_slot_waiting_for_cpus_another_actor_holds_is_named_with_the_wait(
    ray_local: None, in_tmp: Path
) -> None:
    """A helper actor holds both CPUs of the local Ray: the sweep's one-worker slot cannot
    start, the stall line says so with the free CPUs, and no slot is left waiting after it."""
    import ray
    from ray.util.state import list_actors

    from sweeplab.engine import SweepOptions, SweepStalled, run_sweep
    from sweeplab.spec import load_spec

    @ray.remote(num_cpus=2)
    class Hog:
        def ready(self) -> bool:
            return True

    hog = Hog.remote()  # type: ignore[attr-defined]
    ray.get(hog.ready.remote())
    spec = in_tmp / "starved.py"
    spec.write_text(WAITING_SPEC)
    options = SweepOptions(
        spec_path=spec,
        storage=in_tmp / "runs",
        live=False,
        track=False,
        stall_timeout_s=3,
        fail_on_stall=True,
    )
    try:
        with pytest.raises(SweepStalled) as raised:
            run_sweep(load_spec(spec), options)
        address = ray.get_runtime_context().gcs_address
        waiting = [
            a
            for a in list_actors(address=address, filters=[("state", "!=", "DEAD")], timeout=10)
            if a.class_name == "InProcessHost"
        ]
    finally:
        ray.kill(hog)
    line = str(raised.value)
    assert "waiting for 1 of 1 trial slot(s) to start;" in line, line
    assert "CPU 0/2 free" in line
    assert "actor(s) not started: InProcessHost" in line
    assert waiting == [], "a slot was left waiting for the CPUs"
