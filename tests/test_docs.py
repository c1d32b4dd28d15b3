"""The user docs teach; the notes beside the benchmarks record the past (STYLE.md rule 14).

Every page of docs/, the README and CONTRIBUTING.md is read line by line for what belongs in a
run log instead: a diary phrase ("in an earlier run", "last stop"), a date or a UTC timestamp,
and a result file of the benchmarks, named by its path or by its file name. A page may link to
the notes (`benchmarks/results/engine-notes.md`) as where the measurements live.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md", ROOT / "CONTRIBUTING.md"]
RESULT_FOLDERS = [ROOT / "benchmarks" / "results", ROOT / "benchmarks" / "search" / "results"]

DIARY_PHRASES = (
    "in an earlier run",
    "in the earlier run",
    "last stop",
    "this stop",
    "previous stop",
    "earlier session",
    "last session",
    "this session",
    "previous session",
    "before this change",
    "before the change",
)
DIARY = re.compile("|".join(rf"\b{re.escape(phrase)}\b" for phrase in DIARY_PHRASES), re.IGNORECASE)
DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
TIMESTAMP = re.compile(r"\bUTC\)|\b\d{1,2}:\d{2}(?:\s*-\s*\d{1,2}:\d{2})?\s*UTC\b")
# A result folder's path, except the notes files in it, which a page may link to.
RESULT_PATH = re.compile(r"benchmarks/(?:search/)?results/(?![\w-]+-notes\.md)")
JSON_NAME = re.compile(r"[\w.-]*[\w-]\.json(?:\.gz)?\b")


def result_file_names() -> frozenset[str]:
    """The names of the JSON files the benchmarks committed, in every result folder."""
    return frozenset(
        path.name
        for folder in RESULT_FOLDERS
        for path in folder.rglob("*")
        if path.name.endswith((".json", ".json.gz"))
    )


def is_result_file(name: str, result_files: frozenset[str]) -> bool:
    """Whether `name` is a committed result file, or its tail as in `-10k-e.json`."""
    if name in result_files:
        return True
    return name.startswith("-") and any(file.endswith(name) for file in result_files)


def diary_findings(text: str, result_files: frozenset[str]) -> list[tuple[int, str]]:
    """Each (line number, phrase) of `text` that records the past instead of teaching."""
    findings = []
    for number, line in enumerate(text.splitlines(), start=1):
        for pattern in (DIARY, DATE, TIMESTAMP, RESULT_PATH):
            findings += [(number, match.group()) for match in pattern.finditer(line)]
        findings += [
            (number, match.group())
            for match in JSON_NAME.finditer(line)
            if is_result_file(match.group(), result_files)
        ]
    return findings


RESULT_FILES = result_file_names()


def check_page(page: Path, root: Path) -> None:
    """Fails with the file, the line and the phrase of each finding on the page."""
    findings = diary_findings(page.read_text(encoding="utf-8"), RESULT_FILES)
    where = page.relative_to(root)
    assert not findings, "move these to the notes beside the benchmarks:\n" + "\n".join(
        f"{where}:{number}: {phrase!r}" for number, phrase in findings
    )


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_page_teaches_without_a_run_log(page: Path) -> None:
    check_page(page, ROOT)


def test_a_page_with_a_run_log_fails_naming_file_line_and_phrase(tmp_path: Path) -> None:
    page = tmp_path / "docs" / "bad.md"
    page.parent.mkdir()
    page.write_text("# A feature\n\nIt took 3 s.\nAt the last stop it took 4 s.\n")
    with pytest.raises(AssertionError, match=r"docs/bad\.md:4: 'last stop'"):
        check_page(page, tmp_path)


def test_result_files_are_found() -> None:
    assert {"latest.json", "search-sim.json.gz"} <= RESULT_FILES


@pytest.mark.parametrize(
    ("line", "phrase"),
    [
        ("Writing took 45.6 s in an earlier run.", "in an earlier run"),
        ("At the Last Stop it took 3 s.", "Last Stop"),
        ("Measured this stop, alone on the machine.", "this stop"),
        ("As the previous stop found,", "previous stop"),
        ("In an earlier session the sweep took 9 s.", "earlier session"),
        ("the figures of the last session", "last session"),
        ("Before this change a trial took 30 ms.", "Before this change"),
        ("1.2 s before the change", "before the change"),
        ("The run of 2026-12-04 gave 0.8.", "2026-12-04"),
        ("(23:39-23:47 UTC)", "23:39-23:47 UTC"),
        ("(run at noon UTC)", "UTC)"),
        ("measured at 05:04 UTC on two CPUs", "05:04 UTC"),
        ("Raw results: `benchmarks/results/scale_out.json`.", "benchmarks/results/"),
        ("the curves in `benchmarks/search/results/n30.json`", "benchmarks/search/results/"),
        ("side by side (`search-sim.json.gz`)", "search-sim.json.gz"),
        ("(`trials_at_scale-1k-e.json` and `-10k-e.json`)", "-10k-e.json"),
    ],
)
def test_a_line_that_records_the_past_fails(line: str, phrase: str) -> None:
    assert (1, phrase) in diary_findings(line, RESULT_FILES)


@pytest.mark.parametrize(
    "line",
    [
        "The notes are in [engine-notes.md](../benchmarks/results/engine-notes.md).",
        "A sweep writes `best_config.json` and `warm_start.json` to its run folder.",
        'Warm start from an earlier sweep: `warm_start="cold"`.',
        "10,000 trials run at about 3 ms of overhead each.",
        "`python -m benchmarks --out /tmp/b.json`",
        "A trial that ASHA stopped keeps its last stopped value; this stopper is Tune's.",
    ],
)
def test_a_line_that_teaches_passes(line: str) -> None:
    assert diary_findings(line, RESULT_FILES) == []


def test_a_finding_names_its_line() -> None:
    text = "# Title\n\nA figure.\nMeasured on 2026-12-01.\n"
    assert diary_findings(text, RESULT_FILES) == [(4, "2026-12-01")]
