"""The fleet API pass against vcsim: inventory, filters, paging, request counts, several vCenters
with one down. vcsim's perf values are random, so only their structure is checked here."""

from __future__ import annotations

import math
import socket
import threading
import time

import pytest

from esxdiag.collectors.fleet import Filters, ScanOptions, scan
from esxdiag.fleet.snapshot import snapshot_from_dict

pytestmark = pytest.mark.lab
FIXED_REQUESTS = 9  # RetrieveContent, CurrentTime, QueryOptions, places view (3), VM view create+destroy, perfCounter
EVENT_REQUESTS = 1  # one QueryEvents for the window's migrations, whatever the fleet's size


def names(data) -> set[str]:
    return {v["name"] for v in data["vms"]}


def read_whole(vm) -> bool:
    """Whether the scan had to read this VM's whole device list: its vNICs are not at 4000, 4001, ..."""
    n = vm["num_vnics"]
    return bool(n) and (n > 10 or [nic["device_key"] for nic in vm["vnics"]] != list(range(4000, 4000 + n)))


def expected_requests(data, page_size: int, user_metrics: int | None) -> int:
    """The request count the design promises, in one process: fixed + per inventory page (1 + one keyed
    vNIC read per distinct vNIC count + 1 if any VM needs its whole device list + ceil(powered-on VMs /
    realtime batch)) + ceil(hosts / realtime host batch) + 1 QueryEvents. A realtime batch is 256
    entities, fewer when --max-query-metrics (``user_metrics``) is given: that many metrics, 5 counters
    per VM, 3 per host; the server's maxQueryMetrics shapes historical batches only (vcsim has realtime
    samples for all). Pages are the VMs in order, as every VM of the views is selected."""
    def per_call(counters: int) -> int:
        return max(1, min(256, user_metrics // counters)) if user_metrics else 256

    vms = data["vms"]
    assert sum(map(read_whole, vms)) == data["vcenters"][0]["whole_device_lists"]
    total = FIXED_REQUESTS + (0 if vms else 1)
    for start in range(0, len(vms), page_size):
        page = vms[start:start + page_size]
        on = sum(v["power_state"] == "poweredOn" for v in page)
        total += (1 + len({v["num_vnics"] for v in page if 0 < v["num_vnics"] <= 10}) + any(map(read_whole, page))
                  + math.ceil(on / per_call(5)))
    host_batches = math.ceil(len(data["hosts"]) / per_call(3)) if data["hosts"] else 0
    return total + host_batches + EVENT_REQUESTS


def test_inventory_of_every_vm(fleet_lab, creds_for):
    data = scan([creds_for(fleet_lab)], ScanOptions())
    status = data["vcenters"][0]
    assert (status["status"], status["vms"], status["max_query_metrics"]) == ("scanned", 16, 64)
    assert "not set on the server" in status["max_query_metrics_source"]  # vcsim has no such option
    by_name = {v["name"]: v for v in data["vms"]}
    ring = by_name["ring-a"]
    assert (ring["host"], ring["cluster"], ring["datacenter"], ring["num_cpu"], ring["power_state"]) == (
        "DC0_C0_H0", "DC0_C0", "DC0", 2, "poweredOn")
    assert [(n["type"], n["connected"]) for n in ring["vnics"]] == [("vmxnet3", True)]
    assert by_name["limited"]["cpu_allocation"]["limit_mhz"] == 800
    assert by_name["limited"]["cpu_allocation"]["shares_level"] == "normal"  # set with the limit
    assert {v["guest"]["tools_status"] for v in data["vms"]} <= {"guestToolsRunning", "guestToolsNotRunning"}
    assert by_name["DC0_H0_VM0"]["cluster"] is None  # standalone host
    assert by_name["stopped"]["perf"] is None and by_name["stopped"]["perf_error"] == "powered off"
    perf = ring["perf"]
    assert (perf["interval_s"], perf["rollup"]) == (20, "realtime")
    assert {s["counter"] for s in perf["series"]} == {"cpu.ready.summation", "cpu.costop.summation",
                                                     "cpu.maxlimited.summation", "net.droppedRx.summation",
                                                     "net.packetsRx.summation"}
    assert all(len(s["values"]) == len(perf["timestamps"]) for s in perf["series"])
    assert {h["name"] for h in data["hosts"]} == {v["host"] for v in data["vms"] if v["power_state"] == "poweredOn"}
    snapshot_from_dict(data)  # the snapshot validates against its own schema


@pytest.mark.parametrize("filters, want", [
    (Filters(clusters=("DC0_C1",)), {"DC0_C1_RP0_VM0", "DC0_C1_RP0_VM1"}),
    (Filters(hosts=("DC0_H0",)), {"DC0_H0_VM0", "DC0_H0_VM1"}),
    (Filters(folders=("DC0/vm/prod",), names=("ring-*",)), {"ring-a", "ring-b"}),
    (Filters(datacenters=("DC0",), clusters=("DC0_C0",), names=("DC0_*",)), {"DC0_C0_RP0_VM0", "DC0_C0_RP0_VM1"}),
    (Filters(clusters=("DC0_C0", "DC0_C1"), names=("*VM1",)), {"DC0_C0_RP0_VM1", "DC0_C1_RP0_VM1"}),
])
def test_filters(fleet_lab, creds_for, filters, want):
    data = scan([creds_for(fleet_lab)], ScanOptions(filters=filters, with_hosts=False))
    assert names(data) == want
    assert data["filters"] == filters.describe()


def test_filter_naming_nothing_is_reported_not_fatal(fleet_lab, creds_for):
    data = scan([creds_for(fleet_lab)], ScanOptions(filters=Filters(clusters=("nope", "DC0_C1"))))
    status = data["vcenters"][0]
    assert status["status"] == "scanned" and status["unmatched_filters"] == ["--cluster nope"]
    assert names(data) == {"DC0_C1_RP0_VM0", "DC0_C1_RP0_VM1"}
    assert snapshot_from_dict(data).unmatched_everywhere() == ["--cluster nope"]


def test_paging_follows_continuation_tokens_and_counts_requests(fleet_lab, creds_for):
    whole = scan([creds_for(fleet_lab)], ScanOptions(workers=1))
    paged = scan([creds_for(fleet_lab)], ScanOptions(page_size=3, max_metrics=10, workers=1))
    assert names(paged) == names(whole) and len(whole["vms"]) == 16
    assert whole["vcenters"][0]["requests"] == expected_requests(whole, 1000, None)
    assert paged["vcenters"][0]["requests"] == expected_requests(paged, 3, 10)
    assert len(whole["hosts"]) <= 256  # one realtime host batch
    # vcsim's own VMs have their vNIC at 4000; `govc vm.create` numbers it from the 200s (key 203), so
    # the ten test VMs are read whole: both paths are in the count
    assert {v["num_vnics"] for v in whole["vms"]} == {1} and whole["vcenters"][0]["whole_device_lists"] == 10
    # spelled out for one page: 9 fixed + the page + keyed vNICs + whole device lists + 15 powered-on VMs
    # in one realtime QueryPerf + one host batch + one QueryEvents
    assert whole["vcenters"][0]["requests"] == 9 + 1 + 1 + 1 + 1 + 1 + 1


def _add_vmxnet3(lab, creds_for, vm_name: str, key: int) -> None:
    """Test set-up only (vcsim): a vmxnet3 vNIC with a chosen device key, which govc cannot give."""
    from pyVmomi import vim

    from esxdiag.collectors.vsphere_session import connect
    session = connect(creds_for(lab), timeout_s=30)
    try:
        content = session.content
        view = content.viewManager.CreateContainerView(content.rootFolder, [vim.VirtualMachine], True)
        vm = next(v for v in view.view if v.name == vm_name)
        nic = vim.vm.device.VirtualVmxnet3(key=key, backing=vim.vm.device.VirtualEthernetCard.NetworkBackingInfo(
            deviceName="VM Network"))
        change = vim.vm.device.VirtualDeviceSpec(operation="add", device=nic)
        task = vm.ReconfigVM_Task(spec=vim.vm.ConfigSpec(deviceChange=[change]))
        for _ in range(100):
            if task.info.state in ("success", "error"):
                break
            time.sleep(0.05)
        assert task.info.state == "success", task.info.error
    finally:
        session.close()


def test_vnics_off_the_usual_keys_are_read_from_the_whole_device_list(lab_module, creds_for, tmp_path):
    """Device keys are only documented to be unique. vcsim's own VMs have one e1000 at 4000; here VM0's
    only vNIC is at 4001, VM1 has 4000 and 4001 (the keyed path answers both), VM2 has 4000 and one at
    the key vcsim picks (205). Each VM's vNICs are checked against its vNIC count; two are read whole."""
    lab = lab_module.start_vcsim(tmp_path / "keys", ("-cluster", "1", "-host", "1", "-vm", "3",
                                                    "-standalone-host", "0"))
    try:
        lab.govc("device.remove", "-vm", "DC0_C0_RP0_VM0", "ethernet-0")
        _add_vmxnet3(lab, creds_for, "DC0_C0_RP0_VM0", 4001)
        _add_vmxnet3(lab, creds_for, "DC0_C0_RP0_VM1", 4001)
        lab.govc("vm.network.add", "-vm", "DC0_C0_RP0_VM2", "-net", "DC0_DVPG0", "-net.adapter", "vmxnet3")
        data = scan([creds_for(lab)], ScanOptions(with_hosts=False))
    finally:
        lab.stop()
    by_name = {v["name"]: [(n["device_key"], n["type"]) for n in v["vnics"]] for v in data["vms"]}
    assert by_name["DC0_C0_RP0_VM0"] == [(4001, "vmxnet3")]
    assert by_name["DC0_C0_RP0_VM1"] == [(4000, "e1000"), (4001, "vmxnet3")]
    assert by_name["DC0_C0_RP0_VM2"] == [(4000, "e1000"), (205, "vmxnet3")]
    assert data["vcenters"][0]["whole_device_lists"] == 2
    assert data["vcenters"][0]["requests"] == expected_requests(data, 1000, None)


@pytest.fixture
def silent_port():
    """A TCP port that accepts and never answers (a hung vCenter)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue
    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join(timeout=5)
    for conn in held:
        conn.close()
    server.close()


def test_several_vcenters_one_down_one_hung(fleet_lab, lab_module, creds_for, tmp_path, silent_port):
    second = lab_module.start_vcsim(tmp_path / "second", ("-cluster", "1", "-host", "1", "-vm", "3",
                                                          "-standalone-host", "0"))
    down = lab_module.start_vcsim(tmp_path / "down")
    down_creds = creds_for(down)
    down.stop()
    hung = creds_for(fleet_lab).__class__(f"https://127.0.0.1:{silent_port}/sdk", "u", "p", True)
    try:
        data = scan([creds_for(fleet_lab), down_creds, creds_for(second), hung], ScanOptions(timeout_s=3))
    finally:
        second.stop()
    status = {v["url"]: v for v in data["vcenters"]}
    assert [v["status"] for v in data["vcenters"]] == ["scanned", "failed", "scanned", "failed"]
    assert status[down_creds.url]["error_kind"] == "unreachable"
    assert status[hung.url]["error_kind"] == "timeout"
    assert {v["vcenter"] for v in data["vms"]} == {f"127.0.0.1:{fleet_lab.port}", f"127.0.0.1:{second.port}"}
    assert len(data["vms"]) == 16 + 3
    assert [v.name for v in snapshot_from_dict(data).failed] == [f"127.0.0.1:{down.port}", f"127.0.0.1:{silent_port}"]


@pytest.mark.parametrize("value, metrics, source", [
    ("20", 20, "config.vpxd.stats.maxQueryMetrics = 20 (server)"),  # historical batches only: 1 realtime call for 9
    ("-1", 1024, "config.vpxd.stats.maxQueryMetrics = -1 (no limit): capped at 1024"),
    ("many", 64, "config.vpxd.stats.maxQueryMetrics is not a number: default 64"),
])
def test_max_query_metrics_is_read_from_the_server(lab_module, creds_for, tmp_path, value, metrics, source):
    """The option set on the server (vcsim keeps what `govc option.set` gives it) is read and reported;
    it sizes historical batches, not the realtime ones (vcsim has realtime samples: one call for 9 VMs)."""
    lab = lab_module.start_vcsim(tmp_path / "option", ("-cluster", "1", "-host", "2", "-vm", "9",
                                                      "-standalone-host", "0"))
    try:
        lab.govc("option.set", "config.vpxd.stats.maxQueryMetrics", value)
        data = scan([creds_for(lab)], ScanOptions(workers=1))
    finally:
        lab.stop()
    status = data["vcenters"][0]
    assert (status["max_query_metrics"], status["max_query_metrics_source"]) == (metrics, source)
    assert status["requests"] == expected_requests(data, 1000, None)


def test_a_stopped_scan_ends_at_the_next_page_and_says_so(fleet_lab, creds_for):
    """Ctrl-C sets this event: the vCenter thread stops at its next inventory page, not after the last."""
    stop = threading.Event()
    data = scan([creds_for(fleet_lab)], ScanOptions(page_size=3, workers=1), progress=lambda done, total: stop.set(),
                stop=stop)
    status = data["vcenters"][0]
    assert (status["status"], status["error_kind"]) == ("failed", "interrupted")
    assert status["error"] == f"127.0.0.1:{fleet_lab.port}: scan interrupted after 3 VMs"
    whole = scan([creds_for(fleet_lab)], ScanOptions(page_size=3, workers=1))["vcenters"][0]["requests"]
    assert status["requests"] < whole / 2  # the first page and its share, not all six pages
