"""SSH faults during `esxdiag report --vm`: each is refused or bounded, says so in one stderr line
naming the target, lands in the partial bundle with the right error_kind, and the report still
renders with the gap listed in its coverage. Faults are set on the lab sshd and cleared after."""

from __future__ import annotations

import pytest

from esxdiag.collectors.preflight import PROBE_TIMEOUT_S

pytestmark = pytest.mark.lab

VM = "iperf-test1"


def host_label(lab) -> str:
    return f"{lab.user}@{lab.host_address}:{lab.port}"


def report_run(esxdiag, *extra, **kwargs):
    report = esxdiag.workdir / "report.html"
    run = esxdiag.run("report", VM, "-o", str(report), *extra, **kwargs)
    return run, report


def assert_host_gap(run, report, live, lab, kind: str, *words: str) -> None:
    """One stderr line names the host and the problem; the manifest and the report's coverage
    record net_stats_list (the host's first capture) as failed with ``kind``; nothing else of the
    host was attempted."""
    label = host_label(lab)
    lines = run.lines_naming(label, *words)
    assert len(lines) == 1, run.explain()
    (failed,) = run.captures("net_stats_list", target_kind="esxi")
    assert (failed.error_kind, failed.file) == (kind, None), failed
    assert label in failed.error and all(w in failed.error for w in words), failed
    host_specs = {c.spec for c in run.captures("net_stats_list", target_kind="esxi")} | {
        c.spec for c in run.bundle_loaded().captures if c.target == failed.target}
    assert host_specs == {"net_stats_list"}
    assert report.is_file(), run.explain()
    gaps = live.coverage_gaps(report.read_text(encoding="utf-8"))
    assert any("net_stats_list" in row[0] and row[3] == kind for row in gaps), gaps


def assert_guest_collected(run) -> None:
    for sample in (0, 1):
        (stats,) = run.captures("ethtool_stats", sample, "linux")
        assert stats.ok, stats


def test_changed_host_key_refuses_the_host_and_still_collects_the_guest(esxdiag, ssh_lab, live):
    pinned = live.known_hosts_without(ssh_lab, ssh_lab.host_address, esxdiag.workdir / "known_hosts",
                                      ssh_lab.changed_host_key_line(ssh_lab.host_address))
    before = len(ssh_lab.commands())
    run, report = report_run(esxdiag, ssh=esxdiag.ssh_args(ssh_lab.key_file, pinned))
    assert_host_gap(run, report, live, ssh_lab, "host-key", "HOST KEY CHANGED")
    assert_guest_collected(run)
    assert not [e for e in ssh_lab.commands()[before:] if e["address"] == ssh_lab.host_address]


def test_unknown_host_is_refused_and_nothing_runs_there(esxdiag, ssh_lab, live):
    guests_only = live.known_hosts_without(ssh_lab, ssh_lab.host_address, esxdiag.workdir / "known_hosts")
    before = len(ssh_lab.commands())
    run, report = report_run(esxdiag, ssh=esxdiag.ssh_args(ssh_lab.key_file, guests_only))
    assert_host_gap(run, report, live, ssh_lab, "host-key", "unknown host key", "nothing was run")
    assert_guest_collected(run)
    received = ssh_lab.commands()[before:]
    assert received and not [e for e in received if e["address"] == ssh_lab.host_address]
    assert not (esxdiag.home / ".config" / "esxdiag" / "known_hosts").exists()


def test_accept_new_host_keys_collects_and_stores_them_in_esxdiag_known_hosts(esxdiag, ssh_lab):
    empty = esxdiag.workdir / "known_hosts"
    empty.write_text("")
    run, report = report_run(esxdiag, "--accept-new-host-keys", ssh=esxdiag.ssh_args(ssh_lab.key_file, empty))
    assert run.returncode == 0, run.explain()
    assert "RAISE RX RING 1" in run.stdout and all(c.ok for c in run.bundle_loaded().captures)
    stored = (esxdiag.home / ".config" / "esxdiag" / "known_hosts").read_text().splitlines()
    real_key = ssh_lab.known_hosts.read_text().split()[2]
    assert sorted(line.split()[0] for line in stored) == sorted(
        f"[{a}]:{ssh_lab.port}" for a in (ssh_lab.host_address, ssh_lab.address_of(VM)))
    assert {tuple(line.split()[1:]) for line in stored} == {("ssh-ed25519", real_key)}
    assert empty.read_text() == ""  # the user's file is never written


@pytest.fixture(scope="module")
def host_sshd_down(make_esxdiag, sshd, tmp_path_factory):
    """One `report` with the host's sshd not listening (what ESXi's default, SSH off, looks like)."""
    esxdiag = make_esxdiag(tmp_path_factory.mktemp("down-home"), tmp_path_factory.mktemp("down"))
    sshd.clear_faults()
    sshd.set_fault("refuse", sshd.host_address)
    try:
        return report_run(esxdiag)
    finally:
        sshd.clear_faults()


