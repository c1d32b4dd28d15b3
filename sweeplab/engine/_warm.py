"""Warm start: which configs a sweep tries first, and what was changed to fit them.

The configs are an earlier sweep's best (read from MLflow and fitted into this sweep's space) or
the spec's own list. `sweeplab.engine._warm_searcher` suggests them before the sweep's searcher.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from sweeplab.errors import SpecError
from sweeplab.space import ConfigChange, adapt_config, flatten_config
from sweeplab.spec import Sweep

__all__ = ["DEFAULT_TOP", "WarmConfig", "WarmStartPlan", "default_top", "plan_warm_start"]

DEFAULT_TOP = 5
"""At most this many configs of an earlier sweep by default (see :func:`default_top`)."""


def default_top(num_trials: int) -> int:
    """Configs an earlier sweep seeds by default: a quarter of the trials, 1 to `DEFAULT_TOP`."""
    return min(DEFAULT_TOP, max(1, num_trials // 4))


@dataclass(frozen=True)
class WarmConfig:
    """One config a warm start tries first.

    Attributes:
        config: The config, in final nested shape, valid for the sweep's space.
        origin: Where it came from: ``"rank 2 (trial 5a1f_00003)"`` or ``"warm_start[0]"``.
        changes: What was changed to fit it into the space (empty: used as recorded).
    """

    config: dict[str, Any]
    origin: str
    changes: tuple[ConfigChange, ...] = ()


@dataclass(frozen=True)
class WarmStartPlan:
    """The configs a sweep tries first, in order, and what was changed or skipped.

    Attributes:
        source: ``"sweep 'cold'"`` or ``"the spec's list"``.
        configs: The configs to try first, in this order.
        skipped: One line per candidate left out (the same config as an earlier one).
        ranking: For an earlier sweep: how its trials were ranked (``"best loss (min)"``).
    """

    source: str
    configs: tuple[WarmConfig, ...]
    skipped: tuple[str, ...] = ()
    ranking: str | None = None

    def lines(self) -> list[str]:
        """The plan in words: a header, one line per config, one per skipped candidate."""
        ranking = f", ranked by {self.ranking}" if self.ranking else ""
        count = len(self.configs)
        header = f"warm start: {count} config{'s' if count != 1 else ''} from {self.source}"
        lines = [f"{header}{ranking}, tried first:"]
        for number, warm in enumerate(self.configs, start=1):
            what = "; ".join(map(str, warm.changes)) if warm.changes else "as recorded"
            lines.append(f"  {number}. {warm.origin}: {_compact(warm.config)} | {what}")
        lines.extend(f"  skipped {line}" for line in self.skipped)
        return lines

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready record of the plan (``warm_start.json``)."""
        return {
            "source": self.source,
            "ranking": self.ranking,
            "configs": [
                {
                    "origin": warm.origin,
                    "config": warm.config,
                    "changes": [
                        {"path": c.path, "kind": c.kind, "old": c.old, "new": c.new, "text": str(c)}
                        for c in warm.changes
                    ],
                }
                for warm in self.configs
            ],
            "skipped": list(self.skipped),
        }


def _compact(config: Mapping[str, Any]) -> str:
    parts = []
    for key, value in flatten_config(config).items():
        parts.append(f"{key}={value:.4g}" if isinstance(value, float) else f"{key}={value}")
    return " ".join(parts)


def _key(config: Mapping[str, Any]) -> str:
    return json.dumps(config, sort_keys=True, default=str)


def plan_warm_start(sweep: Sweep, tracking_uri: str | None = None) -> WarmStartPlan | None:
    """The configs `sweep` tries first, or None without `warm_start`.

    A list of configs is used as given (`Sweep` validated it against the space). An earlier
    sweep's name seeds its best ``top`` distinct configs by its own ranking of its latest
    execution (errored trials and trials that never reported the metric left out), each fitted
    into this space by :func:`sweeplab.space.adapt_config`; parameters it lacks and values it
    re-draws come from a generator seeded with the sweep's ``seed``. A config that comes twice
    is tried once, and never more configs than ``num_trials`` are tried.

    Raises:
        SpecError: No such earlier sweep, or it has no ranked trial to start from.
    """
    warm = sweep.warm_start
    if warm is None:
        return None
    if not isinstance(warm, str | Mapping):
        candidates = [(f"warm_start[{i}]", dict(c), ()) for i, c in enumerate(warm)]
        configs, skipped = _distinct(candidates, sweep.num_trials)
        return WarmStartPlan(source="the spec's list", configs=configs, skipped=skipped)

    from sweeplab.tracking import UnknownSweepError, ranked_configs

    name, top = (warm, None) if isinstance(warm, str) else (warm["sweep"], warm.get("top"))
    top = min(top or default_top(sweep.num_trials), sweep.num_trials)
    try:
        ranking = ranked_configs(name, tracking_uri)
    except UnknownSweepError as error:
        raise SpecError(f"Sweep field `warm_start`: {error}") from None
    ranked = [t for t in ranking.trials if t.status != "errored" and t.last_value is not None]
    if not ranked:
        raise SpecError(
            f"Sweep field `warm_start`: sweep {name!r} has no ranked trial that reported "
            f"{ranking.metric!r} to start from (its latest run {ranking.parent_run_id})."
        )
    gen = random.Random(None if sweep.seed is None else f"sweeplab.warm_start:{sweep.seed}")

    def fitted() -> Iterator[tuple[str, dict[str, Any], tuple[ConfigChange, ...]]]:
        for trial in ranked:
            config, changes = adapt_config(sweep.space, trial.config, gen=gen)
            yield f"rank {trial.rank} (trial {trial.trial_id})", config, tuple(changes)

    configs, skipped = _distinct(fitted(), top)
    return WarmStartPlan(
        source=f"sweep {name!r}",
        configs=configs,
        skipped=skipped,
        ranking=f"{ranking.rank_by} {ranking.metric} ({ranking.mode})",
    )


def _distinct(
    candidates: Iterable[tuple[str, dict[str, Any], tuple[ConfigChange, ...]]], limit: int
) -> tuple[tuple[WarmConfig, ...], tuple[str, ...]]:
    configs: list[WarmConfig] = []
    skipped: list[str] = []
    seen: dict[str, str] = {}
    for origin, config, changes in candidates:
        key = _key(config)
        if key in seen:
            skipped.append(f"{origin}: the same config as {seen[key]}")
            continue
        seen[key] = origin
        configs.append(WarmConfig(config=config, origin=origin, changes=changes))
        if len(configs) == limit:
            break
    return tuple(configs), tuple(skipped)
