"""The registry of strategies: complete entries, the spec's names, rules, traits and previews.

No Ray is started; Tune's scheduler classes are only imported and constructed.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

import sweeplab
import sweeplab.spec
from sweeplab import SchedulerTraits, SpecError, Sweep, grid, loguniform
from sweeplab.pareto import Objective
from sweeplab.strategies import (
    SCHEDULERS,
    SEARCHERS,
    PlanInputs,
    Rung,
    SchedulerEntry,
    SearcherEntry,
    build_scheduler,
    build_search,
    build_tune_search,
    scheduler_traits,
    total_trials,
    trial_plan,
)


def train_func(config: dict[str, Any]) -> None:
    pass


BASE: dict[str, Any] = {
    "name": "registry",
    "train_func": train_func,
    "space": {"lr": loguniform(1e-4, 1e-1), "layers": grid([1, 2, 3])},
    "metric": "loss",
    "mode": "min",
}


def make(**changes: Any) -> Sweep:
    return Sweep(**{**BASE, **changes})


def custom_scheduler(**attributes: Any) -> Any:
    """A configured Tune scheduler of a class sweeplab does not know."""
    from ray.tune.schedulers import TrialScheduler

    return type("Custom", (TrialScheduler,), attributes)()


PAUSES = SchedulerTraits(pauses=True, exploits=False)


# --- every entry is complete ---------------------------------------------------------------


@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_scheduler_entry_is_complete(name: str) -> None:
    entry = SCHEDULERS[name]
    assert isinstance(entry, SchedulerEntry) and entry.name == name
    assert isinstance(entry.traits, SchedulerTraits)
    assert callable(entry.build) and callable(entry.validate) and callable(entry.preview)
    assert entry.population is None or callable(entry.population)
    rungs, budget, summary = entry.preview(PlanInputs(trials=9, max_iterations=9))
    assert all(isinstance(rung, Rung) for rung in rungs)
    assert isinstance(budget, int) and budget > 0
    assert isinstance(summary, str) and summary and "\n" not in summary


@pytest.mark.parametrize("name", list(SEARCHERS))
def test_searcher_entry_is_complete(name: str) -> None:
    entry = SEARCHERS[name]
    assert isinstance(entry, SearcherEntry) and entry.name == name
    assert callable(entry.build) and callable(entry.validate)
    assert isinstance(entry.takes_warm_start, bool) and isinstance(entry.repeats_grid, bool)


@pytest.mark.parametrize("name", [name for name, e in SEARCHERS.items() if not e.multi_objective])
def test_a_searcher_of_one_metric_refuses_several_when_compiled(name: str) -> None:
    # The entry's flag is what the spec checks; its compile function must agree with it.
    objectives = (Objective("loss", "min"), Objective("latency", "min"))
    with pytest.raises(SpecError, match="takes one metric"):
        build_tune_search(
            BASE["space"],
            name,
            metric="loss",
            mode="min",
            seed=0,
            num_trials=1,
            objectives=objectives,
        )


def test_build_tune_search_names_the_registrys_searchers() -> None:
    with pytest.raises(SpecError) as caught:
        build_tune_search(BASE["space"], "bohb", metric="loss", mode="min", seed=0, num_trials=1)
    assert str(caught.value) == f"searcher must be one of {list(SEARCHERS)}, but got 'bohb'."


def test_entries_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        SCHEDULERS["asha"].name = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        SCHEDULERS["x"] = SCHEDULERS["asha"]  # type: ignore[index]


def test_the_spec_accepts_exactly_the_registrys_names() -> None:
    assert tuple(SCHEDULERS) == sweeplab.spec.SCHEDULERS
    assert tuple(SEARCHERS) == sweeplab.spec.SEARCHERS
    for name in SCHEDULERS:
        assert make(scheduler=name).scheduler == name
    for name in SEARCHERS:
        assert make(searcher=name).searcher == name


def test_the_warm_start_rule_names_the_searchers_that_take_one() -> None:
    takers = [name for name, entry in SEARCHERS.items() if entry.takes_warm_start]
    with pytest.raises(SpecError) as caught:
        make(searcher="grid", warm_start=[{"lr": 0.01, "layers": 1}])
    assert f"needs a searcher ({', '.join(repr(n) for n in takers)})" in str(caught.value)


# --- the rules of the strategies, as the spec raises them ----------------------------------

WARM = [{"lr": 0.01, "layers": 1}]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"searcher": "grid", "warm_start": WARM},
            "Sweep field `warm_start` needs a searcher ('random', 'optuna', 'hyperopt'); grid "
            "search and PBT draw their own population, but got [{'lr': 0.01, 'layers': 1}].",
        ),
        (
            {"scheduler": "pbt", "searcher": "optuna", "warm_start": WARM},
            "Sweep field `warm_start` needs a searcher ('random', 'optuna', 'hyperopt'); grid "
            "search and PBT draw their own population, but got [{'lr': 0.01, 'layers': 1}].",
        ),
        (
            {"scheduler": "pbt", "searcher": "hyperopt"},
            "Sweep field `searcher` must be 'random' or 'grid' with scheduler='pbt' (PBT mutates "
            "the configs itself), but got 'hyperopt'.",
        ),
        (
            {"searcher": "grid", "space": {"lr": loguniform(1e-4, 1e-1)}},
            "Sweep field `searcher` 'grid' needs at least one `grid(...)` parameter in the space, "
            "but got 'grid'.",
        ),
        (
            {"scheduler": "pbt", "searcher": "grid", "space": {"lr": loguniform(1e-4, 1e-1)}},
            "Sweep field `searcher` 'grid' needs at least one `grid(...)` parameter in the space, "
            "but got 'grid'.",
        ),
        (
            {"scheduler_traits": PAUSES, "scheduler": "fifo"},
            "Sweep field `scheduler_traits` declares a configured scheduler object's traits; the "
            "named scheduler 'fifo' has its own, but got "
            "SchedulerTraits(pauses=True, exploits=False).",
        ),
        (
            {"scheduler_traits": PAUSES},
            "Sweep field `scheduler_traits` declares a configured scheduler object's traits, but "
            "the sweep names no `scheduler` (the defaults chose 'adaptive-asha', which has its "
            "own), but got SchedulerTraits(pauses=True, exploits=False).",
        ),
        (
            {"scheduler": sweeplab.PBT(interval=10), "searcher": "random"},
            "Sweep field `scheduler` must set PBT.interval below max_iterations (10): no round "
            "is held at a trial's last iteration, but got PBT(interval=10, quantile_fraction=0.25, "
            "resample_probability=0.25, mutate=None).",
        ),
        (
            {"scheduler": sweeplab.PBT(mutate=["lr", "depth"]), "searcher": "random"},
            "Sweep field `scheduler` must set PBT.mutate to ranges and choices of the space (lr, "
            "layers); 'depth' is not, but got PBT(interval=None, quantile_fraction=0.25, "
            "resample_probability=0.25, mutate=('lr', 'depth')).",
        ),
        (
            {"scheduler": sweeplab.PBT(), "searcher": "optuna"},
            "Sweep field `searcher` must be 'random' or 'grid' with scheduler='pbt' (PBT mutates "
            "the configs itself), but got 'optuna'.",
        ),
        (
            {"scheduler": sweeplab.PBT(), "scheduler_traits": PAUSES},
            "Sweep field `scheduler_traits` declares a configured scheduler object's traits; the "
            "named scheduler PBT(interval=None, quantile_fraction=0.25, resample_probability=0.25, "
            "mutate=None) has its own, but got SchedulerTraits(pauses=True, exploits=False).",
        ),
        (
            {"scheduler_traits": (True, False)},
            "Sweep field `scheduler_traits` must be a sweeplab.SchedulerTraits(pauses=..., "
            "exploits=...), but got (True, False).",
        ),
    ],
)
def test_a_broken_rule_is_the_spec_error_of_its_field(
    changes: dict[str, Any], message: str
) -> None:
    with pytest.raises(SpecError) as caught:
        make(**changes)
    assert str(caught.value) == message


@pytest.mark.parametrize(
    "changes",
    [
        {"scheduler": "pbt", "searcher": "random"},
        {"scheduler": "pbt", "searcher": "grid"},
        {"scheduler": sweeplab.PBT(interval=9, mutate=["lr"]), "searcher": "grid"},
        {"searcher": "grid"},
        {"searcher": "optuna", "warm_start": WARM},
        {"scheduler": "hyperband", "searcher": "hyperopt", "warm_start": WARM},
    ],
)
def test_strategies_that_keep_the_rules_are_accepted(changes: dict[str, Any]) -> None:
    make(**changes)


# --- scheduler traits: from the registry, the Tune class, or declared ------------------------


@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_a_named_schedulers_traits_are_those_of_what_it_builds(name: str) -> None:
    sweep = make(scheduler=name, searcher="random")
    built = build_scheduler(sweep)
    assert scheduler_traits(name) == SCHEDULERS[name].traits
    assert scheduler_traits(built) == SCHEDULERS[name].traits


def test_a_custom_scheduler_without_traits_is_refused() -> None:
    with pytest.raises(SpecError) as caught:
        make(scheduler=custom_scheduler())
    text = str(caught.value)
    assert text.startswith("Sweep field `scheduler` is a Custom,")
    assert "declare its traits with scheduler_traits=sweeplab.SchedulerTraits(pauses=..., " in text
    with pytest.raises(SpecError, match="`scheduler` is a Custom"):
        scheduler_traits(custom_scheduler())


def test_a_fifo_subclass_is_not_taken_for_fifo() -> None:
    from ray.tune.schedulers import FIFOScheduler

    class MyFIFO(FIFOScheduler):
        pass

    with pytest.raises(SpecError, match=r"`scheduler` is a .*MyFIFO"):
        make(scheduler=MyFIFO())


@pytest.mark.parametrize(
    "traits",
    [
        SchedulerTraits(pauses=True, exploits=False),
        SchedulerTraits(pauses=False, exploits=False),
    ],
)
@pytest.mark.parametrize("where", ["field", "object", "class"])
def test_declared_traits_are_the_schedulers(traits: SchedulerTraits, where: str) -> None:
    sweep = _declaring(traits, where)
    assert scheduler_traits(sweep.scheduler, declared=sweep.scheduler_traits) == traits


def _declaring(traits: SchedulerTraits, where: str) -> Sweep:
    if where == "field":
        return make(scheduler=custom_scheduler(), scheduler_traits=traits)
    if where == "object":
        scheduler = custom_scheduler()
        scheduler.sweeplab_traits = traits
        return make(scheduler=scheduler)
    return make(scheduler=custom_scheduler(sweeplab_traits=traits))


@pytest.mark.parametrize("where", ["field", "object", "class"])
def test_a_configured_scheduler_that_exploits_is_refused(where: str) -> None:
    """Only sweeplab's own PBT exploits through the trial loop: an object that says it
    exploits (declared, or Tune's PBT and PB2 by class) is refused with the way out."""
    with pytest.raises(SpecError) as caught:
        _declaring(SchedulerTraits(pauses=True, exploits=True), where)
    text = str(caught.value)
    assert text.startswith("Sweep field `scheduler` must not be a configured scheduler that ")
    assert "name scheduler='pbt'" in text


@pytest.mark.parametrize("cls", ["PopulationBasedTraining", "PB2"])
def test_tunes_pbt_objects_are_refused(cls: str) -> None:
    if cls == "PB2":
        from ray.tune.schedulers.pb2 import PB2

        scheduler = PB2(hyperparam_bounds={"lr": [0.1, 0.2]})
    else:
        from ray.tune.schedulers import PopulationBasedTraining

        scheduler = PopulationBasedTraining(hyperparam_mutations={"lr": [0.1, 0.2]})
    with pytest.raises(SpecError, match=r"Ray Tune's PopulationBasedTraining or PB2\): they"):
        make(scheduler=scheduler)


def test_the_field_overrides_a_tune_class_and_an_attribute() -> None:
    from ray.tune.schedulers import ASHAScheduler

    asha = ASHAScheduler(max_t=4)
    assert scheduler_traits(asha) == SchedulerTraits(pauses=False, exploits=False)
    sweep = make(scheduler=asha, scheduler_traits=PAUSES)
    assert scheduler_traits(sweep.scheduler, declared=sweep.scheduler_traits) == PAUSES
    declared = custom_scheduler(sweeplab_traits=SchedulerTraits(pauses=False, exploits=False))
    assert scheduler_traits(declared, declared=PAUSES) == PAUSES


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: SchedulerTraits(pauses="yes", exploits=False), r"SchedulerTraits\.pauses"),
        (lambda: SchedulerTraits(pauses=True, exploits=1), r"SchedulerTraits\.exploits"),
        (
            lambda: make(scheduler=custom_scheduler(sweeplab_traits=(True, False))),
            r"`scheduler` declares its traits in `sweeplab_traits`",
        ),
    ],
    ids=["pauses", "exploits", "attribute"],
)
def test_malformed_traits_are_spec_errors(build: Any, match: str) -> None:
    with pytest.raises(SpecError, match=match):
        build()


