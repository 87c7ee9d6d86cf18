"""Issue 29 item 8, vMotion details, on bundles built by tests/fixtures/situations/build_moves.py: each port
named on the host it lived on for any number of moves; a vNIC listed once across a move seen without
vCenter, its moved port's counters counted since the move; vCenter's whole-window per-vCPU figures judged
when esxtop covers part of the window."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from esxdiag.config import DEFAULT_THRESHOLDS
from esxdiag.engine import analyze
from esxdiag.join.facts import CpuFacts, Move, PortSegment
from esxdiag.join.moves import with_ports
from esxdiag.reports.json_report import to_jsonable
from esxdiag.reports.text import render_text
from esxdiag.rules.cpustats import cpu_state

SITUATIONS = Path(__file__).resolve().parents[1] / "fixtures" / "situations"
ESX = {0: "esx0.lab.local", 1: "esx1.lab.local", 2: "esx2.lab.local"}
PORT = {0: 33554464, 1: 67109400, 2: 67110021}


def run(name: str):
    result = analyze(SITUATIONS / name, dict(DEFAULT_THRESHOLDS))
    return result, to_jsonable(result), render_text(result, width=400)


def findings(doc: dict, rule: str) -> list[dict]:
    return [f for f in doc["vms"][0]["findings"] if f["rule"] == rule]


def hops(title: str) -> list[tuple[str, str]]:
    """(port words, host) of every stop a title names: "port 1 on h0 -> a port not read on h1 -> ..."."""
    chain = re.search(r"\(moved: (.*)\)", title)[1]
    return [tuple(stop.rsplit(" on ", 1)) for stop in chain.split(" -> ")]


def test_two_moves_name_the_new_port_on_the_host_it_lived_on():
    """esx0 -> esx1 -> esx2 (vCenter's events); the vNIC read on esx0 at the start and esx2 at the end."""
    _, doc, text = run("vmotion-two-moves")
    (exhaustion,) = findings(doc, "ring-exhaustion")
    assert hops(exhaustion["title"]) == [(f"port {PORT[0]}", ESX[0]), ("a port not read", ESX[1]),
                                         (f"port {PORT[2]}", ESX[2])]
    assert f"port {PORT[2]} on {ESX[1]}" not in text  # the bug: the last port put on the middle host
    (move,) = findings(doc, "vmotion")
    assert f"from {ESX[0]} to {ESX[1]}" in move["title"] and f"then from {ESX[1]} to {ESX[2]}" in move["title"]
    assert f"port {PORT[0]} -> port {PORT[2]}" not in move["title"]  # no single move spans both ports
    assert len(move["evidence"]) == 2


def test_two_moves_with_every_host_read_name_each_port_on_its_host():
    _, doc, text = run("vmotion-two-moves-all-read")
    (exhaustion,) = findings(doc, "ring-exhaustion")
    assert hops(exhaustion["title"]) == [(f"port {PORT[i]}", ESX[i]) for i in range(3)]
    (move,) = findings(doc, "vmotion")
    assert f"(port {PORT[0]} -> port {PORT[1]})" in move["title"]
    assert f"(port {PORT[1]} -> port {PORT[2]})" in move["title"]
    nic = doc["vms"][0]["vnics"][0]
    assert nic["port"] == PORT[2]
    events = json.loads((SITUATIONS / "vmotion-two-moves-all-read" / "vcenter" /
                         "vsphere_events@vm=iperf-test1.json").read_text())["events"]
    moved_at = events[1]["time"][11:19]  # the second move connected the port the end reading is of
    assert nic["metrics"]["dropped_rx"]["since"] == f"since the move to {ESX[2]} ({moved_at} UTC)"
    assert "since vNIC init" not in text


def test_a_vnic_read_only_after_the_move_counts_since_the_move_and_names_the_unread_port():
    _, doc, text = run("vmotion-only-destination-read")
    (exhaustion,) = findings(doc, "ring-exhaustion")
    assert hops(exhaustion["title"]) == [("a port not read", ESX[0]), (f"port {PORT[1]}", ESX[1])]
    event = json.loads((SITUATIONS / "vmotion-only-destination-read" / "vcenter" /
                        "vsphere_events@vm=iperf-test1.json").read_text())["events"][0]
    nic = doc["vms"][0]["vnics"][0]
    assert nic["metrics"]["ring1_full"]["since"] == f"since the move to {ESX[1]} ({event['time'][11:19]} UTC)"
    assert "since vNIC init" not in text


def test_a_move_vcenters_events_miss_is_taken_from_the_readings():
    """Events say esx0 -> esx1; the vNIC was read on esx0, then on esx2: a second move, no time."""
    _, doc, text = run("vmotion-event-missing-a-move")
    (exhaustion,) = findings(doc, "ring-exhaustion")
    assert hops(exhaustion["title"]) == [(f"port {PORT[0]}", ESX[0]), ("a port not read", ESX[1]),
                                         (f"port {PORT[2]}", ESX[2])]
    (move,) = findings(doc, "vmotion")
    assert f"then from {ESX[1]} to {ESX[2]}" in move["title"]
    event = json.loads((SITUATIONS / "vmotion-event-missing-a-move" / "vcenter" /
                        "vsphere_events@vm=iperf-test1.json").read_text())["events"][0]
    since = doc["vms"][0]["vnics"][0]["metrics"]["dropped_rx"]["since"]
    assert since.startswith(f"since the port was connected on {ESX[2]} (the move, between {event['time'][11:19]} UTC")


@pytest.mark.parametrize("name, hosts", [("vmotion-sampled-no-vcenter", 2),
                                         ("vmotion-sampled-three-hosts-no-vcenter", 3)])
def test_a_move_seen_without_vcenter_lists_the_vnic_once(name, hosts):
    _, doc, text = run(name)
    vm = doc["vms"][0]
    assert len(vm["vnics"]) == 1  # one vNIC however many hosts' port lists name its MAC
    assert len(findings(doc, "ring-exhaustion")) == 1 and len(findings(doc, "data-quality")) == 1
    (exhaustion,) = findings(doc, "ring-exhaustion")
    assert hops(exhaustion["title"]) == [(f"port {PORT[i]}", ESX[i]) for i in range(hosts)]
    (move,) = findings(doc, "vmotion")
    assert len(move["evidence"]) == hosts - 1
    assert vm["host"] == ESX[hosts - 1]  # where the vNIC was at the window's end
    assert text.count("vNIC 0 00:50:56:a6:55:f4") == 1


@pytest.mark.parametrize("name", ["vmotion-sampled-no-vcenter", "vmotion-sampled-three-hosts-no-vcenter",
                                  "vmotion-sampled-on-two-hosts"])
def test_the_moved_ports_counters_are_counted_since_the_move_not_vnic_init(name):
    _, doc, text = run(name)
    nic = doc["vms"][0]["vnics"][0]
    host = ESX[2] if "three" in name else ESX[1]
    for key in ("ring1_full", "ring2_full", "host_out_of_buffers", "dropped_rx"):
        assert nic["metrics"][key]["delta"] is None
        assert nic["metrics"][key]["since"].startswith(f"since the port was connected on {host} (the move, between ")
    assert "since vNIC init" not in text
    assert not any("since vNIC init" in str(e["unit"]) for f in doc["vms"][0]["findings"] for e in f["evidence"])


def test_a_move_with_vcenters_event_counts_since_the_events_time():
    _, doc, _ = run("vmotion-in-window")
    event = json.loads((SITUATIONS / "vmotion-in-window" / "vcenter" /
                        "vsphere_events@vm=iperf-test1.json").read_text())["events"][0]
    nic = doc["vms"][0]["vnics"][0]
    assert nic["metrics"]["dropped_rx"]["since"] == f"since the move to {ESX[1]} ({event['time'][11:19]} UTC)"


@pytest.mark.parametrize("name, figure", [("esxtop-sliver-vcenter-ready", "%RDY 13.0% from vcenter-realtime"),
                                          ("esxtop-sliver-vcenter-costop", "%CSTP 6.0% from vcenter-realtime"),
                                          ("vmotion-esxtop-one-host-vcenter-ready",
                                           "%RDY 13.0% from vcenter-realtime")])
def test_esxtop_on_a_sliver_never_calls_cpu_healthy_when_vcenter_saw_the_whole_window_contended(name, figure):
    """esxtop has the VM in 10 s of the 60 s window with %RDY 1.2; vCenter's per-vCPU figures over the whole
    window say contention: the verdict is CPU first, and says which source decided."""
    _, doc, text = run(name)
    nic = doc["vms"][0]["vnics"][0]
    assert nic["ring_verdict"] == "cpu-contention-first"
    assert figure in nic["verdict"]["summary"] and "healthy" not in nic["verdict"]["summary"]
    assert any("10 s esxtop covered of the 60 s window: CPU judged also on vcenter-realtime" in e["what"]
               for e in nic["verdict"]["evidence"])
    assert not any("ethtool -G" in c for r in nic["verdict"]["remediation"] for c in r["commands"])
    assert doc["vms"][0]["cpu"]["whole_window"]["source"] == "vcenter-realtime"
    assert "over the whole window (judged too" in text
    rule = "cpu-costop" if "costop" in name else "cpu-contention"
    (finding,) = findings(doc, rule)
    assert "vcenter-realtime" in finding["evidence"][0]["what"]


def test_vcenter_calm_over_the_whole_window_lets_a_short_esxtop_be_called_healthy_for_the_window():
    _, doc, _ = run("esxtop-short")
    nic = doc["vms"][0]["vnics"][0]
    assert nic["ring_verdict"] == "raise-ring1"
    assert "healthy over the whole window (vCenter's per-vCPU figures; 6 s esxtop covered" in nic["verdict"]["summary"]


# --- the same rules on facts built by hand -------------------------------------------------------------

def _cpu(source: str, ready: float, samples: int, sample_s: float) -> CpuFacts:
    series = {"vCPU 0": tuple([ready] * samples), "vCPU 1": tuple([ready] * samples)}
    zero = {k: tuple([0.0] * samples) for k in series}
    return CpuFacts(source, f"{source}.file", tuple(f"t{i}" for i in range(samples)), series, zero, zero,
                    sample_s=sample_s, window_s=60.0)


def test_a_sliver_that_shows_contention_decides_even_when_vcenter_averages_it_away():
    t = dict(DEFAULT_THRESHOLDS)
    state = cpu_state(_cpu("esxtop", 14.0, 2, 5.0), None, t, _cpu("vcenter-realtime", 2.0, 3, 20.0))
    assert state.contended and state.ready.origin == "esxtop"
    assert state.figure("%RDY", state.ready) == "%RDY 14.0% from esxtop"


def test_esxtop_over_the_coverage_threshold_is_judged_alone():
    t = dict(DEFAULT_THRESHOLDS)
    state = cpu_state(_cpu("esxtop", 1.0, 12, 5.0), None, t, _cpu("vcenter-realtime", 14.0, 3, 20.0))
    assert not state.contended and state.whole_window is None and state.words == "healthy"
    moved = cpu_state(_cpu("esxtop", 1.0, 5, 5.0), None, {**t, "cpu.esxtop_coverage_min_pct": 40.0},
                      _cpu("vcenter-realtime", 14.0, 3, 20.0))
    assert not moved.contended  # 25 s of 60 is over a 40 % threshold


def test_vcenter_covering_part_of_the_window_is_no_whole_window_source():
    t = dict(DEFAULT_THRESHOLDS)
    state = cpu_state(_cpu("esxtop", 1.0, 2, 5.0), None, t, _cpu("vcenter-realtime", 14.0, 1, 20.0))
    assert not state.contended and state.whole_window is None
    assert state.words.startswith("healthy in the 10 s esxtop covered")


def _segments(*stops: tuple[str, int]) -> list[PortSegment]:
    return [PortSegment(f"esxi-{host}", host, port, "vSwitch0") for host, port in stops]


def test_ports_follow_their_hosts_for_a_vm_that_comes_back():
    """esx0 -> esx1 -> esx0: the first move's port on esx0 is the first one, the last move's the later one."""
    moves = (Move("2026-01-01T00:00:10Z", "esx0", "esx1", "DrsVmMigratedEvent"),
             Move("2026-01-01T00:00:40Z", "esx1", "esx0", "DrsVmMigratedEvent"))
    got = with_ports(moves, _segments(("esx0", 1), ("esx1", 2), ("esx0", 3)))
    assert [(m.from_port, m.to_port) for m in got] == [(1, 2), (2, 3)]


def test_ports_of_hosts_not_read_stay_unknown_and_never_shift_onto_another_host():
    moves = tuple(Move(None, a, b, "VmMigratedEvent") for a, b in (("h0", "h1"), ("h1", "h2"), ("h2", "h3")))
    got = with_ports(moves, _segments(("h0", 10), ("h3", 13)))
    assert [(m.from_port, m.to_port) for m in got] == [(10, None), (None, None), (None, 13)]


def test_targets_named_otherwise_pair_up_in_order_when_the_counts_fit():
    moves = (Move(None, "esx-prod-31", "esx-prod-32", "VmMigratedEvent"),
             Move(None, "esx-prod-32", "esx-prod-33", "VmMigratedEvent"))
    segments = [replace(s, target=f"esxi-10.0.0.{i}", host=f"10.0.0.{i}")
                for i, s in enumerate(_segments(("a", 1), ("b", 2), ("c", 3)))]
    assert [(m.from_port, m.to_port) for m in with_ports(moves, segments)] == [(1, 2), (2, 3)]
    assert [(m.from_port, m.to_port) for m in with_ports(moves, segments[:2])] == [(None, None), (None, None)]
