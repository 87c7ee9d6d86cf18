"""A folder of captures under natural names, no manifest: analyze infers one in memory, bundle init
writes it for review, bundle check validates it; what cannot be inferred is an error naming the file."""

from __future__ import annotations

import json
import os
import shutil

import pytest


METRICS = ("ring1_full", "ring2_full", "host_out_of_buffers", "dropped_rx", "guest_oob")


def _same_figures(a: dict, b: dict) -> None:
    assert a["ring_verdict"] == b["ring_verdict"]
    for key in METRICS:
        assert a["metrics"][key]["delta"] == b["metrics"][key]["delta"], key
        assert a["metrics"][key]["per_s"] == b["metrics"][key]["per_s"], key
    for key in ("ring1_size", "ring2_size", "rx_queues"):
        assert a["metrics"][key] == b["metrics"][key], key


def test_natural_names_give_the_seed_verdict_without_a_manifest(seed_folder, kit):
    before = sorted(p.name for p in seed_folder.iterdir())
    doc = kit.analyze(seed_folder)
    expected = kit.vnic(json.loads((kit.SEED / "report.json").read_text()), "iperf-test1")
    nic = kit.vnic(doc, "iperf-test1")
    assert nic["ring_verdict"] == "raise-ring1"
    _same_figures(nic, expected)
    assert doc["bundle"]["window_s"] == 60
    notes = " ".join(doc["notes"])
    assert "sample order inferred from file names (before/after)" in notes
    assert "first and last timestamps of esxtop.csv" in notes
    assert sorted(p.name for p in seed_folder.iterdir()) == before  # nothing written into the folder


def test_bundle_init_writes_a_manifest_that_check_and_analyze_accept(seed_folder, kit):
    proc = kit.run("bundle", "init", seed_folder)
    assert proc.returncode == 0, proc.stderr
    assert "sample order inferred from file names" in proc.stdout
    manifest = json.loads((seed_folder / "manifest.json").read_text())
    rx = [c for c in manifest["captures"] if c["spec"] == "vsish_rxsummary"]
    assert {(c["file"], c["sample"]) for c in rx} == {("rxSummary-before.txt", 0), ("rxSummary-after.txt", 1)}
    assert rx[0]["params"] == {"portset": "vSwitch0", "port": "33554464"}
    check = kit.run("bundle", "check", seed_folder)
    assert check.returncode == 0, check.stdout + check.stderr
    assert kit.vnic(kit.analyze(seed_folder), "iperf-test1")["ring_verdict"] == "raise-ring1"
    again = kit.run("bundle", "init", seed_folder)
    assert again.returncode == 2 and "exists" in again.stderr


def test_bundle_check_names_missing_files_and_misspelt_params(seed_folder, kit):
    assert kit.run("bundle", "init", seed_folder).returncode == 0
    (seed_folder / "rxSummary-after.txt").unlink()
    proc = kit.run("bundle", "check", seed_folder)
    assert proc.returncode == 2
    assert "rxSummary-after.txt is listed but missing" in proc.stdout and str(seed_folder) in proc.stdout
    manifest = json.loads((seed_folder / "manifest.json").read_text())
    status = next(c for c in manifest["captures"] if c["spec"] == "vsish_rxqueue_status")
    status["params"]["q"] = status["params"].pop("queue")
    (seed_folder / "manifest.json").write_text(json.dumps(manifest))
    proc = kit.run("bundle", "check", seed_folder)
    assert proc.returncode == 2 and "defect: " in proc.stdout and "'q' unknown for vsish_rxqueue_status" in proc.stdout


def test_bundle_check_warns_when_a_file_holds_another_kind(seed_folder, kit):
    assert kit.run("bundle", "init", seed_folder).returncode == 0
    shutil.copy(seed_folder / "ethtool-g.txt", seed_folder / "ethtool-S-after.txt")
    proc = kit.run("bundle", "check", seed_folder)  # issue 19: it is parsed too, and does not parse: exit 2
    assert proc.returncode == 2 and "looks like ethtool-rings output, not ethtool-stats" in proc.stdout
    assert "defect: captures[" in proc.stdout and "ethtool-S-after.txt: not readable: this is ethtool -g/-i output" \
        in proc.stdout


