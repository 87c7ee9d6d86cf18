"""Preflight before sample 0 (`esxdiag report --vm` against the SSH lab): a tool that is not there
(the lab's "missing" fault: exit 127, "sh: esxtop: not found") is said before the window with
what it costs, its window captures are recorded as skipped with that reason (never as healthy),
and the verdict comes from what was collected. Faults are set on the lab sshd and cleared after."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.lab

VM = "iperf-test1"


def report_with_fault(make_esxdiag, sshd, tmp_path_factory, name: str, faults, *extra: str):
    esxdiag = make_esxdiag(tmp_path_factory.mktemp(f"{name}-home"), tmp_path_factory.mktemp(name))
    sshd.clear_faults()
    for address, program in faults(sshd):
        sshd.set_fault("missing", address, program)
    report = esxdiag.workdir / "report.html"
    before = len(sshd.commands())
    try:
        return esxdiag.run("report", VM, "-o", str(report), *extra), report, sshd.commands()[before:]
    finally:
        sshd.clear_faults()


def said_before_window(run, *words: str) -> str:
    """The one stderr line with ``words``; it comes before the first window-start sample."""
    lines = run.stderr.splitlines()
    (index,) = [i for i, line in enumerate(lines) if all(w in line for w in words)]
    start = next(i for i, line in enumerate(lines) if "(window start)" in line)
    assert index < start, run.explain()
    return lines[index]


@pytest.fixture(scope="module")
def no_esxtop(make_esxdiag, sshd, tmp_path_factory):
    return report_with_fault(make_esxdiag, sshd, tmp_path_factory, "no-esxtop",
                             lambda lab: [(lab.host_address, "esxtop")])


def test_missing_esxtop_is_said_before_the_window_with_its_cost(no_esxtop, sshd):
    run, report, sent = no_esxtop
    line = said_before_window(run, "esxtop not found on", f"@{sshd.host_address}:")
    assert "no %RDY/%CSTP/%MLMTD from the host; CPU from vCenter's 20 s statistics only" in line
    (probe,) = run.captures("esxtop_probe", target_kind="esxi")
    assert (probe.error_kind, probe.rc) == ("not-found", 127) and "sh: esxtop: not found" in probe.error


def test_missing_esxtop_window_capture_is_skipped_not_sent(no_esxtop, sshd, live):
    run, report, sent = no_esxtop
    (esxtop,) = run.captures("esxtop_batch", target_kind="esxi")
    assert esxtop.error_kind == "skipped" and "esxtop not found" in esxtop.error, esxtop
    esxtops = [e["command"] for e in sent if e["address"] == sshd.host_address and e["command"].startswith("esxtop")]
    assert esxtops == ["esxtop -b -d 2 -n 1"], esxtops  # the probe only: the window's esxtop was never sent
    gaps = live.coverage_gaps(report.read_text(encoding="utf-8"))
    assert [row[3] for row in gaps if "esxtop" in row[0]] == ["not-found", "skipped"], gaps


def test_missing_esxtop_still_gives_a_verdict_from_rings_and_guest(no_esxtop):
    run, report, sent = no_esxtop
    assert run.returncode == 0, run.explain()
    for sample in (0, 1):
        (rx,) = run.captures("vsish_rxsummary", sample, "esxi")
        (stats,) = run.captures("ethtool_stats", sample, "linux")
        assert rx.ok and stats.ok, (rx, stats)
    assert "RAISE RX RING 1" in run.stdout and "CPU (vcenter-realtime)" in run.stdout, run.explain()
    assert "esxtop (2-5 s samples) was not available" in run.stdout, run.explain()


@pytest.fixture(scope="module")
def no_ethtool(make_esxdiag, sshd, tmp_path_factory):
    return report_with_fault(make_esxdiag, sshd, tmp_path_factory, "no-ethtool",
                             lambda lab: [(lab.address_of(VM), "ethtool")])


def test_missing_ethtool_is_said_before_the_window_with_its_cost(no_ethtool, sshd):
    run, report, sent = no_ethtool
    line = said_before_window(run, "ethtool not found on", f"@{sshd.address_of(VM)}:")
    assert "no guest ring sizes or per-queue drops" in line
    (probe,) = run.captures("ethtool_version", target_kind="linux")
    assert (probe.error_kind, probe.rc) == ("not-found", 127)


def test_missing_ethtool_guest_captures_are_skipped_and_the_host_still_judges(no_ethtool, live):
    run, report, sent = no_ethtool
    assert run.returncode == 0, run.explain()
    for sample in (0, 1):
        (stats,) = run.captures("ethtool_stats", sample, "linux")
        assert stats.error_kind == "skipped" and "ethtool not found" in stats.error, stats
        (rx,) = run.captures("vsish_rxsummary", sample, "esxi")
        assert rx.ok, rx
    assert run.captures("esxtop_batch")[0].ok
    assert "no interface has MAC" not in run.stderr + run.stdout  # the interface was found by ip link
    gaps = live.coverage_gaps(report.read_text(encoding="utf-8"))
    skipped = {row[0] for row in gaps if row[3] == "skipped"}
    assert any("ethtool_stats" in name for name in skipped), gaps
    assert "RAISE RX RING 1" in run.stdout and "CPU (esxtop)" in run.stdout, run.explain()
    assert "missing: ethtool -S eth0" in run.stdout, run.explain()


def test_host_without_its_tools_and_no_guest_waits_no_window(make_esxdiag, sshd, tmp_path_factory):
    """Neither side can give anything over a window: vCenter's recent past, no wait (--window 30)."""
    run, report, sent = report_with_fault(make_esxdiag, sshd, tmp_path_factory, "no-tools",
                                    lambda lab: [(lab.host_address, "esxtop"), (lab.host_address, "vsish")],
                                    "--no-guest", "--window", "30")
    assert run.returncode == 0, run.explain()
    assert run.elapsed_s < 25, run.explain()
    assert not run.captures("esxtop_batch") and not run.captures("vsish_rxsummary")
    notes = run.bundle_loaded().manifest["notes"]
    assert any("no host or guest sampled" in n and "no window waited" in n for n in notes), notes
