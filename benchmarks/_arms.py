"""One arm of one comparison, run in its own subprocess with its own local Ray.

    python -m benchmarks._arms ARM PARAMS_JSON OUT_JSON

Every arm writes a JSON dict of raw numbers to OUT_JSON. Arms named ``*_baseline`` use Ray
Tune / Train (or Optuna) as documented, with Ray's defaults; arms named ``*_sweeplab`` go
through `sweeplab.engine.run_sweep` on a Ray started the way `sweeplab sweep` starts it.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

# The toy spec shared by both arms: a busy loop (not sleep) per epoch, one report per epoch.
SPEC_BODY = '''
import json
import os
import time

from ray import train

import sweeplab
from sweeplab import uniform


def busy(seconds):
    """Spins the CPU for ``seconds``; returns the CPU seconds spent."""
    start_cpu = time.process_time()
    end = time.perf_counter() + seconds
    x = 0
    while time.perf_counter() < end:
        x += 1
    return time.process_time() - start_cpu


def rss_mb():
    """This worker process's resident memory in MB (a warm slot's workers live on)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def train_func(config):
    extra = {}
    if MODEL:  # a small torch model per trial, as a real trial allocates (memory benchmark)
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
        if device == "cuda":  # what earlier trials of this warm slot left on the GPU
            extra["gpu_floor_mb"] = torch.cuda.memory_allocated() / 2**20
        nn = torch.nn
        model = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 1)).to(device)
        optimizer = torch.optim.Adam(model.parameters())
    for epoch in range(EPOCHS):
        spent = busy(COMPUTE_S)
        loss = (config["x"] - 0.3) ** 2 + 1.0 / (epoch + 1)
        if MODEL:
            batch = torch.randn(512, 256, device=device)
            out = model(batch).pow(2).mean()
            optimizer.zero_grad()
            out.backward()
            optimizer.step()
        metrics = {"loss": loss, "epoch": epoch, "compute_s": spent, "rss_mb": rss_mb()}
        train.report({**metrics, **extra})


def latency_func(config):
    durations = []
    for i in range(config["n"]):
        begin = time.perf_counter()
        train.report({"i": i})
        durations.append(time.perf_counter() - begin)
    if train.get_context().get_world_rank() == 0:
        with open(config["out"], "w") as f:
            json.dump(durations, f)