def test_scheduler_traits_is_public() -> None:
    assert "SchedulerTraits" in sweeplab.__all__
    assert sweeplab.SchedulerTraits is SchedulerTraits


# --- previews and searches -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("scheduler", "summary"),
    [
        ("fifo", "FIFO: every trial runs 9 iterations"),
        ("asha", "ASHA: reduction factor 3, grace period 1, max 9 iterations"),
        (
            "median",
            "Median stopping: after 2 iteration(s) a trial below the median of the others "
            "stops; at most 9 iterations each",
        ),
        (
            "hyperband",
            "HyperBand: 1 bracket(s), 3 trials, reduction factor 3, max 9; stops 0 trial(s) early",
        ),
        (
            "pbt",
            "PBT: population 3, 2 at a time, synchronous rounds every 2 iteration(s), "
            "bottom/top quantile 25%, 9 iterations each",
        ),
    ],
)
@pytest.mark.parametrize("waiting_holds_nothing", [None, True])
def test_trial_plan_reads_the_entrys_preview(
    scheduler: str, summary: str, waiting_holds_nothing: bool | None
) -> None:
    sweep = make(scheduler=scheduler, searcher="grid", num_trials=1, max_iterations=9)
    plan = trial_plan(sweep, concurrency=2, waiting_holds_nothing=waiting_holds_nothing)
    assert plan[2] == summary
    assert plan == SCHEDULERS[scheduler].preview(
        PlanInputs(trials=3, max_iterations=9, concurrency=2, waiting_holds_nothing=True)
    )


