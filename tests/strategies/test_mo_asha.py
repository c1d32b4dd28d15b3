"""The multi-objective ASHA: its promotion rule on hand-built rungs, Tune's ASHA with one metric.

No Ray is started: schedulers are built and fed fake trials and results, as Tune's controller
feeds them (``on_trial_add``, ``on_trial_result``, then ``on_trial_complete`` with the last
result of a trial that stops).
"""

from __future__ import annotations

import math
import pickle
import random
from typing import Any

import numpy as np
import pytest

from sweeplab import SpecError, Sweep, uniform
from sweeplab.pareto import Objective, crowding_distances, front_numbers
from sweeplab.strategies import MultiObjectiveASHA, build_scheduler, scheduler_traits
from sweeplab.strategies._mo_asha import ParetoRung, crowding, position_cutoff

LOSS, COST = Objective("loss", "min"), Objective("cost", "min")
CONTINUE, STOP = "CONTINUE", "STOP"


class FakeTrial:
    """What a scheduler reads of a Tune trial here: its id and status."""

    def __init__(self, trial_id: str) -> None:
        self.trial_id = trial_id
        self.status = "PENDING"


def result(iteration: int, **metrics: Any) -> dict[str, Any]:
    return {"training_iteration": iteration, **metrics}


def decide(scheduler: Any, trial: FakeTrial, res: dict[str, Any]) -> str:
    return str(scheduler.on_trial_result(None, trial, res))


# --- hand-built rungs ----------------------------------------------------------------------

# One rung (iteration 1), reduction factor 2: a trial continues iff minus its position in the
# rung's order is at least the median of the recorded trials' minus positions. Objectives
# (loss, cost), both minimised. Crowding distances (cd) are computed within the front.
#   trial point      front (others after)   order of the rung      scores of others -> cutoff
#   a  (4, 4)        1                      a                      none: CONTINUE
#   b  (5, 5)        2 (a dominates it)     a b                    {-1} -> -1: -2, STOP
#   c  (4, 4)        1 (a duplicate of a)   a c b                  {-1,-3} -> -2: -2, CONTINUE
#   d  (1, 6)        1 (3 points, all cd=inf: arrival breaks ties)
#                                           a c d b                {-1,-2,-4} -> -2: -3, STOP
#   e  (2, 2)        1 (a, c -> 2, b -> 3)  d e a c b              {-1,-3,-4,-5} -> -3.5: CONTINUE
#   f  (3, 1.5)      1 (cd all inf)         d e f a c b            -> -4: -3, CONTINUE
#   g  (1.5, 3)      1: cd d=inf f=inf g=1.389 e=1.083
#                                           d f g e a c b          -> -4.5: -3, CONTINUE
#   h  (2.5, 1.8)    1: cd g=1.389 e=0.767 h=0.611
#                                           d f g e h a c b        -> -4: -5, STOP
#   i  loss missing: the worst, after all 8 recorded points        STOP
#   j  neither objective: not judged                               CONTINUE
HAND_CASE = [
    ("a", {"loss": 4, "cost": 4}, CONTINUE),
    ("b", {"loss": 5, "cost": 5}, STOP),
    ("c", {"loss": 4, "cost": 4}, CONTINUE),
    ("d", {"loss": 1, "cost": 6}, STOP),
    ("e", {"loss": 2, "cost": 2}, CONTINUE),
    ("f", {"loss": 3, "cost": 1.5}, CONTINUE),
    ("g", {"loss": 1.5, "cost": 3}, CONTINUE),
    ("h", {"loss": 2.5, "cost": 1.8}, STOP),
    ("i", {"cost": 0.1}, STOP),
    ("j", {"other": 1.0}, CONTINUE),
]


def hand_scheduler(**changes: Any) -> MultiObjectiveASHA:
    arguments: dict[str, Any] = {
        "objectives": [LOSS, COST],
        "max_t": 4,
        "grace_period": 1,
        "reduction_factor": 2,
        **changes,
    }
    return MultiObjectiveASHA(**arguments)


def test_a_rung_promotes_by_front_then_crowding_then_arrival() -> None:
    scheduler = hand_scheduler()
    decisions = [decide(scheduler, FakeTrial(t), result(1, **m)) for t, m, _ in HAND_CASE]
    assert decisions == [expected for _, _, expected in HAND_CASE]
    rung = scheduler._rungs[-1]
    assert isinstance(rung, ParetoRung)
    assert rung.milestone == 1
    assert rung.judged == set("abcdefghi")  # j reported neither objective
    # a and c were pushed to front 2 by e, and b (behind them) to front 3.
    assert rung.fronts() == [2, 3, 2, 1, 1, 1, 1, 1]


