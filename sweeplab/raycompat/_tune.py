"""Ray Tune internals: the median stopping rule's flag, and the key Tune adds to a repeated
result (for the tracker's Tune callback), spelled out so the tracker needs no Ray import."""

from __future__ import annotations

from typing import Any

from sweeplab.raycompat._ledger import PrivateUse

__all__ = [
    "USES",
    "NewTrials",
    "median_rule_stops_hard",
    "trial_error_text",
]

USES: tuple[PrivateUse, ...] = (
    PrivateUse(
        "ray.tune.schedulers",
        "MedianStoppingRule._hard_stop",
        None,
        "whether the rule stops trials or pauses them (its scheduler traits); the flag "
        "has no public accessor",
        purpose="essential",
        feature="the median stopping rule's scheduler traits",
    ),
    PrivateUse(
        "ray.tune.result",
        "RESULT_DUPLICATE",
        None,
        "the key Tune adds to the result it repeats when a function trainable returns; it is "
        "no metric, and Tune's result keys have no public list (its value is "
        "`sweeplab.keys.TUNE_DUPLICATE_RESULT_KEY`)",
        purpose="essential",
        feature="Tune's repeated result is no metric",
    ),
)


# --- Schedulers ----------------------------------------------------------------------------


def median_rule_stops_hard(rule: Any) -> bool:
    """Whether a `MedianStoppingRule` stops the trials it rules out (False: it pauses them).

    A rule without the flag is taken to pause.
    """
    return getattr(rule, "_hard_stop", False) is True


def trial_error_text(trial: Any) -> str | None:
    """The text of a Tune trial's error file (its traceback), or None when it has none."""
    from pathlib import Path

    try:
        if trial.error_file and Path(trial.error_file).exists():
            return Path(trial.error_file).read_text(errors="replace")
    except OSError:
        pass
    return None


class NewTrials:
    """Which of the controller's trials a Tune callback has not seen, at each step.

    Tune appends each new trial to its list, so the new ones are those after the ones seen: a
    pass over the whole list at every step would be quadratic in the sweep's length.
    """

    def __init__(self) -> None:
        self._seen = 0

    def since_last(self, trials: list[Any]) -> list[Any]:
        """The trials of `trials` (the controller's list) added since the last call."""
        new = trials[self._seen :]
        self._seen = len(trials)
        return new
