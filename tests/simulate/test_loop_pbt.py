"""PBT simulates: the loop's synchronous PBT (`LoopPBT`) on hand-built curves, no Ray runtime."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest
from test_simulate import make

from sweeplab import SpecError, choice, randint
from sweeplab.simulation import Simulation, simulate
from sweeplab.strategies._sync_pbt import _explore


def by_late(config: dict[str, Any], iteration: int) -> tuple[dict[str, float], float]:
    """A loss set by ``late`` alone, falling with the iterations; one second an iteration."""
    return {"loss": config["late"] / iteration}, 1.0


def pbt(**changes: Any) -> Any:
    fields: dict[str, Any] = {
        "scheduler": "pbt",
        "num_trials": 8,
        "max_iterations": 8,
        "seed": 3,
    }
    return make(**{**fields, **changes})


def round_iterations(sim: Simulation) -> list[int]:
    interval = max(1, 8 // 4)
    return list(range(interval, 8, interval))


def test_the_bottom_quantile_takes_the_top_quantiles_configs_at_each_round() -> None:
    sim = simulate(pbt(), by_late, workers=2)
    assert [t.stopped_at for t in sim.trials] == [8] * 8
    assert all(t.status == "finished" for t in sim.trials)
    exploits = [(t, it, donor) for t in sim.trials for it, donor in t.exploits]
    assert exploits, "no trial was exploited"
    by_id = {t.trial_id: t for t in sim.trials}
    for trial, iteration, donor_id in exploits:
        assert iteration in round_iterations(sim)
        before = trial.reports[iteration - 1].metrics["loss"]
        donor_then = by_id[donor_id].reports[iteration - 1].metrics["loss"]
        # The recipient was behind its donor at the round (it was in the bottom quantile).
        assert before > donor_then
    # Each round exploits ceil(8 * 0.25) = 2 trials: 3 rounds below max_iterations = 8.
    assert len(exploits) == 2 * len(round_iterations(sim))


def test_an_exploited_trial_goes_on_from_the_round_with_its_new_config() -> None:
    sim = simulate(pbt(), by_late, workers=2)
    trial = next(t for t in sim.trials if t.exploits)
    last_exploit = trial.exploits[-1][0]
    # After its last exploit it trains on the curve of the config it ended with, from the
    # iteration after the round (not from iteration 1).
    for report in trial.reports[last_exploit:]:
        assert report.metrics["loss"] == pytest.approx(trial.config["late"] / report.iteration)
    assert [r.iteration for r in trial.reports] == list(range(1, 9))


def test_rounds_are_synchronous() -> None:
    sim = simulate(pbt(), by_late, workers=2)
    for round_at in round_iterations(sim):
        reached = max(r.time_s for r in sim.reports if r.iteration == round_at)
        beyond = min(r.time_s for r in sim.reports if r.iteration == round_at + 1)
        assert reached <= beyond, f"a trial went past iteration {round_at} before the round"


def test_a_population_larger_than_the_workers_keeps_every_worker_busy() -> None:
    sim = simulate(pbt(num_trials=12), by_late, workers=3)
    assert sim.iterations == 12 * 8
    # One second per iteration and no worker ever idle: the population trains in turns.
    assert sim.wall_s == pytest.approx(12 * 8 / 3)


def test_a_seeded_sweep_exploits_the_same_way_each_run() -> None:
    def summary(sim: Simulation) -> list[Any]:
        # Tune's variant generator draws trial ids afresh each run: donors by their place.
        place = {t.trial_id: i for i, t in enumerate(sim.trials)}
        return [([(it, place[d]) for it, d in t.exploits], t.config) for t in sim.trials]

    first = simulate(pbt(seed=11), by_late, workers=2)
    assert summary(simulate(pbt(seed=11), by_late, workers=2)) == summary(first)
    assert summary(simulate(pbt(seed=12), by_late, workers=2)) != summary(first)


def test_a_trial_that_diverges_before_a_round_does_not_hold_it_up() -> None:
    def curve(config: dict[str, Any], iteration: int) -> tuple[dict[str, float], float]:
        worst = config["late"] > 15
        return {"loss": math.nan if worst and iteration == 1 else config["late"] / iteration}, 1.0

    sim = simulate(pbt(), curve, workers=2)
    statuses = [t.status for t in sim.trials]
    assert "diverged" in statuses
    assert all(t.stopped_at == 8 for t in sim.trials if t.status != "diverged")
    assert any(t.exploits for t in sim.trials)


def test_the_budget_stops_the_population_without_a_round() -> None:
    sim = simulate(pbt(), by_late, workers=2, budget_iterations=20)
    assert sim.iterations == 20
    assert all(t.status == "stopped" for t in sim.trials)


def test_a_configured_pbt_object_is_refused() -> None:
    from ray.tune.schedulers import PopulationBasedTraining

    scheduler = PopulationBasedTraining(hyperparam_mutations={"late": [1.0, 2.0]})
    with pytest.raises(SpecError, match=r"`scheduler` must not be a configured scheduler that"):
        simulate(make(scheduler=scheduler), by_late)


def test_explore_perturbs_and_resamples_within_the_mutations() -> None:
    rng = random.Random(0)
    mutations = {"opt": ["sgd", "adam", "adamw"], "n": lambda r: 7, "nested": {"k": [1, 2]}}
    config = {"opt": "sgd", "n": 10, "nested": {"k": 2}, "fixed": "x"}
    seen = {
        (c["opt"], c["n"], c["nested"]["k"])
        for c in (_explore(config, mutations, rng, resample_probability=0.25) for _ in range(200))
    }
    opts = {o for o, _, _ in seen}
    ns = {n for _, n, _ in seen}
    # A shift from the first option goes nowhere or one right; a resample reaches any.
    assert opts == {"sgd", "adam", "adamw"}
    # 10 x 1.2, 10 x 0.8, or the resampled 7, each kept an integer.
    assert ns == {12, 8, 7}
    assert {k for _, _, k in seen} == {1, 2}


def test_the_loop_pbt_of_a_named_sweep_keeps_mutated_values_in_the_space() -> None:
    space = {"late": randint(1, 20), "opt": choice(["a", "b"])}

    def curve(config: dict[str, Any], iteration: int) -> tuple[dict[str, float], float]:
        assert 1 <= config["late"] <= 20 and isinstance(config["late"], int)
        return {"loss": config["late"] / iteration}, 1.0

    sim = simulate(pbt(space=space, num_trials=12), curve, workers=4)
    assert any(t.exploits for t in sim.trials)


def test_pbt_settings_set_the_rounds_the_quantile_and_what_is_mutated() -> None:
    """`sweeplab.PBT(...)`: rounds every `interval`, `quantile_fraction` of the population
    exploited at each, only the `mutate` parameters explored; the rest come from the donor."""
    from sweeplab import PBT

    space = {"late": randint(1, 20), "opt": choice(["a", "b", "c"])}

    def curve(config: dict[str, Any], iteration: int) -> tuple[dict[str, float], float]:
        return {"loss": config["late"] / iteration}, 1.0

    def lates_after_exploits(mutate: list[str] | None) -> list[tuple[int, int]]:
        """Per exploit, the donor's `late` at the round and the recipient's just after it."""
        settings = PBT(interval=3, quantile_fraction=0.5, resample_probability=1.0, mutate=mutate)
        sweep = pbt(space=space, num_trials=8, max_iterations=10, scheduler=settings)
        sim = simulate(sweep, curve)
        exploits = [(t, it, donor) for t in sim.trials for it, donor in t.exploits]
        assert {it for _, it, _ in exploits} == {3, 6, 9}
        assert len(exploits) == 4 * 3  # half of the 8 trials at each of the 3 rounds
        by_id = {t.trial_id: t for t in sim.trials}

        def late(trial: Any, iteration: int) -> int:
            return round(trial.reports[iteration - 1].metrics["loss"] * iteration)

        return [(late(by_id[d], it), late(t, it + 1)) for t, it, d in exploits]

    # `late` is not mutated: each recipient trains on with its donor's.
    assert all(donor == after for donor, after in lates_after_exploits(["opt"]))
    # Mutated (resampled from 1..20), it differs from the donor's in some exploit.
    assert any(donor != after for donor, after in lates_after_exploits(None))


def test_pbt_defaults_are_the_named_pbt() -> None:
    from sweeplab import PBT

    def exploits(scheduler: Any) -> list[Any]:
        """Each trial's exploits (its donor by its number: the ids differ between sweeps) and
        its final config."""
        sim = simulate(pbt(scheduler=scheduler), by_late, workers=2)
        order = {t.trial_id: n for n, t in enumerate(sim.trials)}
        return [([(it, order[d]) for it, d in t.exploits], t.config) for t in sim.trials]

    named = exploits("pbt")
    assert any(done for done, _ in named)
    assert exploits(PBT()) == named
