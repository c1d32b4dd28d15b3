"""Whether a server listens at a host's port, told by one TCP connection within seconds.

A Ray head (``--address``) and a tracking server or database (``--tracking-uri``) are checked
this way before a sweep starts: their own clients retry for minutes where nothing listens.
"""

from __future__ import annotations

import socket

__all__ = ["CONNECT_TIMEOUT_S", "no_answer"]

# How long a port may take to accept a connection; a live server answers in milliseconds, even
# across a data centre.
CONNECT_TIMEOUT_S = 5.0


def no_answer(host: str, port: int) -> str | None:
    """Why nothing accepts a connection at `host`:`port` ("Connection refused", "no answer
    within 5 s"...), or None when something does."""
    try:
        with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S):
            return None
    except TimeoutError:
        return f"no answer within {CONNECT_TIMEOUT_S:g} s"
    except OSError as exc:
        return exc.strerror or type(exc).__name__
