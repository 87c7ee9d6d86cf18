"""The deep check inside a cycle: which suspects fit the SSH budget (VMs and hosts per cycle, only
hosts with a login, recently checked VMs give their turn), and the ring figures a checked vNIC
exports, read from a real bundle's analysis."""

from __future__ import annotations

import argparse
from pathlib import Path

from esxdiag.config import load_thresholds
from esxdiag.engine import analyze
from esxdiag.fleet.deep import ring_figures
from esxdiag.serve.deep import pick

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "iperf-test1-ring-exhaustion"


def budget(deep=5, hosts=2, logins=("esx1=root@10.0.0.1", "esx2=root@10.0.0.2"), named=(), recheck=3600.0):
    return argparse.Namespace(deep=deep, deep_hosts=hosts, deep_host_ssh=list(logins), deep_vm=list(named),
                              deep_recheck=recheck)


def suspects(fleet_document, make_vm):
    vms = [make_vm(f"r{i}", f"vm-{i}", drops=1000 - 10 * i, host=f"esx{1 + i % 3}") for i in range(9)]
    return fleet_document("vc1:443", vms + [make_vm("calm", "vm-99", host="esx1")])


def names(rows):
    return [r.name for r in rows]


def test_only_hosts_with_a_login_and_at_most_the_hosts_and_vms_per_cycle(fleet_document, make_vm):
    doc = suspects(fleet_document, make_vm)  # r0 esx1, r1 esx2, r2 esx3, r3 esx1, ... most drops first
    assert names(pick(doc, budget(), {}, now=0)) == ["r0", "r1", "r3", "r4", "r6"]  # esx3 has no login
    assert names(pick(doc, budget(hosts=1), {}, now=0)) == ["r0", "r3", "r6"]
    assert names(pick(doc, budget(deep=2), {}, now=0)) == ["r0", "r1"]
    every_host = budget(logins=("esxdiag@",), hosts=3, deep=4)  # one login for every host
    assert names(pick(doc, every_host, {}, now=0)) == ["r0", "r1", "r2", "r3"]
    assert pick(doc, budget(logins=("esx9=root@10.0.0.9",)), {}, now=0) == []


def test_recently_checked_vms_give_their_turn_unless_named(fleet_document, make_vm):
    doc = suspects(fleet_document, make_vm)
    recent = {"vm-0": 1000.0, "vm-1": -1000.0}  # at now=3000: 2,000 s and 4,000 s ago
    assert names(pick(doc, budget(deep=2), recent, now=3000)) == ["r1", "r3"]  # vm-0 within the hour
    assert names(pick(doc, budget(deep=2, named=("r0",)), recent, now=3000)) == ["r0", "r1"]
    assert names(pick(doc, budget(deep=1, named=("calm", "r7")), {}, now=0)) == ["r7", "calm"]  # named: beyond N


def test_ring_figures_of_a_checked_vnic_come_from_the_host_counters():
    result = analyze(EXAMPLE, load_thresholds())
    (vnic,) = next(vm for vm in result.vms if vm.name == "iperf-test1").vnics
    nic = ring_figures(vnic)
    assert (nic["ring1_full"], nic["ring2_full"], nic["host_out_of_buffers"]) == (23.608, 10.893, 34.612)
    assert (nic["ring1_size"], nic["ring2_size"]) == (256, 256)
