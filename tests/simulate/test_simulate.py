"""The simulator on hand-built curves whose answer is known: no Ray runtime is started."""

from __future__ import annotations

import math
from typing import Any

import pytest

from sweeplab import SpecError, Sweep, grid, uniform
from sweeplab.simulation import Report, SimulatedTrial, Simulation, simulate


def train_func(config: dict[str, Any]) -> None:
    pass


SPACE = {"early": uniform(0, 20), "late": uniform(0, 20)}


def make(**changes: Any) -> Sweep:
    fields: dict[str, Any] = {
        "name": "simulated",
        "train_func": train_func,
        "space": SPACE,
        "metric": "loss",
        "mode": "min",
        "max_iterations": 9,
        # The simulator's mechanics, under the strategy every test here names or this one.
        "searcher": "random",
        "scheduler": "fifo",
    }
    return Sweep(**{**fields, **changes})


def step_curve(config: dict[str, Any], iteration: int) -> tuple[dict[str, float], float]:
    """Loss ``early`` before iteration 3 and ``late`` from it; one second per iteration."""
    return {"loss": config["early"] if iteration < 3 else config["late"]}, 1.0


def list_searcher(configs: list[dict[str, Any]]) -> Any:
    """A Tune searcher that suggests `configs` in order and records what Tune tells it."""
    from ray.tune.search import Searcher

    class ListSearcher(Searcher):
        def __init__(self) -> None:
            super().__init__(metric="loss", mode="min")
            self.queue = list(configs)
            self.results: dict[str, list[int]] = {}
            self.completed: list[tuple[str, int | None, bool | None]] = []

        def suggest(self, trial_id: str) -> dict[str, Any] | None:
            return self.queue.pop(0) if self.queue else Searcher.FINISHED

        def on_trial_result(self, trial_id: str, result: dict[str, Any]) -> None:
            self.results.setdefault(trial_id, []).append(result["training_iteration"])

        def on_trial_complete(
            self, trial_id: str, result: dict[str, Any] | None = None, error: bool = False
        ) -> None:
            if result is None:  # stopped while paused or waiting: Tune passes no result
                self.completed.append((trial_id, None, None))
            else:
                self.completed.append((trial_id, result["training_iteration"], result["done"]))

    return ListSearcher()


def configs(*pairs: tuple[float, float]) -> list[dict[str, float]]:
    return [{"early": early, "late": late} for early, late in pairs]


# --- schedulers ----------------------------------------------------------------------------


def test_fifo_runs_every_trial_to_max_iterations() -> None:
    sim = simulate(make(num_trials=5, seed=0), step_curve, workers=2)
    assert isinstance(sim, Simulation)
    assert len(sim.trials) == 5
    assert all(isinstance(t, SimulatedTrial) for t in sim.trials)
    assert [t.stopped_at for t in sim.trials] == [9] * 5
    assert [t.status for t in sim.trials] == ["finished"] * 5
    for trial in sim.trials:
        assert [r.iteration for r in trial.reports] == list(range(1, 10))
        assert all(isinstance(r, Report) for r in trial.reports)
        make().space.validate_config(trial.config)  # the decoded, final shape
    assert sim.iterations == len(sim.reports) == 45


# ASHA, grace period 1, reduction factor 3, max_iterations 9: rungs at iterations 1 and 3 (9
# is max_t, where every trial stops). A trial continues at a rung when its reward (-loss) is
# at least the 66.7th percentile (linear interpolation) of the rewards already recorded there.
#   trial  early late  rung 1 (recorded rewards -> cutoff)     rung 3               stops at
#   0      5     5     {} -> none: continue                     {} -> continue       9
#   1      3     3     {-5} -> -5: continue                     {-5} -> -5           9
#   2      4     4     {-5,-3} -> -3.67: -4 < it, STOP          .                    1
#   3      1     1     {-5,-3,-4} -> -3.67: continue            {-5,-3} -> -3.67     9
#   4      2     10    {-5,-3,-4,-1} -> -3: continue            {-5,-3,-1} -> -2.33: -10, STOP  3
#   5      6     6     {-5,-3,-4,-1,-2} -> -2.33: -6, STOP      .                    1
ASHA_CASE = configs((5, 5), (3, 3), (4, 4), (1, 1), (2, 10), (6, 6))
ASHA_STOPS = [9, 9, 1, 9, 3, 1]


