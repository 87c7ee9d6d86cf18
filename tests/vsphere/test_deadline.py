"""vCenter calls have an overall deadline: a server that answers one byte at a time (each read
well inside the per-read timeout) is cut off when the deadline passes (tests/lab/trickle_server.py
is the trickling peer; vcsim is the real one)."""

from __future__ import annotations

import time

import pytest

from esxdiag.collectors.credentials import Credentials
from esxdiag.collectors.vsphere import collect_inventory, connect, find_vm
from esxdiag.errors import CollectionError

pytestmark = pytest.mark.lab


def test_trickling_server_is_cut_off_at_the_login_deadline(trickle):
    creds = Credentials(f"https://127.0.0.1:{trickle.port}/sdk", "user", "secret", insecure=True)
    started = time.monotonic()
    with pytest.raises(CollectionError) as err:
        connect(creds, timeout_s=10, deadline_s=2)  # each byte arrives in 0.5 s: no read times out
    elapsed = time.monotonic() - started
    assert err.value.kind == "timeout"
    assert f"127.0.0.1:{trickle.port}" in str(err.value) and "within 2 s" in str(err.value)
    assert 2 <= elapsed < 4, elapsed
    assert trickle.bytes_sent >= 2  # it was answering, just never finishing


def test_session_calls_complete_inside_a_deadline_and_fail_past_it(vcsim_lab, lab_creds):
    session = connect(lab_creds(vcsim_lab, insecure=True), timeout_s=10)
    try:
        with session.within(20, "finding the VM"):
            vm = collect_inventory(session, find_vm(session, "iperf-test1"))
        assert vm["name"] == "iperf-test1"
        with pytest.raises(CollectionError) as err:
            with session.within(0.001, "reading the inventory"):
                time.sleep(0.05)  # the deadline passes; the next request finds its socket shut
                find_vm(session, "iperf-test1")
        assert err.value.kind == "timeout" and "reading the inventory" in str(err.value)
    finally:
        session.close()
