"""Random draws fixed by a seed and a trial's number, for the samplers' per-trial choices.

A sampler wrapper that picks, per trial, which path proposes it (the model or a random draw, one
rung's model or another's) must pick the same way every time it is asked about that trial, and
the same way in a rerun with the same seed, whatever order the calls come in. A draw keyed by
``(seed, stream, trial number)`` is all three; a shared random generator would be none.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "RANDOM_PATH",
    "RANDOM_SAMPLER",
    "RUNG_CHOICE",
    "derived_seed",
    "seed_entropy",
    "trial_draw",
]

# The streams of draws, one per choice, so that two choices about one trial are independent.
RANDOM_PATH = 1
RANDOM_SAMPLER = 2
RUNG_CHOICE = 3


def seed_entropy(seed: int | None) -> int:
    """A non-negative integer from ``seed``; from the operating system when it is None."""
    if seed is None:
        return int(np.random.SeedSequence().entropy)  # type: ignore[arg-type]
    return seed & (2**64 - 1)  # numpy's seeds are non-negative; a negative seed wraps


def trial_draw(entropy: int, stream: int, number: int) -> float:
    """A uniform draw in [0, 1) fixed by ``entropy``, ``stream`` and the trial's ``number``."""
    return float(np.random.default_rng([entropy, stream, number]).random())


def derived_seed(entropy: int, stream: int) -> int:
    """A 32-bit seed for a helper sampler, independent of the base sampler's own ``seed``.

    A helper seeded with the sweep's seed itself would repeat the base sampler's stream (TPE's
    start-up trials come from a ``RandomSampler`` with that seed).
    """
    return int(np.random.SeedSequence([entropy, stream]).generate_state(1)[0])
