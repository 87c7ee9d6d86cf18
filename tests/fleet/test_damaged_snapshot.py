"""One odd value never empties the fleet (issue 16, point 1): a value that cannot be a counter costs
its sample, a series or field that cannot be read costs that series or field, a VM record that cannot
be read costs that VM; each with a note naming the VM, counter, instance and value. Only what is not a
snapshot at all is refused."""

from __future__ import annotations

import copy
import importlib.util
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from esxdiag.cli import main
from esxdiag.config import load_thresholds
from esxdiag.errors import ParseError
from esxdiag.fleet.analysis import build_report
from esxdiag.fleet.snapshot import load_snapshot, snapshot_from_dict, write_snapshot

_spec = importlib.util.spec_from_file_location("fleet_snapshots", Path(__file__).with_name("fleet_snapshots.py"))
fs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fs)

FLEET = [
    fs.vm("ring", drops=100), fs.vm("busy", vcpus=2, ready=[2400, 1000]), fs.vm("capped", ready=3100, limited=3000,
                                                                                 limit=800, drops=50),
    fs.vm("old", nics=("e1000",)), fs.vm("calm", vcpus=2), fs.vm("off", power="poweredOff"),
]


def classes(data: dict) -> dict[str, str]:
    document = build_report(snapshot_from_dict(data), load_thresholds()).as_dict()
    return {r["moid"]: r["class"] for r in document["vms"]}


def rows(data: dict) -> dict[str, dict]:
    return {r["moid"]: r for r in build_report(snapshot_from_dict(data), load_thresholds()).as_dict()["vms"]}


def test_one_negative_drop_value_costs_one_sample_not_the_fleet(tmp_path, capsys):
    """The issue's case: 25 VMs, a -5 in one VM's net.droppedRx series; scan --snapshot used to exit 2."""
    vms = [fs.vm(f"web{i:02d}", drops=20 if i % 3 == 0 else 0) for i in range(25)]
    drops = next(s for s in vms[21]["perf"]["series"]
                 if s["counter"] == "net.droppedRx.summation" and s["instance"] == "4000")
    drops["values"][6] = -5
    path = write_snapshot(fs.snapshot(vms), tmp_path / "s.json")
    out = tmp_path / "r.json"
    assert main(["scan", "--snapshot", str(path), "--format", "json", "-o", str(out)]) == 0
    document = json.loads(out.read_text())
    assert len(document["vms"]) == 25
    row = next(r for r in document["vms"] if r["name"] == "web21")
    (note,) = [n for n in row["notes"] if "-5" in n]
    for word in ("web21", "net.droppedRx.summation", "'4000'", "-5", "negative", "sample dropped"):
        assert word in note, word
    assert row["drops_by_vnic"] == {"4000": 20 * 14}  # the other 14 samples of the series still count


def test_vcenter_no_sample_is_a_gap_without_a_note():
    data = fs.snapshot([fs.vm("gappy", drops=10)])
    for series in data["vms"][0]["perf"]["series"]:
        series["values"][3] = -1
    row = rows(data)["vm-gappy"]
    assert row["samples"] == 14 and not any("-1" in n for n in row["notes"])


@pytest.mark.parametrize("value, why", [(1.5, "not an integer"), ("12", "not a number"), (True, "not a number"),
                                        (2**64, "2^64 or more"), (float("nan"), "not a number")])
def test_values_that_are_not_counters_are_dropped_with_their_reason(value, why):
    data = fs.snapshot([fs.vm("odd", drops=10), fs.vm("even", drops=10)])
    data["vms"][0]["perf"]["series"][0]["values"][0] = value
    got = rows(data)
    assert any(why in n and "cpu.ready.summation" in n for n in got["vm-odd"]["notes"])
    assert got["vm-odd"]["class"] == got["vm-even"]["class"] == "ring-suspect"


def test_impossible_ready_time_is_damaged_data_not_contention():
    """25,000 ms of ready per vCPU in a 20 s sample (125 %) cannot happen."""
    data = fs.snapshot([fs.vm("broken", vcpus=2, ready=[25_000, 100])])
    row = rows(data)["vm-broken"]
    assert row["class"] != "cpu-contention" and row["severity"] != "critical"
    assert any("impossible" in n and "25000" in n and "'0'" in n for n in row["notes"])
    whole = fs.snapshot([fs.vm("broken", vcpus=1, ready=25_000)])
    row = rows(whole)["vm-broken"]
    assert row["class"] == "no-data" and "damaged data" in row["reason"] and "impossible" in row["reason"]


def test_a_vm_record_that_cannot_be_read_costs_that_vm_only():
    data = fs.snapshot(copy.deepcopy(FLEET))
    before = classes(data)
    data["vms"][1]["num_cpu"] = "two"  # a field: read as unknown
    data["vms"][2]["cpu_allocation"] = 7
    data["vms"][4] = ["not", "a", "vm"]  # a whole record
    got = rows(data)
    assert any("num_cpu" in n and "unknown" in n for n in got["vm-busy"]["notes"])
    assert any("cpu_allocation" in n and "unknown" in n for n in got["vm-capped"]["notes"])
    assert got["vm-capped"]["class"] == "cpu-and-drops"  # %MLMTD still says a limit throttles it
    placeholder = got["vms[4]"]
    assert placeholder["class"] == "no-data" and "could not be read" in placeholder["reason"]
    untouched = ("vm-ring", "vm-old", "vm-off")
    assert {k: before[k] for k in untouched} == {k: got[k]["class"] for k in untouched}


