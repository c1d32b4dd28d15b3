"""The `Sweep` declaration: every field is validated when the `Sweep` is constructed, so a bad
spec fails before anything starts."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from typing import Any, NoReturn

import sweeplab.strategies as strategies
from sweeplab._numbers import is_finite_number
from sweeplab.errors import SpecError
from sweeplab.pareto import Constraint, Objective, parse_constraint, parse_pick
from sweeplab.space import OptunaSearcher
from sweeplab.strategies import PBT, SchedulerTraits, strategy_rule_break

__all__ = ["PLACEMENT_STRATEGIES", "SCHEDULERS", "SEARCHERS", "Sweep"]

# The registry's names (`sweeplab.strategies`), as tuples: the spec's messages list them.
SEARCHERS = tuple(strategies.SEARCHERS)
SCHEDULERS = tuple(strategies.SCHEDULERS)
PLACEMENT_STRATEGIES = ("PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD")
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Sweep:
    """A hyperparameter sweep: a search space, a Ray Train training function and a strategy.

    Args:
        name: Sweep name; becomes the MLflow experiment and the storage folder. Letters, digits,
            ``_``, ``.`` and ``-`` only (at most 100 characters, no ``..``).
        train_func: The per-worker Ray Train function ``train_func(config)``.
        space: Dict of hyperparameters (primitives of `sweeplab.space`, nested dicts and
            constants), or a `sweeplab.Space`.
        metric: Name of the reported metric to optimise, or a list of names for a
            multi-objective sweep (``["val_loss", "latency_ms"]``). The first one drives what
            takes one metric (Tune's checkpoint order, the divergence stop); see
            docs/multi_objective.md. After construction ``metric`` and ``mode`` hold the first
            objective and ``objectives`` all of them.
        mode: ``"min"`` or ``"max"``, or a list of them as long as ``metric``'s.
        constraints: Bounds on the metrics of a multi-objective sweep, such as
            ``["latency_ms <= 10"]`` (``<=``, ``<``, ``>=``, ``>``). A trial that breaks one is
            infeasible: it ranks after every feasible trial, and Optuna learns it as such.
        pick: How one trial is picked from the front of a multi-objective sweep, such as
            ``"latency_ms <= 10, val_loss"``: constraints that filter the front, then the
            metric whose best value picks. Default: the first trial of the ranking.
        searcher: ``"random"``, ``"grid"``, ``"optuna"``, ``"hyperopt"``, a
            `sweeplab.OptunaSearcher` (Optuna's sampler settings, compiled against this space;
            ``"optuna"`` is ``OptunaSearcher()``) or a configured ``ray.tune.search.Searcher``.
            Left out: the best measured for the sweep's kind (``"optuna"`` with one metric and
            several reports a trial, else ``"random"``; see `sweeplab.strategies.default_strategy`).
        scheduler: ``"fifo"``, ``"asha"``, ``"adaptive-asha"`` (ASHA whose first rung stops
            trials only once it is seen to keep the best ones), ``"hyperband"``, ``"median"``,
            ``"pbt"``, a `sweeplab.PBT` (``"pbt"`` with its interval, quantile, resample
            probability or mutated parameters set; ``"pbt"`` is ``PBT()``) or a configured
            ``ray.tune.schedulers.TrialScheduler``. Left out: the best
            measured for the sweep's kind (``"adaptive-asha"`` with one metric, ``"asha"`` with
            several, ``"fifo"`` with one report a trial or a grid). After construction both
            fields hold what runs, and ``defaulted`` names those the defaults filled.
        scheduler_traits: What a configured scheduler object does to trials besides stopping
            them, ``sweeplab.SchedulerTraits(pauses=..., exploits=...)``: whether it pauses
            trials and resumes them later, and whether it replaces a trial's config and weights
            with another's (PBT). Tune's ASHA, FIFO, median stopping, HyperBand, BOHB, PBT and
            PB2 (and their subclasses) need none, nor does a scheduler with a
            ``sweeplab_traits`` attribute; any other scheduler object must declare them, as
            sweeplab never guesses. A named scheduler has its own.
        num_trials: Number of trials to sample (with ``searcher="grid"``: repeats of the grid).
        max_iterations: Budget of one trial in reports; ASHA, HyperBand and PBT count in it.
        workers_per_trial: Workers of one trial's trainer group, or ``(min, max)`` for an
            elastic group.
        use_gpu: Whether each worker gets GPUs.
        cpus_per_worker: CPUs reserved by each worker.
        gpus_per_worker: GPUs of each worker when ``use_gpu``; default 1. Fractions let
            1-worker trials share a GPU; the workers of one multi-worker trial need a GPU each
            (or ``placement_strategy="STRICT_SPREAD"``), as NCCL refuses two ranks of a group
            on one GPU.
        resources_per_worker: Extra custom resources of each worker, e.g. ``{"node_a": 1}``.
        max_concurrent_trials: Upper bound on concurrent trials; by default derived from the
            cluster's resources.
        checkpoints_to_keep: Checkpoints kept per trial, ranked by the metric.
        max_failures: Retries of a failed trial (or worker group), each from its latest
            checkpoint.
        time_budget_s: Wall-clock budget of the whole sweep in seconds.
        seed: Makes sampling reproducible.
        placement_strategy: How one trial's workers spread over nodes.
        metrics_from: ``"rank0"`` (rank 0's metrics drive the scheduler) or ``"mean"`` (mean of
            each numeric metric over the workers).
        rank_by: Rank trials by their ``"best"`` or ``"last"`` reported value of the metric.
        register_model: Name under which the best checkpoint is registered in MLflow.
        warm_start: Configs tried first. The name of an earlier sweep (or
            ``{"sweep": name, "top": k}``): the best ``k`` distinct configs of its latest
            execution, by its ranking, fitted into this space (default ``k``:
            ``min(5, max(1, num_trials // 4))``). Or a list of config dicts of this space, used
            as given. With the ``random``, ``optuna`` and ``hyperopt`` searchers (or a configured
            one); see docs/search_spaces.md.
        reuse_groups: Run the trials on warm trial slots (default): as many long-lived trainer
            groups as trials run at once, each running one trial after another, so a trial
            starts at once instead of paying for a new group. Module globals and RNG state
            persist in a worker between trials; sweeplab reseeds nothing unless
            ``train_func`` does. ``False``: a new trainer group per trial. An elastic
            ``workers_per_trial=(min, max)`` always gets a group per trial.
    """

    name: str
    train_func: Callable[..., Any]
    space: Any
    metric: str
    mode: str
    constraints: tuple[Constraint, ...] = ()
    pick: str | None = None
    searcher: Any = None
    scheduler: Any = None
    scheduler_traits: SchedulerTraits | None = None
    num_trials: int = 8
    max_iterations: int = 10
    workers_per_trial: int | tuple[int, int] = 1
    use_gpu: bool = False
    cpus_per_worker: float = 1.0
    gpus_per_worker: float | None = None
    resources_per_worker: Mapping[str, float] = dataclasses.field(default_factory=dict)
    max_concurrent_trials: int | None = None
    checkpoints_to_keep: int = 2
    max_failures: int = 0
    time_budget_s: float | None = None
    seed: int | None = None
    placement_strategy: str = "PACK"
    metrics_from: str = "rank0"
    rank_by: str = "best"
    register_model: str | None = None
    warm_start: Any = None
    reuse_groups: bool = True
    objectives: tuple[Objective, ...] = ()
    # Filled in construction: the fields the defaults chose, and why (`default_strategy`).
    defaulted: tuple[str, ...] = dataclasses.field(default=(), init=False, compare=False)
    strategy_note: str = dataclasses.field(default="", init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        from sweeplab.space import Space

        _check_name("name", self.name)
        if not callable(self.train_func):
            _fail("train_func", "must be a function `train_func(config)`", self.train_func)
        try:
            space = self.space if isinstance(self.space, Space) else Space(self.space)
        except SpecError as exc:
            raise SpecError(f"Sweep field `space`: {exc}") from None
        except (TypeError, ValueError) as exc:
            raise SpecError(f"Sweep field `space`: {exc}") from None
        object.__setattr__(self, "space", space)
        self._check_objectives()
        _check_positive_int("num_trials", self.num_trials)
        _check_positive_int("max_iterations", self.max_iterations)
        self._fill_strategy()
        if isinstance(self.searcher, str):
            _check_one_of("searcher", self.searcher, SEARCHERS)
        elif not isinstance(self.searcher, OptunaSearcher) and not hasattr(
            self.searcher, "suggest"
        ):
            _fail(
                "searcher",
                f"must be one of {SEARCHERS}, a sweeplab.OptunaSearcher or a Ray Tune Searcher",
                self.searcher,
            )
        if isinstance(self.scheduler, str):
            _check_one_of("scheduler", self.scheduler, SCHEDULERS)
        elif not isinstance(self.scheduler, PBT) and not hasattr(self.scheduler, "on_trial_result"):
            _fail(
                "scheduler",
                f"must be one of {SCHEDULERS}, a sweeplab.PBT or a Ray Tune scheduler",
                self.scheduler,
            )
        self._check_workers()
        if not isinstance(self.use_gpu, bool):
            _fail("use_gpu", "must be True or False", self.use_gpu)
        if not isinstance(self.reuse_groups, bool):
            _fail("reuse_groups", "must be True or False", self.reuse_groups)
        if not is_finite_number(self.cpus_per_worker) or self.cpus_per_worker < 0:
            _fail("cpus_per_worker", "must be a finite number >= 0", self.cpus_per_worker)
        if self.gpus_per_worker is not None:
            if not is_finite_number(self.gpus_per_worker) or self.gpus_per_worker <= 0:
                _fail("gpus_per_worker", "must be a finite number > 0", self.gpus_per_worker)
            if not self.use_gpu:
                _fail("gpus_per_worker", "needs `use_gpu=True`", self.gpus_per_worker)
            several = self.max_workers > 1
            if self.gpus_per_worker < 1 and several and self.placement_strategy != "STRICT_SPREAD":
                # Seen on an H200: "Duplicate GPU detected : rank 1 and rank 0 both on CUDA
                # device", in the group's first collective, after the group had started.
                _fail(
                    "gpus_per_worker",
                    "must be >= 1 when a trial has several workers: Ray puts their fractions on "
                    "one GPU and NCCL refuses two ranks of a group on one GPU (fractions share "
                    "a GPU between 1-worker trials; placement_strategy='STRICT_SPREAD' puts "
                    "each worker on a node of its own)",
                    self.gpus_per_worker,
                )
        if not isinstance(self.resources_per_worker, Mapping) or not all(
            isinstance(k, str) and k and is_finite_number(v) and v >= 0
            for k, v in self.resources_per_worker.items()
        ):
            _fail(
                "resources_per_worker",
                "must map resource names to finite numbers >= 0",
                self.resources_per_worker,
            )
        lowered = {k.lower() for k in self.resources_per_worker}
        if lowered & {"cpu", "gpu"}:
            _fail(
                "resources_per_worker",
                "must not name CPU or GPU (use `cpus_per_worker` / `gpus_per_worker`)",
                self.resources_per_worker,
            )
        if self.max_concurrent_trials is not None:
            _check_positive_int("max_concurrent_trials", self.max_concurrent_trials)
        if not _is_int(self.checkpoints_to_keep) or self.checkpoints_to_keep < 1:
            _fail("checkpoints_to_keep", "must be an integer >= 1", self.checkpoints_to_keep)
        if not _is_int(self.max_failures) or self.max_failures < -1:
            _fail(
                "max_failures", "must be an integer >= 0 (or -1: retry forever)", self.max_failures
            )
        if self.time_budget_s is not None and (
            not is_finite_number(self.time_budget_s) or self.time_budget_s <= 0
        ):
            _fail("time_budget_s", "must be a finite number of seconds > 0", self.time_budget_s)
        if self.seed is not None and (not _is_int(self.seed) or self.seed < 0):
            _fail("seed", "must be an integer >= 0", self.seed)
        _check_one_of("placement_strategy", self.placement_strategy, PLACEMENT_STRATEGIES)
        _check_one_of("metrics_from", self.metrics_from, ("rank0", "mean"))
        _check_one_of("rank_by", self.rank_by, ("best", "last"))
        if self.register_model is not None:
            _check_name("register_model", self.register_model)
        if self.warm_start is not None:
            self._check_warm_start()
        if self.scheduler_traits is not None:
            if not isinstance(self.scheduler_traits, SchedulerTraits):
                _fail(
                    "scheduler_traits",
                    "must be a sweeplab.SchedulerTraits(pauses=..., exploits=...)",
                    self.scheduler_traits,
                )
            if "scheduler" in self.defaulted:
                _fail(
                    "scheduler_traits",
                    f"declares a configured scheduler object's traits, but the sweep names no "
                    f"`scheduler` (the defaults chose {self.scheduler!r}, which has its own)",
                    self.scheduler_traits,
                )
            if isinstance(self.scheduler, (str, PBT)):
                _fail(
                    "scheduler_traits",
                    f"declares a configured scheduler object's traits; the named scheduler "
                    f"{self.scheduler!r} has its own",
                    self.scheduler_traits,
                )
        broken = strategy_rule_break(self)
        if broken is not None:
            _fail(broken.field, broken.rule, broken.value)

    def _fill_strategy(self) -> None:
        choice = strategies.default_strategy(
            searcher=self.searcher,
            scheduler=self.scheduler,
            objectives=len(self.objectives),
            max_iterations=self.max_iterations,
        )
        object.__setattr__(self, "searcher", choice.searcher)
        object.__setattr__(self, "scheduler", choice.scheduler)
        object.__setattr__(self, "defaulted", choice.chosen)
        object.__setattr__(self, "strategy_note", choice.why)

    def _check_objectives(self) -> None:
        metric, mode = self.metric, self.mode
        if isinstance(metric, list | tuple):
            if not metric or not all(isinstance(m, str) and m for m in metric):
                _fail("metric", "as a list must hold one or more non-empty names", metric)
            if len(set(metric)) != len(metric):
                _fail("metric", "must not name a metric twice", metric)
            if not isinstance(mode, list | tuple) or len(mode) != len(metric):
                _fail("mode", f"must be a list of {len(metric)} modes, one per metric", mode)
            for index, one in enumerate(mode):
                _check_one_of(f"mode[{index}]", one, ("min", "max"))
            objectives = tuple(Objective(m, o) for m, o in zip(metric, mode, strict=True))
        else:
            if not isinstance(metric, str) or not metric:
                _fail("metric", "must be a non-empty string or a list of them", metric)
            _check_one_of("mode", mode, ("min", "max"))
            kept = self.objectives
            # A copy (`replace`) passes the objectives back with the first one as metric/mode.
            if kept and isinstance(kept, tuple) and kept[0] == Objective(metric, mode):
                objectives = kept
            else:
                objectives = (Objective(metric, mode),)
        object.__setattr__(self, "objectives", objectives)
        object.__setattr__(self, "metric", objectives[0].name)
        object.__setattr__(self, "mode", objectives[0].mode)
        self._check_constraints()
        if self.pick is not None:
            if len(objectives) == 1:
                _fail("pick", "picks one trial of a front; it needs several metrics", self.pick)
            try:
                parse_pick(self.pick, objectives)
            except ValueError as exc:
                _fail("pick", str(exc), self.pick)

    def _check_constraints(self) -> None:
        given = self.constraints
        if isinstance(given, str) or not isinstance(given, list | tuple):
            _fail("constraints", "must be a list of constraints such as 'latency_ms <= 10'", given)
        if given and len(self.objectives) == 1:
            _fail("constraints", "needs several metrics (`metric=[...]`)", given)
        names = [o.name for o in self.objectives]
        parsed = []
        for index, one in enumerate(given):
            try:
                constraint = one if isinstance(one, Constraint) else parse_constraint(one)
            except ValueError as exc:
                _fail(f"constraints[{index}]", str(exc), one)
            if constraint.metric not in names:
                _fail(
                    f"constraints[{index}]",
                    f"must bound one of the sweep's metrics {names}",
                    one,
                )
            parsed.append(constraint)
        object.__setattr__(self, "constraints", tuple(parsed))

    @property
    def multi_objective(self) -> bool:
        """Whether the sweep optimises several metrics."""
        return len(self.objectives) > 1

    def _check_workers(self) -> None:
        workers = self.workers_per_trial
        if isinstance(workers, tuple | list):
            if len(workers) != 2 or not all(_is_int(w) and w >= 1 for w in workers):
                _fail(
                    "workers_per_trial",
                    "an elastic group is a pair (min, max) of ints >= 1",
                    workers,
                )
            if workers[0] > workers[1]:
                _fail("workers_per_trial", "`min <= max` must hold", workers)
            object.__setattr__(self, "workers_per_trial", (int(workers[0]), int(workers[1])))
        elif not _is_int(workers) or workers < 1:
            _fail("workers_per_trial", "must be an integer >= 1 or a pair (min, max)", workers)

    def _check_warm_start(self) -> None:
        warm = self.warm_start
        if isinstance(warm, str):
            _check_name("warm_start", warm)
            return
        if isinstance(warm, Mapping):
            if "sweep" not in warm or set(warm) - {"sweep", "top"}:
                _fail(
                    "warm_start",
                    "as a mapping must be {'sweep': <earlier sweep>} plus optionally 'top': <k>",
                    warm,
                )
            _check_name("warm_start['sweep']", warm["sweep"])
            if "top" in warm:
                _check_positive_int("warm_start['top']", warm["top"])
            object.__setattr__(self, "warm_start", dict(warm))
            return
        if not isinstance(warm, list | tuple) or not all(isinstance(c, Mapping) for c in warm):
            _fail(
                "warm_start",
                "must be a sweep name, {'sweep': <name>, 'top': <k>} or a list of config dicts",
                warm,
            )
        for index, config in enumerate(warm):
            try:
                self.space.validate_config(dict(config))
            except SpecError as exc:
                raise SpecError(f"Sweep field `warm_start[{index}]`: {exc}") from None

    @property
    def min_workers(self) -> int:
        """The smallest trainer group one trial runs with."""
        w = self.workers_per_trial
        return w[0] if isinstance(w, tuple) else w

    @property
    def max_workers(self) -> int:
        """The largest trainer group one trial runs with."""
        w = self.workers_per_trial
        return w[1] if isinstance(w, tuple) else w

    @property
    def worker_resources(self) -> dict[str, float]:
        """Resources one worker of the trainer group reserves, in Ray's names."""
        resources: dict[str, float] = {"CPU": float(self.cpus_per_worker)}
        if self.use_gpu:
            resources["GPU"] = float(self.gpus_per_worker or 1)
        resources.update({k: float(v) for k, v in self.resources_per_worker.items()})
        return {k: v for k, v in resources.items() if v > 0}

    @property
    def searcher_name(self) -> str:
        if isinstance(self.searcher, str):
            return self.searcher
        if isinstance(self.searcher, OptunaSearcher):
            return self.searcher.describe(metrics=len(self.objectives))
        return type(self.searcher).__name__

    @property
    def scheduler_name(self) -> str:
        if isinstance(self.scheduler, PBT):
            return self.scheduler.describe()
        return self.scheduler if isinstance(self.scheduler, str) else type(self.scheduler).__name__

    def replace(self, **changes: Any) -> Sweep:
        """A copy with some fields changed, validated again.

        A searcher or scheduler that the defaults chose is chosen again for the copy (a
        changed ``max_iterations`` or ``metric`` may change the choice).
        """
        for field in self.defaulted:
            changes.setdefault(field, None)
        return dataclasses.replace(self, **changes)


def _fail(field: str, rule: str, value: object) -> NoReturn:
    raise SpecError(f"Sweep field `{field}` {rule}, but got {value!r}.")


def _check_one_of(field: str, value: object, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        _fail(field, f"must be one of {', '.join(repr(a) for a in allowed)}", value)


def _check_positive_int(field: str, value: object) -> None:
    if not _is_int(value) or value < 1:  # type: ignore[operator]
        _fail(field, "must be an integer >= 1", value)


def _check_name(field: str, value: object) -> None:
    if not isinstance(value, str) or not _NAME_RE.match(value) or ".." in value:
        _fail(
            field,
            "must be 1-100 letters, digits, '_', '.' or '-', start with a letter or digit, "
            "and contain no '..' or path separator",
            value,
        )