def test_a_maximised_objective_is_signed() -> None:
    # The same case, with cost reported as its negation and maximised.
    scheduler = hand_scheduler(objectives=[LOSS, Objective("gain", "max")])
    decisions = [
        decide(
            scheduler,
            FakeTrial(t),
            result(1, **dict(("gain", -v) if k == "cost" else (k, v) for k, v in m.items())),
        )
        for t, m, _ in HAND_CASE
    ]
    assert decisions == [expected for _, _, expected in HAND_CASE]


def test_duplicates_share_a_front_and_ties_sort_by_arrival() -> None:
    scheduler = hand_scheduler(reduction_factor=3)
    # Equal points share front 1. Crowding sorts each objective's ties by arrival, so of the
    # equal points the first and the last to arrive are the boundaries (infinite distance),
    # the ones between have 0; among equal distances the earlier arrival comes first.
    # rf 3: the cutoff is the 66.7th percentile of the others' scores.
    #   0: first: continue
    #   1: two points, both infinite: position 2; others {-1} -> -1: stop
    #   2: distances inf 0 inf: position 2; others {-1, -3} -> -1.67: stop
    #   3: distances inf 0 0 inf: position 2; others {-1, -3, -4} -> -2.33: continue
    decisions = [decide(scheduler, FakeTrial(str(i)), result(1, loss=1, cost=1)) for i in range(4)]
    assert decisions == [CONTINUE, STOP, STOP, CONTINUE]
    # A point that dominates them all comes first: positions of the others are 2..5.
    assert decide(scheduler, FakeTrial("best"), result(1, loss=0, cost=0)) == CONTINUE
    assert scheduler._rungs[-1].fronts() == [2, 2, 2, 2, 1]


@pytest.mark.parametrize(
    "metrics",
    [
        {"loss": math.nan, "cost": 1.0},
        {"loss": 1.0, "cost": math.inf},
        {"loss": 1.0},
        {"loss": None, "cost": 1.0},
        {"loss": "x", "cost": 1.0},
    ],
)
def test_a_result_without_a_finite_value_of_each_objective_is_the_worst(
    metrics: dict[str, Any],
) -> None:
    scheduler = hand_scheduler()
    assert decide(scheduler, FakeTrial("first"), result(1, **metrics)) == CONTINUE  # rung empty
    assert decide(scheduler, FakeTrial("good"), result(1, loss=9, cost=9)) == CONTINUE
    assert decide(scheduler, FakeTrial("bad"), result(1, **metrics)) == STOP
    # Judged once: a later report of the same trial at the rung is not judged again.
    assert decide(scheduler, FakeTrial("bad"), result(1, loss=0, cost=0)) == CONTINUE
    assert scheduler._rungs[-1].fronts() == [1]  # only the finite point is ranked


def test_rungs_milestones_and_max_t_are_tunes() -> None:
    from ray.tune.schedulers import ASHAScheduler

    for max_t, grace, rf in [(27, 1, 3), (9, 1, 3), (52, 1, 3), (100, 2, 4), (10, 1, 2.5)]:
        ours = MultiObjectiveASHA(
            objectives=[LOSS, COST], max_t=max_t, grace_period=grace, reduction_factor=rf
        )
        tunes = ASHAScheduler(
            metric="loss", mode="min", max_t=max_t, grace_period=grace, reduction_factor=rf
        )
        assert [r.milestone for r in ours._rungs] == [m for m, _ in tunes._brackets[0]._rungs]
    scheduler = hand_scheduler()
    trial = FakeTrial("t")
    assert decide(scheduler, trial, result(1, loss=1, cost=1)) == CONTINUE
    assert decide(scheduler, trial, result(2, loss=1, cost=1)) == CONTINUE  # rung 2, first
    assert decide(scheduler, trial, result(3, loss=1, cost=1)) == CONTINUE
    assert decide(scheduler, trial, result(4, loss=1, cost=1)) == STOP  # max_t
    scheduler.on_trial_complete(None, trial, result(4, loss=1, cost=1))
    assert [sorted(r.judged) for r in scheduler._rungs] == [["t"], ["t"], ["t"]]


def test_a_completed_trial_is_recorded_at_its_rung() -> None:
    # As Tune's ASHA: on_trial_complete records the last result where it reached a new rung.
    scheduler = hand_scheduler()
    scheduler.on_trial_complete(None, FakeTrial("early"), result(1, loss=0, cost=0))
    assert decide(scheduler, FakeTrial("next"), result(1, loss=1, cost=1)) == STOP


# --- against a naive reading of the documented rule ----------------------------------------


