"""The comparison of sweeps as one self-contained HTML file (inline CSS, plotly.js inlined once)."""

from __future__ import annotations

from datetime import datetime, timezone
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sweeplab.report._compare import Comparison, comparison_figures
from sweeplab.report._compare_curves import NEVER, NO_TARGET
from sweeplab.report._html import CSS, _cell, _div, _plotly_js

if TYPE_CHECKING:
    import pandas as pd
    from plotly.graph_objects import Figure

_EXTRA_CSS = """
tr.differs td, tr.differs th { background: #fff6e0; }
td.never { color: #a33; }
"""

_BUDGET_CAPTION = (
    "Each sweep's best value so far after each report, one line per sweep. A report is one"
    " reported value of the metric by any trial; the reports are counted in the order they"
    " were logged, across all the sweep's trials, stopped ones included. A NaN or infinite"
    " report spends budget and improves nothing."
)
_TIME_CAPTION = (
    "The same curves against the seconds since each sweep's first report (a resumed run's"
    " interruption included)."
)
_TARGET_NOTE = (
    "Row: the sweep whose budget is counted; column: the sweep whose final best is the"
    " target. A cell is the fraction of the row's reports spent until its best so far was at"
    " least as good as the target (in brackets: reports spent, of all its reports);"
    f" <b>{NEVER}</b>: it never got there; <b>{NO_TARGET}</b>: the target sweep reported no"
    " finite value. The diagonal is when each sweep reached its own final best."
)
_CONFIG_NOTE = (
    "The config of the trial that first reported each sweep's final best (params by their"
    " dotted MLflow names). Rows where the sweeps differ are highlighted."
)
_SPACE_NOTE = (
    "The search space each sweep logged (a conditional branch's params under the branch's"
    " name). Rows where the sweeps differ are highlighted."
)


def _text(value: Any) -> str:
    if isinstance(value, datetime):
        return value.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    return _cell(value)


def _frame_table(frame: pd.DataFrame, *, table_id: str, mark_differences: bool = False) -> str:
    """An indexed frame as a table; a row whose cells differ is marked ``differs``."""
    index_name = escape(str(frame.index.name or ""))
    head = f'<th class="text">{index_name}</th>' + "".join(
        f"<th>{escape(str(c))}</th>" for c in frame.columns
    )
    rows = []
    for key, row in frame.iterrows():
        cells = [_text(v) for v in row]
        marked = ' class="differs"' if mark_differences and len(set(cells)) > 1 else ""
        body = "".join(f"<td>{escape(c)}</td>" for c in cells)
        rows.append(f'<tr{marked}><th class="text">{escape(str(key))}</th>{body}</tr>')
    return (
        f'<div class="scroll"><table id="{table_id}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def _target_table(comparison: Comparison) -> str:
    """The budget-to-target table; each cell carries its fraction and count as data attributes."""
    fractions, reports = comparison.budget_to_target, comparison.reports_to_target
    totals = {s.label: len(s.curve) for s in comparison.sweeps}
    head = '<th class="text">sweep \\ target</th>' + "".join(
        f"<th>{escape(str(c))}</th>" for c in fractions.columns
    )
    rows = []
    for label in fractions.index:
        cells = []
        for target in fractions.columns:
            fraction, spent = fractions.loc[label, target], reports.loc[label, target]
            if isinstance(fraction, str):
                cells.append(
                    f'<td class="never" data-fraction="{fraction}" data-reports="{fraction}">'
                    f"{fraction}</td>"
                )
                continue
            cells.append(
                f'<td data-fraction="{fraction!r}" data-reports="{spent}">'
                f"{fraction:.2f} ({spent} of {totals[label]})</td>"
            )
        rows.append(f'<tr><th class="text">{escape(str(label))}</th>{"".join(cells)}</tr>')
    return (
        '<div class="scroll"><table id="budget-to-target">'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )


def _figure(figure: Figure, caption: str) -> str:
    return f"<figure>{_div(figure)}<figcaption>{caption}</figcaption></figure>"


def _section(anchor: str, heading: str, body: str, note: str = "") -> str:
    note_html = f'<p class="note">{note}</p>' if note else ""
    return f'<section id="{anchor}"><h2>{heading}</h2>{body}{note_html}</section>'


def render_comparison(comparison: Comparison) -> str:
    """The comparison as one HTML document that fetches nothing."""
    figures = comparison_figures(comparison)
    objective = f"{comparison.mode} {comparison.metric}"
    labels = ", ".join(s.label for s in comparison.sweeps)
    summary = comparison.summary.rename(columns={"final best": f"final best {comparison.metric}"})
    sections = [
        f"<header><h1>Comparing {len(comparison.sweeps)} sweep(s) on {escape(objective)}</h1>"
        f'<p class="sub">{escape(labels)}</p></header>',
        _section(
            "summary",
            "Summary",
            _frame_table(summary, table_id="summary"),
            "Reports: every reported value of the metric (the budget the sweep spent); wall"
            " time: from its first report to its last; final best: the best value any of its"
            " trials reported, when it was first reported, and by which trial.",
        ),
        _section(
            "anytime-budget",
            "Best so far against budget",
            _figure(figures["budget"], _BUDGET_CAPTION),
        ),
        _section(
            "anytime-time",
            "Best so far against wall time",
            _figure(figures["wall time"], _TIME_CAPTION),
        ),
        _section(
            "budget-to-target",
            "Budget to reach each sweep's final best",
            _target_table(comparison),
            _TARGET_NOTE,
        ),
        _section(
            "best-configs",
            "Best configs side by side",
            _frame_table(comparison.best_configs, table_id="best-configs", mark_differences=True),
            _CONFIG_NOTE,
        ),
    ]
    if comparison.spaces.empty:
        sections.append(
            _section("spaces", "Search spaces", "", "No compared sweep has a recorded space.")
        )
    else:
        sections.append(
            _section(
                "spaces",
                "Search spaces",
                _frame_table(comparison.spaces, table_id="spaces", mark_differences=True),
                _SPACE_NOTE,
            )
        )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>sweeplab compare: {escape(labels)}</title>"
        f"<style>{CSS}{_EXTRA_CSS}</style>"
        f'<script type="text/javascript">{_plotly_js()}</script></head>'
        f"<body><main>{''.join(sections)}</main></body></html>\n"
    )


def write_comparison(comparison: Comparison, out_path: str | Path) -> Path:
    """Writes a comparison (:func:`compare_sweeps`) as one self-contained HTML file.

    The file works offline (inline CSS, plotly.js inlined once, each figure a plotly div): the
    summary of each sweep, its anytime curves against budget and against wall time, the budget
    each sweep needed to reach each sweep's final best, the best configs and the search spaces
    side by side.

    Returns:
        The path written.
    """
    path = Path(out_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_comparison(comparison), encoding="utf-8")
    return path