def test_asha_at_concurrency_1_stops_trials_at_the_rungs() -> None:
    searcher = list_searcher(ASHA_CASE)
    sim = simulate(make(searcher=searcher, scheduler="asha", num_trials=6), step_curve, workers=1)
    assert [t.config for t in sim.trials] == ASHA_CASE
    assert [t.stopped_at for t in sim.trials] == ASHA_STOPS
    assert [t.status for t in sim.trials] == [
        "finished" if stop == 9 else "stopped" for stop in ASHA_STOPS
    ]
    # As under Tune: the result a trial stops at is withheld from `on_trial_result` and
    # reaches the searcher in `on_trial_complete`, marked done.
    ids = [t.trial_id for t in sim.trials]
    assert searcher.completed == [(i, stop, True) for i, stop in zip(ids, ASHA_STOPS, strict=True)]
    assert [searcher.results.get(i, []) for i in ids] == [
        list(range(1, stop)) for stop in ASHA_STOPS
    ]
    # One worker: each trial starts when the one before it ends.
    assert sim.wall_s == sum(ASHA_STOPS)


# HyperBand, max_t 9, reduction factor 3 (Tune's brackets, filled in the order trials are
# made): bracket s=0 holds 3 trials run to 9; bracket s=1 holds 5 trials paused at iteration 3,
# where the best ceil(5/3) = 2 (lowest `late`) resume to 9 and the other 3 stop; bracket s=2
# (r0 = 1) holds the last trial, alone, which goes to 9.
HYPERBAND_CASE = configs((1, 1), (2, 2), (3, 3), (9, 5), (9, 1), (9, 4), (9, 2), (9, 3), (9, 9))
HYPERBAND_STOPS = [9, 9, 9, 3, 9, 3, 9, 3, 9]


@pytest.mark.parametrize("workers", [1, 2, 4])
def test_hyperband_pauses_trials_at_its_rungs_and_resumes_the_best(workers: int) -> None:
    searcher = list_searcher(HYPERBAND_CASE)
    sim = simulate(
        make(searcher=searcher, scheduler="hyperband", num_trials=9), step_curve, workers=workers
    )
    assert [t.config for t in sim.trials] == HYPERBAND_CASE
    assert [t.stopped_at for t in sim.trials] == HYPERBAND_STOPS
    assert [t.status for t in sim.trials] == [
        "finished" if stop == 9 else "stopped" for stop in HYPERBAND_STOPS
    ]
    for trial in sim.trials:  # a resumed trial goes on from its next iteration
        assert [r.iteration for r in trial.reports] == list(range(1, trial.stopped_at + 1))
    # As under Tune: a result the trial pauses at reaches the searcher; the last trial to reach
    # a rung halves the bracket, and is itself stopped (its result withheld, then completed
    # with it) or goes on; a trial stopped while paused completes without a result
    # (`stop_trial`). Bracket s=0: trials 0 and 1 pause at 9, trial 2 reaches 9 last and the
    # bracket ends. Bracket s=1: trials 3-7 pause at 3, trial 7 reaches it last and is among the
    # 3 dropped; 4 and 6 resume, 4 pauses at 9, 6 ends the bracket. Trial 8 runs alone.
    ids = [t.trial_id for t in sim.trials]
    reported = [len(searcher.results.get(i, [])) for i in ids]
    assert reported == [9, 9, 8, 3, 9, 3, 8, 2, 8]
    assert [r == list(range(1, len(r) + 1)) for r in map(searcher.results.get, ids)] == [True] * 9
    completed = dict((i, stop) for i, stop, _ in searcher.completed)
    assert [completed[i] for i in ids] == [None, None, 9, None, None, None, 9, 3, 9]


def test_fifo_tells_the_searcher_every_result_then_the_replayed_last_one() -> None:
    searcher = list_searcher(configs((1, 1), (2, 2)))
    sim = simulate(make(searcher=searcher, num_trials=2, max_iterations=3), step_curve, workers=1)
    ids = [t.trial_id for t in sim.trials]
    assert searcher.results == {i: [1, 2, 3] for i in ids}
    assert searcher.completed == [(i, 3, True) for i in ids]