def naive_decisions(stream: list[tuple[float, ...] | None], reduction_factor: float) -> list[bool]:
    """Whether each arrival at one rung stops, by the class docstring's rule, computed afresh."""
    quantile = (1 - 1 / reduction_factor) * 100
    recorded: list[tuple[float, ...]] = []
    stops = []
    for point in stream:
        if point is None:
            stops.append(bool(recorded))
            continue
        points = [*recorded, point]
        fronts = front_numbers(points)
        distance: dict[int, float] = {}
        for front in set(fronts):
            members = [i for i, f in enumerate(fronts) if f == front]
            values = crowding_distances([points[i] for i in members])
            distance.update(zip(members, values, strict=True))
        order = sorted(range(len(points)), key=lambda i: (fronts[i], -distance[i], i))
        positions = {index: place + 1 for place, index in enumerate(order)}
        new = len(recorded)
        scores = [-positions[i] for i in range(new)]
        stops.append(bool(scores) and -positions[new] < np.nanpercentile(scores, quantile))
        recorded.append(point)
    return stops


def random_stream(rng: random.Random, size: int, dims: int, ties: bool) -> list[Any]:
    stream: list[Any] = []
    for _ in range(size):
        if rng.random() < 0.05:
            stream.append(None)
        elif ties:
            stream.append(tuple(float(rng.randint(0, 4)) for _ in range(dims)))
        else:
            stream.append(tuple(rng.random() for _ in range(dims)))
    return stream


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("dims", [2, 3])
@pytest.mark.parametrize("ties", [True, False])
def test_a_rung_decides_as_the_documented_rule(seed: int, dims: int, ties: bool) -> None:
    rng = random.Random(seed)
    reduction_factor = rng.choice([2, 3, 4])
    stream = random_stream(rng, 70, dims, ties)
    objectives = [Objective(f"m{k}", "min") for k in range(dims)]
    rung = ParetoRung(1, objectives)
    quantile = (1 - 1 / reduction_factor) * 100
    stops = []
    for index, point in enumerate(stream):
        metrics = {} if point is None else {f"m{k}": v for k, v in enumerate(point)}
        stops.append(rung.judge(str(index), metrics, quantile))
    assert stops == naive_decisions(stream, reduction_factor)
    assert rung.fronts() == front_numbers([p for p in stream if p is not None])


@pytest.mark.parametrize("shape", ["independent", "correlated", "anti-correlated"])
def test_fronts_stay_exact_as_points_arrive(shape: str) -> None:
    rng = np.random.default_rng(0)
    x = rng.random(400)
    noise = rng.random(400) * 0.1
    second = {
        "independent": rng.random(400),
        "correlated": x + noise,
        "anti-correlated": 1 - x + noise,
    }
    points = [tuple(p) for p in np.c_[x, second[shape]].tolist()]
    rung = ParetoRung(1, [LOSS, COST])
    for count, point in enumerate(points, start=1):
        rung.insert(point)
        if count % 50 == 0:
            assert rung.fronts() == front_numbers(points[:count])


