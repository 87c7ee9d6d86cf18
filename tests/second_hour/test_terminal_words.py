"""Issue 32, terminal text: the headline never contradicts the verdict, a heading-only finding shows its text,
rule skips only with --verbose, the window said once as asked and as measured, fleet grammar."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

from esxdiag.config import DEFAULT_THRESHOLDS
from esxdiag.engine import analyze
from esxdiag.reports.text import render_text

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
SITUATIONS = ROOT / "tests" / "fixtures" / "situations"


def text_of(bundle: Path, *extra: str) -> str:
    done = subprocess.run([sys.executable, "-m", "esxdiag", "analyze", str(bundle), "--format", "text", *extra],
                          capture_output=True, text=True, timeout=120)
    return " ".join(done.stdout.split())


def test_a_cpu_limited_vm_gets_no_ring_exhaustion_headline_under_a_cpu_first_verdict():
    out = text_of(EXAMPLES / "iperf-cpu-limited")
    assert "CPU LIMIT FIRST" in out and "a bigger ring would only delay the drops" in out
    assert "RX ring exhaustion now" not in out
    assert "CRITICAL: Receive drops now on Network adapter 1 (port 33554470): a CPU limit starves the vCPUs" in out


def test_a_ring_exhaustion_headline_stays_where_the_ring_is_the_fix():
    assert "CRITICAL: RX ring exhaustion now on Network adapter 1" in text_of(EXAMPLES / "iperf-test1-ring-exhaustion")


def test_the_capture_quirks_finding_says_what_they_are():
    out = text_of(SITUATIONS / "vmotion-in-window")
    head = "INFO: Capture quirks to know when reading the numbers"
    assert head in out
    after = out[out.index(head) + len(head):]
    assert after.lstrip().startswith("the vNIC was on port 33554464")
    assert "(20:38:42 UTC). ethtool -g" in after  # one note, one sentence


def test_rule_skips_are_listed_only_with_verbose():
    quiet, verbose = text_of(EXAMPLES / "windows-single-queue"), text_of(EXAMPLES / "windows-single-queue", "-v")
    assert "skip: " not in quiet
    assert "skip: " in verbose


def test_the_window_is_said_as_asked_and_as_measured():
    out = text_of(EXAMPLES / "iperf-test1-ring-exhaustion")
    assert "window 60 s (counters read 63 s apart)" in out
    assert " in 63 s" in out and "63.16" not in out


def test_a_bundle_without_a_window_does_not_say_n_a_seconds():
    result = analyze(EXAMPLES / "healthy-vm", dict(DEFAULT_THRESHOLDS))
    bare = dataclasses.replace(result, bundle={**result.bundle, "window_s": None},
                               vms=tuple(dataclasses.replace(vm, vnics=tuple(dataclasses.replace(n, metrics={})
                                                                            for n in vm.vnics)) for vm in result.vms))
    out = " ".join(render_text(bare).split())
    assert "window n/a s" not in out and "no window recorded" in out


def test_a_vm_without_findings_whose_vnic_is_unanswered_is_not_headed_no_findings():
    result = analyze(EXAMPLES / "healthy-vm", dict(DEFAULT_THRESHOLDS))
    vm = result.vms[0]
    unanswered = dataclasses.replace(vm, findings=(), vnics=tuple(
        dataclasses.replace(n, ring_verdict="insufficient-evidence") for n in vm.vnics))
    out = render_text(dataclasses.replace(result, vms=(unanswered,)))
    assert f"VM {vm.name}  [INSUFFICIENT EVIDENCE]" in out and "[NO FINDINGS]" not in out


def test_uplink_loss_shows_every_esxi_shell_command_the_html_shows():
    from esxdiag.reports.html import render_html

    result = analyze(EXAMPLES / "uplink-loss", dict(DEFAULT_THRESHOLDS))
    out = " ".join(render_text(result, width=200).split())
    remedy = result.vms[0].vnics[0].verdict.remediation[0]
    assert remedy.os == "esxi"
    assert "(in the ESXi shell; shown, never run by esxdiag)" in out and "(vsphere;" not in out
    page = render_html(result)
    for command in remedy.commands:
        assert " ".join(command.split()) in out
        assert command.replace("'", "&#39;").split("#")[0].strip() in page
    assert "esxcli network nic ring current set -n vmnic1" in out
    assert "Lost before the port, on its uplink: vmnic1 Receive missed errors 19,073" in out


def test_a_failed_run_lists_what_the_partial_bundle_holds_once():
    out = text_of(ROOT / "tests" / "fixtures" / "failed-run" / "host-refused")
    assert out.startswith("RUN FAILED: esxdiaglab@127.0.0.2:1: connection refused")
    assert out.count("guest ring persistence search") == 1
    assert out.count("connection refused on port 1") == 1
    assert "The partial bundle holds what RUN FAILED lists above." in out
