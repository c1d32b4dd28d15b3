"""Fitting an earlier sweep's config into a changed space, and encoding configs for backends."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

from sweeplab.space import (
    Space,
    adapt_config,
    choice,
    compile_to_hyperopt,
    compile_to_optuna,
    decode_config,
    encode_for_hyperopt,
    encode_for_optuna,
    loguniform,
    optuna_distribution,
    qloguniform,
    quniform,
    randint,
    uniform,
)

SPACE = Space(
    {
        "lr": loguniform(1e-3, 1e-1),
        "layers": randint(1, 4),
        "dropout": quniform(0.0, 0.5, 0.1),
        "width": qloguniform(32, 256, 32),
        "act": choice(["relu", "gelu"]),
        "hidden": choice([[64, 64], [128]]),
        "optimizer": choice({"sgd": {"momentum": uniform(0.0, 0.9)}, "adam": {}}),
        "model": {"norm": choice([True, False]), "epochs": 10},
    }
)
FITS: dict[str, Any] = {
    "lr": 0.01,
    "layers": 2,
    "dropout": 0.3,
    "width": 64,
    "act": "gelu",
    "hidden": [128],
    "optimizer": {"name": "sgd", "momentum": 0.5},
    "model": {"norm": True, "epochs": 10},
}


def adapt(changes: dict[str, Any], seed: int = 0) -> tuple[dict[str, Any], list[Any]]:
    config = copy.deepcopy(FITS)
    for path, value in changes.items():
        *parents, last = path.split(".")
        node = config
        for part in parents:
            node = node[part]
        if value is DROP:
            del node[last]
        else:
            node[last] = value
    given = copy.deepcopy(config)
    adapted, notes = adapt_config(SPACE, config, gen=random.Random(seed))
    assert config == given, "the given config was changed"
    SPACE.validate_config(adapted)
    return adapted, notes


DROP = object()


def test_a_config_of_the_space_is_kept_as_it_is() -> None:
    adapted, notes = adapt({})
    assert adapted == FITS and notes == []


@pytest.mark.parametrize(
    ("changes", "path", "kind", "new"),
    [
        ({"old": 3}, "old", "dropped", None),
        ({"model.gone": "x"}, "model.gone", "dropped", None),
        ({"optimizer.nesterov": True}, "optimizer.sgd.nesterov", "dropped", None),
        ({"lr": 0.5}, "lr", "clipped", 0.1),
        ({"lr": 1e-6}, "lr", "clipped", 1e-3),  # a log range stays positive
        ({"layers": 9}, "layers", "clipped", 4),
        ({"layers": 2.6}, "layers", "snapped", 3),
        ({"dropout": 0.33}, "dropout", "snapped", 0.3),
        ({"dropout": 0.9}, "dropout", "clipped", 0.5),
        ({"width": 1000}, "width", "clipped", 256),
        ({"width": 70}, "width", "snapped", 64),
        ({"optimizer.momentum": 0.95}, "optimizer.sgd.momentum", "clipped", 0.9),
        ({"model.epochs": 5}, "model.epochs", "constant", 10),
    ],
)
def test_each_change_is_made_and_said(changes: dict, path: str, kind: str, new: Any) -> None:
    adapted, notes = adapt(changes)
    assert [(n.path, n.kind) for n in notes] == [(path, kind)]
    (note,) = notes
    assert note.new == new and str(note).startswith(f"{path}: ")
    if new is not None:
        node: Any = adapted
        for part in path.replace("optimizer.sgd", "optimizer").split("."):
            node = node[part]
        assert node == new and type(node) is type(new)


def test_an_integral_float_for_an_int_is_an_int_without_a_note() -> None:
    adapted, notes = adapt({"layers": 3.0, "width": 96.0})
    assert notes == [] and adapted["layers"] == 3 and type(adapted["layers"]) is int


@pytest.mark.parametrize(
    ("changes", "path"),
    [
        ({"act": "tanh"}, "act"),  # no longer among the choices
        ({"hidden": [256]}, "hidden"),
        ({"lr": "fast"}, "lr"),  # a string for a range
        ({"optimizer": {"name": "rmsprop", "rho": 0.9}}, "optimizer"),  # the option is gone
        ({"model": 3}, "model"),  # a group in the space
    ],
)
def test_a_value_the_parameter_cannot_take_is_drawn_anew(changes: dict, path: str) -> None:
    _, notes = adapt(changes)
    assert [(n.path, n.kind) for n in notes] == [(path, "resampled")]


def test_missing_parameters_are_drawn_with_the_generator() -> None:
    first, notes = adapt({"lr": DROP, "optimizer.momentum": DROP}, seed=7)
    again, _ = adapt({"lr": DROP, "optimizer.momentum": DROP}, seed=7)
    assert first == again, "the same seed draws the same values"
    assert [(n.path, n.kind) for n in notes] == [
        ("lr", "filled"),
        ("optimizer.sgd.momentum", "filled"),
    ]
    assert first["optimizer"]["name"] == "sgd"


def test_an_option_name_from_a_plain_choice_keeps_that_branch() -> None:
    adapted, notes = adapt({"optimizer": "adam"})
    assert adapted["optimizer"] == {"name": "adam"} and notes == []


def test_a_conditional_that_became_a_plain_choice_keeps_the_option_name() -> None:
    space = {**SPACE.params, "optimizer": choice(["sgd", "adam"])}
    adapted, notes = adapt_config(space, FITS, gen=random.Random(0))
    assert adapted["optimizer"] == "sgd"
    assert [(n.path, n.kind, n.old) for n in notes] == [("optimizer.momentum", "dropped", 0.5)]


def test_a_list_option_recorded_as_json_text_is_found() -> None:
    adapted, notes = adapt({"hidden": "[64, 64]"})
    assert adapted["hidden"] == [64, 64] and notes == []


CONFIGS = SPACE.sample(seed=3, n=12)


@pytest.mark.parametrize("config", CONFIGS)
def test_optuna_encoding_replays_to_the_config(config: dict[str, Any]) -> None:
    import optuna

    fixed = optuna.trial.FixedTrial(encode_for_optuna(SPACE, config))
    constants = compile_to_optuna(SPACE)(fixed)
    assert decode_config(SPACE, {**constants, **fixed.params}) == config
    assert set(fixed.distributions) == set(fixed.params)


@pytest.mark.parametrize("config", CONFIGS)
def test_optuna_distribution_is_what_the_compiled_function_suggests(config: dict[str, Any]) -> None:
    import optuna

    fixed = optuna.trial.FixedTrial(encode_for_optuna(SPACE, config))
    compile_to_optuna(SPACE)(fixed)
    for name, distribution in fixed.distributions.items():
        node: Any = SPACE.params
        for part in name.split("/"):
            node = node if part == "_option" else getattr(node, "branches", node)[part]
        assert optuna_distribution(node) == distribution, name


@pytest.mark.parametrize("config", CONFIGS)
def test_hyperopt_encoding_evaluates_to_the_config(config: dict[str, Any]) -> None:
    from hyperopt import space_eval

    drawn = space_eval(compile_to_hyperopt(SPACE), encode_for_hyperopt(SPACE, config))
    assert decode_config(SPACE, drawn) == config
