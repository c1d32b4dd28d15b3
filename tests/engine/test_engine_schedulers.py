"""Every scheduler does what its name promises with more trials than run at once."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from toy_spec import progress_rows as results
from toy_spec import run_toy_sweep as sweep
from toy_spec import trial_errors

from sweeplab.engine import SweepOutcome, trial_plan
from sweeplab.spec import Sweep, load_spec
from sweeplab.strategies import hyperband_brackets


def _toy(**fields: Any) -> Sweep:
    defaults: dict[str, Any] = {
        "name": "plan",
        "train_func": lambda config: None,
        "space": {"lr": 0.1},
        "metric": "loss",
        "mode": "min",
        "num_trials": 9,
        "max_iterations": 9,
    }
    return Sweep(**{**defaults, **fields})


@pytest.mark.parametrize(
    ("num_trials", "max_t", "expected"),
    [
        # Tune's brackets for max_t=9, eta=3: 3 trials x 9; 5 halved at 3; 9 halved at 1 and 3.
        (9, 9, [[(9, 3)], [(3, 5), (9, 2)], [(1, 1), (3, 1), (9, 1)]]),
        (17, 9, [[(9, 3)], [(3, 5), (9, 2)], [(1, 9), (3, 3), (9, 1)]]),
        # A second band starts once the first is full.
        (18, 9, [[(9, 3)], [(3, 5), (9, 2)], [(1, 9), (3, 3), (9, 1)], [(9, 1)]]),
        # max_t=6: the third bracket's first rung would be iteration 0, so it is skipped.
        (9, 6, [[(6, 3)], [(2, 5), (6, 2)], [(6, 1)]]),
        (2, 1, [[(1, 1)], [(1, 1)]]),
    ],
)
def test_hyperband_brackets_follow_tune(
    num_trials: int, max_t: int, expected: list[list[tuple[int, int]]]
) -> None:
    assert hyperband_brackets(num_trials, max_t, 3) == expected


class _PendingTrial:
    status = "PENDING"


def test_hyperband_brackets_match_tunes_scheduler() -> None:
    """The plan fills brackets as Tune's HyperBand does when it is given the trials."""
    import re

    from sweeplab.strategies import HyperBand

    for num_trials, max_t in [(9, 9), (17, 9), (30, 27), (9, 6), (5, 10)]:
        scheduler = HyperBand(metric="loss", mode="min", max_t=max_t, reduction_factor=3)
        for _ in range(num_trials):
            scheduler.on_trial_add(None, _PendingTrial())
        sizes = [int(n) for n in re.findall(r"\{PENDING: (\d+)\}", scheduler.debug_string())]
        assert sizes == [b[0][1] for b in hyperband_brackets(num_trials, max_t, 3)]


def test_preview_lines_say_what_the_scheduler_does() -> None:
    # On the trial loop a waiting trial holds nothing, a group per trial included: its group
    # starts only when it runs (`sweeplab preview` says so).
    for extra in ({}, {"workers_per_trial": 2, "reuse_groups": False}):
        sweep = _toy(scheduler="pbt", num_trials=8, max_iterations=12, **extra)
        _, _, summary = trial_plan(sweep, concurrency=2, waiting_holds_nothing=True)
        assert summary.startswith("PBT: population 8, 2 at a time, synchronous rounds every 3 ")
        assert "that run at once" not in summary
    rungs, budget, summary = trial_plan(_toy(scheduler="hyperband"))
    assert summary.startswith("HyperBand: 3 bracket(s), 3/5/1 trials")
    assert "stops 3 trial(s) early" in summary
    assert [(r.bracket, r.iteration, r.trials) for r in rungs] == [
        (0, 9, 3),
        (1, 3, 5),
        (1, 9, 2),
        (2, 1, 1),
        (2, 3, 1),
        (2, 9, 1),
    ]
    assert budget == 3 * 9 + 5 * 3 + 2 * 6 + 9


class _Trial:
    def __init__(self, name: str) -> None:
        self.trial_id = name
        self.status = "RUNNING"
        self.is_saving = False
        self.last_result: dict[str, Any] = {}

    def __repr__(self) -> str:
        return self.trial_id


