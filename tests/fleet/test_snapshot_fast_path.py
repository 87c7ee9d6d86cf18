"""A whole VM record is read once (esxdiag.fleet.snapshot._read_vm: its fields checked, its perf read
apart, the record built from the checked values): it must give exactly what the general path gives
(_read_vm_leniently: field by field, then the perf salvaged, then the record replaced), on whole
records and on damaged ones, notes included."""

from __future__ import annotations

import copy
import dataclasses
import importlib.util
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from esxdiag.errors import ParseError
from esxdiag.fleet.salvage import salvage_perf
from esxdiag.fleet.snapshot import FleetVm, _read_vm, _read_vm_leniently
from esxdiag.parsers.vsphere import PerfSeries, VmPerf, build_record, record_values

_spec = importlib.util.spec_from_file_location("fleet_snapshots", Path(__file__).with_name("fleet_snapshots.py"))
fs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fs)

VMS = [fs.vm("ring", drops=100), fs.vm("busy", vcpus=2, ready=[2400, 1000]),
       fs.vm("capped", ready=3100, limited=3000, limit=800, drops=50), fs.vm("old", nics=("e1000", "vmxnet3")),
       {**fs.vm("moved"), "migrations": [{"type": "VmMigratedEvent", "time": fs.STAMPS[3], "host": "esx2",
                                          "source_host": "esx1", "message": None}]}]


def _paths(node, path=()):
    """Every key and item of a record, and each series' samples."""
    yield path
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, path + (key,))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _paths(value, path + (i,))


PATHS = [(i, p) for i, vm in enumerate(VMS) for p in _paths(vm) if p]
REPLACEMENTS = st.sampled_from([-5, -1, 0, 1.5, float("nan"), "x", "", "\u0664", None, True, 2**64, 2**70, [], {},
                                [{}], {"a": 1}, "DELETE", "ADD"])


def same_read(raw, i: int) -> FleetVm:
    fast, general = _read_vm(copy.deepcopy(raw), i), _read_vm_leniently(copy.deepcopy(raw), i)
    assert fast == general
    assert fast.damage == general.damage  # the notes, in their order
    assert repr(fast) == repr(general)  # the same types all the way down (3 is not 3.0)
    return fast


@pytest.mark.parametrize("i", range(len(VMS)))
def test_a_whole_record_reads_the_same_on_both_paths_without_a_note(i):
    vm = same_read(VMS[i], i)
    assert vm.damage == () and vm.perf is not None and vm.perf_error is None


@settings(max_examples=600, derandomize=True, deadline=None)
@given(st.sampled_from(PATHS), REPLACEMENTS)
def test_a_damaged_record_reads_the_same_on_both_paths(where, value):
    i, path = where
    same_read(fs.mutated(VMS[i], path, value), i)


@pytest.mark.parametrize("raw", [None, 7, "vm", [], [1, 2], {}, {"name": "x"}, {**fs.vm("x"), "perf": None},
                                 {k: v for k, v in fs.vm("x").items() if k != "perf"},
                                 {**fs.vm("x"), "damage": ["from the file"]}, {**fs.vm("x"), "damage": 5}])
def test_odd_records_read_the_same_on_both_paths(raw):
    same_read(raw, 3)


def test_a_vm_without_a_name_of_its_own_is_named_by_its_place():
    raw = fs.vm("x")
    raw["name"] = ""
    raw["perf"]["series"][0]["values"][0] = -7
    vm = same_read(raw, 4)
    assert any(n.startswith("vms[4]: ") and "-7" in n for n in vm.damage)


PERF = VMS[1]["perf"]
PERF_PATHS = [p for p in _paths(PERF) if p and p[0] != "series"]


@settings(max_examples=300, derandomize=True, deadline=None)
@given(st.sampled_from(PERF_PATHS), REPLACEMENTS)
def test_a_record_read_with_a_field_apart_is_the_record_without_it(path, value):
    """record_values(cls, data, where, {field}) reads what build_record reads with that field in place."""
    raw = fs.mutated(PERF, path, value)
    try:
        expected = dataclasses.asdict(build_record(VmPerf, {**raw, "series": []}, "perf"))
        del expected["series"]
    except ParseError as exc:
        expected = str(exc)
    try:
        got = record_values(VmPerf, raw, "perf", frozenset({"series"}))
        got = {k: list(v) if isinstance(v, tuple) else v for k, v in got.items()}
        expected = {k: list(v) if isinstance(v, tuple) else v for k, v in expected.items()} \
            if isinstance(expected, dict) else expected
    except ParseError as exc:
        got = str(exc)
    assert got == expected