def test_median_stopping_stops_the_trials_behind_the_median() -> None:
    # Constant losses: once three trials passed the grace period, a worse one stops there.
    losses = [(1, 1), (2, 2), (3, 3), (9, 9), (0.5, 0.5), (8, 8)]
    searcher = list_searcher(configs(*losses))
    sim = simulate(make(searcher=searcher, scheduler="median", num_trials=6), step_curve, workers=1)
    statuses = [t.status for t in sim.trials]
    assert statuses[:3] == ["finished"] * 3
    assert statuses[3] == statuses[5] == "stopped"
    assert statuses[4] == "finished"
    assert sim.trials[3].stopped_at < 9


def test_workers_train_at_once_on_the_simulated_clock() -> None:
    def curve(config: dict[str, Any], iteration: int) -> tuple[dict[str, float], float]:
        return {"loss": config["early"]}, config["late"]  # `late` seconds per iteration

    searcher = list_searcher(configs((1, 1.0), (2, 2.5), (3, 1.0)))
    sim = simulate(make(searcher=searcher, num_trials=3, max_iterations=2), curve, workers=2)
    first, second, third = sim.trials
    assert [r.time_s for r in first.reports] == [1.0, 2.0]
    assert [r.time_s for r in second.reports] == [2.5, 5.0]
    # The third trial starts on the first one's worker when it ends.
    assert [r.time_s for r in third.reports] == [3.0, 4.0]
    assert [r.time_s for r in sim.reports] == sorted(r.time_s for r in sim.reports)
    assert [(r.trial_id, r.iteration) for r in sim.reports][:3] == [
        (first.trial_id, 1),
        (first.trial_id, 2),
        (second.trial_id, 1),
    ]
    assert sim.wall_s == 5.0


@pytest.mark.parametrize(
    ("workers", "budget", "stops"),
    [
        (1, 10, [4, 4, 2]),  # the third trial stops at the budget, and no fourth starts
        (1, 8, [4, 4]),
        (2, 5, [3, 2]),  # two at once: 1+1, 2+2, then the first trial's 3rd report
    ],
)
def test_budget_iterations_stops_the_sweep(workers: int, budget: int, stops: list[int]) -> None:
    sweep = make(num_trials=5, max_iterations=4, seed=0)
    sim = simulate(sweep, step_curve, workers=workers, budget_iterations=budget)
    assert [t.stopped_at for t in sim.trials] == stops
    assert sim.iterations == budget == sum(stops)
    assert [t.status for t in sim.trials] == ["finished" if s == 4 else "stopped" for s in stops]


def test_a_nan_metric_diverges_its_trial_there() -> None:
    def curve(config: dict[str, Any], iteration: int) -> tuple[dict[str, float], float]:
        nan = config["early"] > 10 and iteration == 2
        return {"loss": math.nan if nan else config["early"]}, 1.0

    searcher = list_searcher(configs((1, 1), (15, 15), (2, 2)))
    sim = simulate(make(searcher=searcher, num_trials=3), curve, workers=1)
    assert [t.status for t in sim.trials] == ["finished", "diverged", "finished"]
    assert sim.trials[1].stopped_at == 2
    assert sim.best() == 1
    assert sim.best("loss", "max") == 15  # the NaN is no value


def test_grid_runs_tunes_variant_generator() -> None:
    sweep = make(space={"x": grid([0.1, 0.2, 0.3]), "y": uniform(0, 1)}, searcher="grid")
    sim = simulate(sweep.replace(num_trials=2, seed=3), lambda c, i: ({"loss": c["x"]}, 1.0))
    assert [t.config["x"] for t in sim.trials] == [0.1, 0.2, 0.3] * 2
    assert all(t.status == "finished" for t in sim.trials)


def test_the_seed_overrides_the_sweeps() -> None:
    sweep = make(num_trials=4, max_iterations=1, seed=1)
    one = simulate(sweep, step_curve, seed=7)
    again = simulate(sweep.replace(seed=7), step_curve)
    other = simulate(sweep, step_curve)
    assert [t.config for t in one.trials] == [t.config for t in again.trials]
    assert [t.config for t in one.trials] != [t.config for t in other.trials]


