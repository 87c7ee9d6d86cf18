"""Shared fixtures for the SSH tests: one lab sshd per session (tests/lab/ssh_lab.py)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from esxdiag.bundle import BundleWriter
from esxdiag.collectors.ssh import SshConnection, SshOptions, SshTarget

LAB_FILE = Path(__file__).resolve().parents[1] / "lab" / "ssh_lab.py"


def load_ssh_lab_module():
    if "esxdiag_ssh_lab" in sys.modules:
        return sys.modules["esxdiag_ssh_lab"]
    spec = importlib.util.spec_from_file_location("esxdiag_ssh_lab", LAB_FILE)
    module = importlib.util.module_from_spec(spec)
    sys.modules["esxdiag_ssh_lab"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def ssh_lab(tmp_path_factory):
    module = load_ssh_lab_module()
    try:
        lab = module.start_ssh_lab(tmp_path_factory.mktemp("ssh-lab"))
    except module.LabUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)
    yield lab
    lab.stop()


@pytest.fixture
def lab(ssh_lab):
    """The session lab with no faults left over from another test."""
    ssh_lab.clear_faults()
    yield ssh_lab
    ssh_lab.clear_faults()


@pytest.fixture
def options(lab, tmp_path) -> SshOptions:
    return SshOptions(key_file=lab.key_file, known_hosts=lab.known_hosts,
                      own_known_hosts=tmp_path / "esxdiag_known_hosts", connect_timeout_s=5,
                      command_timeout_s=20)


@pytest.fixture
def writer(tmp_path) -> BundleWriter:
    return BundleWriter(tmp_path / "bundle", window_s=3)


@pytest.fixture
def open_conn(lab, options):
    """open_conn(address, kind, **option_overrides) -> connected SshConnection, closed at teardown."""
    opened = []

    def _open(address: str, kind: str, **overrides) -> SshConnection:
        opts = SshOptions(**{**options.__dict__, **overrides})
        conn = SshConnection(SshTarget(lab.user, address, lab.port), kind, opts).connect()
        opened.append(conn)
        return conn

    yield _open
    for conn in opened:
        conn.close()
