"""The Optuna study and HyperOpt trials behind Tune's searchers, for warm-start trials."""

from __future__ import annotations

from typing import Any

from sweeplab.raycompat._ledger import PrivateUse

__all__ = [
    "USES",
    "hyperopt_trials",
    "optuna_study",
]

USES: tuple[PrivateUse, ...] = (
    PrivateUse(
        "ray.tune.search.optuna",
        "OptunaSearch._ot_study",
        None,
        "the Optuna study, to add a warm-start trial; `add_evaluated_point` refuses "
        "define-by-run spaces, and the searcher exposes no study",
        purpose="essential",
        feature="warm-start trials",
    ),
    PrivateUse(
        "ray.tune.search.hyperopt",
        "HyperOptSearch._hpopt_trials",
        None,
        "HyperOpt's trials, to add a warm-start trial; the searcher has no public way to add one",
        purpose="essential",
        feature="warm-start trials",
    ),
)


def optuna_study(searcher: Any) -> Any:
    """The `optuna.Study` behind a Tune `OptunaSearch` (None before its space is set)."""
    return searcher._ot_study


def hyperopt_trials(searcher: Any) -> Any:
    """The `hyperopt.Trials` behind a Tune `HyperOptSearch`."""
    return searcher._hpopt_trials
