"""The stall watchdog's decision and its one line, with a fake clock and fake trials."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from sweeplab.engine import SweepOptions, SweepStalled
from sweeplab.engine._stall import StallClock
from sweeplab.errors import SpecError


class FakeNow:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


@pytest.mark.parametrize(
    ("timeout_s", "gaps", "limit"),
    [
        (None, [], 120.0),  # the floor
        (None, [10.0, 30.0, 5.0], 120.0),  # 3 x 30 is under the floor
        (None, [50.0, 200.0, 10.0], 600.0),  # 3 x the longest silence
        (3.0, [50.0, 200.0], 3.0),  # a fixed limit ignores what it saw
    ],
)
def test_the_limit(timeout_s: float | None, gaps: list[float], limit: float) -> None:
    clock = StallClock(timeout_s=timeout_s, started=0.0)
    now = 0.0
    for gap in gaps:
        now += gap
        clock.activity(now)
    assert clock.limit_s == limit


def test_a_stall_is_told_once_per_silence_and_activity_ends_it() -> None:
    clock = StallClock(started=0.0)
    clock.activity(40.0)  # longest silence 40 s: limit 120 s
    assert not clock.stalled(159.0)
    assert clock.stalled(160.0)
    assert not clock.stalled(500.0), "the same silence was told twice"
    clock.activity(501.0)  # a silence of 461 s ended: the limit is now 3 x 461
    assert clock.limit_s == pytest.approx(1383.0)
    assert not clock.stalled(501.0 + 1382.0)
    assert clock.stalled(501.0 + 1383.0)


def test_restart_counts_no_silence_before_the_trials_start() -> None:
    clock = StallClock(started=0.0)
    clock.restart(500.0)
    assert not clock.stalled(610.0)
    clock.activity(611.0)
    assert clock.limit_s == 333.0  # 3 x the 111 s since the restart, not 3 x 611 s


def _trial(trial_id: str, status: str, iteration: int) -> Any:
    return SimpleNamespace(
        trial_id=trial_id, status=status, last_result={"training_iteration": iteration}
    )


def _watchdog(tmp_path: Path, now: FakeNow, *, fail: bool) -> tuple[Any, list[str]]:
    from sweeplab.engine._watchdog import StallWatchdog

    said: list[str] = []
    watchdog = StallWatchdog(
        StallClock(timeout_s=3.0),
        report_path=tmp_path / "stall.txt",
        log_path=tmp_path / "ray.log",
        say=said.append,
        fail=fail,
        now=now,
        cluster=lambda: (["CPU: 0 free of 2"], "CPU 0/2 free"),
    )
    watchdog.start()
    return watchdog, said


def test_the_watchdog_names_the_trials_it_waits_for(tmp_path: Path) -> None:
    now = FakeNow()
    watchdog, said = _watchdog(tmp_path, now, fail=False)
    stuck, done = _trial("t_00000", "RUNNING", 1), _trial("t_00001", "TERMINATED", 4)
    trials = [stuck, done]
    watchdog.on_trial_start(stuck)
    now.t += 0.5
    watchdog.on_trial_result(stuck, {"training_iteration": 1})
    now.t += 2.9
    watchdog.check(trials)
    assert said == []
    now.t += 0.2
    watchdog.check(trials)
    watchdog.check(trials)
    assert len(said) == 1
    line = said[0]
    assert "\n" not in line
    assert line.startswith("sweep stalled: no trial reported, started or ended for 3s (limit 3s)")
    assert "t_00000 RUNNING at iteration 1, last report 3s ago" in line
    assert "t_00001" not in line  # a finished trial is waited for by nobody
    assert "CPU 0/2 free" in line
    report = (tmp_path / "stall.txt").read_text()
    assert line in report and "CPU: 0 free of 2" in report
    assert line in (tmp_path / "ray.log").read_text()


def test_with_fail_on_stall_the_watchdog_ends_the_sweep(tmp_path: Path) -> None:
    now = FakeNow()
    watchdog, said = _watchdog(tmp_path, now, fail=True)
    trials = [_trial("t_00000", "PENDING", 0)]
    now.t += 3.0
    with pytest.raises(SweepStalled, match="t_00000 PENDING at iteration 0, no report yet"):
        watchdog.check(trials)
    assert len(said) == 1


@pytest.mark.parametrize("timeout", [0, -1.0, float("nan"), float("inf"), "3", True])
def test_a_bad_stall_timeout_is_refused(timeout: Any) -> None:
    with pytest.raises(SpecError, match=r"SweepOptions\.stall_timeout_s must be a number"):
        SweepOptions(stall_timeout_s=timeout)


@pytest.mark.parametrize(("text", "ok"), [("3", True), ("0.5", True), ("0", False), ("x", False)])
def test_the_stall_timeout_flag(text: str, ok: bool, capsys: pytest.CaptureFixture[str]) -> None:
    from sweeplab.cli._parser import build_parser

    argv = ["sweep", "spec.py", "--stall-timeout", text, "--fail-on-stall"]
    if ok:
        args = build_parser().parse_args(argv)
        assert args.stall_timeout == float(text) and args.fail_on_stall
    else:
        with pytest.raises(SystemExit):
            build_parser().parse_args(argv)
        assert "must be a number of seconds > 0" in capsys.readouterr().err
