"""Issue 25 point 2: a refused connection names the address and port that refused, once, and its
advice is for the target that failed (ESXi host or guest). 127.0.0.1 only, no lab needed."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from esxdiag.collectors.ssh import SshConnection, SshOptions, SshTarget
from esxdiag.errors import CollectionError
from esxdiag.rules.verdict import failed_run
from esxdiag.result import RingVerdict


def _closed_port() -> int:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _refused(kind: str, port: int, tmp_path: Path) -> CollectionError:
    options = SshOptions(own_known_hosts=tmp_path / "known_hosts", connect_timeout_s=5)
    with pytest.raises(CollectionError) as caught:
        SshConnection(SshTarget("root", "127.0.0.1", port), kind, options).connect()
    return caught.value


def test_a_typed_host_port_that_refuses_is_named_and_not_blamed_on_esxi_ssh_being_off(tmp_path):
    port = _closed_port()
    error = _refused("esxi", port, tmp_path)
    text = str(error)
    assert error.kind == "refused", text
    assert f"root@127.0.0.1:{port}: connection refused on port {port}: nothing listens there" in text
    assert text.index("check the port in --host-ssh") < text.index("off by default"), text
    assert text.count(str(port)) == 2, text  # the target, then the port that refused: no third time


def test_a_guest_that_refuses_is_advised_about_the_guest_not_the_host(tmp_path):
    port = _closed_port()
    error = _refused("linux", port, tmp_path)
    text = str(error)
    assert error.kind == "refused" and f"connection refused on port {port}: no sshd listens there" in text
    assert "--guest-ssh" in text and "ESXi" not in text and "--host-ssh" not in text, text


def test_the_failed_runs_advice_is_for_the_target_that_failed():
    guest = failed_run(RingVerdict("raise-ring1", "x"), ["root@10.0.0.5:2222: refused"], [], ("linux",)).summary
    assert "--guest-ssh" in guest and "--host-ssh" not in guest and "--no-host-ssh" not in guest, guest
    host = failed_run(RingVerdict("raise-ring1", "x"), ["root@esx1:22: refused"], [], ("esxi",)).summary
    assert "--host-ssh" in host and "--guest-ssh" not in host, host