def test_an_optuna_searcher_learns_each_trial() -> None:
    import optuna
    from ray.tune.search.optuna import OptunaSearch

    from sweeplab.space import Space, compile_to_optuna

    storage = optuna.storages.InMemoryStorage()
    searcher = OptunaSearch(
        space=compile_to_optuna(Space(SPACE)),
        metric="loss",
        mode="min",
        sampler=optuna.samplers.TPESampler(seed=0, n_startup_trials=4),
        storage=storage,
        study_name="simulated",
    )
    sweep = make(searcher=searcher, scheduler="asha", num_trials=12)
    sim = simulate(sweep, step_curve, workers=2)
    study = optuna.load_study(study_name="simulated", storage=storage)
    states = [t.state.name for t in study.trials]
    assert len(states) == 12
    expected = ["COMPLETE" if t.status == "finished" else "PRUNED" for t in sim.trials]
    assert states == expected
    assert "PRUNED" in states and "COMPLETE" in states
    finished = [t for t in sim.trials if t.status == "finished"]
    complete = [t.value for t in study.trials if t.state.name == "COMPLETE"]
    assert complete == [t.reports[-1].metrics["loss"] for t in finished]


@pytest.mark.parametrize("searcher", ["optuna", "hyperopt"])
def test_model_based_searchers_run(searcher: str) -> None:
    sweep = make(searcher=searcher, scheduler="asha", num_trials=15, seed=0)
    sim = simulate(sweep, step_curve, workers=3)
    assert len(sim.trials) == 15
    assert {t.status for t in sim.trials} <= {"finished", "stopped"}


def test_sweeplab_simulate_is_the_function_and_importing_it_starts_no_ray() -> None:
    import subprocess
    import sys

    script = (
        "import sys, sweeplab\n"
        "lazy = sweeplab.simulate\n"
        "from sweeplab.simulation import simulate\n"
        "assert lazy is simulate and callable(sweeplab.simulate)\n"
        "import sweeplab.simulation\n"
        "assert sweeplab.simulate is simulate\n"
        "assert 'ray' not in sys.modules, 'importing sweeplab.simulation imported Ray'\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)


def test_sweeplab_simulate_runs_the_simulation() -> None:
    import sweeplab

    sim = sweeplab.simulate(make(num_trials=2, max_iterations=2, seed=0), step_curve)
    assert [t.stopped_at for t in sim.trials] == [2, 2]


# --- errors --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"warm_start": [{"early": 1.0, "late": 1.0}]}, r"`warm_start` cannot be simulated"),
    ],
)
def test_strategies_it_cannot_simulate_are_refused(changes: dict[str, Any], match: str) -> None:
    with pytest.raises(SpecError, match=match):
        simulate(make(**changes), step_curve)


@pytest.mark.parametrize(
    ("answer", "match"),
    [
        (1.0, r"must return \(metrics, seconds\)"),
        (({"loss": 1.0},), r"must return \(metrics, seconds\)"),
        (({"loss": 1.0}, -1.0), r"must return \(metrics, seconds\)"),
        (({"loss": 1.0}, math.inf), r"must return \(metrics, seconds\)"),
        (([("loss", 1.0)], 1.0), r"must return \(metrics, seconds\)"),
        (({"accuracy": 1.0}, 1.0), r"must report the sweep's metric 'loss'"),
    ],
)
def test_a_curve_of_the_wrong_shape_is_a_clear_error(answer: Any, match: str) -> None:
    with pytest.raises(SpecError, match=match):
        simulate(make(num_trials=2, seed=0), lambda config, iteration: answer)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"workers": 0}, r"workers must be an integer >= 1, but got 0"),
        ({"workers": 1.5}, r"workers must be an integer >= 1"),
        ({"budget_iterations": 0}, r"budget_iterations must be an integer >= 1 or None"),
        ({"seed": "1"}, r"seed must be an integer or None"),
        ({"curve": 3}, r"curve must be a function"),
    ],
)
def test_bad_arguments_are_refused(kwargs: dict[str, Any], match: str) -> None:
    arguments: dict[str, Any] = {"curve": step_curve, **kwargs}
    curve = arguments.pop("curve")
    with pytest.raises(SpecError, match=match):
        simulate(make(), curve, **arguments)
