"""Answers without SSH in seconds, preflight before the window, usage errors that name the flag,
odd guest interface names, and the TLS-off warning: `esxdiag` run as a user runs it against vcsim
and the lab sshd."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

import pytest

from esxdiag.errors import EXIT_BAD_INPUT, EXIT_COLLECTION, EXIT_FINDINGS
from esxdiag.parsers.vsphere import parse_events, parse_host_perf

pytestmark = pytest.mark.lab

VM = "iperf-test1"
NO_SSH = ("--no-host-ssh", "--no-guest")


def test_rings_without_ssh_answers_in_seconds_from_vcenter_realtime(esxdiag):
    run = esxdiag.run("rings", VM, *NO_SSH, ssh=[], window=("--window", "60"))
    assert run.returncode == 0, run.explain()
    assert run.elapsed_s < 15, run.explain()  # the 60 s window is read from vCenter's past, not waited
    assert run.stdout.startswith(f"{VM}: 2 vCPUs;") and "(vcenter-realtime)" in run.stdout, run.explain()
    assert "-> " in run.stdout and "missing: " in run.stdout  # a verdict, and what was not seen
    assert run.lines_naming("no host sampling", "vsish ring counters", "esxtop")
    assert run.lines_naming("no guest sampling", "ethtool ring sizes")
    (perf,) = run.captures("vsphere_perf")
    record = json.loads(perf.path.read_text())
    assert record["rollup"] == "realtime" and record["timestamps"], record
    series = {(s["counter"], s["instance"]) for s in record["series"]}
    for counter in ("cpu.ready.summation", "cpu.costop.summation", "cpu.maxlimited.summation"):
        assert {(counter, "0"), (counter, "1")} <= series  # per vCPU
    (device_key,) = {s["instance"] for s in record["series"] if s["counter"] == "net.droppedRx.summation"}
    assert ("net.packetsRx.summation", device_key) in series
    notes = run.bundle_loaded().manifest["notes"]
    assert any("no window waited" in n and "host SSH would add" in n for n in notes), notes
    _events_and_uplinks_beside_perf(run, record)


def _events_and_uplinks_beside_perf(run, perf: dict) -> None:
    """The VM's migration events and its host's uplink counters, read for the VM's perf window."""
    (events,) = run.captures("vsphere_events")
    assert events.ok and events.params == {"vm": VM} and events.command == "EventManager.QueryEvents", events
    assert parse_events(events.path.read_text()).events == ()  # the lab's VM stays on its host
    (uplinks,) = run.captures("vsphere_host_perf")
    assert uplinks.ok and uplinks.params == {"host": "esx0.lab.local"}, uplinks
    host_perf = parse_host_perf(uplinks.path.read_text())
    assert host_perf.end == perf["end"] and host_perf.series
    if host_perf.rollup == "realtime":
        assert host_perf.start == perf["start"]
    else:  # a short window holding no 20 s sample boundary, as on a real vCenter: the 300 s rollup over at
        # least two rollup intervals, its start moved back (collectors/vsphere_host_perf.py)
        end = datetime.fromisoformat(perf["end"].replace("Z", "+00:00"))
        start = min(datetime.fromisoformat(perf["start"].replace("Z", "+00:00")), end - timedelta(seconds=600))
        assert (host_perf.interval_s, host_perf.start) == (300, start.strftime("%Y-%m-%dT%H:%M:%SZ")), host_perf
        assert host_perf.note.startswith("no realtime (20 s) samples for host esx0.lab.local"), host_perf.note


def test_unreachable_host_and_guest_do_not_wait_the_window(esxdiag, ssh_lab, live):
    port = live.closed_port()
    ssh = ["--host-ssh", f"root@127.0.0.2:{port}", "--guest-ssh", f"root@:{port}"]
    run = esxdiag.run("report", VM, "--format", "text", ssh=ssh, window=("--window", "60"))
    assert run.returncode == EXIT_COLLECTION, run.explain()
    assert run.elapsed_s < 15, run.explain()
    assert run.captures("vsphere_perf")[0].ok
    lines = run.stderr.splitlines()
    cost = next(i for i, line in enumerate(lines) if "no host sampling" in line)
    assert cost < next(i for i, line in enumerate(lines) if "performance counters" in line)


