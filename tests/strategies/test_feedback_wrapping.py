"""Which searchers `with_trial_feedback` wraps, found without importing a searcher's module."""

from __future__ import annotations

import subprocess
import sys

from ray.tune.search import BasicVariantGenerator

from sweeplab.strategies import TrialFeedbackSearcher, with_trial_feedback


def test_optuna_and_hyperopt_searchers_are_wrapped_others_are_not() -> None:
    from ray.tune.search.hyperopt import HyperOptSearch
    from ray.tune.search.optuna import OptunaSearch

    for searcher in (
        OptunaSearch(metric="loss", mode="min"),
        HyperOptSearch(metric="loss", mode="min"),
    ):
        wrapped = with_trial_feedback(searcher, metric="loss", mode="min", max_iterations=4)
        assert isinstance(wrapped, TrialFeedbackSearcher) and wrapped.inner is searcher
    plain = BasicVariantGenerator()
    assert with_trial_feedback(plain, metric="loss", mode="min", max_iterations=4) is plain


def test_a_random_search_does_not_import_hyperopt() -> None:
    code = (
        "import sys; from ray.tune.search import BasicVariantGenerator; "
        "from sweeplab.strategies import with_trial_feedback; "
        "with_trial_feedback(BasicVariantGenerator(), metric='m', mode='min', max_iterations=2); "
        "print('hyperopt' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_an_optuna_sweep_tells_its_ended_trials_without_importing_hyperopt() -> None:
    """The wrapper tells each ended trial to the searcher of its kind; finding the kind must not
    import HyperOpt (1.3-1.5 s at an Optuna sweep's first ended trial)."""
    code = (
        "import sys, sweeplab\n"
        "sweep = sweeplab.Sweep(name='s', train_func=lambda c: None, metric='loss', mode='min',\n"
        "    space={'x': sweeplab.space.uniform(0, 1)}, searcher='optuna', scheduler='asha',\n"
        "    num_trials=8, max_iterations=3)\n"
        "sim = sweeplab.simulate(sweep, lambda c, i: ({'loss': c['x'] / i}, 1.0), workers=2)\n"
        "print(len(sim.trials), 'hyperopt' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["8", "False"]
