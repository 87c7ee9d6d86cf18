"""The watched inventory (collectors/fleet/watch.py) against vcsim: after each real change made between
two scans (power, a vNIC reconfigured, a VM added, removed, migrated), the scan that read only the
changes gives the snapshot a full read gives (a reconfigured CPU limit and name too: the changeVersion
re-read); a lost filter or login, the maximum age, or a place change moving the filtered containers
make it read whole, and still give that snapshot; every WaitForUpdatesEx answer decodes fast as
pyVmomi decodes it; worker processes work on a watched inventory. Faults: test_watch_faults.py."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import SimpleNamespace

import pytest
from pyVmomi import SoapAdapter, vmodl

from esxdiag.collectors import soap_stream
from esxdiag.collectors.fleet import ScanOptions, scan, updates
from esxdiag.collectors.fleet import watch as watch_module
from esxdiag.collectors.fleet.watch import Watches

pytestmark = pytest.mark.lab
# 1 cluster x 2 hosts, 2 VMs per host; plus the VMs below, a 2-vNIC one among them
FLAGS = ("-cluster", "1", "-host", "2", "-vm", "4", "-standalone-host", "1")
OPTIONS = ScanOptions(page_size=3, workers=1, max_metrics=10)
_spec = importlib.util.spec_from_file_location("watch_compare", Path(__file__).with_name("watch_compare.py"))
_compare = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_compare)
comparable = _compare.comparable


@pytest.fixture(scope="module")
def lab(lab_module, tmp_path_factory):
    lab = lab_module.start_vcsim(tmp_path_factory.mktemp("watch-vcsim"), FLAGS, timeout_s=120)
    try:
        lab.govc("vm.create", "-on=true", "-host", "DC0_C0_H0", "-net", "DC0_DVPG0", "-net.adapter", "vmxnet3",
                 "two-nics")
        lab.govc("vm.network.add", "-vm", "two-nics", "-net", "VM Network", "-net.adapter", "e1000")
        lab.govc("vm.create", "-on=false", "-host", "DC0_C0_H1", "-net", "VM Network", "-net.adapter", "e1000", "off")
    except BaseException:
        lab.stop()
        raise
    yield lab
    lab.stop()


@pytest.fixture
def watched(lab, creds_for):
    """scan() -> (snapshot, watch): scans with one kept watch, the first one read whole."""
    creds = creds_for(lab)
    watches = Watches()
    watch = watches.get(creds)

    def again(**options):
        return scan([creds], ScanOptions(**{**OPTIONS.__dict__, **options}), watches=watches), watch
    data, _ = again()
    assert data["vcenters"][0]["status"] == "scanned" and watch.how == "whole: first read"
    yield again
    watches.close()


def full(lab, creds_for, **options) -> dict:
    return scan([creds_for(lab)], ScanOptions(**{**OPTIONS.__dict__, **options}))


CHANGES = {
    "power-off": [("vm.power", "-off", "DC0_C0_RP0_VM0")],
    "power-on": [("vm.power", "-on", "off")],
    "vnic-disconnect": [("device.disconnect", "-vm", "two-nics", "ethernet-1")],
    "vnic-network": [("vm.network.change", "-vm", "DC0_C0_RP0_VM1", "-net", "VM Network", "ethernet-0")],
    "vnic-add": [("vm.network.add", "-vm", "DC0_C0_RP0_VM2", "-net", "VM Network", "-net.adapter", "vmxnet3")],
    "vm-create": [("vm.create", "-on=true", "-host", "DC0_C0_H1", "-net", "DC0_DVPG0", "created")],
    "vm-clone": [("vm.clone", "-vm", "two-nics", "-host", "DC0_C0_H1", "-on=true", "cloned")],
    "vm-destroy": [("vm.destroy", "DC0_C0_RP0_VM3")],
    "cpu-limit-and-name": [("vm.change", "-vm", "cloned", "-cpu.limit", "700", "-cpu.reservation", "0",
                            "-cpu.shares", "normal", "-name", "cloned-limited")],
    "migrate": [("vm.migrate", "-host", "DC0_C0_H1", "two-nics")],
    "migrate-to-standalone": [("vm.migrate", "-host", "DC0_H0", "-pool", "/DC0/host/DC0_H0/Resources",
                               "DC0_C0_RP0_VM1")],
}


@pytest.mark.parametrize("change", list(CHANGES))
def test_after_a_change_the_changes_give_the_snapshot_a_full_read_gives(lab, creds_for, watched, change):
    before, _ = watched()
    for command in CHANGES[change]:
        lab.govc(*command)
    after, watch = watched()
    assert watch.how == "changes"
    assert comparable(after) == comparable(full(lab, creds_for))
    assert comparable(after) != comparable(before)  # the change is in the snapshot


def test_with_nic_types_drops_and_a_place_filter_too(lab, creds_for, watched):
    options = {"nic_types": "drops", "filters": OPTIONS.filters.__class__(hosts=("DC0_C0_H1",))}
    watched(**options)
    lab.govc("vm.network.change", "-vm", "off", "-net", "DC0_DVPG0", "ethernet-0")
    after, watch = watched(**options)
    assert watch.how == "changes"
    assert comparable(after) == comparable(full(lab, creds_for, **options))
    assert "off" in [vm["name"] for vm in after["vms"]] and {vm["host"] for vm in after["vms"]} == {"DC0_C0_H1"}


def test_a_lost_filter_is_read_whole(lab, creds_for, watched):
    _, watch = watched()
    watch.collector.DestroyPropertyCollector()  # its filter goes with it
    lab.govc("vm.power", "-off", "two-nics")
    after, watch = watched()
    assert watch.how.startswith("whole: reading the changes failed") and "no longer exists" in watch.how
    assert comparable(after) == comparable(full(lab, creds_for))
    lab.govc("vm.power", "-on", "two-nics")


def test_a_lost_login_logs_in_again_and_reads_whole(lab, creds_for, watched):
    _, watch = watched()
    lost = watch.session
    lost.content.sessionManager.Logout()
    after, watch = watched()
    assert after["vcenters"][0]["status"] == "scanned" and watch.session is not lost
    assert watch.how.startswith("whole: reading the changes failed") and "NotAuthenticated" in watch.how
    assert comparable(after) == comparable(full(lab, creds_for))


def test_the_maximum_age_reads_whole(lab, creds_for):
    now = [0.0]
    watches = Watches(max_age_s=600, clock=lambda: now[0])
    creds = creds_for(lab)
    watch = watches.get(creds)
    try:
        for step, how in ((0, "whole: first read"), (599, "changes"), (1, "whole: older than 600 s"), (1, "changes")):
            now[0] += step
            data = scan([creds], OPTIONS, watches=watches)
            assert watch.how == how
        assert comparable(data) == comparable(full(lab, creds_for))
    finally:
        watches.close()


def test_every_update_answer_is_decoded_fast_and_as_pyvmomi_decodes_it(lab, creds_for, monkeypatch):
    """Like test_fastdecode_vcsim: each WaitForUpdatesEx answer of a whole read and of changes (enter,
    modify, leave), the fast decoder's values equal pyVmomi's decoding of the same bytes."""
    seen, refused = [], []
    real = updates.decode_updates

    def spy(body, version, ours):
        try:
            value = real(body, version, ours)
        except soap_stream.NotDecoded as exc:
            refused.append(str(exc))
            raise
        seen.append((body, version, ours, value))
        return value

    monkeypatch.setattr(watch_module, "decode_updates", spy)
    creds = creds_for(lab)
    watches = Watches()
    try:
        scan([creds], OPTIONS, watches=watches)
        for command in (("vm.power", "-off", "two-nics"), ("vm.power", "-on", "two-nics"),
                        ("vm.create", "-on=false", "-host", "DC0_C0_H0", "-net", "DC0_DVPG0", "decoded"),
                        ("vm.destroy", "decoded")):
            lab.govc(*command)
            scan([creds], OPTIONS, watches=watches)
    finally:
        watches.close()
    assert refused == []
    kinds = {change.kind for *_rest, value in seen if value is not None for change in value.objects}
    assert kinds == {"enter", "modify", "leave"}
    assert any(value is not None and value.truncated for *_rest, value in seen)  # pages of the whole read
    result_type = vmodl.query.PropertyCollector._GetMethodInfo("WaitForUpdatesEx").result
    for body, version, ours, value in seen:
        stub = SimpleNamespace(version=version, SupportServerGUIDs=lambda: False)
        decoded = SoapAdapter.SoapResponseDeserializer.__mro__[1](stub).Deserialize(body, result_type)
        assert value == updates.plain_updates(decoded, ours)


def test_worker_processes_read_the_perf_of_a_watched_inventory(lab, creds_for):
    creds = creds_for(lab)
    watches = Watches()
    try:
        scan([creds], ScanOptions(**{**OPTIONS.__dict__, "workers": 2}), watches=watches)
        lab.govc("vm.power", "-off", "DC0_C0_RP0_VM2")
        after = scan([creds], ScanOptions(**{**OPTIONS.__dict__, "workers": 2}), watches=watches)
        assert watches.get(creds).how == "changes" and after["vcenters"][0]["workers"] == 2
        assert comparable(after) == comparable(full(lab, creds_for, workers=2))
    finally:
        watches.close()
        lab.govc("vm.power", "-on", "DC0_C0_RP0_VM2")


def test_a_place_change_that_moves_the_filtered_containers_reads_whole(lab, creds_for):
    creds = creds_for(lab)
    options = {"filters": OPTIONS.filters.__class__(clusters=("late",))}
    watches = Watches()
    try:
        before = scan([creds], ScanOptions(**{**OPTIONS.__dict__, **options}), watches=watches)
        assert before["vcenters"][0]["unmatched_filters"] == ["--cluster late"]
        lab.govc("cluster.create", "-dc", "DC0", "late")
        after = scan([creds], ScanOptions(**{**OPTIONS.__dict__, **options}), watches=watches)
        assert watches.get(creds).how == "whole: the containers the filters name changed"
        assert after["vcenters"][0]["unmatched_filters"] == []
        assert comparable(after) == comparable(full(lab, creds_for, **options))
    finally:
        watches.close()