def test_position_cutoff_is_numpys_percentile() -> None:
    for reduction_factor in (2, 3, 4, 2.5, 3.7, 1.5, 10):
        quantile = (1 - 1 / reduction_factor) * 100
        for count in [*range(1, 60), 99, 100, 257, 1000]:
            for position in {1, 2, count // 3 + 1, count // 2, count, count + 1} - {0}:
                scores = [-p for p in range(1, count + 2) if p != position]
                assert position_cutoff(count, position, quantile) == np.nanpercentile(
                    scores, quantile
                )


def test_vectorised_crowding_is_paretos() -> None:
    rng = np.random.default_rng(3)
    for _ in range(300):
        size, dims = int(rng.integers(1, 40)), int(rng.integers(1, 4))
        if rng.random() < 0.5:
            points = rng.integers(0, 4, size=(size, dims)).astype(float)
        else:
            points = rng.random((size, dims))
        expected = crowding_distances([tuple(p) for p in points.tolist()])
        assert crowding(points.T.copy()).tolist() == expected


# --- one objective: Tune's ASHA exactly ----------------------------------------------------


def run_stream(schedulers: list[Any], seed: int, mode: str, max_t: int, trials: int) -> list[str]:
    """Drives the schedulers through one random asynchronous stream; returns their decisions.

    Trials arrive over time, and a random live trial reports next; a trial that is told to
    stop (or reaches max_t) is completed with its last result, as Tune's controller does.
    Each result goes to every scheduler, and each must decide alike.
    """
    rng = random.Random(seed)
    live: dict[str, tuple[FakeTrial, int]] = {}
    made = 0
    decisions = []
    while made < trials or live:
        if made < trials and (not live or rng.random() < 0.3):
            trial = FakeTrial(f"t{made:04d}")
            made += 1
            for scheduler in schedulers:
                scheduler.on_trial_add(None, trial)
            live[trial.trial_id] = (trial, 0)
            continue
        trial_id = rng.choice(sorted(live))
        trial, iteration = live[trial_id]
        iteration += 1
        value: float = rng.gauss(0, 1) + (3 if rng.random() < 0.1 else 0)
        if rng.random() < 0.02:
            value = math.nan
        res = result(iteration, loss=value)
        if rng.random() < 0.01:
            res = result(iteration, other=value)  # no metric: not judged
        answers = {str(s.on_trial_result(None, trial, dict(res))) for s in schedulers}
        assert len(answers) == 1, (trial_id, iteration, answers)
        answer = answers.pop()
        decisions.append(answer)
        if answer == STOP or iteration >= max_t:
            for scheduler in schedulers:
                scheduler.on_trial_complete(None, trial, dict(res))
            del live[trial_id]
        else:
            live[trial_id] = (trial, iteration)
    return decisions


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # nanpercentile of only NaNs
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("mode", ["min", "max"])
@pytest.mark.parametrize(("max_t", "reduction_factor"), [(27, 3), (16, 4), (10, 2)])
def test_one_objective_makes_tunes_asha_decisions(
    seed: int, mode: str, max_t: int, reduction_factor: int
) -> None:
    from ray.tune.schedulers import ASHAScheduler

    tunes = ASHAScheduler(
        time_attr="training_iteration",
        max_t=max_t,
        grace_period=1,
        reduction_factor=reduction_factor,
    )
    assert tunes.set_search_properties("loss", mode)
    ours = MultiObjectiveASHA(
        objectives=[Objective("loss", mode)],
        max_t=max_t,
        grace_period=1,
        reduction_factor=reduction_factor,
    )
    assert ours.set_search_properties("loss", mode)
    decisions = run_stream([tunes, ours], seed, mode, max_t, trials=300)
    assert decisions.count(STOP) > 50  # the stream exercises the rule


# --- the scheduler as Tune and sweeplab see it ---------------------------------------------


def test_it_pickles_mid_sweep_and_decides_on_alike() -> None:
    scheduler = hand_scheduler()
    for trial_id, metrics, _ in HAND_CASE[:6]:
        decide(scheduler, FakeTrial(trial_id), result(1, **metrics))
    copy = pickle.loads(pickle.dumps(scheduler))
    for trial_id, metrics, expected in HAND_CASE[6:]:
        assert decide(copy, FakeTrial(trial_id), result(1, **metrics)) == expected


def test_save_and_restore(tmp_path: Any) -> None:
    scheduler = hand_scheduler()
    for trial_id, metrics, _ in HAND_CASE[:6]:
        decide(scheduler, FakeTrial(trial_id), result(1, **metrics))
    scheduler.save(str(tmp_path / "state.pkl"))
    restored = hand_scheduler()
    restored.restore(str(tmp_path / "state.pkl"))
    for trial_id, metrics, expected in HAND_CASE[6:]:
        assert decide(restored, FakeTrial(trial_id), result(1, **metrics)) == expected


def test_search_properties_are_the_first_objectives() -> None:
    scheduler = hand_scheduler()
    assert scheduler.metric == "loss"
    assert scheduler.set_search_properties(None, None)
    assert scheduler.set_search_properties("loss", "min")
    assert not scheduler.set_search_properties("cost", "min")
    assert not scheduler.set_search_properties("loss", "max")
    assert "MultiObjectiveASHA" in scheduler.debug_string()


def test_it_declares_that_it_only_stops_trials() -> None:
    traits = scheduler_traits(hand_scheduler())
    assert (traits.pauses, traits.exploits) == (False, False)


def train_func(config: dict[str, Any]) -> None:
    pass


def test_build_asha_picks_the_scheduler_by_the_number_of_metrics() -> None:
    from ray.tune.schedulers import AsyncHyperBandScheduler

    base: dict[str, Any] = {
        "name": "mo",
        "train_func": train_func,
        "space": {"x": uniform(0, 1)},
        "scheduler": "asha",
        "max_iterations": 27,
    }
    single = build_scheduler(Sweep(**base, metric="loss", mode="min"))
    assert type(single) is AsyncHyperBandScheduler
    several = build_scheduler(Sweep(**base, metric=["loss", "cost"], mode=["min", "max"]))
    assert isinstance(several, MultiObjectiveASHA)
    assert several.objectives == (LOSS, Objective("cost", "max"))
    assert [r.milestone for r in several._rungs] == [27, 9, 3, 1]


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"objectives": []}, r"`objectives` must be one or more"),
        ({"objectives": ["loss"]}, r"`objectives` must be one or more"),
        ({"objectives": [LOSS, LOSS]}, r"distinct names"),
        ({"grace_period": 0}, r"`0 < grace_period <= max_t` must hold"),
        ({"grace_period": 5, "max_t": 4}, r"`0 < grace_period <= max_t` must hold"),
        ({"reduction_factor": 1}, r"`reduction_factor > 1` must hold"),
    ],
)
def test_bad_arguments_are_refused(changes: dict[str, Any], match: str) -> None:
    with pytest.raises(SpecError, match=match):
        hand_scheduler(**changes)
