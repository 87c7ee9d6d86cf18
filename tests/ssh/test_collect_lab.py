"""End-to-end collection against the lab sshd and its ESXi/guest emulator (tests/lab/)."""

from __future__ import annotations

import io
import time

import pytest

from esxdiag.bundle import Bundle
from esxdiag.collectors.esxi import discover_ports, host_facts, run_esxtop, sample_ports
from esxdiag.collectors.guest_linux import collect_linux
from esxdiag.collectors.guest_windows import collect_windows
from esxdiag.parsers.esxtop import parse_esxtop
from esxdiag.parsers.vsish import parse_rxqueue_status, parse_rxsummary

pytestmark = pytest.mark.lab


def _vm(lab, name):
    return next(vm for vm in lab.scenario["vms"] if vm["name"] == name)


def test_discover_ports_finds_iperf_test1_by_mac(lab, open_conn, writer):
    conn = open_conn(lab.host_address, "esxi")
    mac = _vm(lab, "iperf-test1")["nics"][0]["mac"].upper().replace(":", "-")  # vCenter/Windows spelling
    ports = discover_ports(conn, writer, "esx0", [mac])
    assert [(p.portset, p.port, p.client, p.queues, p.vmxnet3) for p in ports] == [
        ("vSwitch0", 33554464, "iperf-test1", ["0", "1"], True)]
    assert host_facts(conn, writer, "esx0").ok
    caps = Bundle.load(writer.root).captures
    assert [c.spec for c in caps] == ["net_stats_list", "vsish_rxqueues", "esxi_version"]
    assert all(c.ok and c.command for c in caps)


def test_two_rxsummary_samples_show_ring1_full_rising(lab, open_conn, writer):
    conn = open_conn(lab.host_address, "esxi")
    ports = discover_ports(conn, writer, "esx0", ["00:50:56:a6:55:f4"])
    sample_ports(conn, writer, "esx0", ports, 0)
    time.sleep(3)
    sample_ports(conn, writer, "esx0", ports, 1)
    bundle = Bundle.load(writer.root)
    first, second = (parse_rxsummary(c.path.read_text()) for c in bundle.find("vsish_rxsummary", "esx0"))
    assert first.ring1_full is not None and second.ring1_full - first.ring1_full >= 2 * 23.6
    rate = 23.6  # scenarios.json iperf-test1 "# of times the 1st ring is full" per second
    elapsed = (bundle.captures[-1].time - bundle.captures[3].time).total_seconds()
    assert abs((second.ring1_full - first.ring1_full) - rate * elapsed) <= rate * 1.0
    statuses = [parse_rxqueue_status(c.path.read_text()) for c in bundle.find("vsish_rxqueue_status")]
    assert [(s.ring1_size, s.ring2_size) for s in statuses] == [(256, 256), (256, 256)]
    assert [c.sample for c in bundle.find("vsish_clientstats")] == [0, 1]


def test_esxtop_window_returns_csv_rows(lab, open_conn, writer):
    conn = open_conn(lab.host_address, "esxi")
    waits = []
    started = time.monotonic()
    capture = run_esxtop(conn, writer, "esx0", window_s=4, delay_s=2, on_wait=lambda e, t: waits.append((e, t)))
    took = time.monotonic() - started
    assert capture.ok and capture.params == {"delay": "2", "iterations": "2"}
    assert 4 <= took < 10
    assert waits and all(t == 2 * 2 + 30 for _, t in waits)
    record = parse_esxtop(io.StringIO(capture.path.read_text()))
    assert record.samples == 2 and record.host == "esx0.lab.local"
    limited = record.vms["iperf-cpu-limited"]
    assert limited.group_ready_pct == (69.60, 69.60)
    assert limited.group_max_limited_pct == (69.52, 69.52)


def test_linux_guest_collection_finds_eth0_by_mac(lab, open_conn, writer):
    vm = _vm(lab, "iperf-test1")
    conn = open_conn(lab.address_of(vm["name"]), "linux")
    guest = collect_linux(conn, writer, "iperf-test1", [vm["nics"][0]["mac"]], 0)
    assert guest.ifaces == ("eth0",) and guest.tcp_spec == "netstat_s"
    again = collect_linux(conn, writer, "iperf-test1", [vm["nics"][0]["mac"]], 1, previous=guest)
    assert again == guest
    caps = Bundle.load(writer.root).captures
    assert all(c.ok for c in caps), [(c.spec, c.error) for c in caps if not c.ok]
    assert [(c.spec, c.sample) for c in caps] == [
        ("ip_link", None), ("ethtool_permaddr", None), ("ethtool_driver", None), ("ethtool_rings", None),
        ("ethtool_stats", 0), ("netstat_s", 0), ("nproc", None), ("ring_persistence", None),
        ("ethtool_stats", 1), ("netstat_s", 1)]
    stats0, stats1 = (c.path.read_text() for c in caps if c.spec == "ethtool_stats")
    assert stats0 != stats1 and "pkts rx OOB" in stats1
    persistence = next(c for c in caps if c.spec == "ring_persistence")
    assert persistence.rc == 2 and persistence.path.read_text() == ""


def test_linux_falls_back_to_nstat_when_netstat_is_missing(lab, open_conn, writer):
    vm = _vm(lab, "iperf-test1-ring4096")
    address = lab.address_of(vm["name"])
    lab.set_fault("missing", address=address, program="netstat")
    conn = open_conn(address, "linux")
    guest = collect_linux(conn, writer, "guest", [vm["nics"][0]["mac"]], 0)
    assert guest.tcp_spec == "nstat"
    caps = Bundle.load(writer.root).captures
    missing = next(c for c in caps if c.spec == "netstat_s")
    assert missing.error_kind == "not-found" and "netstat: not found" in missing.error
    nstat = next(c for c in caps if c.spec == "nstat")
    assert nstat.ok and "TcpRetransSegs" in nstat.path.read_text()
    persistence = next(c for c in caps if c.spec == "ring_persistence")
    assert persistence.ok and "ethtool -G eth0 rx 4096" in persistence.path.read_text()


def test_windows_guest_collection(lab, open_conn, writer):
    conn = open_conn(lab.address_of("win2012r2-file01"), "windows")
    first = collect_windows(conn, writer, "win", 0)
    time.sleep(1.1)
    second = collect_windows(conn, writer, "win", 1)
    assert [c.spec for c in first] == ["win_netadapter", "win_advprops", "win_rss", "win_stats", "win_cpu"]
    assert [(c.spec, c.sample) for c in second] == [("win_stats", 1)]
    assert all(c.ok for c in first + second)
    assert b'"00-50-56-A6-66-0E"' in first[0].path.read_bytes()
    assert first[4].path.read_text().strip() == "4"
    discarded = [int(line.split(":")[1]) for c in (first[3], second[0])
                 for line in c.path.read_text().splitlines() if line.startswith("ReceivedDiscardedPackets")]
    assert discarded[1] > discarded[0]
