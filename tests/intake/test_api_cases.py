"""esxdiag.api.open_case on what intake reads without a manifest: a loose folder of captures and
sosreport tarballs, unpacked into the case's own temporary directory until it is closed."""

from __future__ import annotations

import shutil

import pytest

from esxdiag import api

PORT = "port=33554464,portset=vSwitch0"
BEFORE, AFTER = "Mon Oct  2 14:20:00 UTC 2017", "Mon Oct  2 14:21:00 UTC 2017"


def test_a_loose_folder_gives_what_esxdiag_analyze_prints(seed_folder, kit):
    result = api.analyze(seed_folder)
    assert api.vnic_frame(result).set_index("vm").loc["iperf-test1", "ring_verdict"] == "raise-ring1"
    printed = kit.analyze(seed_folder)
    assert [v.ring_verdict for vm in result.vms for v in vm.vnics] == [
        v["ring_verdict"] for vm in printed["vms"] for v in vm["vnics"]]


def test_sosreport_tarballs_are_unpacked_for_the_life_of_the_case(tmp_path, kit):
    pytest.importorskip("pandas")
    folder = tmp_path / "case"
    folder.mkdir()
    shutil.copy(kit.HOST / "net_stats_list.txt", folder / "net-stats-l.txt")
    for s, when in ((0, "before"), (1, "after")):
        shutil.copy(kit.HOST / f"vsish_rxsummary@{PORT}.s{s}.txt", folder / f"rxSummary-{when}.txt")
    trees = tmp_path / "trees"
    trees.mkdir()
    kit.tarball(kit.sosreport(trees, "sosreport-iperf-test1-a", 0, BEFORE), folder / "sosreport-a.tar.xz")
    kit.tarball(kit.sosreport(trees, "sosreport-iperf-test1-b", 1, AFTER), folder / "sosreport-b.tar.gz")
    listing = sorted(p.name for p in folder.iterdir())
    with api.open_case(folder) as case:
        unpacked = [c.path for c in case.bundle.captures if c.path and not c.path.is_relative_to(folder)]
        assert unpacked and all(p.is_file() for p in unpacked)
        samples = api.ring_samples(case)
        nic = api.vnic_frame(case.analyze()).set_index("vm").loc["iperf-test1"]
    assert not any(p.exists() for p in unpacked)  # removed with the case
    assert sorted(p.name for p in folder.iterdir()) == listing  # nothing written into the folder
    assert nic["ring_verdict"] == "raise-ring1"
    guest = samples[samples.counter == "guest_oob"]
    assert guest["delta"].sum() == 2074 and set(guest["queue"]) == {0, 1}
    single = api.analyze(folder / "sosreport-b.tar.gz")
    assert single.vms[0].name == "iperf-test1" and single.vms[0].vcpus == 2


def test_a_hostile_archive_is_an_intake_error_and_leaves_nothing_behind(tmp_path, monkeypatch):
    import tarfile
    import tempfile

    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    evil = tmp_path / "sosreport-evil.tar.gz"
    member = tmp_path / "x"
    member.write_text("hostname\n")
    with tarfile.open(evil, "w:gz") as tar:
        tar.add(member, arcname="sosreport-evil/../../etc/passwd")
    with pytest.raises(api.IntakeError, match="outside the archive"):
        api.open_case(evil)
    assert list(scratch.iterdir()) == []  # the case's work directory went with the error
