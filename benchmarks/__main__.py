"""The benchmark suite: each comparison's arms side by side, each arm in its own subprocess.

python -m benchmarks [--quick] [--only NAME,...] [--out benchmarks/results/latest.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

NAMES = [
    "report_latency",
    "startup_2w",
    "startup_1w",
    "end_to_end",
    "optuna_baseline",
    "tracking_overhead",
    "utilisation",
    "bookkeeping",
    "memory",
    "slot_memory",
]
ROOT = Path(__file__).resolve().parents[1]
console = Console()


# --- running arms ---------------------------------------------------------------------------


def _tree_rss(root_pid: int) -> int:
    """RSS in bytes summed over ``root_pid`` and all its descendants (from /proc)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    page = os.sysconf("SC_PAGE_SIZE")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
            with open(f"/proc/{entry}/statm") as f:
                pages = int(f.read().split()[1])
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
        rss[int(entry)] = pages * page
    total, stack = 0, [root_pid]
    while stack:
        pid = stack.pop()
        total += rss.get(pid, 0)
        stack.extend(children.get(pid, []))
    return total


def run_arm(
    name: str, params: dict[str, Any], timeout_s: float, sample_rss: bool = False
) -> dict[str, Any]:
    """Runs one arm in a fresh subprocess (its own local Ray); its JSON plus the wall time."""
    with tempfile.TemporaryDirectory(prefix="bench-out-") as tmp:
        out = Path(tmp) / "out.json"
        log = Path(tmp) / "arm.log"
        env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        console.print(f"  [dim]{time.strftime('%H:%M:%S')} {name} {params}[/dim]")
        begin = time.perf_counter()
        with log.open("wb") as log_file:
            proc = subprocess.Popen(
                [sys.executable, "-m", "benchmarks._arms", name, json.dumps(params), str(out)],
                stdout=log_file,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=ROOT,
            )
            peak = [0]
            stop = threading.Event()

            def sample() -> None:
                while not stop.wait(0.5):
                    peak[0] = max(peak[0], _tree_rss(proc.pid))

            sampler = threading.Thread(target=sample, daemon=True)
            if sample_rss:
                sampler.start()
            try:
                proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGINT)  # our own child: lets its Ray shut down
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            stop.set()
        elapsed = time.perf_counter() - begin
        if proc.returncode != 0 or not out.exists():
            tail = log.read_text(errors="replace")[-1500:]
            console.print(f"  [red]{name} failed (rc={proc.returncode})[/red]\n{tail}")
            return {"error": f"rc={proc.returncode}", "log_tail": tail, "process_s": elapsed}
        result: dict[str, Any] = json.loads(out.read_text())
        result["process_s"] = elapsed
        if sample_rss:
            result["peak_tree_rss_mb"] = peak[0] / 2**20
        return result


# --- comparisons ----------------------------------------------------------------------------


def _median(values: list[float] | None) -> float | None:
    return statistics.median(values) if values else None


def _row(
    figure: str,
    baseline: float | None,
    sweeplab: float | None,
    goal: str,
    met: bool | None,
    ratio: float | None = None,
    unit: str = "s",
) -> dict[str, Any]:
    if ratio is None and baseline and sweeplab is not None:
        ratio = sweeplab / baseline
    return {
        "figure": figure,
        "baseline": baseline,
        "sweeplab": sweeplab,
        "ratio": ratio,
        "goal": goal,
        "met": met,
        "unit": unit,
    }


def report_latency(quick: bool) -> dict[str, Any]:
    params = {"reports": 10}
    base = run_arm("report_latency_baseline", params, 300)
    ours = run_arm("report_latency_sweeplab", params, 300)
    b, s = base.get("median_s"), ours.get("median_s")
    row = _row(
        "report latency, median of 10 (2-worker group)",
        b,
        s,
        "sweeplab <= 0.05 s",
        None if s is None else s <= 0.05,
    )
    return {"rows": [row], "arms": {"baseline": base, "sweeplab": ours}}