def test_sshd_down_on_the_host_names_the_port_that_refused(host_sshd_down, sshd, live):
    """The lab's port is not 22, as a port typed in --host-ssh: the advice is to check it (issue 25)."""
    run, report = host_sshd_down
    assert_host_gap(run, report, live, sshd, "refused", f"connection refused on port {sshd.port}",
                    "check the port in --host-ssh")
    assert_guest_collected(run)
    assert run.returncode == 3, run.explain()  # partial: the host was not reached; the report still rendered
    assert "not collected: net_stats_list" in run.stdout and "failed (refused)" in run.stdout
    assert "missing: host port list (net-stats -l)" in run.stdout
    assert not run.captures("esxtop_batch") and not run.captures("vsish_rxsummary")


def test_sshd_down_line_names_the_host_once(host_sshd_down, sshd):
    run, report = host_sshd_down
    (line,) = run.lines_naming(host_label(sshd), "connection refused")
    assert line.count(host_label(sshd)) == 1, line


def test_sshd_down_ring_size_is_not_the_early_kernel_queue_sum(host_sshd_down, scenarios):
    run, report = host_sshd_down
    (nic,) = next(vm for vm in scenarios["vms"] if vm["name"] == VM)["nics"]
    assert nic["ring1"] * nic["rx_queues"] == 512
    assert "ring 1 512/4096" not in run.stdout, run.explain()


def test_wrong_host_password_is_an_auth_failure(esxdiag, ssh_lab, live):
    env = esxdiag.env(ESXDIAG_HOST_PASSWORD="not-" + ssh_lab.password, ESXDIAG_GUEST_PASSWORD=ssh_lab.password)
    run, report = report_run(esxdiag, env=env, ssh=esxdiag.ssh_args(key=None))
    assert_host_gap(run, report, live, ssh_lab, "auth", "authentication failed with password")
    assert_guest_collected(run)
    assert ssh_lab.password not in run.stderr + run.stdout
    assert live.files_containing(run.bundle, ssh_lab.password) == []


def test_wrong_key_is_an_auth_failure_on_host_and_guest(esxdiag, ssh_lab, live):
    run, report = report_run(esxdiag, ssh=esxdiag.ssh_args(ssh_lab.wrong_key_file))
    assert_host_gap(run, report, live, ssh_lab, "auth", f"authentication failed with key {ssh_lab.wrong_key_file}")
    (guest,) = run.captures("ip_link", target_kind="linux")
    assert guest.error_kind == "auth" and f"@{ssh_lab.address_of(VM)}:" in guest.error


@pytest.fixture(scope="module")
def hung_esxtop(make_esxdiag, sshd, tmp_path_factory):
    """One `report` whose esxtop never answers: the preflight's one-row esxtop is cut off at its
    timeout, and the window does not run esxtop again (it waits, and the guest is still sampled)."""
    esxdiag = make_esxdiag(tmp_path_factory.mktemp("hang-home"), tmp_path_factory.mktemp("hang"))
    sshd.clear_faults()
    sshd.set_fault("hang", sshd.host_address, "esxtop", seconds=120)
    try:
        return report_run(esxdiag)
    finally:
        sshd.clear_faults()


def test_hung_esxtop_is_cut_off_in_the_preflight_and_skipped_in_the_window(hung_esxtop, sshd, live):
    run, report = hung_esxtop
    assert run.returncode == 0, run.explain()
    assert run.elapsed_s < PROBE_TIMEOUT_S["esxtop_probe"] + 3 + 20, run.explain()
    (probe,) = run.captures("esxtop_probe", target_kind="esxi")
    assert probe.error_kind == "timeout" and probe.rc is None, probe
    assert f"{host_label(sshd)}: no result within {PROBE_TIMEOUT_S['esxtop_probe']:g} s" in probe.error
    (esxtop,) = run.captures("esxtop_batch", target_kind="esxi")
    assert esxtop.error_kind == "skipped" and "esxtop did not answer" in esxtop.error, esxtop
    assert [c.spec for c in run.bundle_loaded().captures if not c.ok] == ["esxtop_probe", "esxtop_batch"]
    assert_guest_collected(run)
    gaps = live.coverage_gaps(report.read_text(encoding="utf-8"))
    assert [row[3] for row in gaps if "esxtop" in row[0]] == ["timeout", "skipped"], gaps


def test_hung_esxtop_is_named_on_stderr_once_with_its_cost(hung_esxtop, sshd):
    run, report = hung_esxtop
    (line,) = run.lines_naming(host_label(sshd), "esxtop did not answer")
    assert "no %RDY/%CSTP/%MLMTD from the host" in line


def test_hung_vsish_is_bounded_by_the_command_timeout(esxdiag, ssh_lab):
    ssh_lab.set_fault("hang", ssh_lab.host_address, "vsish", seconds=60)
    run, report = report_run(esxdiag, "--command-timeout", "2", timeout_s=60)
    assert run.returncode == 0, run.explain()
    assert run.elapsed_s < 30, run.explain()
    vsish = [c for c in run.bundle_loaded().captures if c.spec.startswith("vsish_")]
    assert vsish[0].spec == "vsish_portsets" and vsish[0].error_kind == "timeout", vsish
    assert "no result within 2 s" in vsish[0].error
    assert vsish[1:] and {c.error_kind for c in vsish[1:]} == {"skipped"}, vsish  # not one timeout each
    assert all("vsish did not answer" in c.error for c in vsish[1:])
    assert run.captures("esxtop_batch")[0].ok and run.captures("ethtool_stats", 1)[0].ok
