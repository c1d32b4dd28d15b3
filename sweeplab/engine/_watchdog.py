"""The sweep's stall watchdog: says what a silent sweep waits for, and can fail it.

A sweep is silent when no trial has reported, started or ended for a while. The limit is
``--stall-timeout`` when given; by default it adapts to the sweep: three times the longest
silence seen so far between two such events (a first epoch's start-up included), and never
under two minutes. When the limit passes, the watchdog prints one line naming the trials it
waits for and the resources Ray cannot give, writes the details (every live trial, pending
placement groups, actors not yet alive, free and total resources) to ``stall.txt`` in the run
folder and to ``ray.log``, and with ``--fail-on-stall`` ends the sweep with `SweepStalled`.

The trial loop's observer tells it of each trial event and lets it look at its clock whenever
the backend's wait for the runs returns (at least every 5 s); while the sweep's trial slots wait
for resources to start, their start lets it look every 5 s (`slots_wait`). It needs no thread of
its own.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from sweeplab.engine._stall import StallClock, SweepStalled, describe_trials

__all__ = ["StallWatchdog", "cluster_wait"]

# Live trials named in the one line; the stall report lists all of them.
_NAMED_TRIALS = 3


def cluster_wait() -> tuple[list[str], str]:
    """Ray's view of the wait (public state API): report lines, and a phrase for the one line."""
    import ray

    lines: list[str] = []
    phrase: list[str] = []
    try:
        free, total = ray.available_resources(), ray.cluster_resources()
        for name in ("CPU", "GPU"):
            if total.get(name):
                lines.append(f"{name}: {free.get(name, 0):g} free of {total[name]:g}")
                phrase.append(f"{name} {free.get(name, 0):g}/{total[name]:g} free")
    except Exception as exc:  # a lost cluster must not stop the report
        lines.append(f"resources: unknown ({exc!r})")
    try:
        from ray.util.state import list_actors, list_placement_groups

        # The connected cluster's address: left out, the state API finds every Ray instance on
        # the machine and refuses to pick one when there are several.
        address = ray.get_runtime_context().gcs_address
        groups = list_placement_groups(
            address=address, filters=[("state", "=", "PENDING")], timeout=5, detail=True
        )
        for group in groups:
            bundles = [b.get("unit_resources", {}) for b in (group.bundles or [])]
            lines.append(f"pending placement group {group.placement_group_id}: bundles {bundles}")
        if groups:
            needed: dict[str, float] = {}
            for group in groups:
                for bundle in group.bundles or []:
                    for key, value in (bundle.get("unit_resources") or {}).items():
                        needed[key] = needed.get(key, 0.0) + float(value)
            wants = ", ".join(
                f"{k} {v:g}" for k, v in sorted(needed.items()) if k in ("CPU", "GPU")
            )
            phrase.append(f"{len(groups)} placement group(s) pending ({wants or 'no CPU/GPU'})")
        actors = list_actors(address=address, filters=[("state", "!=", "DEAD")], timeout=5)
        waiting = [a for a in actors if a.state != "ALIVE"]
        for actor in actors:
            lines.append(
                f"actor {actor.class_name} {actor.name or ''} {actor.actor_id}: {actor.state}"
            )
        if waiting:
            names = ", ".join(sorted({f"{a.class_name} ({a.state})" for a in waiting}))
            phrase.append(f"actor(s) not started: {names}")
    except Exception as exc:  # the state API needs the dashboard (`ray[default]`)
        lines.append(f"placement groups and actors: unknown ({exc!r})")
    return lines, "; ".join(phrase)


class StallWatchdog:
    """Watches the sweep's trial events for a stall.

    Args:
        clock: The decision: when a silence is a stall.
        report_path: The stall report file (rewritten at each stall).
        log_path: The sweep's log, to which each stall's details are appended.
        say: Prints the one line (the CLI's console, above the live table).
        fail: Whether a stall ends the sweep with `SweepStalled`.
        now: The monotonic clock (tests give a fake one).
        cluster: What the cluster waits for: lines for the report and a phrase for the line
            (`cluster_wait`, from Ray's state API).
    """

    def __init__(
        self,
        clock: StallClock,
        *,
        report_path: Path,
        log_path: Path | None = None,
        say: Callable[[str], None] = print,
        fail: bool = False,
        now: Callable[[], float] = time.monotonic,
        cluster: Callable[[], tuple[list[str], str]] = cluster_wait,
    ) -> None:
        self.clock = clock
        self.report_path = report_path
        self.log_path = log_path
        self.say = say
        self.fail = fail
        self._now = now
        self._cluster = cluster
        self._last_report: dict[str, float] = {}
        self.stalls: list[str] = []

    def start(self) -> None:
        """The watch begins (again): no silence before now is counted."""
        self.clock.restart(self._now())

    def _activity(self) -> None:
        self.clock.activity(self._now())

    def on_trial_start(self, trial: Any) -> None:
        self._activity()

    def on_trial_result(self, trial: Any, result: Mapping[str, Any]) -> None:
        self._activity()
        self._last_report[trial.trial_id] = self._now()

    def on_trial_end(self, trial: Any) -> None:
        """It completed, stopped or failed: only unfinished trials are described."""
        self._activity()
        self._last_report.pop(trial.trial_id, None)

    def slots_wait(self, pending: int, total: int) -> None:
        """Looks at the clock while `pending` of the sweep's `total` trial slots wait for
        their resources to start (`sweeplab.engine.slot_loop`'s ``on_wait``)."""
        self.check([], waiting=f"{pending} of {total} trial slot(s) to start")

    def check(self, trials: list[Any], *, waiting: str | None = None) -> None:
        """Says (and with ``fail``, raises `SweepStalled`) a stall once the silence passes the
        limit; the line names `waiting`, else the unfinished trials of `trials`."""
        now = self._now()
        if not self.clock.stalled(now):
            return
        line = self.stall_line(trials, now, waiting=waiting)
        self.stalls.append(line)
        self.say(line)
        if self.fail:
            raise SweepStalled(line)

    def stall_line(self, trials: list[Any], now: float, *, waiting: str | None = None) -> str:
        """The one line of a stall; writes its details to the report and the log."""
        silence, limit = self.clock.silence_s(now), self.clock.limit_s
        phrases = describe_trials(trials, now, self._last_report)
        named = "; ".join(phrases[:_NAMED_TRIALS]) or "no unfinished trial"
        if len(phrases) > _NAMED_TRIALS:
            named += f"; +{len(phrases) - _NAMED_TRIALS} more"
        if waiting is not None:
            named = waiting
        cluster, waits = self._cluster()
        line = (
            f"sweep stalled: no trial reported, started or ended for {silence:.0f}s "
            f"(limit {limit:.0f}s); waiting for {named}"
            + (f"; {waits}" if waits else "")
            + f"; details in {self.report_path}"
        )
        stamp = dt.datetime.now().isoformat(timespec="seconds")
        details = "\n".join(
            [
                f"{stamp} {line}",
                "unfinished trials:",
                *(f"  {p}" for p in phrases),
                "cluster:",
                *(f"  {c}" for c in cluster),
            ]
        )
        try:
            self.report_path.write_text(details + "\n")
            if self.log_path is not None:
                with self.log_path.open("a") as log:
                    log.write(details + "\n")
        except OSError:
            pass  # the one line still says it
        return line