def test_refused_host_says_what_it_costs_before_the_window(esxdiag, ssh_lab):
    ssh_lab.set_fault("refuse", ssh_lab.host_address)
    run = esxdiag.run("rings", VM)
    assert run.returncode == EXIT_COLLECTION, run.explain()
    lines = run.stderr.splitlines()
    refused = next(i for i, line in enumerate(lines) if "connection refused" in line)
    cost = next(i for i, line in enumerate(lines) if "no host sampling" in line)
    start = next(i for i, line in enumerate(lines) if "window start" in line)
    assert refused < cost < start, run.explain()


def test_rings_format_json_output_file_and_fail_on(esxdiag):
    answer = esxdiag.workdir / "rings.json"
    run = esxdiag.run("rings", VM, "--format", "json", "-o", str(answer), "--fail-on", "critical")
    assert run.returncode == EXIT_FINDINGS, run.explain()
    document = json.loads(answer.read_text())
    assert [nic["ring_verdict"] for nic in document["vms"][0]["vnics"]] == ["raise-ring1"]
    assert f"report: {answer}" in run.stderr


def test_report_lands_beside_its_bundle(esxdiag):
    run = esxdiag.run("report", VM)
    assert run.returncode == 0, run.explain()
    (perf,) = run.captures("vsphere_perf")
    _events_and_uplinks_beside_perf(run, json.loads(perf.path.read_text()))  # after the window too
    assert (run.bundle / "report.html").is_file()
    assert f"report: {run.bundle / 'report.html'}" in run.stdout
    assert not (esxdiag.workdir / "report.html").exists()


@pytest.mark.parametrize("extra, flag", [
    (("--vm", "iperf-test2"), "--vm given 2 times"),
    (("--vcenter", "https://vc.example:99999/sdk"), "not a vCenter URL"),
    (("--vcenter", "https://[fe80::1/sdk"), "not a vCenter URL"),
])
def test_usage_errors_are_one_line_exit_2(esxdiag, extra, flag):
    run = esxdiag.run("report", VM, *extra)
    assert run.returncode == EXIT_BAD_INPUT, run.explain()
    assert [line for line in run.stderr.splitlines() if line.strip()] == [
        next(line for line in run.stderr.splitlines() if flag in line)], run.explain()
    assert not run.bundle.exists()


def test_missing_user_names_the_flag(esxdiag):
    run = esxdiag.run("rings", VM, env=esxdiag.env(ESXDIAG_USERNAME=None))
    assert run.returncode == EXIT_BAD_INPUT, run.explain()
    assert "no user name: pass --user or set ESXDIAG_USERNAME or GOVC_USERNAME" in run.stderr.replace(",", " or", 1)


@pytest.mark.parametrize("odd", ["a$b", "é"])
def test_guest_interface_name_that_fails_validation_is_skipped_not_fatal(esxdiag, ssh_lab, odd):
    ssh_lab.set_fault("ifname", ssh_lab.address_of(VM), name=odd)
    run = esxdiag.run("collect", VM)
    assert run.returncode == 0, run.explain()
    skipped = [c for c in run.captures("ethtool_permaddr", target_kind="linux") if c.error_kind == "skipped"]
    assert len(skipped) == 1 and "not sent" in skipped[0].error and skipped[0].params == {"iface": odd}
    assert not [e for e in ssh_lab.commands() if odd in e["command"] and e["command"].startswith("ethtool")]
    assert run.captures("nproc", target_kind="linux")[0].ok  # the rest of the guest still collected


def test_govc_insecure_prints_a_warning(esxdiag):
    run = esxdiag.run("rings", VM, *NO_SSH, ssh=[], env=esxdiag.env(ESXDIAG_THUMBPRINT=None, GOVC_INSECURE="1"))
    assert run.returncode == 0, run.explain()
    (warning,) = run.lines_naming("warning: TLS certificate verification is OFF", "GOVC_INSECURE=1")
