"""A cluster address is checked before anything starts or is written (exit 2, one line)."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest
from refused import closed_port, refused_line

from sweeplab import AddressError
from sweeplab.engine import check_address

SPEC = Path(__file__).resolve().parents[2] / "experiments" / "quickstart.py"


@pytest.mark.parametrize(
    "address", ["127.0.0.1", "127.0.0.1:", ":6379", "127.0.0.1:http", "127.0.0.1:0", "h:70000"]
)
def test_a_malformed_address_names_the_rule(address: str) -> None:
    with pytest.raises(AddressError, match=r"--address must be HOST:PORT .* but got"):
        check_address(address)


@pytest.mark.parametrize("scheme", ["", "ray://"])
def test_a_port_where_nothing_listens_fails_at_once(scheme: str) -> None:
    port = closed_port()
    started = time.monotonic()
    with pytest.raises(AddressError, match=f"no Ray cluster answers at --address .*:{port}"):
        check_address(f"{scheme}127.0.0.1:{port}")
    assert time.monotonic() - started < 5


def test_a_listening_port_and_rays_own_words_pass() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        check_address(f"127.0.0.1:{server.getsockname()[1]}")
    check_address("auto")
    check_address("local")


@pytest.mark.parametrize("command", ["sweep", "status"])
def test_the_cli_exits_2_with_one_line_and_writes_nothing(command: str, tmp_path: Path) -> None:
    address = f"127.0.0.1:{closed_port()}"
    line = refused_line([command, str(SPEC), "--address", address], tmp_path)
    assert f"no Ray cluster answers at --address {address}" in line
