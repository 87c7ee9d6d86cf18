"""Issue 22, every drop explained: a frame can be lost on the physical uplink (vmnic) before the
vSwitch, where no vNIC ring can help. The per-VM live path (`esxdiag collect/report/rings --vm`)
reads, once before sample 0, `esxcli network vm list` (world IDs by VM name) and `esxcli network vm
port list -w WORLD` (each vNIC port's Team Uplink), then `esxcli network nic stats get -n vmnicN` of
each team uplink at both ends of the window, beside the vsish samples.

Scenarios (tests/lab/scenarios.json): iperf-uplink-loss runs alone on the second host esx1.lab.local
(127.0.0.3) and rides its vmnic1, whose "Receive missed errors" rise 307/s while its vNIC counters stay
flat; iperf-v7-jumbo (on esx0.lab.local, 127.0.0.2) is a vmxnet3 device version 7 (vmx-20 on the ESXi
8.0.2 host) that asked for rx 4032 at MTU 9000 and runs ring 1 at 2048. Each run's --host-ssh is its
VM's host. Expected figures are read from scenarios.json, not from the emulator's code.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from esxdiag.parsers.esxcli import parse_nic_stats, parse_vm_list, parse_vm_ports
from esxdiag.parsers.ethtool import parse_rings
from esxdiag.parsers.vsish import parse_rxqueue_status

pytestmark = pytest.mark.lab

SCENARIOS = json.loads((Path(__file__).resolve().parents[1] / "lab" / "scenarios.json").read_text())
VMS = {vm["name"]: vm for vm in SCENARIOS["vms"]}
LOSS, V7 = VMS["iperf-uplink-loss"], VMS["iperf-v7-jumbo"]
HOSTS = {h["name"]: h for h in SCENARIOS["hosts"]}
LOSS_HOST = HOSTS[LOSS["host"]]  # esx1.lab.local
UPLINKS = {u["client"]: u for u in LOSS_HOST["uplinks"]}
MISSED = "Receive missed errors"


def esxcli_captures(run) -> list[tuple[str, dict, int | None]]:
    return [(c.spec, c.params, c.sample) for c in run.bundle_loaded().captures if c.spec.startswith("esxcli_")]


def seconds(a: str, b: str) -> float:
    return (datetime.fromisoformat(b.replace("Z", "+00:00")) - datetime.fromisoformat(a.replace("Z", "+00:00"))
            ).total_seconds()


@pytest.fixture(scope="module")
def collected(make_esxdiag, sshd, tmp_path_factory):
    """`esxdiag collect` for both scenario VMs at once, and the commands the lab received meanwhile."""
    sshd.clear_faults()
    runner = make_esxdiag(tmp_path_factory.mktemp("uplinks-home"), tmp_path_factory.mktemp("uplinks"))
    before = len(sshd.commands())
    loss, v7 = runner.run_many([("collect", LOSS["name"], ()), ("collect", V7["name"], ())])
    return {LOSS["name"]: loss, V7["name"]: v7, "sent": sshd.commands()[before:]}


def test_collect_reads_the_team_uplink_once_and_its_counters_at_both_ends(collected):
    run = collected[LOSS["name"]]
    assert run.returncode == 0, run.explain()
    (nic,) = LOSS["nics"]
    world = str(LOSS["world_id"])
    assert esxcli_captures(run) == [("esxcli_vm_list", {}, None), ("esxcli_vm_ports", {"world": world}, None),
                                    ("esxcli_nic_stats", {"vmnic": nic["uplink"]}, 0),
                                    ("esxcli_nic_stats", {"vmnic": nic["uplink"]}, 1)], run.explain()
    bundle = run.bundle_loaded()
    captures = bundle.captures
    for spec in ("esxcli_vm_list", "esxcli_vm_ports", "esxcli_nic_stats"):
        for capture in bundle.find(spec):
            assert capture.ok and capture.path.stat().st_size > 0, capture
            assert bundle.target(capture.target).kind == "esxi", capture
    listing = parse_vm_list(next(bundle.find("esxcli_vm_list")).path.read_text())
    assert [vm.world_id for vm in listing.vms if vm.name == LOSS["name"]] == [LOSS["world_id"]]
    (port,) = parse_vm_ports(next(bundle.find("esxcli_vm_ports")).path.read_text()).ports
    assert (port.mac, port.team_uplink, port.port_id) == (nic["mac"], "vmnic1", nic["port"])
    # the port list is read before sample 0; the uplink is sampled with the ports, around the window
    order = [c.spec for c in captures]
    assert order.index("esxcli_vm_ports") < order.index("vsish_rxsummary")
    start, end = sorted(bundle.find("esxcli_nic_stats"), key=lambda c: c.sample)
    (esxtop,) = bundle.find("esxtop_batch")
    assert start.time <= esxtop.time <= end.time
    assert [c.sample for c in bundle.find("vsish_rxsummary")] == [0, 1]


def test_the_two_vmnic1_readings_differ_by_the_scenario_rate_times_the_window(collected):
    run = collected[LOSS["name"]]
    bundle = run.bundle_loaded()
    start, end = sorted(bundle.find("esxcli_nic_stats", vmnic="vmnic1"), key=lambda c: c.sample)
    first, last = (parse_nic_stats(c.path.read_text()) for c in (start, end))
    assert first.name == last.name == "vmnic1"
    rate = UPLINKS["vmnic1"]["rates_per_s"][MISSED]  # 307/s
    gained = last.counters[MISSED] - first.counters[MISSED]
    # each reading is taken between its command's start and end: the window lies within these bounds
    shortest, longest = seconds(start.ended, end.started), seconds(start.started, end.ended)
    assert shortest >= bundle.window_s  # --window 3: esxtop ran between the two readings
    assert rate * shortest - 1 <= gained <= rate * longest + 1, (gained, shortest, longest)
    assert gained >= rate * 3 * 0.9
    # the loss is the uplink's alone: the port's own counters stayed flat over the same window
    for spec in ("vsish_rxsummary", "vsish_clientstats"):
        a, b = (c.path.read_text() for c in sorted(bundle.find(spec), key=lambda c: c.sample))
        dropped = "running out of buffers" if spec == "vsish_rxsummary" else "droppedRx"
        values = [int(line.split(":")[1]) for text in (a, b) for line in text.splitlines()
                  if line.strip().startswith(dropped + ":")]
        assert len(values) == 2 and values[0] == values[1], (spec, values)


def test_only_the_vms_own_uplink_is_read(collected):
    """iperf-v7-jumbo rides vmnic0: its bundle reads vmnic0 only, the other VM's vmnic1 only."""
    for name, vm in ((LOSS["name"], LOSS), (V7["name"], V7)):
        run = collected[name]
        assert run.returncode == 0, run.explain()
        read = {c.params["vmnic"] for c in run.bundle_loaded().find("esxcli_nic_stats")}
        assert read == {nic["uplink"] for nic in vm["nics"]}, name


