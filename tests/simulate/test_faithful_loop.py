"""The loop's two backends agree: on warm slots of a real Ray, the simulated sweep's decisions.

Each case runs the sweep of `test_faithful` (a seeded searcher, a training function that
reports a fixed learning curve and checkpoints every report) through `sweeplab.engine.slot_loop`
on one slot of a local Ray (the slot's host running the trial itself, or, in one case, a
one-worker trainer group), and through `sweeplab.simulate` with one worker. With one slot no
timing decides an order, so both must make the same configs, stop each trial at the same
iteration and report the same curve: a trial HyperBand pauses and resumes must go on from its
checkpoint, not start over, and a trial PBT exploits must go on from its donor's. Further
cases cover what only a real backend meets: a training function that fails (retried from its
latest checkpoint, or the trial ends as an error), one that returns early, and a budget that
ends a trial while it trains.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_faithful import CURVE, SPEC, the_curve

from sweeplab.engine import slot_loop
from sweeplab.loop import TrialLoop
from sweeplab.simulation import simulate
from sweeplab.spec import Sweep, load_spec

pytestmark = pytest.mark.slow


def write_spec(folder: Path, searcher: str, scheduler: str, seed: int, **fields: Any) -> Sweep:
    spec = folder / "faithful_loop.py"
    spec.write_text(
        SPEC.format(
            curve=CURVE,
            name=f"loop-{searcher}-{scheduler}",
            searcher=searcher,
            scheduler=scheduler,
            num_trials=fields.pop("num_trials", 9),
            max_iterations=fields.pop("max_iterations", 9),
            seed=seed,
        )
    )
    sweep = load_spec(spec)
    return sweep.replace(**fields) if fields else sweep


def losses(loop_or_reports: Any) -> list[float]:
    return [float(metrics["loss"]) for metrics, _ in loop_or_reports]


def run_on_slots(sweep: Sweep, storage: Path, **kwargs: Any) -> TrialLoop:
    with slot_loop(sweep, storage=storage, slots=1, **kwargs) as loop:
        loop.run()
    return loop


@pytest.mark.parametrize(
    ("searcher", "scheduler", "seed", "in_process"),
    [
        # HyperBand's pauses and resumes on a slot that is a one-worker trainer group (not the
        # host itself). On in-process slots, `test_faithful` runs the same cases through the
        # whole sweep (`run_sweep`), Optuna and adaptive ASHA among them.
        ("random", "hyperband", 3, False),
        # PBT's exploits: a recipient goes on from a copy of its donor's checkpoint with the
        # donor's explored config, as the simulator has it go on along its new config's curve.
        ("random", "pbt", 3, True),
    ],
)
def test_slots_and_the_simulator_decide_alike(
    ray_local: None, in_tmp: Path, searcher: str, scheduler: str, seed: int, in_process: bool
) -> None:
    sweep = write_spec(in_tmp, searcher, scheduler, seed)
    simulated = simulate(sweep, the_curve(), workers=1)
    if scheduler == "pbt":
        assert any(t.exploits for t in simulated.trials), "the case exploits no trial"
    else:
        assert min(t.stopped_at for t in simulated.trials) < 9, "the case stops no trial early"

    loop = run_on_slots(sweep, in_tmp / "runs", in_process=in_process)

    assert [(t.decoded, len(t.reports)) for t in loop.trials] == [
        (t.config, t.stopped_at) for t in simulated.trials
    ]
    assert [t.outcome for t in loop.trials] == [t.status for t in simulated.trials]
    for trial, expected in zip(loop.trials, simulated.trials, strict=True):
        # The curve of each iteration, in order: a resumed trial went on from its checkpoint.
        assert losses(trial.reports) == pytest.approx(
            [float(r.metrics["loss"]) for r in expected.reports]
        )
        # The config the training function last got is the trial's (PBT's, after exploits).
        assert json.loads(trial.reports[-1][0]["config_json"]) == trial.decoded
    by_id = {t.trial_id: t for t in loop.trials}
    for trial in loop.trials:
        for iteration, donor_id in trial.exploits:
            # The run after the exploit started from the donor's checkpoint of that round.
            donor_then = by_id[donor_id].reports[iteration - 1][0]["config_json"]
            assert trial.reports[iteration][0]["restored_json"] == donor_then
    place = {t.trial_id: i for i, t in enumerate(loop.trials)}
    simulated_place = {t.trial_id: i for i, t in enumerate(simulated.trials)}
    assert [[(it, place[d]) for it, d in t.exploits] for t in loop.trials] == [
        [(it, simulated_place[d]) for it, d in t.exploits] for t in simulated.trials
    ]


FAULTS = """
import tempfile
from pathlib import Path

