"""Offline data and small helpers shared by the experiments (not an experiment itself).

Everything here ships with an installed package or is generated, so every experiment runs on a
machine without network access. The experiments' folder is on the workers' import path (and is
shipped to the nodes with `--address`), so `import _data` works inside `train_func` too.
"""

from __future__ import annotations

import os
import random
from typing import Any


def env_int(name: str, default: int) -> int:
    """An integer setting from the environment, e.g. ``SCALE_EPOCHS=20``."""
    value = os.environ.get(name, "").strip()
    return int(value) if value else default


def env_float(name: str, default: float) -> float:
    """A float setting from the environment, e.g. ``SCALE_CPUS_PER_WORKER=0.5``."""
    value = os.environ.get(name, "").strip()
    return float(value) if value else default


def digits(image: bool = False, seed: int = 0) -> tuple[Any, Any]:
    """scikit-learn's `digits` (1,797 8x8 images), 80/20 stratified split, pixels in [0, 1].

    Returns two `TensorDataset`s (train, validation); with ``image=True`` the inputs have shape
    ``(1, 8, 8)`` (one channel) instead of ``(64,)``.
    """
    import torch
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    from torch.utils.data import TensorDataset

    x, y = load_digits(return_X_y=True)
    x_train, x_val, y_train, y_val = train_test_split(
        x / 16.0, y, test_size=0.2, random_state=seed, stratify=y
    )
    shape = (-1, 1, 8, 8) if image else (-1, 64)

    def tensors(a: Any, b: Any) -> TensorDataset:
        inputs = torch.tensor(a, dtype=torch.float32).reshape(shape)
        return TensorDataset(inputs, torch.tensor(b))

    return tensors(x_train, y_train), tensors(x_val, y_val)


def breast_cancer(seed: int = 0) -> tuple[Any, Any]:
    """scikit-learn's breast-cancer table (569 rows, 30 features), standardised, 75/25 split."""
    import torch
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler
    from torch.utils.data import TensorDataset

    x, y = load_breast_cancer(return_X_y=True)
    x_train, x_val, y_train, y_val = train_test_split(
        x, y, test_size=0.25, random_state=seed, stratify=y
    )
    scaler = StandardScaler().fit(x_train)

    def tensors(a: Any, b: Any) -> TensorDataset:
        return TensorDataset(
            torch.tensor(scaler.transform(a), dtype=torch.float32), torch.tensor(b)
        )

    return tensors(x_train, y_train), tensors(x_val, y_val)


_SUBJECTS = ["the cat", "a dog", "the old man", "my sister", "a small bird", "the robot"]
_VERBS = ["sees", "likes", "follows", "paints", "finds", "calls"]
_OBJECTS = ["the red ball", "a green tree", "the river", "my friend", "a tall house", "the moon"]
_ENDINGS = ["today", "at night", "again", "in the rain", "every day", "slowly"]


def synthetic_text(sentences: int = 2000, seed: int = 0) -> str:
    """Generated English-like sentences from a tiny grammar: a corpus a small LM can learn."""
    rng = random.Random(seed)
    lines = []
    for _ in range(sentences):
        words = [rng.choice(_SUBJECTS), rng.choice(_VERBS), rng.choice(_OBJECTS)]
        if rng.random() < 0.5:
            words.append(rng.choice(_ENDINGS))
        lines.append(" ".join(words) + ".")
    return "\n".join(lines) + "\n"


class CharTokenizer:
    """Character-level tokenization of a fixed corpus: no tokenizer download needed."""

    def __init__(self, text: str) -> None:
        self.chars = sorted(set(text))
        self.index = {c: i for i, c in enumerate(self.chars)}

    @property
    def vocab_size(self) -> int:
        return len(self.chars)

    def encode(self, text: str) -> list[int]:
        return [self.index[c] for c in text]

    def decode(self, ids: list[int]) -> str:
        return "".join(self.chars[i] for i in ids)
