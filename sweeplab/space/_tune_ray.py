"""The Ray Tune classes behind the ``compile_*_search`` functions; importing this imports Ray."""

from __future__ import annotations

import pickle
import random
from typing import Any

from ray.tune.search import Searcher
from ray.tune.search.sample import Domain, Sampler

from sweeplab.space._space import Space

__all__ = ["RandomSpaceSearcher", "SpaceDomain"]


class RandomSpaceSearcher(Searcher):
    """Suggests configs drawn by :meth:`Space.sample` from one seeded random stream.

    Suggestions are already in final shape. ``save``/``restore`` keep the stream's position, so
    a resumed sweep continues the same sequence.
    """

    def __init__(
        self, space: Space, *, metric: str | None, mode: str | None, seed: int | None
    ) -> None:
        super().__init__(metric=metric, mode=mode)
        self._space = space
        self._random = random.Random(seed)

    def set_search_properties(
        self, metric: str | None, mode: str | None, config: dict[str, Any], **spec: Any
    ) -> bool:
        if metric:
            self._metric = metric
        if mode:
            self._mode = mode
        return not config

    def suggest(self, trial_id: str) -> dict[str, Any] | None:
        return self._space.sample_one(self._random)

    def on_trial_complete(
        self, trial_id: str, result: dict[str, Any] | None = None, error: bool = False
    ) -> None:
        """Random search learns nothing from results."""

    def get_state(self) -> dict[str, Any]:
        return {
            "space": self._space.to_dict(),
            "random_state": self._random.getstate(),
            "metric": self._metric,
            "mode": self._mode,
        }

    def set_state(self, state: dict[str, Any]) -> None:
        self._space = Space.from_dict(state["space"])
        self._random.setstate(state["random_state"])
        self._metric, self._mode = state["metric"], state["mode"]

    def save(self, checkpoint_path: str) -> None:
        with open(checkpoint_path, "wb") as file:
            pickle.dump(self.get_state(), file)

    def restore(self, checkpoint_path: str) -> None:
        with open(checkpoint_path, "rb") as file:
            self.set_state(pickle.load(file))


class _SubspaceSampler(Sampler):
    def sample(
        self,
        domain: Domain,
        config: Any = None,
        size: int = 1,
        random_state: Any = None,
    ) -> Any:
        assert isinstance(domain, SpaceDomain)
        # Tune's seeded generator picks a seed, so BasicVariantGenerator(random_state=...)
        # reproduces the draws of sweeplab's own sampler.
        seeds = [int(random_state.integers(0, 2**31 - 1)) for _ in range(size)]
        values = [domain.space.sample(seed)[0][domain.key] for seed in seeds]
        return values if size > 1 else values[0]


class SpaceDomain(Domain):
    """A Tune domain that draws one top-level parameter of a space with sweeplab's sampler."""

    default_sampler_cls = _SubspaceSampler

    def __init__(self, space: Space, key: str) -> None:
        self.space = Space({key: space.params[key]})
        self.key = key

    def is_valid(self, value: Any) -> bool:
        try:
            self.space.validate_config({self.key: value})
        except ValueError:
            return False
        return True

    @property
    def domain_str(self) -> str:
        return dict(self.space.describe())[self.key]