def _startup(workers: int, quick: bool) -> dict[str, Any]:
    params = {"workers": workers, "trials": 4 if quick else 6}
    base = run_arm("startup_baseline", params, 400)
    ours = run_arm("startup_sweeplab", params, 400)
    arms = {"baseline": base, "sweeplab": ours}
    key = "start_to_first_result_s"
    b, s = _median(base.get(key)), _median(ours.get(key))
    limit = 3.0 if workers == 2 else 0.5
    row = _row(
        f"trial start -> first result, {workers}-worker trial (median of {params['trials']})",
        b,
        s,
        f"sweeplab <= {limit} s",
        None if s is None else s <= limit,
    )
    cold = _row(
        "  same, the sweep's first trial only (nothing warm yet)",
        (base.get(key) or [None])[0],
        (ours.get(key) or [None])[0],
        "(information)",
        None,
    )
    rows = [row, cold]
    if workers > 1:
        # Warm trial slots: the trials after a slot's first reuse its trainer group. The
        # sweep runs one trial at a time, so every trial after the first is such a trial.
        per_trial = run_arm("startup_sweeplab_group_per_trial", params, 400)
        arms["sweeplab_group_per_trial"] = per_trial
        warm = _median((ours.get(key) or [])[1:])
        rows.append(
            _row(
                "  same, trials after a slot's first (warm slot)",
                _median((base.get(key) or [])[1:]),
                warm,
                "sweeplab <= 0.5 s",
                None if warm is None else warm <= 0.5,
            )
        )
        rows.append(
            _row(
                "  same, reuse_groups=False (baseline col) vs warm slots",
                _median(per_trial.get(key)),
                s,
                "(information)",
                None,
            )
        )
    return {"rows": rows, "arms": arms, "params": params}


def startup_2w(quick: bool) -> dict[str, Any]:
    return _startup(2, quick)


def startup_1w(quick: bool) -> dict[str, Any]:
    return _startup(1, quick)


_E2E_CACHE: dict[str, Any] = {}


def end_to_end(quick: bool) -> dict[str, Any]:
    params = {"trials": 4 if quick else 16}
    timeout = 900 if quick else 1800
    base = run_arm("end_to_end_baseline", params, timeout)
    ours = run_arm("end_to_end_sweeplab", params, timeout)
    tracked = run_arm("end_to_end_sweeplab_tracked", params, timeout)
    per_trial = run_arm("end_to_end_sweeplab_group_per_trial", params, timeout)
    _E2E_CACHE.update(sweeplab=ours, tracked=tracked)
    b, s = base.get("wall_s"), ours.get("wall_s")
    rows = [
        _row(
            f"{params['trials']} trials ASHA, 2 workers, 8x0.2 s: wall",
            b,
            s,
            "ratio <= 0.25",
            None if not (b and s) else s / b <= 0.25,
        ),
        _row(
            "  same sweep, reuse_groups=False (baseline col) vs warm slots: wall",
            per_trial.get("wall_s"),
            s,
            "(information)",
            None,
        ),
        _row(
            "  same sweep: best loss (lower is better)",
            base.get("best_loss"),
            ours.get("best_loss"),
            "(information)",
            None,
            unit="",
        ),
    ]
    return {
        "rows": rows,
        "arms": {
            "baseline": base,
            "sweeplab": ours,
            "sweeplab_tracked": tracked,
            "sweeplab_group_per_trial": per_trial,
        },
        "params": params,
    }


