"""`python -m benchmarks.search`: its arguments, and one tiny run through the real engine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.search.__main__ import main as bench_main
from benchmarks.search.__main__ import parse_args

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--problems", "h3,nope"], "unknown problem"),
        (["--strategies", "optuna+nope"], "unknown strategies"),
        (["--seeds", "0"], "--seeds must be >= 1"),
        (["--trial-factor", "0"], "--trial-factor must be >= 1"),
        (["--warm", "sim,h7"], "unknown problem(s) in --warm"),
    ],
)
def test_bad_arguments_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        parse_args(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_quick_defaults_keep_the_committed_results() -> None:
    args = parse_args(["--quick"])
    assert (args.seeds, args.trials, args.iterations) == (2, 6, 9)
    assert args.problems == ["h3", "sim"]
    assert "optuna+asha" in args.strategies and "random+pbt" not in args.strategies
    assert args.out.name == "quick.json"
    assert args.images.name == "quick-images"
    full = parse_args([])
    assert (full.seeds, full.trials, full.iterations) == (5, 10, 27)
    assert full.out == ROOT / "benchmarks" / "search" / "results" / "latest.json"
    assert full.images == ROOT / "docs" / "images"
    assert full.warm == ["sim", "digits"]
    assert parse_args(["--warm", ""]).warm == []


def test_strategies_get_their_trials_and_schedulers() -> None:
    from benchmarks.search._strategies import NAMED_ONLY, STRATEGIES, VARIANTS

    assert STRATEGIES["random+fifo"].trials(10, 6) == 10
    assert STRATEGIES["optuna+asha"].trials(10, 6) == 60
    assert STRATEGIES["random+pbt"].trials(10, 6) == 10
    assert STRATEGIES["optuna+hyperband"].trials(10, 6) == 10
    assert STRATEGIES["optuna+asha"].make_scheduler(27) == "asha"
    from ray.tune.schedulers import ASHAScheduler

    from sweeplab.strategies import SchedulerTraits, scheduler_traits

    variant = NAMED_ONLY["optuna+asha g1 rf4"].make_scheduler(27)
    assert type(variant) is ASHAScheduler  # a plain configured object, no engine hack
    # The engine runs it like its own ASHA: it only stops trials, so actors are reused.
    assert scheduler_traits(variant) == SchedulerTraits(pauses=False, exploits=False)
    assert variant._reduction_factor == 4 and variant._max_t == 27
    assert variant is not NAMED_ONLY["optuna+asha g1 rf4"].make_scheduler(27)  # fresh per sweep
    assert all(v.searcher != "optuna" for v in VARIANTS.values())  # configured OptunaSearchers


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_tiny_benchmark_run_writes_json_and_plots(
    tmp_path: Path,
    ray_local: None,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The benchmark's `main` in this process, on the session's local Ray (which it uses as it
    is and leaves running), as `python -m benchmarks.search` runs it on a Ray of its own."""
    monkeypatch.chdir(tmp_path)  # main works in a temporary folder and comes back to ROOT
    out, images = tmp_path / "out.json", tmp_path / "images"
    argv = [
        "--quick", "--problems", "h3", "--seeds", "1", "--trials", "3", "--iterations", "4",
        "--strategies", "random+fifo,optuna+asha", "--warm", "h3", "--out", str(out),
        "--images", str(images),
    ]  # fmt: skip
    assert bench_main(argv) == 0
    printed = capsys.readouterr().out
    assert "fraction of random + FIFO's budget" in printed

    report = json.loads(out.read_text())
    h3 = report["problems"]["h3"]
    assert h3["budget"] == 12
    assert set(h3["runs"]) == {"random+fifo", "optuna+asha"}
    fifo = h3["runs"]["random+fifo"]["0"]
    assert fifo["budget_used"] == 12 and fifo["trials"] == 3 and fifo["errored"] == 0
    asha = h3["runs"]["optuna+asha"]["0"]
    assert asha["trials"] == 3 * 6 and asha["budget_used"] == 12
    for run in (fifo, asha, h3["warm"]["runs"]["0"]):
        budgets = [step[0] for step in run["steps"]]
        bests = [step[2] for step in run["steps"]]
        assert budgets == sorted(budgets) and budgets[-1] <= 12
        assert bests == sorted(bests, reverse=True)
        assert all(-3.87 < b < 0 for b in bests)  # Hartmann 3's range at any fidelity
    assert h3["targets"]["0"] == fifo["final_best"]
    assert 0 < fifo["fraction"] <= 1  # the baseline reaches its own final best
    summary = h3["summary"]["optuna+asha"]
    assert summary["seeds"] == 1 and summary["reached"] in (0, 1)
    assert (summary["median"] is None) == (summary["reached"] == 0)  # never reached: null
    assert h3["warm"]["summary"]["warm"]["seeds"] == 1
    (session,) = report["sessions"]
    assert session["loadavg_start"] and session["loadavg_end"] and session["seconds"] > 0
    assert {row["strategy"] for row in report["headline"]} >= {"random+fifo", "optuna+asha"}

    names = {"search-h3.png", "search-headline.png", "search-warm.png"}
    assert {Path(p).name for p in report["images"]} == names
    for name in names:
        data = (images / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000

    # --resume runs only what the JSON lacks: here the lost baseline run.
    del report["problems"]["h3"]["runs"]["random+fifo"]["0"]
    out.write_text(json.dumps(report))
    assert bench_main([*argv, "--resume"]) == 0
    printed = capsys.readouterr().out
    assert "h3 random+fifo seed 0" in printed and "optuna+asha seed 0" not in printed
    resumed = json.loads(out.read_text())
    assert len(resumed["sessions"]) == 2
    assert resumed["problems"]["h3"]["runs"]["random+fifo"]["0"]["budget_used"] == 12
    assert resumed["problems"]["h3"]["runs"]["optuna+asha"] == h3["runs"]["optuna+asha"]
