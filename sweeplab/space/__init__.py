"""Declarative search spaces, compiled to Ray Tune, Optuna and HyperOpt.

A space is a nested mapping of parameter names to primitives, constants or nested mappings::

    from sweeplab.space import Space, choice, loguniform, randint, uniform

    space = Space({
        "lr": loguniform(1e-4, 1e-1),
        "layers": randint(1, 4),  # 1, 2, 3 or 4: both bounds inclusive
        "batch": randint(16, 512, log=True),  # uniform in log space
        "optimizer": choice({"sgd": {"momentum": uniform(0, 0.99)}, "adam": {}}),
    })
    space.sample(seed=0)
    # [{"lr": ..., "layers": 3, "batch": 71, "optimizer": {"name": "sgd", "momentum": 0.42}}]

Every range includes both bounds. In YAML/JSON a primitive is a one-key mapping whose key is the
primitive's name (``lr: {loguniform: [1.0e-4, 1.0e-1]}``); those names are reserved in that
position. See docs/search_spaces.md. Ray, Optuna and HyperOpt are imported only when a compiler
that needs them is called.
"""

from sweeplab.space._adapt import ConfigChange, adapt_config
from sweeplab.space._decode import decode_config
from sweeplab.space._hyperopt import compile_to_hyperopt, encode_for_hyperopt
from sweeplab.space._optuna import compile_to_optuna, encode_for_optuna, optuna_distribution
from sweeplab.space._optuna_searcher import OptunaSearcher, rung_min_points
from sweeplab.space._pbt import pbt_explore_fn, pbt_mutable_paths, pbt_mutations
from sweeplab.space._primitives import (
    Choice,
    Conditional,
    FloatRange,
    IntRange,
    Param,
    choice,
    grid,
    loguniform,
    qloguniform,
    quniform,
    randint,
    uniform,
)
from sweeplab.space._serialize import load_space
from sweeplab.space._space import Space, flatten_config
from sweeplab.space._tune import (
    SearchCompiler,
    TuneSearch,
    compile_grid_search,
    compile_hyperopt_search,
    compile_optuna_search,
    compile_random_search,
)

__all__ = [
    "Choice",
    "Conditional",
    "ConfigChange",
    "FloatRange",
    "IntRange",
    "OptunaSearcher",
    "Param",
    "SearchCompiler",
    "Space",
    "TuneSearch",
    "adapt_config",
    "choice",
    "compile_grid_search",
    "compile_hyperopt_search",
    "compile_optuna_search",
    "compile_random_search",
    "compile_to_hyperopt",
    "compile_to_optuna",
    "decode_config",
    "encode_for_hyperopt",
    "encode_for_optuna",
    "flatten_config",
    "grid",
    "load_space",
    "loguniform",
    "optuna_distribution",
    "pbt_explore_fn",
    "pbt_mutable_paths",
    "pbt_mutations",
    "qloguniform",
    "quniform",
    "randint",
    "rung_min_points",
    "uniform",
]
