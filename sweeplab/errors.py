"""The exceptions sweeplab raises for user-facing problems.

Every error a user can cause (a bad spec, a bad argument, a cluster that can never run a trial)
is a :class:`SweeplabError`. The CLI prints such an error as one line and exits with status 2;
anything else is a bug or a failed sweep.
"""

from __future__ import annotations

__all__ = ["AddressError", "ResourceError", "SpecError", "SweeplabError"]


class SweeplabError(Exception):
    """Base class of the errors caused by user input or by the environment."""


class SpecError(SweeplabError, ValueError):
    """A spec, a search space or an argument breaks a rule.

    The message names where the problem is (the file, the field or the parameter path), the rule
    that was broken and the offending values.
    """


class ResourceError(SweeplabError):
    """The cluster can never satisfy what one trial asks for."""


class AddressError(SweeplabError):
    """No Ray cluster answers at the given address, or the address is malformed."""