class _Controller:
    """The part of Tune's controller that HyperBand uses, for a scenario without Ray's loop."""

    def __init__(self, scheduler: Any) -> None:
        from ray.tune.utils.object_cache import _ObjectCache

        self.scheduler = scheduler
        self.trials: list[_Trial] = []
        self._actor_cache = _ObjectCache(may_keep_one=True)  # as Tune's controller makes it

    def add(self, name: str) -> _Trial:
        trial = _Trial(name)
        self.trials.append(trial)
        self.scheduler.on_trial_add(self, trial)
        return trial

    def report(self, trial: _Trial, iteration: int, loss: float) -> None:
        trial.status = "RUNNING"
        result = {"training_iteration": iteration, "loss": loss}
        decision = self.scheduler.on_trial_result(self, trial, result)
        trial.last_result = result
        trial.status = {"PAUSE": "PAUSED", "STOP": "TERMINATED"}.get(decision, trial.status)

    def end(self, trial: _Trial) -> None:
        self.scheduler.on_trial_complete(self, trial, trial.last_result)
        trial.status = "TERMINATED"

    def get_trials(self) -> list[_Trial]:
        return list(self.trials)

    def get_live_trials(self) -> set[_Trial]:
        return {t for t in self.trials if t.status != "TERMINATED"}

    def stop_trial(self, trial: _Trial) -> None:
        self.scheduler.on_trial_remove(self, trial)
        trial.status = "TERMINATED"


@pytest.mark.parametrize("fixed", [True, False])
def test_hyperband_resumes_when_a_trial_ends_before_its_rung(fixed: bool) -> None:
    """Tune's HyperBand leaves the trials paused for one that ended early; ours resumes them."""
    from ray.tune.schedulers import HyperBandScheduler

    from sweeplab.strategies import HyperBand

    cls = HyperBand if fixed else HyperBandScheduler
    controller = _Controller(cls(metric="loss", mode="min", max_t=9, reduction_factor=3))
    for i in range(8):  # they fill the brackets of 3 and 5 trials (and play no part here)
        controller.add(f"other{i}").status = "TERMINATED"
    a, b, c = (controller.add(name) for name in "abc")  # the bracket halved at 1, 3 and 9
    for trial, loss in ((a, 1.0), (b, 2.0), (c, 3.0)):
        controller.report(trial, 1, loss)
    assert [a.status, b.status, c.status] == ["PAUSED", "PAUSED", "RUNNING"]
    for trial in (a, b):
        assert controller.scheduler.choose_trial_to_run(controller) in (a, b)
        controller.report(trial, 2, 1.0)
        controller.report(trial, 3, 1.0 if trial is a else 2.0)
    controller.end(c)  # returns at iteration 1, before rung 3
    assert [a.status, b.status] == ["PAUSED", "PAUSED"]
    chosen = controller.scheduler.choose_trial_to_run(controller)
    if fixed:
        assert chosen is a and b.status == "TERMINATED"
    else:
        assert chosen is None


def test_paused_trials_resume_only_below_the_concurrency() -> None:
    """A resume waits while `max_running` trials run: Tune would start a process for it."""
    from sweeplab.strategies import HyperBand

    scheduler = HyperBand(metric="loss", mode="min", max_t=9, reduction_factor=3, max_running=2)
    controller = _Controller(scheduler)
    for i in range(8):
        controller.add(f"other{i}").status = "TERMINATED"
    a, b, c = (controller.add(name) for name in "abc")
    for trial, loss in ((a, 1.0), (b, 2.0), (c, 3.0)):
        controller.report(trial, 1, loss)
    assert [a.status, b.status, c.status] == ["PAUSED", "PAUSED", "RUNNING"]
    assert scheduler.choose_trial_to_run(controller) in (a, b)  # 1 running < 2
    extra = controller.add("extra")
    extra.status = "PENDING"  # waits for its actor: 2 busy
    assert scheduler.choose_trial_to_run(controller) is None
    extra.status = "TERMINATED"
    assert scheduler.choose_trial_to_run(controller) in (a, b)


@pytest.mark.parametrize(
    ("pauses", "free", "limit"),
    [(True, True, 9), (True, False, 2), (False, True, 2), (False, False, 2)],
)
def test_trials_created_up_front_only_where_waiting_holds_nothing(
    pauses: bool, free: bool, limit: int
) -> None:
    from sweeplab.strategies import SchedulerTraits, tune_trial_limit

    traits = SchedulerTraits(pauses=pauses, exploits=False)
    assert (
        tune_trial_limit(traits, concurrency=2, total_trials=9, waiting_holds_nothing=free) == limit
    )


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("scheduler", ["fifo", "asha", "hyperband", "median", "pbt"])
def test_trials_that_end_early_end_the_sweep(ray_local: None, in_tmp: Path, scheduler: str) -> None:
    """A train_func that returns after 2 of 6 iterations finishes there, under every scheduler."""
    outcome = sweep(
        in_tmp,
        f'name="early-{scheduler}", space={{"x": uniform(0, 1), "lr": uniform(0.001, 1.0)}}, '
        f'metric="loss", mode="min", scheduler="{scheduler}", num_trials=6, max_iterations=6, '
        "seed=5, max_concurrent_trials=2",
        epochs=2,
    )
    rows = results(outcome)
    assert outcome.errored == 0 and outcome.trials == 6, trial_errors(outcome)
    assert len(rows) == 6
    for trial_rows in rows.values():
        assert 1 <= trial_rows[-1]["training_iteration"] <= 2


