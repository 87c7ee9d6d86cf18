"""parse_vm / parse_perf on captures the collector wrote from the vcsim lab (see fixtures/README.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from esxdiag.errors import NoData, ParseError
from esxdiag.parsers import parse_file, to_jsonable
from esxdiag.parsers.vsphere import VmInventory, VmPerf, parse_perf, parse_vm

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _text(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_vm_record_mirrors_the_json_losslessly():
    text = _text("vsphere_vm_iperf-cpu-limited.json")
    vm = parse_vm(text)
    assert isinstance(vm, VmInventory)
    assert (vm.name, vm.num_cpu, vm.cpu_allocation.limit_mhz, vm.power_state) == ("iperf-cpu-limited", 1, 800, "poweredOn")
    (nic,) = vm.vnics
    assert (nic.type, nic.mac, nic.network, nic.dvs_uuid) == ("vmxnet3", "00:50:56:a6:55:f8", "VM Network", None)
    assert vm.guest_nics[0].device_config_id == nic.device_key
    assert vm.latency_sensitivity is None  # written before the field existed: optional
    assert (vm.hardware_version, vm.host_version) == (None, None)  # likewise
    assert to_jsonable(vm) == {**json.loads(text), "latency_sensitivity": None, "hardware_version": None,
                               "host_version": None, "resource_pools": None}
    high = parse_vm(json.dumps({**json.loads(text), "latency_sensitivity": "high"}))
    assert high.latency_sensitivity == "high"
    with pytest.raises(ParseError):
        parse_vm(json.dumps({**json.loads(text), "latency_sensitivity": 3}))


def test_windows_vm_through_the_registry():
    vm = parse_file("vsphere-vm", FIXTURES / "vsphere_vm_win2012r2-file01.json")
    assert vm.guest.family == "windowsGuest" and vm.num_cpu == 4
    assert vm.guest.ip_addresses == (vm.guest.ip_address,)


def test_perf_record_and_values_lookup():
    text = _text("vsphere_perf_iperf-test1.json")
    perf = parse_perf(text)
    assert isinstance(perf, VmPerf) and perf.rollup == "realtime" and perf.interval_s == 20
    ready = perf.values("cpu.ready.summation", "0")
    assert ready is not None and len(ready) == len(perf.timestamps)
    assert perf.values("cpu.ready.summation", "7") is None
    assert perf.values("net.droppedRx.summation", str(203)) is not None
    assert to_jsonable(perf) == json.loads(text)


def test_wrong_schema_tag_is_a_parse_error():
    with pytest.raises(ParseError, match="schema is 'esxdiag.vsphere_perf/1', expected 'esxdiag.vsphere_vm/1'"):
        parse_vm(_text("vsphere_perf_iperf-test1.json"))


def test_invalid_json_reports_the_line():
    with pytest.raises(ParseError) as err:
        parse_vm(_text("vsphere_vm_iperf-cpu-limited.json")[:200])
    assert err.value.line is not None and "not valid" in err.value.why and "JSON" in err.value.why


@pytest.mark.parametrize("path, value, why", [
    (("num_cpu",), "1", "num_cpu: expected int, got str"),
    (("num_cpu",), True, "num_cpu: expected int, got bool"),
    (("vnics", 0, "mac"), 5, r"vnics\[0\].mac: expected str"),
    (("cpu_allocation", "limit_mhz"), 8.5, "cpu_allocation.limit_mhz: expected int"),
    (("guest", "ip_addresses"), "127.0.0.1", "guest.ip_addresses: expected a list"),
])
def test_wrong_types_are_named(path, value, why):
    data = json.loads(_text("vsphere_vm_iperf-cpu-limited.json"))
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(ParseError, match=why):
        parse_vm(json.dumps(data))


def test_missing_and_unexpected_fields_are_named():
    data = json.loads(_text("vsphere_vm_iperf-cpu-limited.json"))
    del data["host"]
    data["colour"] = "blue"
    with pytest.raises(ParseError, match=r"missing fields \['host'\], unexpected fields \['colour'\]"):
        parse_vm(json.dumps(data))


def test_empty_series_is_no_data_and_short_series_is_an_error():
    data = json.loads(_text("vsphere_perf_iperf-test1.json"))
    data["series"][0]["values"].pop()
    with pytest.raises(ParseError, match="cpu.ready.summation"):
        parse_perf(json.dumps(data))
    data["series"] = []
    with pytest.raises(NoData, match="no perf series for iperf-test1"):
        parse_perf(json.dumps(data))
