"""The console, the lines that more than one command prints, and the exit statuses."""

from __future__ import annotations

from typing import Any

__all__ = [
    "EXIT_FAILED",
    "EXIT_OK",
    "EXIT_USAGE",
    "compact",
    "diverged_line",
    "fmt",
    "new_console",
    "objective_columns",
    "picked_row",
    "print_pick",
]

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def new_console() -> Any:
    from sweeplab.engine import make_console

    return make_console()


def objective_columns(objectives: list[dict[str, str]]) -> list[str]:
    return [f"{o['name']} ({o['mode']})" for o in objectives]


def fmt(name: str, values: dict[str, float] | None) -> str:
    value = (values or {}).get(name)
    return "-" if value is None else f"{value:.4g}"


def picked_row(best: dict[str, Any]) -> dict[str, Any] | None:
    """The front row of the trial a best_config document picked (None when none was)."""
    return next((row for row in best["front"] if row["trial_id"] == best.get("trial_id")), None)


def print_pick(
    console: Any, best: dict[str, Any], rule: str | None, picked: dict[str, Any] | None
) -> None:
    """The front's size, objectives, constraints and hypervolume; then the picked trial."""
    objectives = best["objectives"]
    parts = [
        f"front: {len(best['front'])} trial(s)",
        "objectives " + ", ".join(objective_columns(objectives)),
    ]
    if best.get("constraints"):
        parts.append("constraints " + ", ".join(best["constraints"]))
    volume, reference = best.get("hypervolume"), best.get("reference_point")
    if volume is not None and reference is not None:
        point = ", ".join(
            f"{o['name']}={v:.4g}" for o, v in zip(objectives, reference, strict=True)
        )
        parts.append(f"hypervolume {volume:.4g} (reference point {point})")
    else:
        parts.append("hypervolume - (no trial reported every objective)")
    console.print(" · ".join(parts), markup=False, highlight=False, soft_wrap=True)
    how = f"by {rule!r}" if rule else "the first of the ranking"
    if picked is None:
        why = (
            f"no front trial keeps {rule!r}"
            if best["front"]
            else "the front is empty: no trial reported every objective within the constraints"
        )
        console.print(f"picked ({how}): none; {why}", markup=False, highlight=False, soft_wrap=True)
        return
    shown = ", ".join(f"{o['name']} = {fmt(o['name'], picked['values'])}" for o in objectives)
    line = f"picked ({how}): trial {picked['trial_id']} · {shown}"
    console.print(line, markup=False, highlight=False, soft_wrap=True)


def diverged_line(diverged: int, trials: int, metric: str) -> str:
    """How many trials diverged: their metric was NaN or infinite, so they were cut there."""
    if not diverged:
        return f"diverged: 0 of {trials} trials"
    return (
        f"[magenta]diverged[/magenta]: {diverged} of {trials} trials ({metric} NaN or "
        "infinite); each was stopped at its first such report and ranks last"
    )


def compact(config: dict[str, Any]) -> str:
    """`lr=0.0229 optimizer.name=adam`: a config on one short line."""
    from sweeplab.space import flatten_config

    parts = []
    for key, value in flatten_config(config).items():
        text = f"{value:.4g}" if isinstance(value, float) else str(value)
        parts.append(f"{key}={text}")
    return " ".join(parts)
