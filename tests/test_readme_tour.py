"""The README's tour shows what the CLI prints today (tests/readme_tour.py runs it for real).

The end-to-end check is slow; the masking and the README's own shape are fast.
"""

from __future__ import annotations

import pytest
import readme_tour
from readme_tour import README, REFRESH, TOUR, Step

MAX_README_LINES = 200


@pytest.mark.slow
@pytest.mark.timeout(1200)  # five commands and a UI server, each under its own 600 s limit
def test_the_readme_tour_is_the_real_output() -> None:
    blocks = readme_tour.run_tour()
    messages = readme_tour.differences(README.read_text(), blocks)
    assert not messages, "\n\n".join([*messages, f"refresh the README with: {REFRESH}"])


def test_the_readme_marks_a_block_for_every_step_and_stays_short() -> None:
    readme = README.read_text()
    assert sorted(readme_tour.readme_blocks(readme)) == sorted(step.name for step in TOUR)
    lines = len(readme.splitlines())
    assert lines <= MAX_README_LINES, f"README.md has {lines} lines; move reference to docs/"


@pytest.mark.parametrize(
    ("one_run", "another_run"),
    [
        ("best accuracy 0.9833 · 16s elapsed", "best accuracy 0.91 · 120s elapsed"),
        ("trial 66c1ca86 stopped", "trial e763dda4 stopped"),
        ("train/66c1ca86_0/checkpoint_000007", "train/0a1b2c3d_0/checkpoint_000002"),
        ("run: 7565f48c36a94c1388502cce95abe8aa", "run: 0123456789abcdef0123456789abcdef"),
        ("storage /tmp/sweeplab-tour-k3j_2x/runs", "storage /var/tmp/sweeplab-tour-9q8w/runs"),
        (" 1     66c1ca86  finished   0.9833  ", " 1     e763dda4  finished   0.9  "),
        ("━━━━━━━━━━", "━━━━"),
        ("lr=1e-05 hidden=32", "lr=0.02288 hidden=128"),
        ("$ sweeplab ui quickstart", "$ sweeplab ui quickstart --port 41234"),
    ],
)
def test_masking_equates_two_honest_runs(one_run: str, another_run: str) -> None:
    assert readme_tour.mask(one_run) == readme_tour.mask(another_run)


@pytest.mark.parametrize(
    ("one_run", "another_run"),
    [
        ("trial 66c1ca86 terminated", "trial 66c1ca86 stopped"),
        ("best config (66c1ca86):", "best trial (66c1ca86):"),
        ('"optimizer": {"name": "adam"}', '"optimizer": {"name": "sgd", "momentum": 0.4}'),
        ("searcher optuna · scheduler asha", "searcher optuna · scheduler adaptive-asha"),
    ],
)
def test_masking_keeps_what_a_reader_would_notice(one_run: str, another_run: str) -> None:
    assert readme_tour.mask(one_run) != readme_tour.mask(another_run)


def test_a_progress_bar_shows_its_last_redraw() -> None:
    raw = "\rDownloading:   0%|   | 0/1\rDownloading: 100%|█| 1/1 \nreport written to r.html\n"
    assert readme_tour.as_terminal_shows(raw) == [
        "Downloading: 100%|█| 1/1",
        "report written to r.html",
    ]


def test_a_long_output_shows_its_head_and_tail() -> None:
    step = Step("x", ("x",), head=2, tail=1)
    lines = [f"line {i}" for i in range(6)]
    assert readme_tour.shown(step, lines) == ["line 0", "line 1", readme_tour.ELLIPSIS, "line 5"]
    assert readme_tour.shown(step, lines[:3]) == lines[:3]


def test_writing_then_checking_finds_no_difference() -> None:
    readme = "intro\n<!-- tour:best -->\n```console\nold\n```\n<!-- /tour:best -->\nend\n"
    blocks = {"best": "```console\n$ sweeplab best quickstart\nbest trial 66c1ca86\n```"}
    written = readme_tour.with_blocks(readme, blocks)
    assert written.startswith("intro\n") and written.endswith("<!-- /tour:best -->\nend\n")
    assert readme_tour.differences(written, blocks) == []
    (message,) = readme_tour.differences(readme, blocks)
    assert "tour:best" in message and "+best trial <id>" in message
