"""The Optuna study and HyperOpt trials behind Tune's searchers, for warm-start trials."""

from __future__ import annotations

from typing import Any

from sweeplab.raycompat._uses import PrivateUse

PRIVATE_USES: tuple[PrivateUse, ...] = (
    PrivateUse(
        "ray.tune.search.optuna",
        "OptunaSearch._ot_study",
        None,
        "the Optuna study, to add a warm-start trial; `add_evaluated_point` refuses "
        "define-by-run spaces, and the searcher exposes no study",
    ),
    PrivateUse(
        "ray.tune.search.hyperopt",
        "HyperOptSearch._hpopt_trials",
        None,
        "HyperOpt's trials, to add a warm-start trial; the searcher has no public way to add one",
    ),
)


def optuna_study(searcher: Any) -> Any:
    """The `optuna.Study` behind a Tune `OptunaSearch` (None before its space is set)."""
    return searcher._ot_study


def hyperopt_trials(searcher: Any) -> Any:
    """The `hyperopt.Trials` behind a Tune `HyperOptSearch`."""
    return searcher._hpopt_trials