def test_each_vms_host_receives_one_vm_list_one_port_list_and_two_nic_stats(collected, sshd):
    """Each run asks its own VM's host only: esx1 (127.0.0.3) for iperf-uplink-loss, esx0 for iperf-v7-jumbo."""
    assert sshd.host_address_of(LOSS["name"]) != sshd.host_address_of(V7["name"])
    for vm in (LOSS, V7):
        address = sshd.host_address_of(vm["name"])
        esxcli = [e for e in collected["sent"] if e["command"].startswith("esxcli ") and e["address"] == address]
        assert all(e["accepted"] and e["host"] == vm["host"] for e in esxcli), esxcli
        assert sorted(e["command"] for e in esxcli) == sorted(
            ["esxcli network vm list", f"esxcli network vm port list -w {vm['world_id']}"]
            + [f"esxcli network nic stats get -n {vm['nics'][0]['uplink']}"] * 2), vm["name"]


def test_v7_device_ring_is_2048_on_the_host_and_in_the_guest(collected):
    run = collected[V7["name"]]
    assert run.returncode == 0, run.explain()
    bundle = run.bundle_loaded()
    (nic,) = V7["nics"]
    statuses = [parse_rxqueue_status(c.path.read_text()) for c in bundle.find("vsish_rxqueue_status")]
    assert len(statuses) == nic["rx_queues"] and {s.ring1_size for s in statuses} == {2048}
    (rings,) = bundle.find("ethtool_rings", iface=nic["iface"])
    parsed = parse_rings(rings.path.read_text())
    assert parsed.current.rx == 2048 and parsed.max.rx == 4096
    (persisted,) = bundle.find("ring_persistence")
    assert f"ethtool -G {nic['iface']} rx {nic['ring1_requested']}" in persisted.path.read_text()  # asked 4032
    (version,) = bundle.find("esxi_version")
    assert version.path.read_text().startswith("VMware ESXi 8.0.2 ")