sweep = sweeplab.Sweep(train_func=train_func, space={"x": uniform(0, 1)}, SWEEP_KWARGS)
'''


BASE: dict[str, Any] = {"name": "bench", "metric": "loss", "mode": "min"}
# `BENCH_GPU=1` (benchmarks/gpu_check.sh): every worker of the start-up and latency arms gets a
# GPU of its own where `BENCH_GPUS` (default 1) GPUs are enough, else a share of one. A sweep's
# multi-worker trials need a GPU per worker (NCCL refuses two ranks of a group on one GPU, and
# `Sweep` refuses such fractions); the latency arms run no collective, so they may share one.
GPU = os.environ.get("BENCH_GPU") == "1"
GPUS = int(os.environ.get("BENCH_GPUS", "1"))


def _gpu_share(workers: int) -> float | None:
    if not GPU:
        return None
    return 1.0 if workers <= GPUS else 1.0 / workers


def _scaling(workers: int) -> Any:
    import ray.train

    share = _gpu_share(workers)
    if share is None:
        return ray.train.ScalingConfig(num_workers=workers)
    return ray.train.ScalingConfig(
        num_workers=workers, use_gpu=True, resources_per_worker={"GPU": share}
    )


class StartupClock:
    """Seconds from each trial's start to its first result, on the sweep's driver.

    This is the start-up a user waits for: it includes scheduling the trial, starting (or
    reusing) its actor, building the trainer group and the first epoch; Tune's own
    ``time_total_s`` starts only once the trial's function runs.
    """

    def __init__(self) -> None:
        self.started: dict[str, float] = {}
        self.first: dict[str, float] = {}

    def start(self, trial_id: str) -> None:
        self.started.setdefault(trial_id, time.perf_counter())

    def result(self, trial_id: str) -> None:
        begin = self.started.get(trial_id)
        if begin is not None and trial_id not in self.first:
            self.first[trial_id] = time.perf_counter() - begin


def _tune_clock(clock: StartupClock) -> Any:
    """The clock as a Ray Tune callback, for the plain-Tune baseline."""
    from ray.tune import Callback

    class TuneClock(Callback):
        def on_trial_start(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
            clock.start(trial.trial_id)

        def on_trial_result(
            self, iteration: int, trials: list, trial: Any, result: dict, **info: Any
        ) -> None:
            clock.result(trial.trial_id)

    return TuneClock()


def _sweep_clock(clock: StartupClock) -> Any:
    """The clock as a sweep callback, for sweeplab's arms."""
    from sweeplab import SweepCallback

    class SweepClock(SweepCallback):
        def on_trial_start(self, trial: Any) -> None:
            clock.start(trial.trial_id)

        def on_trial_result(self, trial: Any, result: Any) -> None:
            clock.result(trial.trial_id)

    return SweepClock()


def write_spec(
    folder: Path, *, epochs: int, compute_s: float, model: bool = False, **sweep_kwargs: Any
) -> Path:
    kwargs = ", ".join(f"{k}={v!r}" for k, v in sweep_kwargs.items())
    path = folder / "bench_spec.py"
    body = SPEC_BODY.replace("SWEEP_KWARGS", kwargs)
    path.write_text(f"EPOCHS = {epochs}\nCOMPUTE_S = {compute_s}\nMODEL = {model}\n{body}")
    return path


def _load(path: Path) -> Any:
    import ray.cloudpickle

    from sweeplab.spec import load_spec

    sweep = load_spec(path)
    ray.cloudpickle.register_pickle_by_value(sys.modules[sweep.train_func.__module__])
    return sweep


def _ray_init(sweeplab_env: bool, num_cpus: int = 2) -> None:
    import ray

    from sweeplab.engine import start_local_ray

    start = start_local_ray if sweeplab_env else functools.partial(ray.init, address="local")
    start(
        num_cpus=num_cpus,
        num_gpus=GPUS if GPU else 0,
        log_to_driver=False,
        include_dashboard=True,  # Train's controller uses the state API (ray[default])
        dashboard_host="127.0.0.1",
        logging_level=logging.WARNING,
    )


# --- report latency -----------------------------------------------------------------------


def _report_latency(params: dict[str, Any], tmp: Path, sweeplab_env: bool) -> dict[str, Any]:
    import ray.train
    from ray.train.torch import TorchTrainer

    _ray_init(sweeplab_env)
    sweep = _load(write_spec(tmp, epochs=1, compute_s=0.0, **BASE))
    fn = sys.modules[sweep.train_func.__module__].latency_func
    out = tmp / "latency.json"
    trainer = TorchTrainer(
        fn,
        train_loop_config={"n": params["reports"], "out": str(out)},
        scaling_config=_scaling(2),
        run_config=ray.train.RunConfig(name="latency", storage_path=str(tmp / "train")),
    )
    trainer.fit()
    durations = json.loads(out.read_text())
    return {"durations_s": durations, "median_s": statistics.median(durations)}


def report_latency_baseline(params: dict[str, Any], tmp: Path) -> dict[str, Any]:
    return _report_latency(params, tmp, sweeplab_env=False)


def report_latency_sweeplab(params: dict[str, Any], tmp: Path) -> dict[str, Any]:
    return _report_latency(params, tmp, sweeplab_env=True)


# --- the documented Train-inside-Tune pattern -----------------------------------------------


def _tune_baseline(
    tmp: Path,
    *,
    workers: int,
    num_trials: int,
    epochs: int,
    compute_s: float,
    scheduler: str,
    seed: int,
) -> dict[str, Any]:
    """Ray's documented pattern: a Tune function trainable driving a TorchTrainer whose
    `TuneReportCallback` forwards rank 0's reports. The driver asks for no CPU (a token of
    memory), like sweeplab's, so a 2-worker group fits 2 CPUs; one trial at a time.

    When ASHA stops a trial (at a rung, or at ``max_t``), Tune ends the trial's actor while its
    `fit()` still runs; the group's placement group is then never removed (seen here: the dead
    trial's group stays CREATED, the next trial's waits PENDING for ever). With ``scheduler=
    "asha"`` the Ray of this arm therefore gets ``2 * num_trials`` extra *virtual* CPUs, so the
    leaked groups cannot block it; its trials still run one at a time, as on 2 CPUs.
    """
    import ray
    import ray.train
    from ray import tune
    from ray.train.torch import TorchTrainer
    from ray.tune.integration.ray_train import TuneReportCallback

    headroom = 2 * num_trials if scheduler == "asha" else 0
    _ray_init(sweeplab_env=False, num_cpus=2 + headroom)
    sweep = _load(write_spec(tmp, epochs=epochs, compute_s=compute_s, **BASE))
    train_func = sweep.train_func
    storage = str(tmp / "train")
    clock = StartupClock()

    def trial(config: dict[str, Any]) -> None:
        trial_id = tune.get_context().get_trial_id()
        TorchTrainer(
            train_func,
            train_loop_config=config,
            scaling_config=_scaling(workers),
            run_config=ray.train.RunConfig(
                name=f"trial-{trial_id}",
                storage_path=storage,
                callbacks=[TuneReportCallback()],
            ),
        ).fit()

    sched: Any = None
    if scheduler == "asha":
        sched = tune.schedulers.ASHAScheduler(
            time_attr="training_iteration", max_t=epochs, grace_period=1, reduction_factor=3
        )
    tuner = tune.Tuner(
        tune.with_resources(trial, {"cpu": 0, "memory": 1 << 20}),
        param_space={"x": tune.uniform(0, 1)},
        tune_config=tune.TuneConfig(
            metric="loss",
            mode="min",
            num_samples=num_trials,
            scheduler=sched,
            search_alg=tune.search.BasicVariantGenerator(random_state=seed, max_concurrent=1),
            max_concurrent_trials=1,
        ),
        run_config=tune.RunConfig(
            name="baseline",
            storage_path=str(tmp / "tune"),
            verbose=0,
            log_to_file=False,
            callbacks=[_tune_clock(clock)],
        ),
    )
    begin = time.perf_counter()
    grid = tuner.fit()
    wall = time.perf_counter() - begin
    first, best, reports, errors = [], [], 0, 0
    for result in grid:
        if result.error:
            errors += 1
        frame = result.metrics_dataframe
        if frame is not None and len(frame):
            first.append(float(frame["time_total_s"].iloc[0]))
            best.append(float(frame["loss"].min()))
            reports += len(frame)
    leaked = [
        group
        for group in ray.util.placement_group_table().values()
        if group["state"] == "CREATED" and any("CPU" in b for b in group["bundles"].values())
    ]
    return {
        "wall_s": wall,
        "first_result_s": first,
        "start_to_first_result_s": list(clock.first.values()),
        "best_loss": min(best) if best else None,
        "reports": reports,
        "trials": len(grid),
        "errored": errors,
        "virtual_cpus_added": headroom,
        "trainer_groups_left_after_fit": len(leaked),
    }


def _trial_frames(run_dir: Path) -> Iterator[Any]:
    """Each trial's reports as a DataFrame: the trial loop's ``trials/<id>/result.json``, or
    Tune's ``progress.csv`` for a sweep on Tune."""
    import pandas as pd

    for path in run_dir.glob("trials/*/result.json"):
        yield pd.read_json(path, lines=True, dtype={"trial_id": str})
    for path in run_dir.glob("tune/*/progress.csv"):
        yield pd.read_csv(path, dtype={"trial_id": str})


def _sweeplab(
    tmp: Path,
    *,
    workers: int,
    num_trials: int,
    epochs: int,
    compute_s: float,
    scheduler: str,
    seed: int,
    track: bool = False,
    searcher: str = "random",
    max_concurrent: int | None = 1,
    reuse_groups: bool = True,
    model: bool = False,
) -> dict[str, Any]:

    from sweeplab.engine import SweepOptions, run_sweep

    _ray_init(sweeplab_env=True)
    clock = StartupClock()
    kwargs: dict[str, Any] = {
        "name": "bench",
        "metric": "loss",
        "mode": "min",
        "searcher": searcher,
        "scheduler": scheduler,
        "num_trials": num_trials,
        "max_iterations": epochs,
        "workers_per_trial": workers,
        "seed": seed,
        "reuse_groups": reuse_groups,
    }
    if max_concurrent is not None:
        kwargs["max_concurrent_trials"] = max_concurrent
    if _gpu_share(workers) is not None:
        kwargs.update(use_gpu=True, gpus_per_worker=_gpu_share(workers))
    spec = write_spec(tmp, epochs=epochs, compute_s=compute_s, model=model, **kwargs)
    options = SweepOptions(
        spec_path=spec,
        storage=tmp / "runs",
        tracking_uri=f"sqlite:///{tmp / 'mlflow.db'}" if track else None,
        live=False,
        track=track,
        callbacks=[_sweep_clock(clock)],
    )
    begin = time.perf_counter()
    outcome = run_sweep(_load(spec), options)
    wall = time.perf_counter() - begin
    first, best, reports, compute = [], [], 0, 0.0
    last_rss: dict[str, float] = {}
    gpu_floor: dict[str, float] = {}
    for frame in _trial_frames(outcome.storage_dir):
        if len(frame):
            last_rss[str(frame["trial_id"].iloc[-1])] = float(frame["rss_mb"].iloc[-1])
            if "gpu_floor_mb" in frame:
                gpu_floor[str(frame["trial_id"].iloc[0])] = float(frame["gpu_floor_mb"].iloc[0])
            first.append(float(frame["time_total_s"].iloc[0]))
            best.append(float(frame["loss"].min()))
            reports += len(frame)
            compute += float(frame["compute_s"].sum()) * workers
    return {
        "wall_s": wall,
        "engine_wall_s": outcome.wall_s,
        "first_result_s": first,
        "start_to_first_result_s": list(clock.first.values()),
        "best_loss": min(best) if best else None,
        "reports": reports,
        "trials": outcome.trials,
        "errored": outcome.errored,
        "compute_s": compute,
        "concurrency": outcome.plan.concurrency,
        # Rank 0's resident memory at each trial's last report, in the order trials started.
        "worker_rss_mb": [last_rss[t] for t in clock.first if t in last_rss],
        # On GPU: the memory allocated when each trial started (a warm slot's floor).
        "gpu_floor_mb": [gpu_floor[t] for t in clock.first if t in gpu_floor],
    }


def _startup_params(params: dict[str, Any]) -> dict[str, Any]:
    return {
        "workers": params["workers"],
        "num_trials": params["trials"],
        "epochs": 2,
        "compute_s": 0.05,
        "scheduler": "fifo",
        "seed": 0,
    }


def startup_baseline(params: dict[str, Any], tmp: Path) -> dict[str, Any]:
    return _tune_baseline(tmp, **_startup_params(params))


def startup_sweeplab(params: dict[str, Any], tmp: Path) -> dict[str, Any]:
    return _sweeplab(tmp, **_startup_params(params))


def startup_sweeplab_group_per_trial(params: dict[str, Any], tmp: Path) -> dict[str, Any]:
    return _sweeplab(tmp, **_startup_params(params), reuse_groups=False)


def _e2e_params(params: dict[str, Any]) -> dict[str, Any]:
    return {
        "workers": 2,
        "num_trials": params["trials"],
        "epochs": 8,
        "compute_s": 0.2,
        "scheduler": "asha",
        "seed": 7,
    }


def end_to_end_baseline(params: dict[str, Any], tmp: Path) -> dict[str, Any]:
    return _tune_baseline(tmp, **_e2e_params(params))


def end_to_end_sweeplab(params: dict[str, Any], tmp: Path) -> dict[str, Any]:
    return _sweeplab(tmp, **_e2e_params(params), max_concurrent=None)


def end_to_end_sweeplab_group_per_trial(params: dict[str, Any], tmp: Path) -> dict[str, Any]:
    return _sweeplab(tmp, **_e2e_params(params), max_concurrent=None, reuse_groups=False)


def end_to_end_sweeplab_tracked(params: dict[str, Any], tmp: Path) -> dict[str, Any]:
    return _sweeplab(tmp, **_e2e_params(params), max_concurrent=None, track=True)


# --- plain Optuna ---------------------------------------------------------------------------


def optuna_baseline(params: dict[str, Any], tmp: Path) -> dict[str, Any]:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    sweep = _load(write_spec(tmp, epochs=1, compute_s=0.0, **BASE))
    busy = sys.modules[sweep.train_func.__module__].busy
    epochs, compute_s = params["epochs"], params["compute_s"]
    totals = {"compute_s": 0.0, "reports": 0}

    def objective(trial: Any) -> float:
        x = trial.suggest_float("x", 0, 1)
        loss = float("inf")
        for epoch in range(epochs):
            totals["compute_s"] += busy(compute_s)
            loss = (x - 0.3) ** 2 + 1.0 / (epoch + 1)
            totals["reports"] += 1
            trial.report(loss, epoch + 1)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return loss

    study = optuna.create_study(
        direction="minimize",
        sampler=optuna.samplers.TPESampler(seed=7),
        pruner=optuna.pruners.HyperbandPruner(min_resource=1, max_resource=epochs),
    )
    begin = time.perf_counter()
    study.optimize(objective, n_trials=params["trials"], n_jobs=2)
    wall = time.perf_counter() - begin
    pruned = sum(t.state == optuna.trial.TrialState.PRUNED for t in study.trials)
    return {
        "wall_s": wall,
        "best_loss": study.best_value,
        "trials": len(study.trials),
        "pruned": pruned,
        **totals,
    }


def optuna_sweeplab(params: dict[str, Any], tmp: Path) -> dict[str, Any]:
    return _sweeplab(
        tmp,
        workers=1,
        num_trials=params["trials"],
        epochs=params["epochs"],
        compute_s=params["compute_s"],
        # Optuna's HyperbandPruner runs its successive-halving brackets asynchronously; Tune's
        # HyperBandScheduler is the synchronous algorithm (it pauses trials at each rung), so
        # the asynchronous counterpart here is ASHA.
        scheduler="asha",
        searcher="optuna",
        seed=7,
        max_concurrent=None,
    )


# --- utilisation and memory -----------------------------------------------------------------


def utilisation_sweeplab(params: dict[str, Any], tmp: Path) -> dict[str, Any]:
    result = _sweeplab(
        tmp,
        workers=1,
        num_trials=params["trials"],
        epochs=params["epochs"],
        compute_s=1.0,
        scheduler="fifo",
        seed=3,
        max_concurrent=None,
    )
    # Trial compute: each reported epoch is 1 s of wall-clock busy loop. (`compute_s` is the CPU
    # time the loops got, less than that when other jobs share the machine.)
    result["epoch_s"] = result["reports"] * 1.0
    result["utilisation"] = result["epoch_s"] / (result["wall_s"] * 2)
    result["utilisation_cpu_time"] = result["compute_s"] / (result["wall_s"] * 2)
    return result


def bookkeeping_sweeplab(params: dict[str, Any], tmp: Path) -> dict[str, Any]:
    """Many 1-s trials of one report each: what the engine adds per trial."""
    result = _sweeplab(
        tmp,
        workers=1,
        num_trials=params["trials"],
        epochs=1,
        compute_s=1.0,
        scheduler="fifo",
        seed=5,
        max_concurrent=None,
    )
    result["theoretical_s"] = params["trials"] * 1.0 / 2
    return result


def memory_sweeplab(params: dict[str, Any], tmp: Path) -> dict[str, Any]:
    """A quickstart-like sweep (2-worker groups, ASHA, tracked); the parent samples RSS."""
    return _sweeplab(
        tmp,
        workers=2,
        num_trials=params["trials"],
        epochs=4,
        compute_s=0.2,
        scheduler="asha",
        seed=1,
        track=True,
        max_concurrent=None,
    )


def slot_memory_sweeplab(params: dict[str, Any], tmp: Path) -> dict[str, Any]:
    """Many short 2-worker trials, each building a small torch model, on one warm slot."""
    return _sweeplab(
        tmp,
        workers=2,
        num_trials=params["trials"],
        epochs=1,
        compute_s=0.0,
        scheduler="fifo",
        seed=1,
        model=True,
    )


# --- tracking throughput --------------------------------------------------------------------


def logging_throughput(params: dict[str, Any], tmp: Path) -> dict[str, Any]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "tracking"))
    from mlflow_server import MlflowServer  # the tests' helper: start/stop by process group

    from sweeplab.tracking import benchmark_logging

    n = params["points"]
    sqlite = benchmark_logging(f"sqlite:///{tmp / 'bench.db'}", n)
    server = MlflowServer(tmp / "server")
    server.start()
    try:
        http = benchmark_logging(server.uri, n)
    finally:
        server.stop()
    return {"points": n, "sqlite_points_per_s": sqlite, "server_points_per_s": http}


ARMS: dict[str, Callable[[dict[str, Any], Path], dict[str, Any]]] = {
    name: fn
    for name, fn in list(globals().items())
    if callable(fn)
    and not name.startswith("_")
    and name not in {"write_spec", "Callable", "Path", "Any", "StartupClock"}
}


def main() -> None:
    name, params, out = sys.argv[1], json.loads(sys.argv[2]), Path(sys.argv[3])
    with tempfile.TemporaryDirectory(prefix=f"bench-{name}-") as tmp:
        os.chdir(tmp)  # MLflow/Ray side files land in the temp folder
        result = ARMS[name](params, Path(tmp))
    out.write_text(json.dumps(result))


if __name__ == "__main__":
    main()
