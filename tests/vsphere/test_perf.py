"""collect_perf and collect_host_perf against vcsim (values are random there: structure, not values)
and their CSV decoding."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
from pyVmomi import vim

from esxdiag.collectors.vsphere import collect_host_perf, collect_inventory, collect_perf, find_vm
from esxdiag.collectors.vsphere_host_perf import HOST_NET_COUNTERS, uplink_series
from esxdiag.collectors.vsphere_perf import CPU_COUNTERS, NET_COUNTERS, decode_csv, choose_interval
from esxdiag.parsers.vsphere import parse_host_perf, parse_perf

UNITS = {"cpu.usage.average": "percent", "net.droppedRx.summation": "number", "cpu.ready.summation": "millisecond"}


@pytest.mark.lab
def test_perf_has_per_vcpu_and_per_vnic_series(session, scenarios):
    want = next(v for v in scenarios["vms"] if v["num_cpu"] == 2)
    ref = find_vm(session, want["name"])
    inventory = collect_inventory(session, ref)
    end = datetime.now(timezone.utc).replace(microsecond=0)
    before = session.request_count
    perf = collect_perf(session, ref, inventory, end - timedelta(minutes=5), end)
    assert session.request_count - before <= 4  # counter names (once per session), provider, available, QueryPerf
    assert (perf["schema"], perf["vm"], perf["interval_s"], perf["rollup"], perf["note"]) == (
        "esxdiag.vsphere_perf/1", want["name"], 20, "realtime", None)
    stamps = [datetime.fromisoformat(t.replace("Z", "+00:00")) for t in perf["timestamps"]]
    assert len(stamps) == 16 and all(b - a == timedelta(seconds=20) for a, b in zip(stamps, stamps[1:]))
    keys = {(s["counter"], s["instance"]) for s in perf["series"]}
    device_key = str(inventory["vnics"][0]["device_key"])
    assert keys == {(c, i) for c in CPU_COUNTERS for i in ("", "0", "1")} | {(c, device_key) for c in NET_COUNTERS}
    for series in perf["series"]:
        assert len(series["values"]) == len(stamps)
        assert all(isinstance(v, int) for v in series["values"])
        if series["counter"] in UNITS:
            assert series["unit"] == UNITS[series["counter"]]
    parsed = parse_perf(json.dumps(perf))
    assert parsed.values("cpu.ready.summation", "1") == tuple(
        next(s["values"] for s in perf["series"] if (s["counter"], s["instance"]) == ("cpu.ready.summation", "1")))
    again = session.request_count
    collect_perf(session, ref, inventory, end - timedelta(minutes=5), end)
    assert session.request_count - again == 3  # counter ids are cached per session


@pytest.mark.lab
def test_host_uplink_counters_parse_with_the_project_parser(session, scenarios):
    """vcsim answers instance "*" with one series named "*": recorded as the host aggregate, with a note."""
    inventory = collect_inventory(session, find_vm(session, scenarios["vms"][0]["name"]))
    end = datetime.now(timezone.utc).replace(microsecond=0)
    collect_host_perf(session, inventory["host_moid"], inventory["host"], end - timedelta(minutes=5), end)
    before = session.request_count
    perf = collect_host_perf(session, inventory["host_moid"], inventory["host"], end - timedelta(minutes=5), end)
    assert session.request_count - before == 1  # one QueryPerf: counter ids are cached per session
    assert (perf["schema"], perf["host"], perf["interval_s"], perf["rollup"]) == (
        "esxdiag.vsphere_host_perf/1", scenarios["vms"][0]["host"], 20, "realtime")
    assert "instance '*'" in perf["note"]
    assert [(s["counter"], s["instance"], s["unit"]) for s in perf["series"]] == [
        (c, "", "number") for c in HOST_NET_COUNTERS]
    parsed = parse_host_perf(json.dumps(perf))
    assert len(parsed.timestamps) == 16 and parsed.timestamps == tuple(sorted(parsed.timestamps))
    assert parsed.values("net.errorsRx.summation", "") == tuple(perf["series"][1]["values"])


def test_uplink_series_keep_the_aggregate_and_vmnics_only():
    """A real vCenter's answer to instance "*": "" plus one series per vmnic (and vmk ports, left out)."""
    metric = vim.PerformanceManager.EntityMetricCSV(
        sampleInfoCSV="20,2026-01-01T00:00:20Z,20,2026-01-01T00:00:00Z",
        value=[vim.PerformanceManager.MetricSeriesCSV(id=vim.PerformanceManager.MetricId(counterId=7, instance=i),
                                                      value=v)
               for i, v in (("", "30,10"), ("vmnic10", "0,0"), ("vmnic1", "30,10"), ("vmk0", "5,5"), ("vusb0", "0,-1"))])
    stamps, values = decode_csv([metric])
    order = sorted(range(len(stamps)), key=lambda i: stamps[i])
    series, notes = uplink_series(values, {7: ("net.droppedRx.summation", "number")}, order)
    assert [(s["instance"], s["values"]) for s in series] == [
        ("", [10, 30]), ("vmnic1", [10, 30]), ("vmnic10", [0, 0]), ("vusb0", [None, 0])]
    assert notes == ["instances that are not uplinks left out: vmk0"]
    echoed = {(7, "*"): [3, 4]}  # vcsim
    series, notes = uplink_series(echoed, {7: ("net.droppedRx.summation", "number")}, [0, 1])
    assert [(s["instance"], s["values"]) for s in series] == [("", [3, 4])] and "instance '*'" in notes[0]


def test_choose_interval_falls_back_to_the_300s_rollup():
    assert choose_interval("vm1", True, 42) == (20, None)
    interval, note = choose_interval("vm1", True, 0)
    assert interval == 300 and "no realtime" in note and "vm1" in note
    interval, note = choose_interval("vm1", False, 42)
    assert interval == 300 and "not supported" in note


def test_csv_decoding_keeps_gaps_and_marks_minus_one_as_null():
    metric = vim.PerformanceManager.EntityMetricCSV(
        sampleInfoCSV="20,2026-01-01T00:00:40Z,20,2026-01-01T00:00:20Z,20,2026-01-01T00:00:00Z",
        value=[vim.PerformanceManager.MetricSeriesCSV(
                   id=vim.PerformanceManager.MetricId(counterId=7, instance="0"), value="5,-1,0"),
               vim.PerformanceManager.MetricSeriesCSV(
                   id=vim.PerformanceManager.MetricId(counterId=8, instance="4000"), value="9")])
    stamps, values = decode_csv([metric])
    assert [t.second for t in stamps] == [40, 20, 0]
    assert values[(7, "0")] == [5, None, 0]
    assert values[(8, "4000")] == [9, None, None]
