"""The host sampler's vCenter captures against vcsim, without SSH (the vCenter-only path reads the
last --window seconds): each VM's migration events beside its perf counters, each host's uplink
counters once, and a server that refuses QueryEvents costing only that capture."""

from __future__ import annotations

import io
import json

import pytest

from esxdiag.bundle import Bundle, BundleWriter
from esxdiag.collectors.sampler import HostSampler, SampledVm, SamplerOptions
from esxdiag.collectors.terminal import Progress
from esxdiag.collectors.vsphere import find_vm
from esxdiag.parsers.vsphere import parse_events, parse_host_perf, parse_perf

pytestmark = pytest.mark.lab

VMS = ("DC0_C0_RP0_VM0", "DC0_C0_RP0_VM1")  # the two_hosts fixture's
OPTIONS = SamplerOptions(window_s=60, no_host_ssh=True, no_guest=True, vcenter_timeout_s=30)


def _sample(lab, creds, root, vms) -> tuple[HostSampler, Bundle, str]:
    writer = BundleWriter(root, OPTIONS.window_s, list(vms))
    out = io.StringIO()
    sampler = HostSampler(OPTIONS, writer, Progress(out), [SampledVm(vm, vm) for vm in vms])
    try:
        sampler.run(creds)
    finally:
        sampler.close()
    return sampler, Bundle.load(root), out.getvalue()


def _one(bundle: Bundle, spec: str, **params: str):
    (capture,) = bundle.find(spec, "vcenter", **params)
    assert capture.ok, capture
    return capture


def test_each_vm_has_its_migrations_and_their_host_its_uplink_counters_once(two_hosts, lab_creds, tmp_path):
    lab, session = two_hosts
    origins = {vm: find_vm(session, vm).host_name for vm in VMS}
    target = "DC0_C0_H1" if origins[VMS[0]] == "DC0_C0_H0" else "DC0_C0_H0"
    lab.govc("vm.migrate", "-host", target, *VMS)  # both VMs end on one host, inside the window read
    sampler, bundle, said = _sample(lab, lab_creds(lab, insecure=True), tmp_path / "bundle", VMS)
    assert sampler.fatal is None and not bundle.manifest.get("failed"), said
    assert "migration events and host uplink counters" in said
    for vm in VMS:
        assert parse_perf(_one(bundle, "vsphere_perf", vm=vm).path.read_text()).vm == vm
        events = _one(bundle, "vsphere_events", vm=vm)
        assert events.command == "EventManager.QueryEvents"
        record = parse_events(events.path.read_text())
        assert record.vm == vm
        assert [(e.type, e.source_host) for e in record.events] == [("VmMigratedEvent", origins[vm])]
    (uplinks,) = list(bundle.find("vsphere_host_perf"))  # one host, however many of its VMs were sampled
    assert uplinks.ok and uplinks.params == {"host": target} and uplinks.command == "PerformanceManager.QueryPerf"
    perf = parse_host_perf(uplinks.path.read_text())
    assert perf.host == target and {s.counter for s in perf.series} == {"net.droppedRx.summation",
                                                                         "net.errorsRx.summation"}
    window = json.loads(_one(bundle, "vsphere_perf", vm=VMS[0]).path.read_text())
    assert (perf.start, perf.end) == (window["start"], window["end"])  # the same window as the VM's counters


def test_a_server_that_refuses_query_events_costs_only_the_events(lab_module, lab_creds, tmp_path):
    """vcsim as a standalone ESXi answers QueryEvents with NotImplemented."""
    lab = lab_module.start_vcsim(tmp_path / "esx", ("-esx",))
    try:
        sampler, bundle, said = _sample(lab, lab_creds(lab, insecure=True), tmp_path / "bundle", ["ha-host_VM0"])
    finally:
        lab.stop()
    assert sampler.fatal is None and not bundle.manifest.get("failed"), said
    (events,) = list(bundle.find("vsphere_events", "vcenter", vm="ha-host_VM0"))
    assert events.error_kind == "error" and "NotImplemented" in events.error, events
    assert "vsphere_events: " in said and "NotImplemented" in said  # said once, like any failed capture
    assert _one(bundle, "vsphere_perf", vm="ha-host_VM0")
    assert parse_host_perf(next(bundle.find("vsphere_host_perf")).path.read_text()).series
