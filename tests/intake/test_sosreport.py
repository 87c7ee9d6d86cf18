"""Guest sosreports, as directories and tarballs: the networking plugin's outputs, vCPUs from
proc/cpuinfo, ring persistence from the NetworkManager keyfile, the date; two make a window."""

from __future__ import annotations

import shutil

PORT = "port=33554464,portset=vSwitch0"
BEFORE, AFTER = "Mon Oct  2 14:20:00 UTC 2017", "Mon Oct  2 14:21:00 UTC 2017"


def _host(folder, kit):
    folder.mkdir(exist_ok=True)
    shutil.copy(kit.HOST / "net_stats_list.txt", folder / "net-stats-l.txt")
    for s, when in ((0, "before"), (1, "after")):
        shutil.copy(kit.HOST / f"vsish_rxsummary@{PORT}.s{s}.txt", folder / f"rxSummary-{when}.txt")
    return folder


def test_one_sosreport_directory_is_one_reading(tmp_path, kit):
    sos = kit.sosreport(tmp_path, "sosreport-iperf-test1-2017-10-02-abcdef", 1, AFTER)
    doc = kit.analyze(sos)
    vm = doc["vms"][0]
    assert vm["name"] == "iperf-test1" and vm["vcpus"] == 2  # named after the sosreport's hostname
    for nic in vm["vnics"]:  # vNICs from guest interfaces alone: one reading never says "raise"
        assert not nic["ring_verdict"].startswith("raise")
    notes = " ".join(doc["notes"])
    assert "one sosreport is one reading" in notes and "taken 2017-10-02T14:21:00Z" in notes


def test_two_sosreports_of_one_guest_and_the_host_captures_make_a_window(tmp_path, kit):
    folder = _host(tmp_path / "case", kit)
    kit.sosreport(folder, "sosreport-iperf-test1-a", 0, BEFORE)
    kit.sosreport(folder, "sosreport-iperf-test1-b", 1, AFTER)
    doc = kit.analyze(folder)
    nic = kit.vnic(doc, "iperf-test1")
    assert nic["ring_verdict"] == "raise-ring1"
    oob = nic["metrics"]["guest_oob"]
    assert oob["delta"] == 2074 and oob["seconds"] == 60.0 and oob["per_s"] == round(2074 / 60, 3)
    notes = " ".join(doc["notes"])
    assert "the times stated inside the captures" in notes


def test_sosreport_tarballs_xz_and_gz(tmp_path, kit):
    folder = _host(tmp_path / "case", kit)
    trees = tmp_path / "trees"
    trees.mkdir()
    kit.tarball(kit.sosreport(trees, "sosreport-iperf-test1-a", 0, BEFORE), folder / "sosreport-a.tar.xz")
    kit.tarball(kit.sosreport(trees, "sosreport-iperf-test1-b", 1, AFTER), folder / "sosreport-b.tar.gz")
    listing = sorted(p.name for p in folder.iterdir())
    nic = kit.vnic(kit.analyze(folder), "iperf-test1")
    assert nic["ring_verdict"] == "raise-ring1" and nic["metrics"]["guest_oob"]["delta"] == 2074
    assert sorted(p.name for p in folder.iterdir()) == listing  # unpacked elsewhere, never into the folder
    single = kit.analyze(folder / "sosreport-b.tar.gz")
    assert single["vms"][0]["name"] == "iperf-test1" and single["vms"][0]["vcpus"] == 2


def test_ring_persistence_is_read_from_the_copied_keyfile(tmp_path, kit):
    sos = kit.sosreport(tmp_path, "sosreport-x", 1, AFTER)
    (sos / "etc" / "udev" / "rules.d").mkdir(parents=True)
    (sos / "etc" / "udev" / "rules.d" / "60-ring.rules").write_text(
        'ACTION=="add", KERNEL=="eth0", RUN+="/sbin/ethtool -G eth0 rx 4096"\n')
    init = kit.run("bundle", "init", sos)
    assert init.returncode == 0, init.stderr
    derived = (sos / ".esxdiag-derived" / "ring_persistence (from etc).txt").read_text().splitlines()
    assert derived == ["/etc/NetworkManager/system-connections/eth0.nmconnection:3:[ethtool]",
                       "/etc/NetworkManager/system-connections/eth0.nmconnection:4:ring-rx=256",
                       '/etc/udev/rules.d/60-ring.rules:1:ACTION=="add", KERNEL=="eth0", RUN+="/sbin/ethtool -G eth0 rx 4096"']
    coverage = kit.analyze(sos)["coverage"]
    assert any(c["spec"] == "ring_persistence" and c["status"] == "read" for c in coverage)


def test_bundle_init_on_a_sosreport_writes_derived_files_beside_it(tmp_path, kit):
    sos = kit.sosreport(tmp_path, "sosreport-x", 1, AFTER)
    proc = kit.run("bundle", "init", sos)
    assert proc.returncode == 0, proc.stderr
    assert (sos / ".esxdiag-derived" / "nproc (processors in proc-cpuinfo).txt").read_text() == "2\n"
    assert kit.run("bundle", "check", sos).returncode == 0


def test_two_sosreports_alone_are_a_window_timed_by_their_dates(tmp_path, kit):
    kit.sosreport(tmp_path, "sosreport-iperf-test1-a", 0, BEFORE)
    kit.sosreport(tmp_path, "sosreport-iperf-test1-b", 1, AFTER)
    doc = kit.analyze(tmp_path)
    assert doc["bundle"]["window_s"] == 60
    nic = kit.vnic(doc, "iperf-test1")
    assert nic["guest_interface"] == "eth0"
    assert nic["metrics"]["guest_oob"]["delta"] == 2074 and nic["metrics"]["guest_oob"]["seconds"] == 60.0
    assert "ethtool-rings: the latest of" in " ".join(doc["notes"])