def test_salvage_gives_the_typed_record_the_constructors_give():
    notes: list[str] = []
    perf, why = salvage_perf(copy.deepcopy(PERF), "busy", 2, notes)
    assert why is None and notes == []
    assert perf == VmPerf(**{**{k: tuple(v) if isinstance(v, list) else v for k, v in PERF.items()},
                             "series": tuple(PerfSeries(s["counter"], s["instance"], s["unit"], tuple(s["values"]))
                                             for s in PERF["series"])})


NESTED = [(), ("a", "b"), ("a", 1), ("a", ("b",)), None, {}, {"4000": 3, "4001": 2.5}, {"x": True}, {"x": (1, 2)},
          {"x": {"y": 1}}, ({"host": "esx1", "at": ("t",)},), [1, 2]]


@pytest.mark.parametrize("value", NESTED, ids=repr)
def test_a_report_row_writes_nested_fields_as_the_general_conversion_does(value):
    """FleetRow.as_dict keeps texts and numbers as they are without esxdiag.fleet.model._json: the same JSON."""
    from esxdiag.config import load_thresholds
    from esxdiag.fleet.analysis import build_report
    from esxdiag.fleet.model import NESTED_FIELDS, _json
    from esxdiag.fleet.snapshot import snapshot_from_dict

    (row,) = build_report(snapshot_from_dict(fs.snapshot([fs.vm("a")])), load_thresholds()).rows
    for key in NESTED_FIELDS:
        odd = dataclasses.replace(row, **{key: value})
        got, expected = odd.as_dict()[key], _json(value)
        assert got == expected and repr(got) == repr(expected)
        assert got is not value or value is None


SAMPLE = st.one_of(st.integers(min_value=-3, max_value=30_000), st.sampled_from([2**64 - 1, 2**64, -1, None, True,
                                                                                  1.0, "7"]))
SERIES = st.fixed_dictionaries({
    "counter": st.sampled_from(["cpu.ready.summation", "cpu.costop.summation", "net.droppedRx.summation", 7]),
    "instance": st.sampled_from(["", "0", "1", "4000", "vmnic0", "\u0664", "40\u00b2", "99999999999999999999999",
                                 "vmnic\u00e9", None]),
    "unit": st.sampled_from(["millisecond", "number", None]),
    "values": st.one_of(st.lists(st.integers(min_value=0, max_value=30_000), min_size=3, max_size=3),
                        st.lists(SAMPLE, min_size=3, max_size=3), st.lists(SAMPLE, max_size=4))})


@settings(max_examples=600, derandomize=True, deadline=None)
@given(st.one_of(SERIES, SERIES.map(lambda s: {**s, "extra": 1}), st.just([])), st.sampled_from([None, 1, 2]))
def test_a_whole_series_reads_as_the_general_path_reads_it_without_a_note(raw, num_cpu):
    """salvage._whole_series takes a series only when _read_series would take it as it is, with no note."""
    from esxdiag.fleet.salvage import _read_series, _whole_series

    notes: list[str] = []
    general = _read_series(raw, 0, "vm", ("t1", "t2", "t3"), 20, num_cpu, notes)
    fast = _whole_series(raw, 3, 20, num_cpu)
    if fast is not None:
        assert fast == general and repr(fast) == repr(general) and notes == []
    else:  # what the fast path leaves is damaged, has a gap (-1, null), or a non-ASCII instance
        assert notes or None in general.values or not raw["instance"].isascii()


def test_a_whole_series_takes_the_fast_path():
    from esxdiag.fleet.salvage import _whole_series

    raw = {"counter": "cpu.ready.summation", "instance": "1", "unit": "millisecond", "values": [0, 20_000, 7]}
    assert _whole_series(raw, 3, 20, 2).values == (0, 20_000, 7)
    assert _whole_series({**raw, "values": [0, 20_001, 7]}, 3, 20, 2) is None  # longer than the sample: a note
