"""Classes, numbers and ranking through the whole scan: inventory, paging and counter ids from
vcsim, QueryPerf answers from a fixed fake PerformanceManager (vcsim's perf values are random and
cannot be injected: see conftest.FakePerfManager)."""

from __future__ import annotations

import math

import pytest

from esxdiag.collectors.fleet import Filters, ScanOptions, scan
from esxdiag.config import load_thresholds
from esxdiag.fleet.analysis import build_report
from esxdiag.fleet.snapshot import snapshot_from_dict

pytestmark = pytest.mark.lab
SAMPLES = 15  # 15 x 20 s = 300 s
PROD = Filters(folders=("/DC0/vm/prod",))


def expanded(ready: list[int], drops: int = 0, packets: int = 100_000, costop: int = 0, limited: int = 0,
             key: str = "4000") -> dict:
    """A real vCenter's answer to instance "*": aggregate "" plus per-vCPU and per-vNIC series."""
    rows = {}
    for counter, per_vcpu in (("cpu.ready.summation", ready), ("cpu.costop.summation", [costop] * len(ready)),
                              ("cpu.maxlimited.summation", [limited] * len(ready))):
        rows[(counter, "")] = [sum(per_vcpu)] * SAMPLES
        rows.update({(counter, str(i)): [v] * SAMPLES for i, v in enumerate(per_vcpu)})
    for counter, value in (("net.droppedRx.summation", drops), ("net.packetsRx.summation", packets)):
        rows[(counter, "")] = [value] * SAMPLES
        rows[(counter, key)] = [value] * SAMPLES
    return rows


def wildcard(ready: int, drops: int = 0, packets: int = 100_000, limited: int = 0) -> dict:
    """vcsim's answer to instance "*": one series per counter, named "*"."""
    return {("cpu.ready.summation", "*"): [ready] * SAMPLES, ("cpu.costop.summation", "*"): [0] * SAMPLES,
            ("cpu.maxlimited.summation", "*"): [limited] * SAMPLES,
            ("net.droppedRx.summation", "*"): [drops] * SAMPLES, ("net.packetsRx.summation", "*"): [packets] * SAMPLES}


TABLE = {
    "ring-a": expanded([200, 400], drops=100),  # 1 % / 2 % per vCPU, 5 drops/s, 1 per 1,000 packets
    "ring-b": wildcard(300, drops=300, packets=30_000),  # 1.5 %, 15 drops/s, 10 per 1,000
    "limited": wildcard(3100, drops=50, limited=3000),  # %RDY 15.5 of which %MLMTD 15, 2.5 drops/s
    "contended": expanded([2400, 1000]),  # worst vCPU 12 %, no drops
    "legacy": wildcard(100),
    "quiet": expanded([100]),
    "rollup-only": wildcard(600),  # answered only at 300 s: 600 ms / 300 s = 0.2 %
    "refused": wildcard(100),
    "dropping-nocpu": {("net.droppedRx.summation", "*"): [10] * SAMPLES,
                       ("net.packetsRx.summation", "*"): [1000] * SAMPLES},
}


def run_scan(fake_perf, lab, creds_for, table=TABLE, filters=PROD, **kw):
    holder = fake_perf(table, **{k: kw.pop(k) for k in ("no_realtime", "refused") if k in kw})
    data = scan([creds_for(lab)], ScanOptions(filters=filters, **kw))
    document = build_report(snapshot_from_dict(data), load_thresholds()).as_dict()
    return data, document, holder["fake"]


def rows_by_name(document) -> dict:
    return {r["name"]: r for r in document["vms"]}


