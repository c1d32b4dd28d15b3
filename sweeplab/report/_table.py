"""Typed config params and the ranked trial table."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from sweeplab.keys import FRONT_INFEASIBLE, STATUS_FINISHED, STATUS_STOPPED_EARLY

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

    Of a multi-objective sweep: ``rank, trial_id, status, front``, one column per objective
    (its value at the trial's point), ``violation`` when the sweep has constraints (0:
    feasible), ``iterations, restarts``, then the params. ``front`` is the trial's Pareto front
    among the feasible trials, ``"infeasible"``, or empty for a trial without a point.
    """
    import pandas as pd

    several = len(data.objectives) > 1
    names = [o.name for o in data.objectives]
    head = ["rank", "trial_id", "status"]
    head += ["front", *names] if several else ["best", "last"]
    head += ["violation"] if several and data.constraints else []
    head += ["iterations", "restarts"]
    if data.trials.empty:
        return pd.DataFrame(columns=head)
    trials = data.trials
    if several:
        trials = pd.concat([trials, _pareto_columns(data)], axis=1)
    table = pd.concat([trials[head], param_frame(data)], axis=1)
    return table.reset_index(drop=True)


def _pareto_columns(data: SweepData) -> pd.DataFrame:
    """Each trial's front and objective values (and violation), from the ranked summary."""
    import math

    import pandas as pd

    records = {r.trial_id: r for r in (data.summary.trials if data.summary else ())}
    rows = []
    for trial_id in data.trials["trial_id"]:
        record = records.get(str(trial_id))
        values = (record.values if record is not None else None) or {}
        if record is None or not record.has_point:
            front: Any = None
        else:
            front = record.front if record.front is not None else FRONT_INFEASIBLE
        row: dict[str, Any] = {"front": front}
        row.update({o.name: float(values.get(o.name, math.nan)) for o in data.objectives})
        row["violation"] = record.violation if record is not None else math.nan
        rows.append(row)
    return pd.DataFrame(rows, index=data.trials.index).astype({"front": object})