def test_v7_vm_hardware_version_in_the_vcenter_capture(collected):
    run = collected[V7["name"]]
    (capture,) = run.bundle_loaded().find("vsphere_vm")
    record = json.loads(capture.path.read_text())
    assert record["hardware_version"] == V7["hardware_version"] == "vmx-20"
    assert record["host_version"] == "8.0.2"  # what vcsim reports and the emulated host prints


@pytest.fixture(scope="module")
def rings_json(make_esxdiag, sshd, tmp_path_factory):
    """`esxdiag rings --format json` for both VMs at once: the report documents."""
    sshd.clear_faults()
    runner = make_esxdiag(tmp_path_factory.mktemp("uplinks-rings-home"), tmp_path_factory.mktemp("uplinks-rings"))
    out = {vm: runner.workdir / f"{vm}.json" for vm in (LOSS["name"], V7["name"])}
    runs = runner.run_many([("rings", vm, ("--format", "json", "-o", str(path))) for vm, path in out.items()])
    for run in runs:
        assert run.returncode == 0, run.explain()
    return {vm: json.loads(path.read_text())["vms"][0] for vm, path in out.items()}


def test_rings_json_uplink_loss_is_drops_elsewhere_with_an_uplink_loss_finding(rings_json):
    report = rings_json[LOSS["name"]]
    assert [v["ring_verdict"] for v in report["vnics"]] == ["drops-elsewhere"]
    assert "uplink-loss" in [f["rule"] for f in report["findings"]]


def test_rings_json_v7_jumbo_raises_ring1_to_4096(rings_json):
    report = rings_json[V7["name"]]
    (vnic,) = report["vnics"]
    assert vnic["ring_verdict"] == "raise-ring1"
    linux = [r for r in vnic["verdict"]["remediation"] if r["os"] == "linux"]
    assert linux and linux[0]["commands"][0] == f"ethtool -G {V7['nics'][0]['iface']} rx 4096"


def test_a_host_without_esxcli_is_said_once_and_the_rest_is_still_sampled(esxdiag, ssh_lab):
    ssh_lab.set_fault("missing", ssh_lab.host_address_of(LOSS["name"]), "esxcli")
    before = len(ssh_lab.commands())
    run = esxdiag.run("collect", LOSS["name"])
    assert run.returncode == 0, run.explain()
    (listing,) = run.captures("esxcli_vm_list", target_kind="esxi")
    assert (listing.error_kind, listing.rc) == ("not-found", 127) and "sh: esxcli: not found" in listing.error
    assert run.captures("esxcli_vm_ports") == [] and run.captures("esxcli_nic_stats") == []
    sent = [e["command"] for e in ssh_lab.commands()[before:] if e["command"].startswith("esxcli")]
    assert sent == ["esxcli network vm list"]  # tried once, nothing more sent
    lines = run.stderr.splitlines()
    (said,) = [i for i, line in enumerate(lines) if "esxcli not found on" in line]
    assert "no physical uplink (vmnic) counters" in lines[said], run.explain()
    assert said < next(i for i, line in enumerate(lines) if "(window start)" in line)
    assert any("esxcli not found on" in n for n in run.bundle_loaded().manifest["notes"])
    for sample in (0, 1):
        (rx,) = run.captures("vsish_rxsummary", sample, "esxi")
        assert rx.ok, rx


def test_a_failing_uplink_read_is_recorded_at_both_ends_and_never_stops_the_run(esxdiag, ssh_lab):
    command = f"esxcli network nic stats get -n {LOSS['nics'][0]['uplink']}"
    ssh_lab.set_fault("missing", ssh_lab.host_address_of(LOSS["name"]), "esxcli", command=command)
    run = esxdiag.run("collect", LOSS["name"])
    assert run.returncode == 0, run.explain()
    assert [c.ok for c in run.captures("esxcli_vm_ports")] == [True]
    stats = sorted(run.captures("esxcli_nic_stats"), key=lambda c: c.sample)
    assert [(c.sample, c.error_kind, c.command) for c in stats] == [(0, "not-found", command), (1, "not-found", command)]
    assert run.lines_naming("esxcli_nic_stats", "not found"), run.explain()
    assert all(c.ok for c in run.captures("vsish_clientstats")) and len(run.captures("vsish_clientstats")) == 2
    assert run.captures("ethtool_stats", 1, "linux")[0].ok


