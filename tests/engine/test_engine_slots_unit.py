"""The warm slot's protocol without Ray: a SlotHost driven by rank threads and a driver."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from sweeplab.engine.slots import CONTINUE, LEAVE, SlotHost
from sweeplab.spec import Sweep


def _host(workers: int = 2) -> SlotHost:
    return SlotHost(
        train_func=lambda config: None,
        num_workers=workers,
        use_gpu=False,
        resources_per_worker={"CPU": 1},
        placement_strategy="PACK",
        storage="unused",
        name="unit",
        start_group=False,
    )


def _fields(tmp_path: Path, **over: Any) -> dict[str, Any]:
    fields = {
        "config": {"x": 1},
        "folder": str(tmp_path / "trial"),
        "checkpoint": None,
        "metric": "loss",
        "mode": "min",
        "checkpoints_to_keep": 1,
        "metrics_from": "mean",
        "max_failures": 1,
    }
    return {**fields, **over}


def _rank(host: SlotHost, rank: int, worker: str, losses: list[float], out: dict) -> None:
    """A worker rank: take the assignment, report each loss, record the decisions."""
    assignment = host.next_assignment(rank, 2, worker)
    assert assignment is not None
    decisions = []
    for step, loss in enumerate(losses):
        decision = host.report(
            assignment.seq, assignment.generation, step, rank, {"loss": loss}, None
        )
        decisions.append(decision)
        if decision == LEAVE:
            break
    out[rank] = decisions
    host.finished(assignment.seq, rank, ("left" if decisions[-1] == LEAVE else "done", None))


def _start_ranks(
    host: SlotHost, losses: dict[int, list[float]], out: dict
) -> list[threading.Thread]:
    threads = [
        threading.Thread(target=_rank, args=(host, rank, f"w{rank}", losses[rank], out))
        for rank in losses
    ]
    for thread in threads:
        thread.start()
    return threads


def test_reports_are_gathered_over_ranks_and_wait_for_tune(tmp_path: Path) -> None:
    host = _host()
    assert host.claim("t1") is None
    assert host.claim("t2") == "busy"
    seq = host.submit("t1", _fields(tmp_path))
    out: dict[int, list[str]] = {}
    threads = _start_ranks(host, {0: [1.0, 2.0], 1: [3.0, 4.0]}, out)
    kind, (metrics, checkpoint) = host.next_event(seq, None)
    assert kind == "report" and checkpoint is None
    assert metrics["loss"] == 2.0  # the mean over ranks (metrics_from="mean")
    assert metrics["sweeplab_workers"] == 2
    assert out == {}, "a rank went on before Tune decided"
    kind, (metrics, _) = host.next_event(seq, CONTINUE)
    assert metrics["loss"] == 3.0
    assert host.next_event(seq, CONTINUE) == ("done", None)
    for thread in threads:
        thread.join(5)
    assert out == {0: [CONTINUE, CONTINUE], 1: [CONTINUE, CONTINUE]}
    assert host.claim("t2") is None, "the slot was not freed for the next trial"


def test_a_stopped_trial_leaves_at_its_report_on_every_rank(tmp_path: Path) -> None:
    host = _host()
    host.claim("t1")
    seq = host.submit("t1", _fields(tmp_path))
    out: dict[int, list[str]] = {}
    threads = _start_ranks(host, {0: [1.0, 2.0, 3.0], 1: [1.0, 2.0, 3.0]}, out)
    assert host.next_event(seq, None)[0] == "report"
    host.stop(seq)  # Tune stopped the trial after its first result
    for thread in threads:
        thread.join(5)
    assert out == {0: [LEAVE], 1: [LEAVE]}
    assert host.next_event(seq, None) == ("done", None)
    assert host.claim("t2") is None


def test_a_raising_rank_fails_the_trial_while_the_others_wait_in_a_report(
    tmp_path: Path,
) -> None:
    host = _host()
    host.claim("t1")
    seq = host.submit("t1", _fields(tmp_path))
    verdicts: dict[int, str] = {}

    def reporting_rank() -> None:
        assignment = host.next_assignment(1, 2, "w1")
        assert assignment is not None
        decision = host.report(seq, 0, 0, 1, {"loss": 1.0}, None)
        verdicts[1] = decision
        host.finished(seq, 1, ("left", None))

    thread = threading.Thread(target=reporting_rank)
    thread.start()
    assignment = host.next_assignment(0, 2, "w0")
    assert assignment is not None
    while not host._run or not host._run.in_report:  # rank 1 waits in its report
        threading.Event().wait(0.01)
    verdicts[0] = host.finished(seq, 0, ("error", "Traceback: boom"))
    thread.join(5)
    assert verdicts == {0: "next", 1: LEAVE}, "the group was restarted needlessly"
    kind, message = host.next_event(seq, None)
    assert kind == "error" and "boom" in message


def test_a_run_stopped_before_any_rank_took_it_is_done_at_once(tmp_path: Path) -> None:
    """The loop ended a trial whose run still waits for the slot's ranks (a time budget spent
    under load): the run never starts, its driver hears `done`, and the slot is free. (The
    driver used to poll such a run for ever: the sweep hung.)"""
    host = _host()
    assert host.claim("t0") is None
    seq = host.submit("t0", _fields(tmp_path))
    host.stop(seq)
    assert host.next_event(seq, None, timeout_s=0.5) == ("done", None)
    assert host.claim("t1") is None
    host.submit("t1", _fields(tmp_path))
    assignment = host.next_assignment(0, 2, "w0")  # the ranks get the next trial, not t0
    assert assignment is not None and assignment.trial_id == "t1"


def test_a_restarted_group_continues_the_trial_from_its_latest_checkpoint(
    tmp_path: Path,
) -> None:
    host = _host()
    host.claim("t1")
    seq = host.submit("t1", _fields(tmp_path))
    first = host.next_assignment(0, 2, "w0")
    assert first is not None and host.next_assignment(1, 2, "w1") is not None
    folder = Path(host.checkpoint_folder(seq))
    folder.mkdir(parents=True)
    out: dict[int, str] = {}
    thread = threading.Thread(
        target=lambda: out.setdefault(1, host.report(seq, 0, 0, 1, {"loss": 1.0}, None))
    )
    thread.start()
    # Rank 0 reports with a checkpoint; Tune lets the trial continue.
    t0 = threading.Thread(
        target=lambda: out.__setitem__(0, host.report(seq, 0, 0, 0, {"loss": 1.0}, str(folder)))
    )
    t0.start()
    kind, (_, checkpoint) = host.next_event(seq, None)
    assert kind == "report" and checkpoint == str(folder)
    host.next_event(seq, CONTINUE, timeout_s=0.1)
    thread.join(5)
    t0.join(5)
    # A new worker process takes rank 0: Train restarted the group.
    again = host.next_assignment(0, 2, "w0-restarted")
    assert again is not None and again.seq == seq
    assert again.checkpoint == str(folder) and again.generation == 1
    # A report of the old generation is refused; the restarts reach the next result.
    assert host.report(seq, 0, 5, 1, {"loss": 9.0}, None) == LEAVE


@pytest.mark.parametrize(("world_size", "fails"), [(2, True), (1, False)])
def test_an_elastic_resize_is_no_failure(tmp_path: Path, world_size: int, fails: bool) -> None:
    """A new group at another size (an elastic group resized) goes on from the checkpoint
    without counting against `max_failures`; one at the same size is a failure."""
    host = _host()
    host.claim("t1")
    seq = host.submit("t1", _fields(tmp_path, max_failures=0))
    assert host.next_assignment(0, 2, "w0") is not None
    assert host.next_assignment(1, 2, "w1") is not None
    taken: list[Any] = []
    rank = threading.Thread(
        target=lambda: taken.append(host.next_assignment(0, world_size, "w0-new")), daemon=True
    )
    rank.start()
    rank.join(3)
    if fails:
        assert not taken, "a failed run was handed out again"
        kind, message = host.next_event(seq, None)
        assert kind == "error" and "restarted 1 times (max_failures)" in message
        return
    (again,) = taken
    assert again is not None and again.seq == seq and again.generation == 1
    # The resized group's one rank reports alone; the restart reaches the result.
    threading.Thread(target=host.report, args=(seq, 1, 0, 0, {"loss": 1.0}, None)).start()
    kind, (metrics, _) = host.next_event(seq, None)
    assert kind == "report" and metrics["sweeplab_workers"] == 1
    assert metrics["sweeplab_group_restarts"] == 1
    host.stop(seq)


def test_a_shut_slot_waits_for_its_group_to_exit() -> None:
    host = _host()
    exited = threading.Event()

    def group() -> None:  # a rank that takes assignments until the slot closes
        assert host.next_assignment(0, 1, "w0") is None
        exited.set()

    host._fit = threading.Thread(target=group)
    host._fit.start()
    assert host.shut(timeout_s=5) is True
    assert exited.is_set()


def test_reuse_groups_must_be_a_bool() -> None:
    from sweeplab.errors import SpecError

    with pytest.raises(SpecError, match="reuse_groups"):
        Sweep(
            name="s",
            train_func=lambda config: None,
            space={"x": 1},
            metric="m",
            mode="min",
            reuse_groups="yes",
        )
