"""Bounded output and bounded time against the lab: a guest whose `netstat -s` prints without end,
a host whose `net-stats -l` does, an SSH connection killed in the middle of the window, and a
vCenter that trickles its answer one byte at a time (tests/lab/trickle_server.py)."""

from __future__ import annotations

import pytest

from esxdiag.errors import EXIT_COLLECTION
from esxdiag.specs import MIB, SPECS

pytestmark = pytest.mark.lab

VM = "iperf-test1"


def test_endless_guest_output_is_capped_recorded_as_truncated_and_reported(esxdiag, ssh_lab):
    ssh_lab.set_fault("flood", ssh_lab.address_of(VM), "netstat", seconds=60)
    report = esxdiag.workdir / "report.html"
    run = esxdiag.run("report", VM, "-o", str(report), timeout_s=60)
    assert run.returncode == 0, run.explain()
    assert run.elapsed_s < 30, run.explain()
    cap = SPECS["netstat_s"].max_bytes
    for sample in (0, 1):
        (netstat,) = run.captures("netstat_s", sample, "linux")
        assert netstat.error_kind == "truncated", netstat
        assert netstat.path.stat().st_size == cap  # the bytes before the cap are kept, nothing more
        assert "cap" in netstat.error and "--output-cap" in netstat.error
    assert "failed (truncated)" in run.stdout, run.explain()
    html = report.read_text(encoding="utf-8")
    assert "truncated" in html
    assert run.captures("ethtool_stats", 1, "linux")[0].ok  # the rest of the guest is still collected


def test_output_cap_override_applies_to_the_host(esxdiag, ssh_lab):
    ssh_lab.set_fault("flood", ssh_lab.host_address, "net-stats", seconds=60)
    run = esxdiag.run("collect", VM, "--output-cap", "2", timeout_s=60)
    assert run.returncode == 0, run.explain()
    (listing,) = run.captures("net_stats_list", target_kind="esxi")
    assert listing.error_kind == "truncated" and listing.path.stat().st_size == 2 * MIB, listing
    assert "2 MiB" in listing.error


def test_a_server_that_ends_the_connection_when_a_command_is_stopped_costs_only_that_command(esxdiag, ssh_lab):
    """A server may end the whole connection when esxdiag closes the channel of a command it stopped at
    its cap; the rest of the host (uplinks, the window's ring counters and esxtop) is still collected
    on a new connection, and the bundle says it reconnected."""
    ssh_lab.set_fault("flood", ssh_lab.host_address, "net-stats", seconds=60, then_drop=True)
    run = esxdiag.run("collect", VM, "--output-cap", "2", timeout_s=60)
    assert run.returncode == 0, run.explain()
    (listing,) = run.captures("net_stats_list", target_kind="esxi")
    assert listing.error_kind == "truncated", listing
    assert run.captures("esxtop_batch", target_kind="esxi")[0].ok, run.explain()
    assert all(c.ok for c in run.captures("vsish_rxsummary", 1, "esxi")), run.explain()
    notes = run.bundle_loaded().manifest["notes"]
    assert any("connected again" in n and ssh_lab.host_address in n for n in notes), notes
    assert "connection lost" not in run.stderr, run.explain()


def test_connection_lost_mid_window_is_named_and_exits_3(esxdiag, ssh_lab):
    ssh_lab.set_fault("drop", ssh_lab.host_address, "esxtop", command="esxtop -b -d 1 -n 3")  # the window's
    run = esxdiag.run("report", VM, "--format", "json", timeout_s=60)
    assert run.returncode == EXIT_COLLECTION, run.explain()
    (esxtop,) = run.captures("esxtop_batch", target_kind="esxi")
    assert esxtop.error_kind == "connection-lost" and "connection lost" in esxtop.error, esxtop
    assert "exit status -1" not in run.stdout + run.stderr
    assert run.captures("vsish_rxsummary", 1, "esxi") == []  # nothing sent on a dead connection
    notes = run.bundle_loaded().manifest["notes"]
    assert any("connection lost" in n and "window end" in n for n in notes), notes
    assert run.captures("ethtool_stats", 1, "linux")[0].ok  # the guest's end sample still taken
    assert run.lines_naming("connection lost"), run.explain()


def test_trickling_vcenter_is_cut_off_at_the_vcenter_timeout(esxdiag, trickle):
    env = esxdiag.env(ESXDIAG_VCENTER=f"https://127.0.0.1:{trickle.port}/sdk", ESXDIAG_THUMBPRINT=None,
                      ESXDIAG_INSECURE="1")
    run = esxdiag.run("report", VM, "--vcenter-timeout", "3", env=env, timeout_s=40)
    assert run.returncode == EXIT_COLLECTION, run.explain()
    assert run.elapsed_s < 10, run.explain()
    (line,) = run.lines_naming(f"127.0.0.1:{trickle.port}", "no complete answer within 3 s")
    (warning,) = run.lines_naming("TLS certificate verification is OFF", "ESXDIAG_INSECURE=1")
    assert trickle.bytes_sent > 0
    (inventory,) = run.captures("vsphere_vm")
    assert inventory.error_kind == "timeout"