def _exploits(rows: dict[str, list[dict[str, Any]]]) -> list[tuple[str, dict, dict]]:
    return [
        (trial, before, after)
        for trial, trial_rows in rows.items()
        for before, after in itertools.pairwise(trial_rows)
        if after["origin"] != before["origin"]
    ]


def _donor_tags(tmp_path: Path, outcome: SweepOutcome) -> dict[str, str | None]:
    import mlflow

    client = mlflow.MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    experiment = client.get_experiment_by_name(outcome.sweep.name)
    runs = client.search_runs(
        [experiment.experiment_id], filter_string="tags.`sweeplab.role` = 'trial'"
    )
    return {
        run.data.tags["sweeplab.trial_id"]: run.data.tags.get("sweeplab.pbt.donor") for run in runs
    }


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize(
    "group", ["", ", workers_per_trial=2, cpus_per_worker=0.5"], ids=["1-worker", "2-worker"]
)
def test_pbt_exploits_with_twice_the_population_of_slots(
    ray_local: None, in_tmp: Path, group: str
) -> None:
    """4 trials on 2 slots: synchronous rounds exploit, the recipient continues the donor with
    the perturbed config, and on 2-worker slots the two warm groups serve every trial. The
    slots' placement groups are gone when the sweep returns."""
    import ray

    groups_before = set(ray.util.placement_group_table())
    outcome = sweep(
        in_tmp,
        'name="pbt-rounds", space={"lr": loguniform(1e-6, 1.0)}, metric="loss", mode="min", '
        f'scheduler="pbt", num_trials=4, max_iterations=12, seed=3, max_concurrent_trials=2'
        f"{group}",
        epochs=12,
        sleep=0.1,
    )
    rows = results(outcome)
    assert outcome.plan.concurrency == 2
    assert len(rows) == 4 and outcome.errored == 0, trial_errors(outcome)
    exploited = _exploits(rows)
    assert exploited, "PBT exploited no trial"
    origins = {trial_rows[0]["origin"]: trial for trial, trial_rows in rows.items()}
    for trial_rows in rows.values():
        # Iteration and epoch move together across exploits: the recipient's next report
        # continues the donor's epoch (the state came with the donor's checkpoint).
        assert all(r["training_iteration"] == r["epoch"] + 1 for r in trial_rows)
    donors = _donor_tags(in_tmp, outcome)
    space = load_spec(in_tmp / "toy.py").space
    for trial, before, after in exploited:
        assert after["origin"] in origins
        assert donors[trial] in rows, f"{trial}: no donor recorded in MLflow"
        # ... with a mutated config that still lies in the space.
        new_config = json.loads(after["config_json"])
        space.validate_config(new_config)
        assert new_config != json.loads(before["config_json"])
    # The two slots served every trial, exploits and restarts included: one process per slot
    # (a 2-worker slot's rank 0, a one-worker slot's host).
    pids = {int(r["worker_pid"]) for t in rows.values() for r in t}
    assert len(pids) == outcome.plan.concurrency, pids
    # A slot's group exited before its host was killed (`SlotHost.shut`): a host killed while its
    # Train controller shut down left the group's placement group, and its CPUs, to the next
    # sweep.
    table = ray.util.placement_group_table()
    left = {pg: table[pg]["state"] for pg in set(table) - groups_before}
    assert set(left.values()) <= {"REMOVED"}, left


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_hyperband_stops_what_its_brackets_plan(ray_local: None, in_tmp: Path) -> None:
    """9 trials at concurrency 2 fill HyperBand's brackets as `num_trials` plans them."""
    outcome = sweep(
        in_tmp,
        'name="hb", space={"x": uniform(0, 1), "lr": uniform(0.001, 1.0)}, metric="loss", '
        'mode="min", scheduler="hyperband", num_trials=9, max_iterations=9, seed=4, '
        "max_concurrent_trials=2",
        epochs=9,
        sleep=0.05,
    )
    rows = results(outcome)
    assert outcome.plan.concurrency == 2
    assert len(rows) == 9 and outcome.errored == 0, trial_errors(outcome)
    planned = 9 - sum(b[-1][1] for b in hyperband_brackets(9, 9, 3))
    assert planned == 3
    stopped = [t for t, trial_rows in rows.items() if trial_rows[-1]["training_iteration"] < 9]
    assert len(stopped) >= planned