from ray import train

import sweeplab
from sweeplab import grid

FOLDER = Path({folder!r})


def train_func(config):
    case = config["case"]
    start = 1
    checkpoint = train.get_checkpoint()
    if checkpoint is not None:
        with checkpoint.as_directory() as folder:
            start = int((Path(folder) / "iteration").read_text()) + 1
    for iteration in range(start, 7):
        if case == "returns after 4" and iteration == 5:
            return
        mark = FOLDER / f"{{case}}-failed"
        if iteration == 3 and (case == "fails always" or not mark.exists()):
            if case != "plain":
                mark.write_text("failed")
                raise RuntimeError(f"{{case}}: a failure at iteration 3")
        with tempfile.TemporaryDirectory() as folder:
            (Path(folder) / "iteration").write_text(str(iteration))
            train.report(
                {{"loss": 1 / iteration, "iteration": iteration}},
                checkpoint=train.Checkpoint.from_directory(folder),
            )


sweep = sweeplab.Sweep(
    name="faults",
    train_func=train_func,
    space={{"case": grid(["fails once", "fails always", "plain", "returns after 4"])}},
    metric="loss",
    mode="min",
    searcher="grid",
    scheduler="fifo",
    num_trials=1,
    max_iterations=6,
    max_failures=1,
)
"""


def test_failures_are_retried_from_the_latest_checkpoint_and_early_returns_finish(
    ray_local: None, in_tmp: Path
) -> None:
    spec = in_tmp / "faults.py"
    spec.write_text(FAULTS.format(folder=str(in_tmp)))

    loop = run_on_slots(load_spec(spec), in_tmp / "runs")

    trials = {t.decoded["case"]: t for t in loop.trials}
    assert set(trials) == {"fails once", "fails always", "plain", "returns after 4"}

    def iterations(case: str) -> list[int]:
        return [metrics["iteration"] for metrics, _ in trials[case].reports]

    # Retried once from the checkpoint of iteration 2: iterations 1 and 2 ran once.
    assert (trials["fails once"].outcome, trials["fails once"].failures) == ("finished", 1)
    assert "fails once: a failure at iteration 3" in (trials["fails once"].error or "")
    assert iterations("fails once") == [1, 2, 3, 4, 5, 6]
    # Out of retries (max_failures=1): an error, and the slot takes the next trial.
    assert (trials["fails always"].outcome, trials["fails always"].failures) == ("error", 2)
    assert iterations("fails always") == [1, 2]
    assert (trials["plain"].outcome, iterations("plain")) == ("finished", [1, 2, 3, 4, 5, 6])
    # A function that returns early finishes its trial at its last report.
    assert (trials["returns after 4"].outcome, iterations("returns after 4")) == (
        "finished",
        [1, 2, 3, 4],
    )
    assert trials["returns after 4"].last_result["done"] is True


def test_a_spent_budget_ends_the_training_trial_and_frees_the_slot(
    ray_local: None, in_tmp: Path
) -> None:
    sweep = write_spec(in_tmp, "random", "fifo", 3, num_trials=4, max_iterations=9)
    simulated = simulate(sweep, the_curve(), workers=1, budget_iterations=12)

    loop = run_on_slots(sweep, in_tmp / "runs", budget_iterations=12)

    assert len(loop.reports) == 12
    assert [(t.decoded, len(t.reports)) for t in loop.trials] == [
        (t.config, t.stopped_at) for t in simulated.trials
    ]