def test_a_connection_lost_in_the_uplink_lookup_is_named_once_and_fails_the_run(esxdiag, ssh_lab):
    address = ssh_lab.host_address_of(LOSS["name"])
    ssh_lab.set_fault("drop", address, "esxcli", command="esxcli network vm list")
    before = len(ssh_lab.commands())
    run = esxdiag.run("collect", LOSS["name"])
    assert run.returncode == 3, run.explain()  # a lost connection: the run failed, as anywhere else
    (listing,) = run.captures("esxcli_vm_list")
    assert listing.error_kind == "connection-lost", listing
    host = [e["command"] for e in ssh_lab.commands()[before:] if e["address"] == address]
    assert host[-1] == "esxcli network vm list"  # nothing sent after the connection died
    assert run.captures("esxcli_vm_ports") == [] and run.captures("vsish_rxsummary") == []
    notes = [n for n in run.bundle_loaded().manifest["notes"] if "connection lost;" in n]
    assert len(notes) == 1, notes
    assert run.captures("ethtool_stats", 1, "linux")[0].ok  # the guest is still sampled at both ends


def test_no_uplink_lookup_is_tried_on_a_connection_already_lost(esxdiag, ssh_lab):
    ssh_lab.set_fault("drop", ssh_lab.host_address_of(LOSS["name"]), "net-stats")
    run = esxdiag.run("collect", LOSS["name"])
    assert run.returncode == 3, run.explain()
    (listing,) = run.captures("net_stats_list")
    assert listing.error_kind == "connection-lost", listing
    assert run.captures("esxcli_vm_list") == []  # never tried, not recorded as one more failure
    notes = [n for n in run.bundle_loaded().manifest["notes"] if "connection lost;" in n]
    assert len(notes) == 1 and "team uplinks" in notes[0], notes


@pytest.fixture(scope="module")
def loss_report(make_esxdiag, sshd, tmp_path_factory):
    """`esxdiag report --vm iperf-uplink-loss --format json` with --host-ssh at esx1.lab.local (127.0.0.3)."""
    sshd.clear_faults()
    runner = make_esxdiag(tmp_path_factory.mktemp("uplink-report-home"), tmp_path_factory.mktemp("uplink-report"))
    out = runner.workdir / "report.json"
    run = runner.run("report", LOSS["name"], "--format", "json", "-o", str(out))
    assert run.returncode in (0, 1), run.explain()
    return run, json.loads(out.read_text())["vms"][0]


def test_report_names_the_uplink_loss_on_vmnic1_of_esx1(loss_report, sshd):
    """`esxdiag report` on the uplink VM's own host: drops-elsewhere, and an uplink-loss finding that
    names esx1.lab.local vmnic1 from both ends: the host's esxcli missed errors and vCenter's host
    net.droppedRx for instance vmnic1 (the lab's vCenter answers the host from the same model)."""
    run, report = loss_report
    assert run.returncode == 0, run.explain()
    assert run.argv[run.argv.index("--host-ssh") + 1] == f"{sshd.user}@127.0.0.3:{sshd.port}"  # esx1, not esx0
    (vnic,) = report["vnics"]
    assert vnic["ring_verdict"] == "drops-elsewhere" and vnic["verdict"]["causes"] == ["uplink"]
    assert "uplink loss on esx1.lab.local vmnic1: Receive missed errors" in vnic["verdict"]["summary"]
    (finding,) = [f for f in report["findings"] if f["rule"] == "uplink-loss"]
    assert finding["severity"] == "critical" and finding["title"].endswith(": esx1.lab.local vmnic1")
    evidence = {e["what"]: e for e in finding["evidence"]}
    missed = evidence[f"vmnic1 {MISSED}"]
    assert missed["observed"] > 0 and missed["source"].startswith("esxi-esx1.lab.local/esxcli_nic_stats@vmnic=vmnic1")
    vcenter = evidence["vCenter host net.droppedRx of vmnic1"]
    assert vcenter["source"] == "vcenter/vsphere_host_perf@host=esx1.lab.local.json", vcenter
    assert "esx0" not in json.dumps(finding) and "esx0" not in vnic["verdict"]["summary"]
    (capture,) = run.captures("vsphere_host_perf")
    perf = json.loads(capture.path.read_text())
    assert perf["host"] == LOSS["host"]
    series = {(s["counter"], s["instance"]): s["values"] for s in perf["series"]}
    rate = UPLINKS["vmnic1"]["rates_per_s"][MISSED]  # 307/s: vmnic1 drops no packets, it misses them
    samples = series[("net.droppedRx.summation", "vmnic1")]
    assert samples and all(abs(v - rate * perf["interval_s"]) <= 1 for v in samples), (perf["interval_s"], samples)
    assert vcenter["observed"] == sum(samples)
    assert set(series[("net.droppedRx.summation", "vmnic0")]) == {0}
    assert set(series[("net.errorsRx.summation", "vmnic1")]) == {0}
