"""``sweeplab report``: one self-contained HTML file (inline CSS, figures as base64 PNG)."""

from __future__ import annotations

import base64
import io
import json
import math
from datetime import datetime, timezone
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sweeplab.report._figures import importance_figure, learning_curves, parallel_coordinates
from sweeplab.report._importance import parameter_importance
from sweeplab.report._table import ranked_table

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

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
figure { margin: 0; background: #fff; border: 1px solid #e1e5eb; border-radius: 8px;
         padding: 8px; }
figure img { max-width: 100%; height: auto; display: block; margin: 0 auto; }
figcaption, .note { color: #5b6475; font-size: 0.85rem; margin-top: 6px; }
pre { background: #fff; border: 1px solid #e1e5eb; border-radius: 8px; padding: 12px;
      overflow-x: auto; }
"""


def _png(figure: Figure) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _img(figure: Figure, alt: str) -> str:
    return f'<img alt="{escape(alt)}" src="data:image/png;base64,{_png(figure)}">'


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
        f'<div class="scroll"><table><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def _wall_time(tracking_uri: str | None, parent_run_id: str) -> str:
    from sweeplab.tracking._read import _client

    client, _ = _client(tracking_uri)
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


def render_report(data: SweepData, *, wall_time: str = "unknown") -> str:
    """The report of a loaded sweep as one HTML document (no external resource)."""
    importance = parameter_importance(data)
    table = ranked_table(data)
    facts = "".join(
        f'<div class="fact"><b>{escape(k)}</b><span>{escape(v)}</span></div>'
        for k, v in _facts(data, wall_time)
    )
    note = importance.attrs.get("note")
    importance_note = f'<p class="note">{escape(note)}</p>' if note else ""
    best_config = json.dumps(data.best.get("config", {}), indent=2, sort_keys=True, default=str)
    best_meta = {k: v for k, v in data.best.items() if k != "config"}
    name = escape(data.name)
    sections = [
        f"<header><h1>Sweep {name}</h1>"
        f'<p class="sub">parent run {escape(data.parent_run_id)}</p>'
        f'<div class="facts">{facts}</div></header>',
        '<section id="trials"><h2>Trials by rank</h2>'
        f"{_table(table, data.best.get('trial_id'))}</section>",
        '<section id="learning-curves"><h2>Learning curves</h2><figure>'
        f"{_img(learning_curves(data), f'{data.metric} per step by trial')}"
        "<figcaption>Darker is a better rank; the best trial is drawn thick.</figcaption>"
        "</figure></section>",
        '<section id="parallel-coordinates"><h2>Parallel coordinates</h2><figure>'
        f"{_img(parallel_coordinates(data), 'config params and metric by trial')}"
        "<figcaption>One line per trial with a value; <i>n/a</i>: param of a branch the trial"
        " did not take.</figcaption></figure></section>",
        '<section id="importance"><h2>Parameter importance</h2><figure>'
        f"{_img(importance_figure(importance), 'fANOVA parameter importance')}"
        f"</figure>{importance_note}</section>",
        '<section id="best-config"><h2>Best config</h2>'
        f"<pre>{escape(best_config)}</pre>"
        f"<pre>{escape(json.dumps(best_meta, indent=2, sort_keys=True, default=str))}</pre>"
        "</section>",
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>sweeplab report: {name}</title><style>{CSS}</style></head>"
        f"<body><main>{''.join(sections)}</main></body></html>\n"
    )


def write_report(sweep_name: str, out_path: str | Path, *, tracking_uri: str | None = None) -> Path:
    """Writes the HTML report of a sweep's latest execution and returns its path.

    The file is self-contained (inline CSS, figures as base64 PNG, no script): a header (sweep
    name, searcher, scheduler, trials by status, best metric, wall time of the parent run), the
    ranked trial table, learning curves, parallel coordinates, parameter importance and the
    best config.

    Raises:
        UnknownSweepError: No sweep of that name in the tracking store.
    """
    from sweeplab.tracking import load_sweep

    data = load_sweep(sweep_name, tracking_uri=tracking_uri)
    html = render_report(data, wall_time=_wall_time(tracking_uri, data.parent_run_id))
    path = Path(out_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(html, encoding="utf-8")
    return path
