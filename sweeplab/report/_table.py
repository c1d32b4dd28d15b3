"""Typed config params and the ranked trial table."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from sweeplab.keys import STATUS_FINISHED, STATUS_STOPPED_EARLY

if TYPE_CHECKING:
    import pandas as pd

    from sweeplab.tracking import SweepData

CONFIG_PREFIX = "config."
FINISHED = (STATUS_FINISHED, STATUS_STOPPED_EARLY)
_INT = re.compile(r"[+-]?\d+")


def _parse(value: Any) -> Any:
    """One MLflow param (a string) back to a bool, int, float or string."""
    if not isinstance(value, str):
        return value
    if value in ("True", "False"):
        return value == "True"
    if _INT.fullmatch(value):
        return int(value)
    try:
        return float(value)
    except ValueError:
        return value


def _typed(column: pd.Series) -> pd.Series:
    """A param column as one type: int, float (ints widen), or else the original strings."""
    import pandas as pd

    present = column.dropna()
    parsed = present.map(_parse)
    kinds = {type(v) for v in parsed}
    if kinds and kinds <= {int}:
        return pd.to_numeric(column.map(_parse), errors="coerce").astype("Int64")
    if kinds and kinds <= {int, float}:
        return pd.to_numeric(column.map(_parse), errors="coerce").astype(float)
    if kinds == {bool}:
        return column.map(lambda v: _parse(v) if isinstance(v, str) else v).astype(object)
    return column.astype(object)


def param_frame(data: SweepData) -> pd.DataFrame:
    """The trials' config params, one column per dotted param (``config.`` dropped), typed.

    MLflow stores params as strings; each column is parsed back to ``Int64``, ``float``,
    ``bool`` or ``str``. A param of a conditional branch the trial did not take is missing
    (``NA``/``NaN``/``None``). Rows follow ``data.trials`` (by rank).
    """
    import pandas as pd

    trials = data.trials
    columns = sorted(c for c in trials.columns if c.startswith(CONFIG_PREFIX))
    return pd.DataFrame(
        {c[len(CONFIG_PREFIX) :]: _typed(trials[c]) for c in columns}, index=trials.index
    )


def objective(data: SweepData) -> pd.Series:
    """Each trial's ranked value: its best or its last value, as the sweep's ``rank_by`` says."""
    column = "last" if data.settings.get("rank_by") == "last" else "best"
    if data.trials.empty:
        import pandas as pd

        return pd.Series(dtype=float)
    return data.trials[column].astype(float)


def ranked_table(data: SweepData) -> pd.DataFrame:
    """The trials by rank: ``rank, trial_id, status, best, last, iterations, restarts`` and
    then each config param by its dotted name (typed, see :func:`param_frame`).

    ``best``/``last`` are the best and the last reported value of the sweep's metric.
    """
    import pandas as pd

    head = ["rank", "trial_id", "status", "best", "last", "iterations", "restarts"]
    if data.trials.empty:
        return pd.DataFrame(columns=head)
    table = pd.concat([data.trials[head], param_frame(data)], axis=1)
    return table.reset_index(drop=True)
