"""A cluster address is checked before anything starts or is written.

``ray.init(address=...)`` on an address where no Ray listens retries for minutes, logging
warnings, after sweeplab had already made the sweep's storage folder. One TCP connection to the
head's port answers in milliseconds, so a typo fails at once with one line (exit 2).
"""

from __future__ import annotations

from sweeplab._net import no_answer
from sweeplab.errors import AddressError

__all__ = ["check_address"]

_SCHEMES = ("ray://",)
_PASSED_TO_RAY = ("auto", "local")  # Ray resolves these itself (a running local cluster, a new one)


def check_address(address: str) -> None:
    """Raises unless `address` is ``auto``, ``local`` or ``[ray://]HOST:PORT`` with something
    listening on that port.

    Raises:
        AddressError: A malformed address, or nothing accepts a connection there (the message
            says which, and how to start a cluster).
    """
    if address in _PASSED_TO_RAY:
        return
    rest = address
    for scheme in _SCHEMES:
        if rest.startswith(scheme):
            rest = rest[len(scheme) :]
    host, sep, port_text = rest.rpartition(":")
    host = host.strip("[]")  # an IPv6 literal, [::1]:6379
    if not sep or not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise AddressError(
            f"--address must be HOST:PORT (or ray://HOST:PORT, auto, local), with PORT in "
            f"1..65535, but got {address!r}."
        )
    port = int(port_text)
    reason = no_answer(host, port)
    if reason is not None:
        raise AddressError(
            f"no Ray cluster answers at --address {address} ({reason}); start one with "
            f"`ray start --head --port={port}` on {host}, or check the address."
        )