def optuna_baseline(quick: bool) -> dict[str, Any]:
    params = (
        {"trials": 8, "epochs": 4, "compute_s": 0.1}
        if quick
        else {"trials": 128, "epochs": 8, "compute_s": 0.25}
    )
    base = run_arm("optuna_baseline", params, 900)
    ours = run_arm("optuna_sweeplab", params, 900)
    b, s = base.get("wall_s"), ours.get("wall_s")
    size = f"{params['trials']} trials x {params['epochs']}x{params['compute_s']} s"
    rows = [
        _row(
            f"pruned 1-worker sweep vs plain Optuna ({size}): wall",
            b,
            s,
            "ratio <= 1.25",
            None if not (b and s) else s / b <= 1.25,
        ),
        _row(
            "  same sweep: best loss",
            base.get("best_loss"),
            ours.get("best_loss"),
            "(information)",
            None,
            unit="",
        ),
    ]
    return {"rows": rows, "arms": {"baseline": base, "sweeplab": ours}, "params": params}


def tracking_overhead(quick: bool) -> dict[str, Any]:
    rows = []
    ours, tracked = _E2E_CACHE.get("sweeplab"), _E2E_CACHE.get("tracked")
    if ours and tracked and ours.get("wall_s") and tracked.get("wall_s"):
        rows.append(
            _row(
                "end_to_end wall: untracked (baseline col) vs tracked",
                ours["wall_s"],
                tracked["wall_s"],
                "ratio <= 1.05",
                tracked["wall_s"] / ours["wall_s"] <= 1.05,
            )
        )
    params = {"points": 4000 if quick else 20000}
    arm = run_arm("logging_throughput", params, 300)
    for key, label in [("sqlite_points_per_s", "SQLite"), ("server_points_per_s", "mlflow server")]:
        value = arm.get(key)
        rows.append(
            _row(
                f"tracker logging into {label} ({params['points']} points)",
                None,
                value,
                ">= 2000 points/s",
                None if value is None else value >= 2000,
                unit="pts/s",
            )
        )
    return {"rows": rows, "arms": {"logging": arm}, "params": params}


def utilisation(quick: bool) -> dict[str, Any]:
    params = {"trials": 4, "epochs": 2} if quick else {"trials": 16, "epochs": 4}
    arm = run_arm("utilisation_sweeplab", params, 900)
    value = arm.get("utilisation")
    row = _row(
        f"CPU utilisation, {params['trials']} 1-worker trials x {params['epochs']} 1-s epochs",
        None,
        value,
        ">= 0.8",
        None if value is None else value >= 0.8,
        unit="",
    )
    return {"rows": [row], "arms": {"sweeplab": arm}, "params": params}


def bookkeeping(quick: bool) -> dict[str, Any]:
    params = {"trials": 40 if quick else 500}
    arm = run_arm("bookkeeping_sweeplab", params, 600 if quick else 2400)
    wall, theory = arm.get("wall_s"), params["trials"] / 2
    row = _row(
        f"{params['trials']} trials of 1 s on 2 CPUs: wall vs theoretical {theory:.0f} s",
        theory,
        wall,
        "ratio <= 1.15",
        None if wall is None else wall / theory <= 1.15,
    )
    return {"rows": [row], "arms": {"sweeplab": arm}, "params": params}


def memory(quick: bool) -> dict[str, Any]:
    sizes = [2, 6] if quick else [4, 16]
    arms = {str(n): run_arm("memory_sweeplab", {"trials": n}, 1800, sample_rss=True) for n in sizes}
    small, large = (arms[str(n)].get("peak_tree_rss_mb") for n in sizes)
    row = _row(
        f"peak RSS of the sweep's process tree: {sizes[0]} vs {sizes[1]} trials",
        small,
        large,
        "flat as trials grow",
        None if not (small and large) else large / small <= 1.2,
        unit="MB",
    )
    return {"rows": [row], "arms": arms, "params": {"sizes": sizes}}


