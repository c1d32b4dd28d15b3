"""The one number test sweeplab applies to metrics, bounds and resources."""

from __future__ import annotations

import fractions
import math

import numpy as np
import pytest

from sweeplab._numbers import is_finite_number, is_number


@pytest.mark.parametrize(
    ("value", "number", "finite"),
    [
        (1, True, True),
        (-3, True, True),
        (0.5, True, True),
        (np.float32(0.25), True, True),
        (np.float16(2.0), True, True),
        (np.float64(1.5), True, True),
        (np.int64(7), True, True),
        (np.uint8(3), True, True),
        (fractions.Fraction(1, 3), True, True),
        (math.nan, True, False),
        (math.inf, True, False),
        (-math.inf, True, False),
        (np.float32("nan"), True, False),
        (np.float64("inf"), True, False),
        (True, False, False),
        (False, False, False),
        (np.bool_(True), False, False),
        ("1.0", False, False),
        (None, False, False),
        (1 + 2j, False, False),
        (np.array(1.0), False, False),
        ([1.0], False, False),
    ],
    ids=repr,
)
def test_is_number(value: object, number: bool, finite: bool) -> None:
    assert is_number(value) is number
    assert is_finite_number(value) is finite


def test_numpy_scalars_are_numbers_in_spec_and_space() -> None:
    """The places that used their own helper accept and reject the same values."""
    from sweeplab import uniform
    from sweeplab.errors import SpecError

    assert uniform(np.float32(0.5), np.int64(2)).high == 2
    with pytest.raises(SpecError, match="numbers"):
        uniform(np.bool_(False), 1.0)
