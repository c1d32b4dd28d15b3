"""The suite's last screen names each failed test with the last lines of its report."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

CONFTEST = Path(__file__).with_name("conftest.py")


def test_the_run_ends_with_each_failure_and_its_last_lines(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST.read_text(encoding="utf-8"))
    pytester.makepyfile(
        test_two="""
        def test_passes():
            pass

        def test_fails():
            value = 1
            assert value == 2, "the reason this test failed"
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:randomly")
    result.assert_outcomes(passed=1, failed=1)
    lines = result.outlines
    start = next(i for i, line in enumerate(lines) if "1 failed: the last lines of each" in line)
    tail = "\n".join(lines[start:])
    assert "--- test_two.py::test_fails (call)" in tail
    assert "AssertionError: the reason this test failed" in tail
    assert "test_passes" not in tail


def test_a_green_run_adds_nothing(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST.read_text(encoding="utf-8"))
    pytester.makepyfile(test_one="def test_passes():\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert not any("the last lines of each" in line for line in result.outlines)