@pytest.mark.parametrize(
    ("scheduler", "caveat"),
    [
        ("hyperband", True),
        ("pbt", True),
        ("asha", False),
        ("median", False),
        ("fifo", False),
    ],
)
def test_only_pausing_schedulers_warn_when_waiting_trials_hold_resources(
    scheduler: str, caveat: bool
) -> None:
    sweep = make(scheduler=scheduler, searcher="random", num_trials=4)
    _, _, summary = trial_plan(sweep, concurrency=2, waiting_holds_nothing=False)
    warned = summary.endswith(
        " (with a group per trial it compares only the 2 trial(s) that run at once)"
    )
    assert warned is caveat
    _, _, unknown = trial_plan(sweep, concurrency=None, waiting_holds_nothing=False)
    assert "compares only" not in unknown


def test_a_custom_schedulers_plan_is_its_budget() -> None:
    sweep = make(scheduler=custom_scheduler(), scheduler_traits=PAUSES, max_iterations=5)
    assert trial_plan(sweep) == ([], 8 * 5, "FIFO: every trial runs 5 iterations")


@pytest.mark.parametrize(("searcher", "trials"), [("grid", 2 * 3), ("random", 2)])
def test_total_trials_repeat_the_grid_only_for_grid_search(searcher: str, trials: int) -> None:
    assert total_trials(make(searcher=searcher, num_trials=2)) == trials


