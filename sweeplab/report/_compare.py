"""``sweeplab compare``: recorded sweeps (or the runs of one sweep) side by side.

Each compared sweep is one execution (one MLflow parent run). The comparison is made on one
metric and mode: the sweeps' shared objective, or the one asked for.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sweeplab.errors import SpecError
from sweeplab.report._compare_curves import anytime_curve, budget_tables, final_best
from sweeplab.report._table import CONFIG_PREFIX, _parse

if TYPE_CHECKING:
    import pandas as pd
    from plotly.graph_objects import Figure

    from sweeplab.space import Space
    from sweeplab.tracking import SweepData, SweepExecution

RUN_SEPARATOR = "@"
NOT_RECORDED = "not recorded"


@dataclass(frozen=True)
class ComparedSweep:
    """One compared execution of a sweep and its anytime curve.

    Attributes:
        label: Its name in the tables and figures: the sweep name, or ``name@<run id prefix>``
            when several runs of one name are compared.
        data: The execution as ``load_sweep`` read it.
        curve: Its anytime curve (see :func:`anytime_curve`).
        space: The search space it logged, ``None`` if none was read.
        started: When its parent run started, ``None`` if not known.
    """

    label: str
    data: SweepData
    curve: pd.DataFrame
    space: Space | None = None
    started: datetime | None = None

    @property
    def final_best(self) -> float:
        """The best value of the compared metric any of its trials reported (NaN if none)."""
        return final_best(self.curve)


@dataclass(frozen=True)
class Comparison:
    """Sweeps compared on one metric (see :func:`compare_sweeps`).

    Attributes:
        metric: The compared metric; ``mode``: ``"min"`` or ``"max"``.
        sweeps: The compared executions, in the order asked for.
        summary: One row per sweep: its run, searcher, scheduler, trials, reports (its
            budget), wall time, final best, when it reached it, and the trial that did.
        budget_to_target: Rows: the sweep whose budget is counted; columns: the sweep whose
            final best is the target. The fraction of the row sweep's reports spent until it
            reached the target, ``"never"``, or ``"n/a"`` (the target sweep has no value).
        reports_to_target: The same as report counts.
        best_configs: One row per dotted param, one column per sweep: the config of the trial
            that reached the sweep's final best.
        spaces: One row per dotted param of the logged spaces, one column per sweep: its
            domain, empty where that space lacks it, ``"not recorded"`` for a sweep that
            logged no space.
    """

    metric: str
    mode: str
    sweeps: tuple[ComparedSweep, ...]
    summary: pd.DataFrame
    budget_to_target: pd.DataFrame
    reports_to_target: pd.DataFrame
    best_configs: pd.DataFrame
    spaces: pd.DataFrame


def parse_selector(text: str) -> tuple[str, str | None]:
    """``NAME`` or ``NAME@RUN`` (a parent run id, or a prefix of one) to ``(name, run)``."""
    name, separator, run = text.partition(RUN_SEPARATOR)
    if not name or (separator and not run) or RUN_SEPARATOR in run:
        raise SpecError(
            f"sweep {text!r}: give NAME (its latest run) or NAME@RUN (a parent run id or a"
            " prefix of one)."
        )
    return name, run if separator else None


def executions_of(
    text: str, tracking_uri: str | None = None, *, every_run: bool = False
) -> list[SweepExecution]:
    """The executions a selector names.

    ``NAME`` is the sweep's latest execution (with ``every_run``: all of them, oldest first);
    ``NAME@RUN`` is the execution whose parent run id is, or starts with, ``RUN``.

    Raises:
        UnknownSweepError: No sweep of that name, or no run of it with that id.
        SpecError: A malformed selector, or a run prefix that matches several runs.
    """
    from sweeplab.tracking import UnknownSweepError, resolve_tracking_uri, sweep_executions

    uri = resolve_tracking_uri(tracking_uri)
    name, run = parse_selector(text)
    executions = sweep_executions(name, uri)
    if run is None:
        return executions if every_run else executions[-1:]
    matches = [e for e in executions if e.run_id.startswith(run)]
    if not matches:
        raise UnknownSweepError(
            f"No run {run!r} of the sweep {name!r} in the tracking store {uri!r} (its runs:"
            f" {', '.join(e.run_id for e in executions)})."
        )
    if len(matches) > 1:
        raise SpecError(
            f"sweep {text!r}: the run prefix {run!r} matches {len(matches)} runs of"
            f" {name!r} ({', '.join(e.run_id for e in matches)}); give more of the id."
        )
    return matches


def _labels(identities: Sequence[tuple[str, str]]) -> list[str]:
    """The sweep name where it is unique among the compared runs, else ``name@<run prefix>``."""
    names = [name for name, _ in identities]
    labels = []
    for name, run_id in identities:
        if names.count(name) == 1:
            labels.append(name)
            continue
        siblings = [r for n, r in identities if n == name and r != run_id]
        width = 8
        while any(r[:width] == run_id[:width] for r in siblings) and width < len(run_id):
            width += 4
        labels.append(f"{name}{RUN_SEPARATOR}{run_id[:width]}")
    return labels


def _objective(datas: Sequence[SweepData], metric: str | None, mode: str | None) -> tuple[str, str]:
    """The metric and mode of the comparison; ``SpecError`` when the sweeps do not agree."""
    if mode is not None and mode not in ("min", "max"):
        raise SpecError(f"mode must be 'min' or 'max', but got {mode!r}.")
    if metric is None:
        if mode is not None:
            raise SpecError(f"mode {mode!r} needs a metric to apply to (--metric NAME).")
        objectives = {(d.metric, d.mode) for d in datas}
        if len(objectives) > 1:
            each = "; ".join(f"{d.name}: {d.mode} {d.metric}" for d in datas)
            raise SpecError(
                f"the sweeps optimise different objectives ({each}); name the metric to"
                " compare on (--metric NAME, and --mode when it is no sweep's objective)."
            )
        return objectives.pop()
    if mode is not None:
        return metric, mode
    modes = {o.mode for d in datas for o in d.objectives if o.name == metric}
    if len(modes) == 1:
        return metric, modes.pop()
    why = "is no compared sweep's objective"
    if modes:
        why = "is minimised by one sweep and maximised by another"
    raise SpecError(f"metric {metric!r} {why}: give its mode (--mode min|max).")


def _check_distinct(identities: Sequence[tuple[str, str]]) -> None:
    """Each run at most once: ``(sweep name, parent run id)`` pairs."""
    seen: set[str] = set()
    for name, run_id in identities:
        if run_id in seen:
            raise SpecError(f"sweep {name!r}: its run {run_id} is selected twice.")
        seen.add(run_id)


def _check_reported(data: SweepData, metric: str) -> None:
    history = data.history
    if history.empty or (history["metric"] == metric).any():
        return
    reported = ", ".join(sorted(set(history["metric"])))
    raise SpecError(
        f"sweep {data.name!r} (run {data.parent_run_id}) reported no metric {metric!r}"
        f" (it reported: {reported})."
    )


def _config_of(data: SweepData, trial_id: Any) -> dict[str, Any]:
    trials = data.trials
    if trials.empty or not isinstance(trial_id, str):
        return {}
    rows = trials[trials["trial_id"] == trial_id]
    if rows.empty:
        return {}
    row = rows.iloc[0]
    return {
        column[len(CONFIG_PREFIX) :]: _parse(row[column])
        for column in trials.columns
        if column.startswith(CONFIG_PREFIX) and isinstance(row[column], str)
    }


def _summary(sweeps: Sequence[ComparedSweep]) -> pd.DataFrame:
    import pandas as pd

    rows = []
    for sweep in sweeps:
        curve, data = sweep.curve, sweep.data
        best = sweep.final_best
        reached = curve[curve["best"] == best].iloc[0] if not math.isnan(best) else None
        rows.append(
            {
                "sweep": sweep.label,
                "run": data.parent_run_id,
                "started": sweep.started,
                "searcher": data.settings.get("searcher", ""),
                "scheduler": data.settings.get("scheduler", ""),
                "trials": len(data.trials),
                "reports": len(curve),
                "wall time (s)": float(curve["seconds"].iloc[-1]) if len(curve) else math.nan,
                "final best": best,
                "reached at report": None if reached is None else int(reached["budget"]),
                "reached at (s)": math.nan if reached is None else float(reached["seconds"]),
                "best trial": None if reached is None else reached["trial_id"],
            }
        )
    frame = pd.DataFrame(rows).set_index("sweep")
    frame["reached at report"] = frame["reached at report"].astype("Int64")
    return frame


def _side_by_side(columns: dict[str, dict[str, Any]], fill: dict[str, Any]) -> pd.DataFrame:
    """One row per key of any column (in order of first appearance), one column per sweep."""
    import pandas as pd

    keys: dict[str, None] = {}
    for values in columns.values():
        keys.update(dict.fromkeys(values))
    frame = pd.DataFrame(
        {
            label: [values.get(key, fill[label]) for key in keys]
            for label, values in columns.items()
        },
        index=list(keys),
        dtype=object,
    )
    frame.index.name = "param"
    return frame


def compare_sweeps(
    sweeps: Sequence[str | SweepData],
    *,
    metric: str | None = None,
    mode: str | None = None,
    tracking_uri: str | None = None,
) -> Comparison:
    """Compares recorded sweeps, or the runs of one sweep, on one metric.

    Args:
        sweeps: Sweep selectors or loaded sweeps. ``"NAME"`` is the sweep's latest run;
            ``"NAME@RUN"`` the run whose parent run id is, or starts with, ``RUN``; a single
            ``"NAME"`` alone is every run of the sweep, oldest first. A ``SweepData`` is
            compared as given (its space is not read).
        metric: The metric to compare on. Default: the sweeps' objective (of a multi-objective
            sweep, its first objective), which must be the same metric and mode in all.
        mode: ``"min"`` or ``"max"``, with ``metric``: needed only when the metric is no
            compared sweep's objective (or the sweeps disagree on its mode).
        tracking_uri: The tracking store (default: MLflow's own resolution).

    Returns:
        The comparison: each sweep's anytime curve, the summary, the budget each sweep needed
        to reach each other's final best, and the best configs and spaces side by side.

    Raises:
        UnknownSweepError: A sweep or run that the tracking store does not hold.
        SpecError: A malformed selector, sweeps with different objectives and no ``metric``,
            a metric a sweep did not report, or a mode that cannot be told.
    """
    from sweeplab.report._space import read_space
    from sweeplab.tracking import SweepData, load_sweep

    if not sweeps:
        raise SpecError("compare needs at least one sweep, but got none.")
    selected: list[SweepData | SweepExecution] = []
    for item in sweeps:
        if isinstance(item, SweepData):
            selected.append(item)
        else:
            selected += executions_of(item, tracking_uri, every_run=len(sweeps) == 1)
    _check_distinct(
        [(c.name, c.parent_run_id if isinstance(c, SweepData) else c.run_id) for c in selected]
    )
    datas = [
        c if isinstance(c, SweepData) else load_sweep(c.name, tracking_uri, run_id=c.run_id)
        for c in selected
    ]
    metric, mode = _objective(datas, metric, mode)
    for data in datas:
        _check_reported(data, metric)
    # Read once the selection is known to be valid: a refused comparison reads no artifact.
    spaces_read = [
        None if isinstance(c, SweepData) else read_space(d, tracking_uri=tracking_uri)
        for c, d in zip(selected, datas, strict=True)
    ]
    labels = _labels([(d.name, d.parent_run_id) for d in datas])
    compared = tuple(
        ComparedSweep(
            label,
            data,
            anytime_curve(data.history, metric, mode),
            space,
            None if isinstance(chosen, SweepData) else chosen.started,
        )
        for label, data, space, chosen in zip(labels, datas, spaces_read, selected, strict=True)
    )
    fractions, reports = budget_tables({s.label: s.curve for s in compared}, mode)
    summary = _summary(compared)
    configs = {s.label: _config_of(s.data, summary.loc[s.label, "best trial"]) for s in compared}
    spaces = {s.label: dict(s.space.describe()) if s.space else {} for s in compared}
    return Comparison(
        metric=metric,
        mode=mode,
        sweeps=compared,
        summary=summary,
        budget_to_target=fractions,
        reports_to_target=reports,
        best_configs=_side_by_side(configs, dict.fromkeys(configs, "")),
        spaces=_side_by_side(spaces, {s.label: "" if s.space else NOT_RECORDED for s in compared}),
    )


def comparison_figures(comparison: Comparison) -> dict[str, Figure]:
    """The anytime curves of a comparison as two plotly figures, one line per sweep.

    Returns:
        ``{"budget": ..., "wall time": ...}``: the best value so far against the reports spent,
        and against the seconds since each sweep's first report. A sweep keeps its colour in
        both.
    """
    import plotly.graph_objects as go
    from plotly.colors import qualitative

    palette = qualitative.Plotly
    axes = {"budget": ("budget", "reports (budget spent)"), "wall time": ("seconds", "seconds")}
    figures = {}
    for key, (column, title) in axes.items():
        figure = go.Figure()
        for index, sweep in enumerate(comparison.sweeps):
            curve = sweep.curve[sweep.curve["best"].notna()]
            figure.add_trace(
                go.Scatter(
                    x=curve[column],
                    y=curve["best"],
                    customdata=curve[["best_trial_id", "budget"]].to_numpy(),
                    mode="lines",
                    line={"shape": "hv", "color": palette[index % len(palette)]},
                    name=sweep.label,
                    hovertemplate=(
                        f"{sweep.label}<br>report %{{customdata[1]}}, %{{x}}<br>best"
                        f" {comparison.metric} %{{y:.6g}} (%{{customdata[0]}})<extra></extra>"
                    ),
                )
            )
        figure.update_layout(
            title=f"best {comparison.metric} so far ({comparison.mode}) against {key}",
            xaxis_title=title if key == "budget" else "seconds since the sweep's first report",
            yaxis_title=f"best {comparison.metric}",
            legend_title="sweep",
            template="plotly_white",
        )
        figures[key] = figure
    return figures
