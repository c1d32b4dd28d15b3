"""The Ray session of a sweep: starting or joining Ray, its environment, its logs."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sweeplab.spec import Sweep

__all__ = [
    "DEFAULT_STORAGE",
    "REPORT_POLL_INTERVAL_S",
    "cluster_nodes",
    "pickle_spec_by_value",
    "quiet_libraries",
    "ray_session",
    "runtime_env",
    "start_local_ray",
]

DEFAULT_STORAGE = "sweeplab-runs"
# Train's default polls workers every 2 s, and each `ray.train.report` waits for that poll.
REPORT_POLL_INTERVAL_S = "0.02"


@contextlib.contextmanager
def ray_logs_to(path: Path) -> Iterator[None]:
    """Sends Ray's Python logging to `path` instead of the terminal."""
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    saved = {}
    for name in ("ray", "ray.tune", "ray.train", "ray.air"):
        logger = logging.getLogger(name)
        saved[name] = (logger.handlers[:], logger.propagate)
        logger.handlers = [handler]
        logger.propagate = False
    try:
        yield
    finally:
        for name, (handlers, propagate) in saved.items():
            logger = logging.getLogger(name)
            logger.handlers = handlers
            logger.propagate = propagate
        handler.close()


def runtime_env(spec_dir: Path | None, remote: bool) -> dict[str, Any]:
    """The runtime env of a sweep on a cluster that sweeplab joins (``--address``)."""
    env_vars = {
        "RAY_TRAIN_HEALTH_CHECK_INTERVAL_S": REPORT_POLL_INTERVAL_S,
        "TUNE_DISABLE_STRICT_METRIC_CHECKING": "1",
        # One actor process less per trial: sweeps run on fixed clusters, not preemptible ones.
        "RAY_TRAIN_ENABLE_PREEMPTION_WATCHER": "0",
        "RAY_TRAIN_METRICS_ENABLED": "0",
    }
    env: dict[str, Any] = {"env_vars": env_vars}
    if spec_dir is not None:
        if remote:
            # Other nodes cannot see this machine's files: ship the spec's folder.
            env["working_dir"] = str(spec_dir)
            env["excludes"] = [".venv", "*.db", "mlruns", DEFAULT_STORAGE, ".git"]
        else:
            paths = [str(spec_dir), *filter(None, [os.environ.get("PYTHONPATH")])]
            env_vars["PYTHONPATH"] = os.pathsep.join(paths)
    return env


@contextlib.contextmanager
def local_ray_environment(spec_dir: Path | None) -> Iterator[None]:
    """The runtime env's variables set in this process while it starts a local Ray.

    The local Ray's processes inherit them. A job-level runtime env would do the same, but
    then Ray cannot hand a new actor one of its prestarted idle worker processes (they were
    started without that env): every actor of every trial (Train's controller and its helpers,
    the workers) would wait for a fresh process.
    """
    env_vars = runtime_env(spec_dir, remote=False)["env_vars"]
    saved = {name: os.environ.get(name) for name in env_vars}
    os.environ.update(env_vars)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def start_local_ray(spec_dir: Path | None = None, **init_kwargs: Any) -> Any:
    """Starts a new local Ray the way `sweeplab sweep` does (no ``--address``).

    Args:
        spec_dir: A folder the Ray workers import from (the spec file's), if any.
        **init_kwargs: More arguments of ``ray.init`` (``num_cpus``, ``log_to_driver``...).

    Returns:
        What ``ray.init`` returns.
    """
    import ray

    with local_ray_environment(spec_dir):
        return ray.init(address="local", **init_kwargs)


@contextlib.contextmanager
def ray_session(*, address: str | None, spec_dir: Path | None, log_path: Path) -> Iterator[bool]:
    """Ray for one sweep, its Python logging sent to `log_path`; yields whether it started here.

    A Ray already initialised in this process is used as it is. Otherwise sweeplab joins the
    cluster at `address` with the spec's folder shipped, or starts a local Ray, and shuts it
    down at the end.
    """
    import ray

    with ray_logs_to(log_path):
        started_here = not ray.is_initialized()
        if started_here:
            init_kwargs: dict[str, Any] = {
                "log_to_driver": False,
                "dashboard_host": "127.0.0.1",
                "configure_logging": True,
                "logging_level": logging.WARNING,
            }
            if address is not None:
                ray.init(
                    address=address,
                    runtime_env=runtime_env(spec_dir, remote=True),
                    **init_kwargs,
                )
            else:
                start_local_ray(spec_dir, include_dashboard=True, **init_kwargs)
        try:
            yield started_here
        finally:
            if started_here:
                ray.shutdown()


def quiet_libraries() -> None:
    """Keeps Tune's, MLflow's and Optuna's chatter off the terminal: the live table shows it."""
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
    import mlflow  # noqa: F401  (mlflow sets its loggers' levels when imported)

    for name in ("mlflow", "alembic", "optuna"):
        logging.getLogger(name).setLevel(logging.WARNING)
    try:
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
    except ImportError:  # pragma: no cover - optuna is a dependency
        pass


def pickle_spec_by_value(sweep: Sweep) -> None:
    """Ray workers cannot import a spec file loaded from a path, nor a module the spec imported
    from a folder it put on `sys.path` itself: ship their functions by value."""
    import ray.cloudpickle

    from sweeplab.spec import spec_only_modules

    module = sys.modules.get(getattr(sweep.train_func, "__module__", "") or "")
    if module is not None and module.__name__.startswith("sweeplab_spec_"):
        ray.cloudpickle.register_pickle_by_value(module)
    for name in spec_only_modules():
        if name in sys.modules:
            ray.cloudpickle.register_pickle_by_value(sys.modules[name])


def cluster_nodes() -> list[dict[str, float]]:
    """The resources of each live node of the Ray this process is connected to."""
    import ray

    return [
        {k: float(v) for k, v in node["Resources"].items() if not k.startswith("node:")}
        for node in ray.nodes()
        if node.get("Alive")
    ]
