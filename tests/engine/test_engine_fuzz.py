"""Bad input fuzzing: a malformed `Sweep(...)` or space raises `SpecError`, never another error.

Hypothesis draws malformed fields (wrong types, NaN and infinities, negative counts, names with
path separators or ``..``, unknown strings, bad bounds, empty choices, nested garbage) on top of
a valid sweep; each draw must fail with a `SpecError` whose message is not empty.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sweeplab
from sweeplab import SpecError
from sweeplab.space import Space, choice, grid, loguniform, quniform, randint, uniform

FUZZ = settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


def train_func(config: dict[str, Any]) -> None:
    pass


def valid_kwargs() -> dict[str, Any]:
    return {
        "name": "fuzz",
        "train_func": train_func,
        "space": {"x": uniform(0.0, 1.0), "n": randint(1, 4)},
        "metric": "loss",
        "mode": "min",
    }


def test_the_base_sweep_is_valid() -> None:
    sweeplab.Sweep(**valid_kwargs())


# Any value at all: scalars of every kind, containers of them, nested, and odd objects.
NON_FINITE = st.sampled_from([math.nan, math.inf, -math.inf])
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**6), max_value=10**6),
    st.floats(allow_nan=True, allow_infinity=True),
    NON_FINITE,
    st.text(max_size=12),
    st.binary(max_size=6),
    st.just(object()),
    st.just(len),
)
GARBAGE = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.tuples(inner, inner),
        st.dictionaries(st.one_of(st.text(max_size=6), st.integers()), inner, max_size=4),
        st.frozensets(st.integers(), max_size=3),
    ),
    max_leaves=10,
)
BAD_NAMES = st.one_of(
    st.sampled_from(
        ["", "../x", "a/b", "..", "a..b", "/abs", "x\\y", ".hidden", "-dash", "a b", "é", "x" * 101]
    ),
    st.text(min_size=1, max_size=10).map(lambda t: t + "/" + t),
    st.text(max_size=6).map(lambda t: "../" + t),
    GARBAGE.filter(lambda v: not isinstance(v, str)),
)


def not_int(value: Any) -> bool:
    return not isinstance(value, int) or isinstance(value, bool)


# field -> values that break its rule
BAD_FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "name": BAD_NAMES,
    "train_func": GARBAGE.filter(lambda v: not callable(v)),
    "metric": st.one_of(st.just(""), GARBAGE.filter(lambda v: not isinstance(v, str))),
    "mode": st.one_of(st.text(max_size=6), GARBAGE).filter(lambda v: v not in ("min", "max")),
    "searcher": st.one_of(st.text(max_size=8), GARBAGE).filter(
        # None is no searcher named: the defaults choose one.
        lambda v: v is not None and v not in ("random", "grid", "optuna", "hyperopt")
    ),
    "scheduler": st.one_of(st.text(max_size=8), GARBAGE).filter(
        lambda v: v is not None and v not in ("fifo", "asha", "hyperband", "median", "pbt")
    ),
    "num_trials": st.one_of(st.integers(max_value=0), GARBAGE.filter(not_int)),
    "max_iterations": st.one_of(st.integers(max_value=0), GARBAGE.filter(not_int)),
    "workers_per_trial": st.one_of(
        st.integers(max_value=0),
        st.tuples(st.integers(min_value=2, max_value=9), st.integers(max_value=1)),
        st.tuples(st.integers(max_value=0), st.integers()),
        st.lists(st.integers(min_value=1), min_size=3, max_size=4),
        st.lists(st.integers(min_value=1), max_size=1),
        st.tuples(GARBAGE.filter(not_int), st.integers(min_value=1)),
        GARBAGE.filter(lambda v: not_int(v) and not isinstance(v, tuple | list)),
    ),
    "use_gpu": GARBAGE.filter(lambda v: not isinstance(v, bool)),
    "cpus_per_worker": st.one_of(
        st.floats(max_value=-1e-9), NON_FINITE, GARBAGE.filter(lambda v: not isinstance(v, int))
    ).filter(lambda v: not (isinstance(v, float) and v >= 0 and math.isfinite(v))),
    "resources_per_worker": st.one_of(
        st.dictionaries(st.sampled_from(["CPU", "GPU", "cpu", "gpu"]), st.floats(0, 4), min_size=1),
        st.dictionaries(st.text(min_size=1, max_size=5), st.floats(max_value=-1e-6), min_size=1),
        st.dictionaries(st.text(min_size=1, max_size=5), NON_FINITE, min_size=1),
        st.dictionaries(st.integers(), st.integers(0, 3), min_size=1),
        st.just({"": 1}),
        st.lists(GARBAGE, min_size=1, max_size=3),
        st.text(min_size=1, max_size=5),
    ),
    "max_concurrent_trials": st.one_of(
        st.integers(max_value=0), GARBAGE.filter(lambda v: v is not None and not_int(v))
    ),
    "checkpoints_to_keep": st.one_of(st.integers(max_value=0), GARBAGE.filter(not_int)),
    "max_failures": st.one_of(st.integers(max_value=-2), GARBAGE.filter(not_int)),
    "time_budget_s": st.one_of(
        st.floats(max_value=0), NON_FINITE, GARBAGE.filter(lambda v: v is not None)
    ).filter(
        lambda v: (
            not (
                isinstance(v, int | float)
                and not isinstance(v, bool)
                and v > 0
                and math.isfinite(v)
            )
        )
    ),
    "seed": st.one_of(
        st.integers(max_value=-1), GARBAGE.filter(lambda v: v is not None and not_int(v))
    ),
    "placement_strategy": st.one_of(st.text(max_size=8), GARBAGE).filter(
        lambda v: v not in ("PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD")
    ),
    "metrics_from": st.one_of(st.text(max_size=8), GARBAGE).filter(
        lambda v: v not in ("rank0", "mean")
    ),
    "rank_by": st.one_of(st.text(max_size=8), GARBAGE).filter(lambda v: v not in ("best", "last")),
    "register_model": BAD_NAMES.filter(lambda v: v is not None),
    "warm_start": st.one_of(
        BAD_NAMES.filter(lambda v: v is not None and not isinstance(v, list | tuple)),
        st.lists(st.dictionaries(st.just("x"), st.floats(1.5, 9.0)), min_size=1, max_size=2),
        st.lists(st.dictionaries(st.just("x"), GARBAGE), min_size=1, max_size=2),
        st.lists(GARBAGE.filter(lambda v: not isinstance(v, dict)), min_size=1, max_size=2),
    ),
}


def assert_spec_error(build: Callable[[], Any]) -> None:
    try:
        build()
    except SpecError as exc:
        assert str(exc).strip(), "a SpecError with an empty message"
    except Exception as exc:  # pragma: no cover - the failure this test looks for
        pytest.fail(f"leaked {type(exc).__name__}: {exc!r}")
    else:  # pragma: no cover
        pytest.fail("accepted a malformed sweep")


@FUZZ
@given(data=st.data(), field=st.sampled_from(sorted(BAD_FIELDS)))
def test_malformed_sweep_field_raises_spec_error(data: st.DataObject, field: str) -> None:
    kwargs = valid_kwargs()
    kwargs[field] = data.draw(BAD_FIELDS[field], label=field)
    assert_spec_error(lambda: sweeplab.Sweep(**kwargs))


SEQ_OR_MAP = (list, tuple, dict)

# Malformed primitives: each entry builds one primitive from drawn arguments.
BAD_BOUND = st.one_of(NON_FINITE, st.text(max_size=4), st.none(), st.booleans(), st.lists(SCALARS))
PRIMITIVES: dict[str, Callable[[st.DataObject], Any]] = {
    "uniform/bad-bound": lambda d: uniform(d.draw(BAD_BOUND), d.draw(st.floats(0, 1))),
    "uniform/reversed": lambda d: uniform(
        d.draw(st.floats(1.0, 1e6)), d.draw(st.floats(-1e6, 0.999))
    ),
    "loguniform/non-positive": lambda d: loguniform(
        d.draw(st.floats(-1e6, 0.0)), d.draw(st.floats(1.0, 10.0))
    ),
    "loguniform/bad-bound": lambda d: loguniform(d.draw(st.floats(1, 2)), d.draw(BAD_BOUND)),
    "quniform/bad-q": lambda d: quniform(
        0.0, 1.0, d.draw(st.one_of(st.floats(max_value=0.0), NON_FINITE, st.text(max_size=3)))
    ),
    "randint/reversed": lambda d: randint(
        d.draw(st.integers(5, 100)), d.draw(st.integers(-100, 4))
    ),
    "randint/not-int": lambda d: randint(d.draw(st.one_of(BAD_BOUND, st.floats(0.1, 0.9))), 3),
    "choice/empty": lambda d: choice(d.draw(st.sampled_from([[], {}, ()]))),
    "choice/garbage": lambda d: choice(
        d.draw(GARBAGE.filter(lambda v: not isinstance(v, SEQ_OR_MAP)))
    ),
    "choice/non-finite": lambda d: choice([1, d.draw(NON_FINITE)]),
    "choice/bad-branch": lambda d: choice(
        {"a": d.draw(GARBAGE.filter(lambda v: not isinstance(v, dict) and v is not None))}
    ),
    "grid/empty": lambda d: grid(d.draw(st.sampled_from([[], ()]))),
    "grid/garbage": lambda d: grid(d.draw(GARBAGE.filter(lambda v: not isinstance(v, SEQ_OR_MAP)))),
}


@FUZZ
@given(data=st.data(), kind=st.sampled_from(sorted(PRIMITIVES)))
def test_malformed_primitive_raises_spec_error(data: st.DataObject, kind: str) -> None:
    def build() -> None:
        # Built inside a space: a primitive that survives its own constructor must fail there.
        sweeplab.Sweep(**{**valid_kwargs(), "space": {"p": PRIMITIVES[kind](data)}})

    assert_spec_error(build)


# Malformed spaces: bad parameter names, garbage values, nested garbage, non-mappings.
BAD_PARAM_NAMES = st.one_of(
    st.sampled_from(["", "_reserved", "a.b", "a/b", ".."]),
    st.integers(),
    st.none(),
    st.tuples(st.integers()),
)
BAD_SPACES = st.one_of(
    GARBAGE.filter(lambda v: not isinstance(v, dict)),
    st.dictionaries(BAD_PARAM_NAMES, st.just(0.5), min_size=1, max_size=3),
    st.dictionaries(st.sampled_from(["a", "b"]), NON_FINITE, min_size=1),
    st.dictionaries(
        st.sampled_from(["a", "b"]),
        st.dictionaries(
            st.sampled_from(["c", "d"]), st.one_of(NON_FINITE, st.just(object())), min_size=1
        ),
        min_size=1,
    ),
    st.just(None),
)


@FUZZ
@given(space=BAD_SPACES)
def test_malformed_space_raises_spec_error(space: Any) -> None:
    assert_spec_error(lambda: sweeplab.Sweep(**{**valid_kwargs(), "space": space}))


@FUZZ
@given(text=st.one_of(st.text(max_size=40), GARBAGE.map(repr)))
def test_malformed_space_yaml_raises_spec_error(text: str) -> None:
    def build() -> None:
        Space.from_yaml(text)
        # Valid YAML that happens to be a valid space is fine: nothing else must leak.
        raise SpecError("parsed")

    assert_spec_error(build)
