"""ESXi vm-support bundles: text command outputs (FRAG pieces joined in order), the VSI dump left
alone, and `vsish -c commands/vsi_traverse_-s.txt -e get ...` outputs placed beside it."""

from __future__ import annotations

import json
import shutil

PORT = "port=33554464,portset=vSwitch0"


def _vm_support(parent, kit):
    top = parent / "esx-esx0.lab.local-2017-10-02--14.20-12345"
    commands = top / "commands"
    commands.mkdir(parents=True)
    lines = (kit.HOST / "net_stats_list.txt").read_bytes().splitlines(keepends=True)
    (commands / "net-stats_-l.txt.FRAG-00000").write_bytes(b"".join(lines[:2]))
    (commands / "net-stats_-l.txt.FRAG-00001").write_bytes(b"".join(lines[2:]))
    shutil.copy(kit.HOST / "esxi_version.txt", commands / "vmware_-vl.txt")
    shutil.copy(kit.ROOT / "tests" / "fixtures" / "host" / "net_dvs_l_sneaku_l2vpn_sink_no_elision.txt",
                commands / "net-dvs_-l.txt")
    (commands / "vsi_traverse_-s.txt").write_bytes(b"\x00VSI\x01\x02" * 100)
    (top / "etc" / "vmware").mkdir(parents=True)
    (top / "etc" / "vmware" / "esx.conf").write_text("/net/pnic/child[0000]/name = \"vmnic0\"\n")
    return top


def _vsish_c_outputs(top, kit):
    """What `vsish -c commands/vsi_traverse_-s.txt -e get ...` prints, saved beside the bundle."""
    shutil.copy(kit.HOST / f"vsish_rxsummary@{PORT}.s1.txt", top / "rxSummary-33554464.txt")
    shutil.copy(kit.HOST / f"vsish_clientstats@{PORT}.s1.txt", top / "clientStats-33554464.txt")
    shutil.copy(kit.HOST / f"vsish_rxqueue_status@{PORT},queue=0.txt", top / "port33554464-rxqueue0-status.txt")


def test_vm_support_directory_with_vsish_c_outputs(tmp_path, kit):
    top = _vm_support(tmp_path, kit)
    _vsish_c_outputs(top, kit)
    doc = kit.analyze(top)
    names = {vm["name"] for vm in doc["vms"]}
    assert names == {"iperf-test1", "iperf-test2"}  # every VM vNIC in net-stats -l (joined from 2 FRAG pieces)
    nic = kit.vnic(doc, "iperf-test1")
    assert nic["port"] == 33554464 and nic["metrics"]["ring1_size"] == 256
    assert nic["metrics"]["host_out_of_buffers"]["total"] == 10370
    assert nic["ring_verdict"] == "insufficient-evidence"  # a vm-support bundle is one reading
    notes = " ".join(doc["notes"])
    assert "present, not read" not in notes and "the VSI dump is not text" in notes
    assert any(c["file"].endswith("commands/net-dvs_-l.txt") and c["status"] == "read" for c in doc["coverage"]
               if c["file"]), doc["coverage"]
    assert any(c["file"].endswith("(joined from 2 FRAG pieces)") for c in doc["coverage"] if c["file"])


def test_vm_support_tarball_plus_a_later_reading(tmp_path, kit):
    trees = tmp_path / "trees"
    trees.mkdir()
    top = _vm_support(trees, kit)
    folder = tmp_path / "case"
    folder.mkdir()
    kit.tarball(top, folder / f"{top.name}.tgz")
    for s, when in ((0, "before"), (1, "after")):
        shutil.copy(kit.HOST / f"vsish_rxsummary@{PORT}.s{s}.txt", folder / f"rxSummary-33554464-{when}.txt")
    (folder / "window.txt").write_text("60 seconds between the two\n")
    proc = kit.run("analyze", folder, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert any(c["file"] == "window.txt" and c["status"] == "unparsed" for c in json.loads(proc.stdout)["coverage"])
    assert (kit.run("bundle", "init", folder, "--window", "60").returncode == 0)
    doc = kit.analyze(folder)
    nic = kit.vnic(doc, "iperf-test1")
    assert nic["ring_verdict"] == "raise-ring1"
    assert nic["metrics"]["ring1_full"]["per_s"] == round(1417 / 60, 3)


def test_vm_support_switch_list_is_read_and_its_mtu_named_when_the_guest_mtu_is_unknown(tmp_path, kit):
    """commands/esxcfg-vswitch_-l.txt: the real NSX-lab capture (tests/fixtures/host), whose vSwitch0
    carries MTU 1500 (nothing to say), then the same with MTU 9000 (derived: the one number changed)."""
    top = _vm_support(tmp_path, kit)
    _vsish_c_outputs(top, kit)
    real = (kit.ROOT / "tests" / "fixtures" / "host" / "esxcfg_vswitch_l_sneaku_l2vpn.txt").read_text()
    (top / "commands" / "esxcfg-vswitch_-l.txt").write_text(real)
    doc = kit.analyze(top)
    assert any(c["file"].endswith("commands/esxcfg-vswitch_-l.txt") and c["status"] == "read" for c in doc["coverage"]
               if c["file"]), doc["coverage"]
    assert "esxcfg-vswitch_-l.txt present, not read" not in " ".join(doc["notes"])
    assert "carries MTU" not in json.dumps(doc)
    (top / "commands" / "esxcfg-vswitch_-l.txt").write_text(real.replace(
        "vSwitch0         1536        3           128               1500", "vSwitch0         1536        3           128               9000"))
    vm = next(vm for vm in kit.analyze(top)["vms"] if vm["name"] == "iperf-test1")
    assert "the vSwitch vSwitch0 carries MTU 9000 (esxcfg-vswitch -l)" in json.dumps(vm) and "4032" in json.dumps(vm)


def test_vm_support_net_dvs_as_published_with_an_elision_is_reported_and_the_rest_analysed(tmp_path, kit):
    """The blog's net-dvs -l has `//output hidden//` where the author cut ports: the file is read around
    it and listed as partial with a warning naming the line (issue 19: it used to be unparsed, whole),
    not a silent gap, and the VMs from net-stats -l are still analysed."""
    top = _vm_support(tmp_path, kit)
    shutil.copy(kit.ROOT / "tests" / "fixtures" / "host" / "net_dvs_l_sneaku_l2vpn_sink.txt", top / "commands" / "net-dvs_-l.txt")
    doc = kit.analyze(top)
    entry = next(c for c in doc["coverage"] if c["file"] and c["file"].endswith("commands/net-dvs_-l.txt"))
    assert entry["status"] == "partial" and entry["warnings"][0].startswith("line 41: cut mark '//output hidden//'"), entry
    assert {vm["name"] for vm in doc["vms"]} == {"iperf-test1", "iperf-test2"}