def slot_memory(quick: bool) -> dict[str, Any]:
    params = {"trials": 16 if quick else 64}
    arm = run_arm("slot_memory_sweeplab", params, 1800)
    rss = arm.get("worker_rss_mb") or []
    early = rss[3] if len(rss) > 3 else None
    late = rss[-1] if rss else None
    row = _row(
        f"warm slot: rank 0's RSS after trial 4 vs after trial {len(rss)}",
        early,
        late,
        "ratio <= 1.2",
        None if not (early and late) else late / early <= 1.2,
        unit="MB",
    )
    rows = [row]
    floor = arm.get("gpu_floor_mb") or []
    if floor:  # BENCH_GPU=1: GPU memory back to its floor between a slot's trials
        rows.append(
            _row(
                "  GPU memory allocated at a trial's start: first vs highest",
                floor[0],
                max(floor),
                "equal (memory back to its floor)",
                max(floor) <= floor[0] + 1.0,
                unit="MB",
            )
        )
    return {"rows": rows, "arms": {"sweeplab": arm}, "params": params}


COMPARISONS: dict[str, Callable[[bool], dict[str, Any]]] = {
    "report_latency": report_latency,
    "startup_2w": startup_2w,
    "startup_1w": startup_1w,
    "end_to_end": end_to_end,
    "optuna_baseline": optuna_baseline,
    "tracking_overhead": tracking_overhead,
    "utilisation": utilisation,
    "bookkeeping": bookkeeping,
    "memory": memory,
    "slot_memory": slot_memory,
}
SKIPPED_IN_QUICK = {"memory"}


# --- output ---------------------------------------------------------------------------------


def _fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "pts/s":
        return f"{value:,.0f} pts/s"
    if unit == "MB":
        return f"{value:,.0f} MB"
    if unit == "s":
        return f"{value:.3f} s" if value < 1 else f"{value:.1f} s"
    return f"{value:.3f}"


def render(rows: list[dict[str, Any]]) -> Table:
    table = Table(title="sweeplab benchmarks (measured side by side)")
    for column in ["figure", "baseline", "sweeplab", "ratio", "goal", "met"]:
        table.add_column(column, justify="left" if column in ("figure", "goal") else "right")
    for row in rows:
        met = {True: "yes", False: "NO", None: "-"}[row["met"]]
        table.add_row(
            row["figure"],
            _fmt(row["baseline"], row["unit"]),
            _fmt(row["sweeplab"], row["unit"]),
            "-" if row["ratio"] is None else f"{row['ratio']:.2f}",
            row["goal"],
            met,
        )
    return table


def _versions() -> dict[str, str]:
    out = {}
    for package in ["ray", "torch", "mlflow", "optuna", "sweeplab"]:
        try:
            out[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            out[package] = "missing"
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes (a few minutes)")
    parser.add_argument("--only", help=f"comma-separated subset of: {','.join(NAMES)}")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/latest.json")
    args = parser.parse_args(argv)
    names = args.only.split(",") if args.only else list(NAMES)
    unknown = set(names) - set(NAMES)
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(sorted(unknown))}")
    if args.quick and not args.only:
        names = [n for n in names if n not in SKIPPED_IN_QUICK]
    report: dict[str, Any] = {
        "quick": args.quick,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": {
            "cpu_count": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "versions": _versions(),
            "loadavg_start": os.getloadavg(),
        },
        "comparisons": {},
    }
    console.print(f"load average at start: {os.getloadavg()}")
    begin = time.perf_counter()
    rows: list[dict[str, Any]] = []
    for name in names:
        console.print(f"[bold]{name}[/bold]")
        started = time.perf_counter()
        result = COMPARISONS[name](args.quick)
        result["seconds"] = time.perf_counter() - started
        report["comparisons"][name] = result
        rows.extend(result["rows"])
    report["machine"]["loadavg_end"] = os.getloadavg()
    report["total_s"] = time.perf_counter() - begin
    report["rows"] = rows
    console.print(render(rows))
    console.print(
        f"total {report['total_s']:.0f} s; load average at start "
        f"{report['machine']['loadavg_start']}, at end {report['machine']['loadavg_end']}"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, default=str))
    console.print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