def test_port_number_in_the_name_wins_and_unknown_port_is_an_error_naming_the_file(seed_folder, kit):
    for name in ("ethtool-P.txt", "ip-o-link.txt"):  # no guest MAC: two vmxnet3 ports fit
        (seed_folder / name).unlink()
    proc = kit.run("analyze", seed_folder, "--format", "json")
    assert proc.returncode == 2 and "which vNIC port is this vsish-rxsummary capture of" in proc.stderr
    assert "rename it to rxSummary-after-33554464.txt (iperf-test1) or rxSummary-after-33554465.txt (iperf-test2)" \
        in proc.stderr
    for name in ("rxSummary", "clientStats"):
        for when in ("before", "after"):
            (seed_folder / f"{name}-{when}.txt").rename(seed_folder / f"{name}-33554464-{when}.txt")
    for name in ("rxqueues-ls.txt", "rxqueue0-status.txt", "rxqueue1-status.txt"):
        (seed_folder / name).rename(seed_folder / name.replace("rxqueue", "port33554464-rxqueue"))
    doc = kit.analyze(seed_folder)
    assert kit.vnic(doc, "iperf-test1")["ring_verdict"] == "raise-ring1"


def test_modification_times_order_the_samples_when_the_names_do_not(seed_folder, kit):
    for name in ("rxSummary", "clientStats", "ethtool-S", "netstat-s"):
        (seed_folder / f"{name}-before.txt").rename(seed_folder / f"{name} copy.txt")
        (seed_folder / f"{name}-after.txt").rename(seed_folder / f"{name}.txt")
        os.utime(seed_folder / f"{name} copy.txt", (1_500_000_000, 1_500_000_000))
        os.utime(seed_folder / f"{name}.txt", (1_500_000_060, 1_500_000_060))
    doc = kit.analyze(seed_folder)
    assert kit.vnic(doc, "iperf-test1")["metrics"]["ring1_full"]["delta"] == 1417
    assert "sample order inferred from file modification times" in " ".join(doc["notes"])


def test_same_mtime_and_no_name_hint_is_an_error(seed_folder, kit):
    (seed_folder / "rxSummary-before.txt").rename(seed_folder / "rx a.txt")
    (seed_folder / "rxSummary-after.txt").rename(seed_folder / "rx b.txt")
    for name in ("rx a.txt", "rx b.txt"):
        os.utime(seed_folder / name, (1_500_000_000, 1_500_000_000))
    proc = kit.run("analyze", seed_folder)
    assert proc.returncode == 2 and "rx a.txt, rx b.txt: which vsish-rxsummary capture was taken first?" in proc.stderr
    assert "rx a.txt -> rx a-before.txt, rx b.txt -> rx b-after.txt" in proc.stderr


def test_trailing_numbers_and_s0_s1_order_samples(seed_folder, kit):
    (seed_folder / "rxSummary-before.txt").rename(seed_folder / "rxsummary.s0.txt")
    (seed_folder / "rxSummary-after.txt").rename(seed_folder / "rxsummary.s1.txt")
    (seed_folder / "ethtool-S-before.txt").rename(seed_folder / "ethtool_S_eth0_1.txt")
    (seed_folder / "ethtool-S-after.txt").rename(seed_folder / "ethtool_S_eth0_2.txt")
    doc = kit.analyze(seed_folder)
    nic = kit.vnic(doc, "iperf-test1")
    assert nic["metrics"]["ring1_full"]["delta"] == 1417 and nic["metrics"]["guest_oob"]["delta"] == 2074
    notes = " ".join(doc["notes"])
    assert "file names (s0/s1) for vsish-rxsummary" in notes and "file names (trailing 1/2) for ethtool-stats" in notes


def test_unknown_and_ambiguous_files_are_named(seed_folder, kit):
    (seed_folder / "notes.txt").write_text("ran iperf with 12 streams\n")
    (seed_folder / "both.txt").write_text((kit.HOST / "vsish_rxqueue_status@port=33554464,portset=vSwitch0,queue=0.txt")
                                          .read_text() + (seed_folder / "rxSummary-before.txt").read_text())
    doc = kit.analyze(seed_folder)
    unused = {c["file"]: c["why"] for c in doc["coverage"] if c["status"] == "unparsed"}
    assert unused["notes.txt"].startswith("not a capture esxdiag reads")
    assert unused["both.txt"] == "ambiguous, looks like vsish-rxsummary and vsish-rxqueue-status"
    text = kit.run("analyze", seed_folder, "--format", "text").stdout
    assert "notes.txt" in text and "both.txt" in text


