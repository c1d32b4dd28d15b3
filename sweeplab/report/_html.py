"""``sweeplab report``: one self-contained HTML file (inline CSS, plotly.js inlined once)."""

from __future__ import annotations

import json
import math
from datetime import datetime, timezone
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sweeplab.report._pareto import pareto_figures
from sweeplab.report._registry import REPORT_VIEWS, sweep_figures
from sweeplab.report._space import read_space
from sweeplab.report._study import sweep_study
from sweeplab.report._table import ranked_table

if TYPE_CHECKING:
    import pandas as pd
    from plotly.graph_objects import Figure

    from sweeplab.space import Space
    from sweeplab.tracking import SweepData

CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0;
       color: #1d2330; background: #f6f7f9; }
main { max-width: 1180px; margin: 0 auto; padding: 24px 28px 48px; }
h1 { font-size: 1.6rem; margin: 0 0 4px; }
h2 { font-size: 1.15rem; margin: 32px 0 10px; border-bottom: 1px solid #d9dde4;
     padding-bottom: 4px; }
.sub { color: #5b6475; margin: 0 0 16px; }
.facts { display: grid; grid-template-columns: repeat(auto-fill, minmax(210px, 1fr));
         gap: 10px; }
.fact { background: #fff; border: 1px solid #e1e5eb; border-radius: 8px; padding: 10px 12px; }
.fact b { display: block; font-size: 0.75rem; color: #5b6475; font-weight: 600;
          text-transform: uppercase; letter-spacing: 0.04em; }
.fact span { font-size: 1.05rem; }
table { border-collapse: collapse; background: #fff; font-size: 0.85rem; width: 100%; }
th, td { border: 1px solid #e1e5eb; padding: 4px 8px; text-align: right; white-space: nowrap; }
th { background: #eef1f5; position: sticky; top: 0; }
td.text, th.text { text-align: left; }
tr.best td { background: #e6f4ea; font-weight: 600; }
.scroll { overflow-x: auto; }
.rows { max-height: 40rem; overflow-y: auto; }
figure { margin: 0; background: #fff; border: 1px solid #e1e5eb; border-radius: 8px;
         padding: 8px; }
figcaption, .note { color: #5b6475; font-size: 0.85rem; margin-top: 6px; }
pre { background: #fff; border: 1px solid #e1e5eb; border-radius: 8px; padding: 12px;
      overflow-x: auto; }
"""


def _plotly_js() -> str:
    from plotly.offline import get_plotlyjs

    # Inside a <script> element only "</script" could end it early; the bundle has none, but a
    # future one must not break the page.
    return get_plotlyjs().replace("</script", "<\\/script")


def _div(figure: Figure) -> str:
    # plotly.js is inlined once in the head; each figure is its div and a Plotly.newPlot call.
    # No logo link and no MathJax: the page fetches nothing.
    return str(
        figure.to_html(
            full_html=False,
            include_plotlyjs=False,
            include_mathjax=False,
            config={"displaylogo": False, "responsive": True},
        )
    )


def _cell(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    try:
        import pandas as pd

        if pd.isna(value):
            return ""
    except (TypeError, ValueError):
        pass
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _table(table: pd.DataFrame, best_trial_id: str | None) -> str:
    text_columns = {"trial_id", "status"} | {c for c in table.columns if table[c].dtype == object}

    def cls(column: str) -> str:
        return ' class="text"' if column in text_columns else ""

    head = "".join(f"<th{cls(c)}>{escape(str(c))}</th>" for c in table.columns)
    rows = []
    for record in table.to_dict("records"):
        best = ' class="best"' if record.get("trial_id") == best_trial_id else ""
        cells = "".join(f"<td{cls(c)}>{escape(_cell(record[c]))}</td>" for c in table.columns)
        rows.append(f"<tr{best}>{cells}</tr>")
    return (
        # A long table scrolls in its box (its head stays), so the views below stay near.
        f'<div class="scroll rows"><table><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def _wall_time(tracking_uri: str | None, parent_run_id: str) -> str:
    from sweeplab.tracking import tracking_client

    client, _ = tracking_client(tracking_uri)
    info = client.get_run(parent_run_id).info
    start = datetime.fromtimestamp(info.start_time / 1000, tz=timezone.utc)
    started = start.strftime("%Y-%m-%d %H:%M UTC")
    if not info.end_time:
        return f"{info.status.lower()} since {started}"
    seconds = round((info.end_time - info.start_time) / 1000)
    minutes, seconds = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    span = f"{hours}h {minutes:02d}m {seconds:02d}s" if hours else f"{minutes}m {seconds:02d}s"
    return f"{span} (started {started}, {info.status.lower()})"


def _facts(data: SweepData, wall_time: str) -> list[tuple[str, str]]:
    counts = data.trials["status"].value_counts() if not data.trials.empty else {}
    by_status = " · ".join(f"{n} {s}" for s, n in sorted(dict(counts).items())) or "none"
    best = data.best.get("value")
    best_text = "n/a" if best is None else f"{best:.6g} ({data.best.get('trial_id', '?')})"
    rank_by = data.settings.get("rank_by", "best")
    return [
        ("objective", f"{data.mode} {data.metric} ({rank_by} value)"),
        ("searcher", data.settings.get("searcher", "?")),
        ("scheduler", data.settings.get("scheduler", "?")),
        ("trials", f"{len(data.trials)}: {by_status}"),
        (f"best {data.metric}", best_text),
        ("wall time", wall_time),
    ]


def _figure_section(anchor: str, heading: str, figure: Figure, caption: str, level: int) -> str:
    return (
        f'<section id="{anchor}"><h{level}>{heading}</h{level}><figure>{_div(figure)}'
        f"<figcaption>{caption}</figcaption></figure></section>"
    )


def _metric_sections(
    data: SweepData,
    objective: str | None,
    space: Space | None,
    *,
    suffix: str = "",
    level: int = 2,
) -> list[str]:
    """The views of one objective, one section each in the order of ``REPORT_VIEWS`` (anchors
    end in ``suffix``)."""
    figures = sweep_figures(data, objective=objective, space=space)
    return [
        _figure_section(f"{view.anchor}{suffix}", view.title, figures[key], view.caption, level)
        for key, view in REPORT_VIEWS.items()
    ]


def _document(title: str, sections: list[str]) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>sweeplab report: {title}</title><style>{CSS}</style>"
        f'<script type="text/javascript">{_plotly_js()}</script></head>'
        f"<body><main>{''.join(sections)}</main></body></html>\n"
    )


def _header(data: SweepData, facts: list[tuple[str, str]]) -> str:
    cards = "".join(
        f'<div class="fact"><b>{escape(k)}</b><span>{escape(v)}</span></div>' for k, v in facts
    )
    return (
        f"<header><h1>Sweep {escape(data.name)}</h1>"
        f'<p class="sub">parent run {escape(data.parent_run_id)}</p>'
        f'<div class="facts">{cards}</div></header>'
    )


def _config_section(data: SweepData, heading: str) -> str:
    config = json.dumps(data.best.get("config", {}), indent=2, sort_keys=True, default=str)
    meta = {k: v for k, v in data.best.items() if k != "config"}
    return (
        f'<section id="best-config"><h2>{heading}</h2>'
        f"<pre>{escape(config)}</pre>"
        f"<pre>{escape(json.dumps(meta, indent=2, sort_keys=True, default=str))}</pre>"
        "</section>"
    )


def render_report(
    data: SweepData, *, space: Space | None = None, wall_time: str = "unknown"
) -> str:
    """The report of a loaded sweep as one HTML document (no external resource).

    ``space`` is the sweep's search space (see :func:`sweep_study`); ``None`` infers the
    distributions from the observed values. A multi-objective sweep gets its Pareto front(s),
    its hypervolume against budget and the views of each objective instead (see
    :func:`render_pareto_report`).
    """
    if len(data.objectives) > 1:
        return render_pareto_report(data, space=space, wall_time=wall_time)
    table = ranked_table(data)
    sections = [
        _header(data, _facts(data, wall_time)),
        '<section id="trials"><h2>Trials by rank</h2>'
        f"{_table(table, data.best.get('trial_id'))}"
        '<p class="note">Every trial with its status and every config param; an empty cell is a'
        " param of a conditional branch the trial did not take.</p></section>",
        *_metric_sections(data, None, space),
        _config_section(data, "Best config"),
    ]
    return _document(escape(data.name), sections)


def _pareto_facts(data: SweepData, wall_time: str) -> list[tuple[str, str]]:
    summary = data.summary
    assert summary is not None
    counts = data.trials["status"].value_counts() if not data.trials.empty else {}
    by_status = " · ".join(f"{n} {s}" for s, n in sorted(dict(counts).items())) or "none"
    reference = summary.reference_point
    if summary.hypervolume is None or reference is None:
        volume = "n/a: no trial reported every objective"
    else:
        corner = ", ".join(
            f"{o.name} {r:.4g}" for o, r in zip(data.objectives, reference, strict=True)
        )
        volume = f"{summary.hypervolume:.6g} (reference point: {corner})"
    rule = summary.pick_rule or "the first trial of the ranking"
    picked = summary.picked
    if picked is None:
        pick = f"none: no front-1 trial passes ({rule})"
    else:
        values = ", ".join(f"{k} {v:.6g}" for k, v in (picked.values or {}).items())
        pick = f"{picked.trial_id}: {values} ({rule})"
    return [
        ("objectives", " · ".join(f"{o.mode} {o.name}" for o in data.objectives)),
        ("constraints", ", ".join(str(c) for c in data.constraints) or "none"),
        ("searcher", data.settings.get("searcher", "?")),
        ("scheduler", data.settings.get("scheduler", "?")),
        ("trials", f"{len(data.trials)}: {by_status}"),
        ("front 1", f"{len(summary.front)} feasible non-dominated trial(s)"),
        ("hypervolume", volume),
        ("pick", pick),
        ("wall time", wall_time),
    ]


_FRONT_CAPTION = (
    "Each trial's point: its last report that held every objective, stopped trials included."
    " Red: the feasible front 1 (over every objective); blue: the other feasible trials; grey:"
    " trials that break a constraint; the star: the picked trial. Hover a point for its"
    " trial, params and rank; drag to zoom."
)
_HYPERVOLUME_CAPTION = (
    "The hypervolume of the feasible points of the trials ended so far, against the iterations"
    " they spent, with the reference point of the sweep's summary (its last value is the"
    " sweep's hypervolume)."
)
_OBJECTIVE_NOTE = (
    "The views of one objective, every trial coloured by its status. The optimisation history"
    " shows each trial's value at its point (its last report that held every objective); the"
    " other views read the objective's reported values at a rung, or by best or last value."
)


def render_pareto_report(
    data: SweepData, *, space: Space | None = None, wall_time: str = "unknown"
) -> str:
    """The report of a multi-objective sweep as one HTML document (no external resource).

    The header (objectives, constraints, hypervolume and the pick), the ranked table with each
    trial's front and objective values, the Pareto front of each pair of objectives and the
    hypervolume against budget (:func:`pareto_figures`), the views of each objective
    (:func:`sweep_figures`), and the picked config.
    """
    study = sweep_study(data, space=space)
    figures = pareto_figures(data, study=study)
    table = ranked_table(data)
    sections = [
        _header(data, _pareto_facts(data, wall_time)),
        '<section id="trials"><h2>Trials by rank</h2>'
        f"{_table(table, data.best.get('trial_id'))}"
        '<p class="note">Feasible trials by Pareto front (then by the first objective, the next,'
        " and trial id), then infeasible ones by how far they break the constraints, then"
        " trials without every objective. <code>front</code> is empty for a trial without a"
        " point; each objective's column is its value at the trial's point. The picked trial"
        " is highlighted.</p></section>",
        '<section id="pareto-front"><h2>Pareto front</h2>',
    ]
    for index, (key, figure) in enumerate(figures.items()):
        if key == "hypervolume":
            continue
        sections.append(_figure_section(f"front-{index}", escape(key), figure, _FRONT_CAPTION, 3))
    sections.append("</section>")
    sections.append(
        _figure_section(
            "hypervolume",
            "Hypervolume against budget",
            figures["hypervolume"],
            _HYPERVOLUME_CAPTION,
            2,
        )
    )
    for index, objective in enumerate(data.objectives):
        sections.append(
            f'<section id="objective-{index}">'
            f"<h2>Objective {escape(objective.name)} ({objective.mode})</h2>"
            f'<p class="note">{_OBJECTIVE_NOTE}</p>'
        )
        sections += _metric_sections(data, objective.name, space, suffix=f"-{index}", level=3)
        sections.append("</section>")
    sections.append(_config_section(data, "Picked config"))
    return _document(escape(data.name), sections)


def write_report(sweep_name: str, out_path: str | Path, *, tracking_uri: str | None = None) -> Path:
    """Writes the HTML report of a sweep's latest execution and returns its path.

    The file is self-contained and works offline (inline CSS, plotly.js inlined once, each
    figure a plotly div): a header (sweep name, searcher, scheduler, trials by status, best
    metric, wall time of the parent run), the ranked trial table, and the views of every trial
    (:func:`sweep_figures`): learning curves, parallel coordinates, slice, optimisation history,
    parameter importance, the last three switchable between rungs inside the page; then the
    best config. A multi-objective sweep
    gets its objectives, constraints, hypervolume and pick in the header, each trial's front and
    objective values in the table, the Pareto front of each pair of objectives, the hypervolume
    against budget, these views for each objective, and the picked config.

    Raises:
        UnknownSweepError: No sweep of that name in the tracking store.
    """
    from sweeplab.tracking import load_sweep

    data = load_sweep(sweep_name, tracking_uri=tracking_uri)
    html = render_report(
        data,
        space=read_space(data, tracking_uri=tracking_uri),
        wall_time=_wall_time(tracking_uri, data.parent_run_id),
    )
    path = Path(out_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(html, encoding="utf-8")
    return path
