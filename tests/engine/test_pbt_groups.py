"""PBT over 2-worker trials with a population larger than the warm slots, on a real local Ray.

A paused trial's kept actor used to hold its slot for ever: the trials waiting for a slot were
placed already, so Tune never handed the kept actor on, and the sweep hung after one round.
"""

from __future__ import annotations

import itertools
import threading
from pathlib import Path

import pytest
from toy_spec import progress_rows, run_toy_sweep, trial_errors

from sweeplab.engine.slots import LEAVE, SlotHost


def test_a_paused_trial_releases_its_slot_at_the_report_it_waits_in(tmp_path: Path) -> None:
    """`release` (the pause hook's call) ends the paused trial's run there: its rank leaves
    `train_func`, and the next trial claims the slot. Another trial's release changes nothing."""
    host = SlotHost(
        train_func=lambda config: None,
        num_workers=1,
        use_gpu=False,
        resources_per_worker={"CPU": 1},
        placement_strategy="PACK",
        storage="unused",
        name="unit",
        start_group=False,
    )
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
    assert host.claim("paused") is None
    seq = host.submit("paused", fields)
    assignment = host.next_assignment(0, 1, "worker-0")
    assert assignment is not None and assignment.trial_id == "paused"
    decision: list[str] = []
    rank = threading.Thread(
        target=lambda: decision.append(host.report(seq, 0, 0, 0, {"loss": 1.0}, None))
    )
    rank.start()
    event = host.next_event(seq, None, timeout_s=5.0)
    assert event is not None and event[0] == "report"  # Tune has the result, and pauses
    host.release("someone-else")
    rank.join(timeout=1.5)
    assert rank.is_alive(), "another trial's release ended this run"
    host.release("paused")
    rank.join(timeout=5.0)
    assert decision == [LEAVE]
    assert host.finished(seq, 0, ("done", None)) == "next"
    assert host.claim("waiting") is None


@pytest.mark.slow
def test_pbt_population_of_four_on_one_slot_finishes_with_exploits(
    ray_local: None, in_tmp: Path
) -> None:
    """Population 4 of 2-worker trials on the one slot 2 CPUs hold (two slots, population 4:
    `test_engine_slots`). Two iterations, one round: each trial runs two segments, and each
    segment starts a trial actor (about 2 s here)."""
    outcome = run_toy_sweep(
        in_tmp,
        'name="pbt-groups", space={"x": uniform(0, 1), "lr": uniform(0.001, 1.0)}, '
        'metric="loss", mode="min", scheduler="pbt", num_trials=4, max_iterations=2, seed=3, '
        "workers_per_trial=2, cpus_per_worker=1",
        epochs=2,
        sleep=0.02,
    )
    assert outcome.plan.concurrency == 1
    rows = progress_rows(outcome)
    assert len(rows) == 4 and outcome.errored == 0, trial_errors(outcome)
    assert {trial: r[-1]["training_iteration"] for trial, r in rows.items()} == dict.fromkeys(
        rows, 2
    )
    exploited = [
        after
        for trial_rows in rows.values()
        for before, after in itertools.pairwise(trial_rows)
        if after["origin"] != before["origin"]
    ]
    assert exploited, "PBT exploited no trial"