def test_pbt_draws_its_own_population() -> None:
    """Tune's variant generator, as a grid compiles, whichever of its searchers PBT names."""
    from ray.tune.search import BasicVariantGenerator

    search = build_search(make(scheduler="pbt", searcher="random", seed=3))
    assert type(search.search_alg) is BasicVariantGenerator
    grid = build_search(make(searcher="grid", seed=3))
    assert sorted(search.param_space) == sorted(grid.param_space) == ["layers", "lr"]
    assert search.param_space["layers"] == grid.param_space["layers"]


@pytest.mark.parametrize(
    ("name", "only_stops"),
    [("fifo", True), ("asha", True), ("median", True), ("hyperband", False), ("pbt", False)],
)
def test_only_a_scheduler_that_neither_pauses_nor_exploits_only_stops(
    name: str, only_stops: bool
) -> None:
    # The runner lets ended trials leave Tune's controller only under such a scheduler.
    assert scheduler_traits(name).only_stops is only_stops


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"interval": 0}, "PBT.interval must be an integer >= 1 or None, but got 0."),
        ({"interval": 2.0}, "PBT.interval must be an integer >= 1 or None, but got 2.0."),
        (
            {"quantile_fraction": 0.6},
            "PBT.quantile_fraction must be a number above 0 and at most 0.5, but got 0.6.",
        ),
        (
            {"resample_probability": -0.1},
            "PBT.resample_probability must be a number from 0 to 1, but got -0.1.",
        ),
        (
            {"mutate": []},
            "PBT.mutate must name at least one parameter (None: every range and choice).",
        ),
        ({"mutate": "lr,layers"}, None),
        ({"mutate": [1]}, "PBT.mutate must be a list of parameter paths or None, but got [1]."),
    ],
)
def test_pbt_settings_are_checked(settings: dict[str, Any], message: str | None) -> None:
    if message is None:
        assert sweeplab.PBT(**settings).mutate == (settings["mutate"],)
        return
    with pytest.raises(SpecError) as caught:
        sweeplab.PBT(**settings)
    assert str(caught.value) == message


def test_pbt_settings_are_the_named_pbts_with_their_changes() -> None:
    """`PBT(...)` is the registry's "pbt": its traits, population and preview, with the
    settings in what it builds, in the preview and in the name the sweep gives it."""
    named = make(scheduler="pbt", searcher="random", max_iterations=12)
    configured = make(
        scheduler=sweeplab.PBT(interval=2, quantile_fraction=0.5, mutate=["lr"]),
        searcher="random",
        max_iterations=12,
    )
    assert scheduler_traits(configured.scheduler) == scheduler_traits("pbt")
    assert total_trials(configured) == total_trials(named)
    built, default = build_scheduler(configured), build_scheduler(named)
    assert (built.interval, built.quantile_fraction, list(built.mutations)) == (2, 0.5, ["lr"])
    assert (default.interval, default.quantile_fraction) == (3, 0.25)
    assert sorted(default.mutations) == ["layers", "lr"]
    assert (
        "rounds every 2 iteration(s), bottom/top quantile 50%, mutating lr"
        in (trial_plan(configured)[2])
    )
    assert named.scheduler_name == "pbt"
    assert configured.scheduler_name == "pbt(interval=2, quantile_fraction=0.5, mutate=('lr',))"