def test_one_subfolder_per_machine(seed_folder, kit):
    guest = seed_folder / "web-guest"
    guest.mkdir()
    for path in seed_folder.iterdir():
        if path.name.startswith(("ethtool", "ip-", "nproc", "netstat")):
            path.rename(guest / path.name)
    doc = kit.analyze(seed_folder)
    assert kit.vnic(doc, "iperf-test1")["guest_interface"] == "eth0"
    assert "guest captures in web-guest: VM iperf-test1" in " ".join(doc["notes"])


def test_empty_folder_and_missing_path_are_bad_input(tmp_path, kit):
    proc = kit.run("analyze", tmp_path)
    assert proc.returncode == 2 and "no manifest.json and no recognisable captures" in proc.stderr
    proc = kit.run("analyze", tmp_path / "nope")
    assert proc.returncode == 2 and "nope" in proc.stderr


EXAMPLES = ("iperf-test1-ring-exhaustion", "iperf-cpu-limited", "iperf-test1-ring4096", "windows-single-queue",
            "e1000-adapter", "healthy-vm", "iperf-test2-sender", "seed-by-hand/iperf-test1")


def _findings(doc):
    return sorted((f["rule"], f["severity"], f["vnic"]) for vm in doc["vms"] for f in vm["findings"])


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_example_without_its_manifest_gives_the_same_verdicts(tmp_path, kit, example):
    folder = tmp_path / example
    shutil.copytree(kit.ROOT / "examples" / example, folder)
    for name in ("manifest.json", "report.json", "report.html"):
        (folder / name).unlink()
    with_manifest = kit.analyze(kit.ROOT / "examples" / example)
    inferred = kit.analyze(folder)
    assert [v["name"] for v in inferred["vms"]] == [v["name"] for v in with_manifest["vms"]]
    for vm_a, vm_b in zip(inferred["vms"], with_manifest["vms"]):
        for a, b in zip(vm_a["vnics"], vm_b["vnics"]):
            assert a["ring_verdict"] == b["ring_verdict"]
            for key in METRICS:
                assert (a["metrics"].get(key) or {}).get("delta") == (b["metrics"].get(key) or {}).get("delta")
    assert _findings(inferred) == _findings(with_manifest)


