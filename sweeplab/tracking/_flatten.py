"""Flattening of nested configs into dotted MLflow param names, and secret masking."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SECRET_MARKERS = (
    "token",
    "password",
    "secret",
    "api_key",
    "apikey",
    "access_key",
    "private_key",
    "credential",
)
MASK = "***"


def is_secret_key(key: str) -> bool:
    """Whether a (dotted) key names a secret: its last segment contains a secret marker."""
    last = key.rsplit(".", 1)[-1].lower()
    return any(marker in last for marker in SECRET_MARKERS)


def flatten(config: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Flattens nested mappings into one level with dotted keys.

    ``{"optimizer": {"name": "sgd", "momentum": 0.9}}`` becomes
    ``{"optimizer.name": "sgd", "optimizer.momentum": 0.9}``. An empty nested mapping keeps
    its key with the value ``{}`` so that no parameter silently disappears.
    """
    flat: dict[str, Any] = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            flat.update(flatten(value, prefix=f"{name}."))
        else:
            flat[name] = value
    return flat


def unflatten(flat: Mapping[str, Any]) -> dict[str, Any]:
    """Inverse of :func:`flatten` (dotted keys back to nested dicts)."""
    nested: dict[str, Any] = {}
    for key, value in flat.items():
        node = nested
        *parents, last = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = value
    return nested


def mask_secrets(config: Mapping[str, Any]) -> dict[str, Any]:
    """Returns a copy of a nested config with secret-looking values replaced by ``***``."""
    masked: dict[str, Any] = {}
    for key, value in config.items():
        if is_secret_key(str(key)):
            masked[key] = MASK
        elif isinstance(value, Mapping):
            masked[key] = mask_secrets(value)
        else:
            masked[key] = value
    return masked
