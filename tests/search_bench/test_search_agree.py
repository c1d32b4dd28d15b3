"""`python -m benchmarks.search.agree`: the ranking it compares, and its arguments."""

from __future__ import annotations

import math

import pytest

from benchmarks.search import agree
from benchmarks.search._strategies import NAMED_ONLY


def test_ranks_share_ties_and_average_over_seeds() -> None:
    assert agree.rank_seed({"a": 0.3, "b": 0.1, "c": 0.3}) == {"b": 1.0, "a": 2.5, "c": 2.5}
    finals = {"a": {0: 1.0, 1: 2.0}, "b": {0: 2.0, 1: 1.0}, "c": {0: 3.0, 1: 3.0}}
    assert agree.mean_ranks(finals, [0, 1]) == {"a": 1.5, "b": 1.5, "c": 3.0}
    assert agree.mean_ranks(finals, [0]) == {"a": 1.0, "b": 2.0, "c": 3.0}


def test_kendall_tau_names_the_swapped_pairs() -> None:
    same = {"a": 1.0, "b": 2.0, "c": 3.0}
    assert agree.kendall_tau(same, same) == (1.0, [])
    tau, swapped = agree.kendall_tau(same, {"a": 2.0, "b": 1.0, "c": 3.0})
    assert math.isclose(tau, 1 / 3)
    assert swapped == [["a", "b"]]
    reversed_ = {"a": 3.0, "b": 2.0, "c": 1.0}
    assert agree.kendall_tau(same, reversed_)[0] == -1.0
    # A pair tied on one side neither agrees nor swaps.
    assert agree.kendall_tau(same, {"a": 1.0, "b": 1.0, "c": 3.0})[0] == pytest.approx(2 / 3)


def test_the_simulated_final_is_the_best_score_within_the_budget() -> None:
    strategy = NAMED_ONLY["random+adaptive-asha"]
    first = agree.simulate_final("h3", strategy, seed=3)
    assert agree.simulate_final("h3", strategy, seed=3) == first  # seeded
    assert -3.87 < first < 0.0  # Hartmann 3's minimum is -3.86278


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--seeds", "1"], "--seeds"),
        (["--seeds", "5", "--sim-seeds", "3"], "--sim-seeds"),
        (["--problems", "digits"], "both backends run only"),
        (["--strategies", "nope"], "unknown strategy"),
    ],
)
def test_bad_arguments_stop_before_any_run(argv: list[str], message: str) -> None:
    with pytest.raises(SystemExit, match=message):
        agree.main(argv)


def test_the_analysis_reads_back_from_its_json() -> None:
    """`--reanalyse` recomputes every figure from the saved finals (seeds saved as strings)."""
    import json

    config = {"seeds": 2, "sim_seeds": 3, "strategies": ["a", "b"]}
    raw = {
        "h3": {
            "a": {"ray": {0: 1.0, 1: 0.2}, "sim": {0: 1.0, 1: 3.0, 2: 3.0}, "ray_wall_s": [2, 4]},
            "b": {"ray": {0: 2.0, 1: 0.5}, "sim": {0: 2.0, 1: 0.5, 2: 0.1}, "ray_wall_s": [1, 1]},
        }
    }
    report = json.loads(json.dumps({"config": config, "raw": raw}))
    agree.analyse(report)
    h3 = report["problems"]["h3"]
    a, b = h3["strategies"]["a"], h3["strategies"]["b"]
    assert (a["ray_mean_rank"], b["ray_mean_rank"]) == (1.0, 2.0)  # a wins both real seeds
    assert a["sim_mean_rank_same_seeds"] == b["sim_mean_rank_same_seeds"] == 1.5
    assert a["sim_mean_rank"] == pytest.approx(5 / 3)  # ranks 1, 2, 2
    assert (a["same_final_seeds"], b["same_final_seeds"]) == (1, 2)  # a's seed 1: 0.2 vs 3.0
    assert a["ray_wall_s_median"] == 3
    assert (h3["tau_same_seeds"], h3["swapped_same_seeds"]) == (0.0, [])  # a tie: no order
    assert (h3["tau"], h3["swapped"]) == (-1.0, [["a", "b"]])
    assert h3["tau_sim_seeds_against_all"] == 0.0
    assert report["pooled"] == {"tau": -1.0, "swapped": [["a", "b"]]}