def test_uplink_counters_are_placed_by_the_vmnic_they_print_or_a_question_names_the_file(tmp_path, kit):
    folder = tmp_path / "uplink-loss"
    shutil.copytree(kit.ROOT / "examples" / "uplink-loss", folder)
    for name in ("manifest.json", "report.json", "report.html"):
        (folder / name).unlink()
    host = folder / "esxi-esx1.lab.local"
    for n, when in ((0, "before"), (1, "after")):
        (host / f"esxcli_nic_stats@vmnic=vmnic1.s{n}.txt").rename(host / f"uplink-counters-{when}.txt")
    doc = kit.analyze(folder)
    assert [f for f in doc["vms"][0]["findings"] if f["rule"] == "uplink-loss" and "vmnic1" in f["title"]]
    assert doc["vms"][0]["vnics"][0]["ring_verdict"] == "drops-elsewhere"
    # damaged past reading (the name it prints unread) and no vmnic in its file name: asked, by file
    (host / "uplink-counters-before.txt").write_text("NIC statistics for vmnic1\n" + "cut by a pager\n" * 30)
    proc = kit.run("analyze", folder, cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout
    assert "uplink-counters-before.txt: which uplink's counters (esxcli-nic-stats) are these?" in proc.stderr


@pytest.mark.parametrize("example", EXAMPLES)
def test_bundle_check_accepts_every_example(kit, example):
    proc = kit.run("bundle", "check", kit.ROOT / "examples" / example)
    assert proc.returncode == 0 and "ok (" in proc.stdout and "warning:" not in proc.stdout, proc.stdout


def test_rx_queue_status_without_queue_numbers(seed_folder, kit):
    (seed_folder / "rxqueue1-status.txt").unlink()
    (seed_folder / "rxqueue0-status.txt").rename(seed_folder / "ring-status.txt")
    notes = " ".join(kit.analyze(seed_folder)["notes"])
    assert "rx queue 0 assumed: no queue number in the file name" in notes
    (seed_folder / "ring-status-2.txt").write_text((seed_folder / "ring-status.txt").read_text())
    proc = kit.run("analyze", seed_folder)
    assert proc.returncode == 2 and "name the rx queue in each file name" in proc.stderr


# ---------------------------------------------------------------- issue 19 point 4: coverage states

def test_a_capture_no_join_asked_for_that_does_not_parse_is_unparsed_never_read(seed_folder, kit):
    (seed_folder / "vswitch.txt").write_text("Switch Name      Num Ports   Used Ports  Configured Ports  MTU     Uplinks\n"
                                             "vSwitch0 nonsense\nmore nonsense here\nand more\n")
    (seed_folder / "uplink-vmnic0.txt").write_text(
        (kit.ROOT / "tests" / "fixtures" / "realworld" / "esxcli_nic_stats_vmnic0_cut_mark.txt").read_text())
    doc = kit.analyze(seed_folder)
    by_file = {c["file"]: c for c in doc["coverage"] if c["file"]}
    assert by_file["vswitch.txt"]["status"] == "unparsed" and "(line 2)" in by_file["vswitch.txt"]["why"]
    assert by_file["uplink-vmnic0.txt"]["status"] == "partial"
    assert by_file["uplink-vmnic0.txt"]["warnings"][0].startswith("line 14: cut mark '...'")
    assert by_file["esxtop.csv"]["status"] == "partial"  # its warning: no Vcpu instances
    assert by_file["rxSummary-before.txt"]["status"] == "read"
    assert not {c["status"] for c in doc["coverage"]} - {"read", "partial", "unparsed", "not-collected"}


def test_esxcli_vm_list_and_the_port_list_of_one_vm_find_that_vm(tmp_path, kit):
    folder = tmp_path / "host"
    folder.mkdir()
    shutil.copy(kit.ROOT / "tests" / "fixtures" / "host" / "esxcli_vm_list_rayd62.txt", folder / "vm-list.txt")
    shutil.copy(kit.ROOT / "tests" / "fixtures" / "host" / "esxcli_vm_port_list_rayd62_2178744.txt",
                folder / "ports-2178744.txt")
    doc = kit.analyze(folder)
    (vm,) = doc["vms"]
    assert vm["name"] == "Site1_GW" and [n["port"] for n in vm["vnics"]] == [33554578, 33554579]
    assert [n["mac"] for n in vm["vnics"]] == ["00:0c:29:47:03:dc", "00:0c:29:47:03:d2"]
    assert "No VM found" not in " ".join(doc["notes"])
    assert "ports-2178744.txt: the ports of world 2178744 (VM Site1_GW" in " ".join(doc["notes"])


# ---------------------------------------------------------------- issue 19 point 5: bundle check

def test_bundle_check_parses_every_capture_and_lists_every_defect_at_once(seed_folder, kit):
    assert kit.run("bundle", "init", seed_folder).returncode == 0
    (seed_folder / "rxSummary-before.txt").write_text("garbage\nmore garbage\n")
    (seed_folder / "ethtool-g.txt").write_text("Ring parameters for eth0:\nnot a ring line\nnor this\n")
    (seed_folder / "clientStats-after.txt").unlink()
    proc = kit.run("bundle", "check", seed_folder)
    assert proc.returncode == 2, proc.stdout
    defects = [line for line in proc.stdout.splitlines() if line.startswith("defect: ")]
    assert len(defects) == 3, proc.stdout
    assert any("clientStats-after.txt is listed but missing" in d for d in defects)
    assert any("(vsish-rxsummary) rxSummary-before.txt: not readable: "
               "not a vsish 'label:value' line: 'garbage'" in d and "(line 1)" in d for d in defects)
    assert any("(ethtool-rings) ethtool-g.txt: not readable:" in d for d in defects)
    assert "3 defects" in proc.stdout and "esxdiag help bundle-format" in proc.stdout


def test_bundle_check_lists_partial_captures_without_failing(seed_folder, kit):
    shutil.copy(kit.ROOT / "tests" / "fixtures" / "realworld" / "esxcli_nic_stats_vmnic0_cut_mark.txt",
                seed_folder / "uplink-vmnic0.txt")
    assert kit.run("bundle", "init", seed_folder).returncode == 0
    proc = kit.run("bundle", "check", seed_folder)
    assert proc.returncode == 0, proc.stdout
    assert "partial: " in proc.stdout and "uplink-vmnic0.txt: line 14: cut mark '...'" in proc.stdout


def test_bundle_check_points_a_folder_without_a_manifest_at_bundle_init(seed_folder, kit):
    proc = kit.run("bundle", "check", seed_folder)
    assert proc.returncode == 2
    assert f"no manifest.json: `esxdiag analyze {seed_folder}` reads it as a folder of captures" in proc.stdout
    assert f"run `esxdiag bundle init {seed_folder}`" in proc.stdout
    assert not (seed_folder / "manifest.json").exists() and not (seed_folder / ".esxdiag-derived").exists()


def test_the_documentation_messages_cite_is_installed_with_the_package(kit, tmp_path):
    from importlib import resources

    for topic in ("bundle-format", "report-schema", "fleet-scan", "parsers"):
        assert resources.files("esxdiag.docs").joinpath(f"{topic}.md").is_file(), topic
    proc = kit.run("help", "bundle-format", cwd=tmp_path)  # not from the source tree
    assert proc.returncode == 0 and proc.stdout.startswith("# Bundle format")
    cited = [p for p in (kit.ROOT / "esxdiag").rglob("*.py") if "docs/bundle-format.md" in p.read_text()
             and "raise" in p.read_text().split("docs/bundle-format.md")[0][-400:]]
    assert not cited, cited
    missing = kit.run("analyze", tmp_path)
    assert missing.returncode == 2 and "esxdiag help bundle-format" in missing.stderr


# ---------------------------------------------------------------- issue 19 point 6: every question at once

def _natural_without_guest_macs(folder):
    """The seed folder under the names of the issue, without ip -o link / ethtool -P (no guest MAC)."""
    for name in ("ethtool-P.txt", "ip-o-link.txt"):
        (folder / name).unlink()
    for old, new in (("rxSummary-before.txt", "before-rxsummary.txt"), ("rxSummary-after.txt", "after-rxsummary.txt"),
                     ("clientStats-before.txt", "clientstats-before.txt"),
                     ("clientStats-after.txt", "clientstats-after.txt")):
        (folder / old).rename(folder / new)


def test_one_run_lists_every_file_it_cannot_place_with_the_rename_that_fixes_it(seed_folder, kit):
    _natural_without_guest_macs(seed_folder)
    proc = kit.run("analyze", seed_folder)
    assert proc.returncode == 2
    lines = proc.stderr.splitlines()
    assert lines[0].startswith(f"esxdiag: {seed_folder}: 7 file(s) cannot be placed without guessing")
    asked = sorted(line.strip().split(":")[0] for line in lines[1:])
    assert asked == ["after-rxsummary.txt", "before-rxsummary.txt", "clientstats-after.txt", "clientstats-before.txt",
                     "rxqueue0-status.txt", "rxqueue1-status.txt", "rxqueues-ls.txt"]
    clientstats = next(line for line in lines if line.strip().startswith("clientstats-after.txt"))
    assert "vsish-clientstats capture" in clientstats and "rxSummary" not in clientstats  # the hint fits the kind
    assert "rename it to clientstats-after-33554464.txt (iperf-test1) or clientstats-after-33554465.txt" in clientstats
    assert "vsish_" not in proc.stderr  # one spelling: the kind `esxdiag parse` takes
    for line in lines[1:]:  # do what each line says (the first port): one rerun
        name, rename = line.strip().split(":")[0], line.split("rename it to ")[1].split(" (")[0]
        (seed_folder / name).rename(seed_folder / rename)
    doc = kit.analyze(seed_folder)
    nic = kit.vnic(doc, "iperf-test1")
    assert nic["ring_verdict"] == "raise-ring1" and nic["guest_interface"] == "eth0"
    commands = [c for r in nic["verdict"]["remediation"] for c in r["commands"]]
    assert "ethtool -G eth0 rx 4096" in commands and not any("<iface>" in c for c in commands)
    assert "the only interface the guest's ethtool captures are of" in json.dumps(doc["vms"][0]["findings"])


def test_interface_and_order_questions_come_in_the_same_run(seed_folder, kit):
    (seed_folder / "ip-o-link.txt").write_text(
        "1: lo: <LOOPBACK,UP> mtu 65536 qdisc noqueue state UNKNOWN\\    link/loopback 00:00:00:00:00:00\n"
        "2: eth0: <BROADCAST,UP> mtu 1500 qdisc mq state UP\\    link/ether 00:50:56:a6:55:f4 brd ff:ff:ff:ff:ff:ff\n"
        "3: eth1: <BROADCAST,UP> mtu 1500 qdisc mq state UP\\    link/ether 00:50:56:a6:77:01 brd ff:ff:ff:ff:ff:ff\n")
    (seed_folder / "ethtool-S-before.txt").rename(seed_folder / "stats a.txt")
    (seed_folder / "ethtool-S-after.txt").rename(seed_folder / "stats b.txt")
    for name in ("stats a.txt", "stats b.txt", "rxSummary-before.txt", "rxSummary-after.txt"):
        os.utime(seed_folder / name, (1_500_000_000, 1_500_000_000))
    (seed_folder / "rxSummary-before.txt").rename(seed_folder / "rx a.txt")
    (seed_folder / "rxSummary-after.txt").rename(seed_folder / "rx b.txt")
    proc = kit.run("analyze", seed_folder)
    assert proc.returncode == 2
    assert "stats a.txt: which interface is this ethtool-stats capture of? the guest has eth0, eth1: rename it to " \
           "stats a-eth0.txt or stats a-eth1.txt" in proc.stderr
    assert "rx a.txt, rx b.txt: which vsish-rxsummary capture was taken first?" in proc.stderr


def test_a_guest_capture_is_tied_to_its_vnic_by_ip_when_its_mac_differs(seed_folder, kit):
    """The guest's interface shows a MAC the host does not know (set inside the guest); the host's
    esxcli port list gives the vNIC's IP, which the guest's ip address holds."""
    for name in ("ethtool-P.txt", "ip-o-link.txt", "net-stats-l.txt"):
        (seed_folder / name).unlink()
    (seed_folder / "ip-addr.txt").write_text(
        "2: ens192: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc mq state UP group default qlen 1000\n"
        "    link/ether 02:aa:bb:cc:dd:ee brd ff:ff:ff:ff:ff:ff\n"
        "    inet 10.20.0.15/24 brd 10.20.0.255 scope global ens192\n"
        "       valid_lft forever preferred_lft forever\n")
    (seed_folder / "ports-5572767.txt").write_text(
        "   Port ID: 33554464\n   vSwitch: vSwitch0\n   Portgroup: VM Network\n   DVPort ID:\n"
        "   MAC Address: 00:50:56:a6:55:f4\n   IP Address: 10.20.0.15\n   Team Uplink: vmnic0\n"
        "   Uplink Port ID: 33554434\n   Active Filters:\n")
    (seed_folder / "vm-list.txt").write_text("World ID  Name         Num Ports  Networks\n"
                                             "--------  -----------  ---------  ----------\n"
                                             " 5572767  iperf-test1          1  VM Network\n")
    for path in seed_folder.glob("ethtool-*"):
        path.write_text(path.read_text().replace("eth0", "ens192"))
    for name in ("ethtool-S-before.txt", "ethtool-S-after.txt", "ethtool-g.txt", "ethtool-i.txt"):
        (seed_folder / name).rename(seed_folder / name.replace(".txt", "-ens192.txt"))
    doc = kit.analyze(seed_folder)
    nic = kit.vnic(doc, "iperf-test1")
    assert nic["guest_interface"] == "ens192" and nic["metrics"]["guest_oob"]["delta"] == 2074
    assert "it holds 10.20.0.15, an IP address of the vNIC 00:50:56:a6:55:f4" in json.dumps(doc["vms"][0]["findings"])


def test_bundle_check_on_a_folder_that_cannot_be_placed_lists_every_question(seed_folder, kit):
    _natural_without_guest_macs(seed_folder)
    proc = kit.run("bundle", "check", seed_folder)
    assert proc.returncode == 2 and proc.stdout.startswith("defect: ")
    assert proc.stdout.count("rename it to ") == 7 and f"then run `esxdiag bundle init {seed_folder}`" in proc.stdout