def test_only_what_is_not_a_snapshot_is_refused(tmp_path):
    for broken in ({"schema": "esxdiag.bundle/1"}, {**fs.snapshot([]), "vms": {}}, [1, 2],
                   {**fs.snapshot([]), "window_s": "long"}):
        with pytest.raises(ParseError, match=r"x\.json"):
            snapshot_from_dict(broken, "x.json")
    path = tmp_path / "s.json"
    path.write_text(json.dumps(fs.snapshot([fs.vm("a")])).replace('"values": [100', '"values": [-100'))
    assert load_snapshot(path).vms[0].damage  # loads, with a note


def _leaves(node, path=()):
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _leaves(value, path + (key,))
    elif isinstance(node, list) and node and path[-1] != "values":
        for i, value in enumerate(node):
            yield from _leaves(value, path + (i,))
    else:
        yield path
        if isinstance(node, list):  # a series: each of its samples too
            yield from (path + (i,) for i in range(len(node)))


BASE = fs.snapshot(copy.deepcopy(FLEET), hosts=[fs.host(errors={"vmnic0": 0})])
PATHS = [p for p in _leaves(BASE) if p[0] in ("vms", "hosts")]
REPLACEMENTS = st.sampled_from([-5, -1, 1.5, "x", None, True, 2**70, [], {}, 10**9, 0, "DELETE"])


@settings(max_examples=400, derandomize=True, deadline=None)
@given(st.sampled_from(PATHS), REPLACEMENTS)
def test_mutating_any_single_value_keeps_every_other_vm_class(path, value):
    expected = classes(BASE)
    data = fs.mutated(BASE, path, value)
    got = classes(data)  # never raises
    mutated = {BASE["vms"][path[1]]["moid"]} if path[0] == "vms" else set()
    assert len(got) >= len(expected) - len(mutated)
    for moid, klass in expected.items():
        if moid not in mutated:
            assert got.get(moid) == klass or _uplink_sample(path, value) and got.get(moid) == "uplink-loss", \
                (path, value)


def _uplink_sample(path: tuple, value) -> bool:
    """A host's vmnic drop or error sample set to a real count: the host's VMs may rightly become uplink-loss
    (frames lost before the vSwitch), never anything else."""
    if path[:4] != ("hosts", 0, "perf", "series") or len(path) != 7 or type(value) is not int:
        return False
    counter = BASE["hosts"][0]["perf"]["series"][path[4]]["counter"]
    return counter in ("net.droppedRx.summation", "net.errorsRx.summation") and 0 < value < 2**64


@pytest.mark.parametrize("change, note", [
    (lambda s: s.update(instance="\u0664000"), "is not a vCPU number / device key in ASCII digits: series dropped"),
    (lambda s: s.update(instance="40\u00b2"), "is not a vCPU number / device key in ASCII digits: series dropped"),
    (lambda s: s.update(instance="99999999999999999999999"), "in ASCII digits: series dropped"),
    (lambda s: s.update(extra=1), "not a series record (counter, instance, unit, values): series dropped"),
    (lambda s: s.pop("unit"), "not a series record (counter, instance, unit, values): series dropped"),
])
def test_a_series_record_that_cannot_be_read_costs_that_series(change, note):
    data = fs.snapshot([fs.vm("odd", drops=10)])
    drops = next(s for s in data["vms"][0]["perf"]["series"] if s["counter"] == "net.droppedRx.summation"
                 and s["instance"] == "4000")
    change(drops)
    snapshot = snapshot_from_dict(data)
    assert [n for n in snapshot.vms[0].damage if note in n]
    assert all(s.instance != "4000" or s.counter != "net.droppedRx.summation" for s in snapshot.vms[0].perf.series)


def test_a_non_ascii_instance_that_is_not_a_number_is_kept():
    data = fs.snapshot([fs.vm("odd", drops=10)])
    data["vms"][0]["perf"]["series"][0]["instance"] = "vmnic\u00e9"
    snapshot = snapshot_from_dict(data)
    assert not snapshot.vms[0].damage and snapshot.vms[0].perf.series[0].instance == "vmnic\u00e9"


def test_a_series_given_twice_is_kept_once_when_the_same_and_dropped_when_not():
    data = fs.snapshot([fs.vm("same", drops=10), fs.vm("differs", drops=10)])
    for vm, bump in zip(data["vms"], (0, 1)):
        twin = copy.deepcopy(vm["perf"]["series"][0])
        twin["values"][0] += bump
        vm["perf"]["series"].append(twin)
    same, differs = snapshot_from_dict(data).vms
    assert not same.damage and len(same.perf.series) == len(data["vms"][0]["perf"]["series"]) - 1
    assert [n for n in differs.damage if "appears twice with different values: both dropped" in n]
    assert len(differs.perf.series) == len(data["vms"][1]["perf"]["series"]) - 2