def test_classes_numbers_and_ranking(fleet_lab, creds_for, fake_perf):
    data, doc, fake = run_scan(fake_perf, fleet_lab, creds_for, no_realtime={"rollup-only"}, refused={"refused"})
    rows = rows_by_name(doc)
    assert [r["name"] for r in doc["vms"]] == [  # severity first (critical, warning, info, none), then frames lost/s
        "ring-b", "limited", "contended", "ring-a", "dropping-nocpu", "legacy", "refused", "stopped", "quiet", "rollup-only"]
    assert {n: r["class"] for n, r in rows.items()} == {
        "limited": "cpu-and-drops", "ring-b": "ring-suspect", "ring-a": "ring-suspect",
        "contended": "cpu-contention", "legacy": "emulated-nic", "dropping-nocpu": "no-data",
        "refused": "no-data", "stopped": "no-data", "quiet": "healthy", "rollup-only": "healthy"}
    a = rows["ring-a"]  # per-vCPU and per-vNIC series (real vCenter expansion)
    assert (a["drops"], a["drops_per_s"], a["drops_per_1000"], a["ready_worst_pct"], a["ready_worst_vcpu"]) == (
        1500, 5.0, 1.0, 2.0, "vCPU 1")
    assert (a["ready_avg_pct"], a["severity"], a["score"], a["drops_by_vnic"]) == (1.5, "warning", 5.0, {"4000": 1500})
    b = rows["ring-b"]  # vcsim's single "*" series read as the aggregate, divided by numCPU
    assert (b["drops_per_s"], b["drops_per_1000"], b["ready_worst_pct"], b["severity"], b["score"]) == (
        15.0, 10.0, 1.5, "critical", 15.0)  # score: frames lost per s
    assert any("instance '*'" in n for n in b["notes"])
    limited = rows["limited"]
    assert (limited["max_limited_worst_pct"], limited["cpu_limit_mhz"], limited["severity"]) == (15.0, 800, "critical")
    assert "fix CPU first" in limited["reason"]
    contended = rows["contended"]
    assert (contended["ready_worst_pct"], contended["ready_worst_vcpu"], contended["severity"]) == (
        12.0, "vCPU 0", "critical")
    assert "cannot tell" in rows["dropping-nocpu"]["reason"]
    assert "entity refused by the fake" in rows["refused"]["reason"]
    assert rows["stopped"]["severity"] is None and "poweredOff" in rows["stopped"]["reason"]
    rollup = rows["rollup-only"]
    assert (rollup["source"], rollup["ready_worst_pct"]) == ("vcenter-historical", 0.2)
    assert any("300 s rollup" in n for n in rollup["notes"])
    assert doc["counts"] == {"ring-exhaustion": 0, "cpu-and-drops": 1, "ring-suspect": 2, "uplink-loss": 0,
                             "drops-not-ring": 0, "cpu-limit": 0, "cpu-contention": 1, "emulated-nic": 1, "no-data": 3,
                             "healthy": 2}
    # one refused entity cost only its own figures: its batch was retried one VM at a time
    assert data["vcenters"][0]["perf_errors"] == 1


def test_thresholds_come_from_the_same_config(fleet_lab, creds_for, fake_perf):
    holder = fake_perf(TABLE, no_realtime={"rollup-only"}, refused={"refused"})
    data = scan([creds_for(fleet_lab)], ScanOptions(filters=PROD))
    strict = build_report(snapshot_from_dict(data), load_thresholds(overrides=["cpu.ready_pct_critical=1.8"])).as_dict()
    rows = rows_by_name(strict)
    assert holder["fake"] is not None
    # ring-a's worst vCPU (2 %) is now over the critical %RDY: drops + contention -> CPU first
    assert rows["ring-a"]["class"] == "cpu-and-drops"
    assert rows["ring-b"]["class"] == "ring-suspect"  # 1.5 % stays under 1.8


def test_batches_follow_max_query_metrics(fleet_lab, creds_for, fake_perf):
    """--max-query-metrics is the user's brake: it caps realtime batches too."""
    table = {n: v for n, v in TABLE.items() if n not in ("refused", "rollup-only")}
    for max_metrics in (64, 10, 5):
        _, doc, fake = run_scan(fake_perf, fleet_lab, creds_for, table=table, max_metrics=max_metrics)
        per_call = max(1, max_metrics // 5)  # 5 counters per VM
        realtime = [n for interval, n, kind in fake.calls if interval == 20 and kind == "vm"]
        powered_on = 9  # TEST_VMS less "stopped"
        assert len(realtime) == math.ceil(powered_on / per_call), max_metrics
        assert max(realtime) == min(per_call, powered_on)


def test_realtime_batches_by_entities_historical_by_the_servers_metrics(fleet_lab, creds_for, fake_perf):
    """Without --max-query-metrics the server's maxQueryMetrics (vcsim has none: 64) sizes only the
    historical pass: every powered-on VM in one realtime call (up to 256), then, none having realtime
    samples here, the same VMs at 300 s in batches of 64 // 5 = 12."""
    table = {n: v for n, v in TABLE.items() if n != "refused"}
    data, _, fake = run_scan(fake_perf, fleet_lab, creds_for, table=table, filters=Filters(), no_realtime=set(table))
    on = sum(v["power_state"] == "poweredOn" for v in data["vms"])
    assert on > 12
    vm_calls = [(interval, n) for interval, n, kind in fake.calls if kind == "vm"]
    assert vm_calls == [(20, on)] + [(300, min(12, on - i)) for i in range(0, on, 12)]


def test_nic_types_drops_reads_devices_only_for_dropping_vms(fleet_lab, creds_for, fake_perf):
    _, doc, _ = run_scan(fake_perf, fleet_lab, creds_for, no_realtime={"rollup-only"}, refused={"refused"},
                         nic_types="drops")
    rows = rows_by_name(doc)
    assert doc["snapshot"]["nic_types"] == "drops"
    for name in ("ring-a", "ring-b", "limited", "dropping-nocpu"):
        assert rows[name]["nic_types"] == ["vmxnet3"], name
    assert rows["ring-b"]["class"] == "ring-suspect" and rows["limited"]["class"] == "cpu-and-drops"
    legacy = rows["legacy"]  # e1000 but no drops: its type was not read, and the report says so
    assert (legacy["nic_types"], legacy["num_vnics"], legacy["class"]) == (None, 1, "healthy")
    assert any("e1000/e1000e not checked" in n for n in legacy["notes"])
