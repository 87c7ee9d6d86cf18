"""The first line a user reads is true: a failed run carries no verdict, a vCenter-only answer says
what it rests on (samples and window), too few samples are no answer, and a CPU limit that is set
is stated where the verdicts are. Bundles assembled by hand (tests/e2e/conftest.py)."""

from __future__ import annotations

import json
import subprocess
import sys

VM = "vm1"


def vcenter_only(hand, kit, samples: int, dropped: int = 0, limit: int | None = None, limited_ms: int = 0):
    """What `rings --no-host-ssh --no-guest` collects: inventory and ``samples`` realtime (20 s) samples."""
    hand.vms.append(VM)
    hand.target("vcenter", "vcenter")
    hand.add("vcenter", "vsphere_vm", kit.vsphere_vm(VM, [{}], num_cpu=2, limit=limit), {"vm": VM})
    series = {}
    for vcpu in ("0", "1"):
        series[("cpu.ready.summation", vcpu)] = [100] * samples
        series[("cpu.costop.summation", vcpu)] = [0] * samples
        series[("cpu.maxlimited.summation", vcpu)] = [limited_ms] * samples
    series[("net.droppedRx.summation", "4000")] = [dropped] * samples
    series[("net.packetsRx.summation", "4000")] = [200000] * samples
    hand.add("vcenter", "vsphere_perf", kit.vsphere_perf(VM, series), {"vm": VM})


def test_a_vcenter_only_answer_says_so_with_its_samples_and_window(hand, kit):
    vcenter_only(hand, kit, samples=15)
    _, report = hand.analyze()
    verdict = kit.vnic(report)["verdict"]
    assert verdict["verdict"] == "not-needed"
    assert verdict["basis"] == "no drops seen by vCenter in 15 samples (5 min)"
    assert "vCenter does not see the rings themselves" in verdict["summary"]
    rings = hand.render("rings").stdout
    assert "-> No ring change needed: no drops seen by vCenter in 15 samples (5 min) [not-needed]" in rings
    text = " ".join(hand.render("text").stdout.split())
    assert "NO RING CHANGE NEEDED: NO DROPS SEEN BY VCENTER IN 15 SAMPLES (5 MIN)" in text


def test_vcenter_drops_with_healthy_cpu_are_likely_not_proven(hand, kit):
    vcenter_only(hand, kit, samples=6, dropped=40)
    _, report = hand.analyze()
    verdict = kit.vnic(report)["verdict"]
    assert verdict["verdict"] == "insufficient-evidence"
    assert verdict["basis"] == "drops seen by vCenter in 6 of 6 samples (2 min): likely, not proven"


def test_too_few_vcenter_samples_are_no_answer_and_name_the_flag(hand, kit):
    vcenter_only(hand, kit, samples=2)
    _, report = hand.analyze()
    verdict = kit.vnic(report)["verdict"]
    assert verdict["verdict"] == "insufficient-evidence", verdict
    assert verdict["basis"] == "only 2 vCenter samples (40 s)"
    assert "--window 60" in verdict["summary"]
    _, report = hand.analyze("--set", "vcenter.min_samples=2")
    assert kit.vnic(report)["verdict"]["verdict"] == "not-needed"


def test_a_cpu_limit_is_stated_beside_the_verdicts_measured_or_not(hand, kit):
    vcenter_only(hand, kit, samples=15, limit=800, limited_ms=0)
    html = hand.render("html", "-o", str(hand.root.parent / "r.html"))
    assert html.returncode == 0, html.stderr
    page = (hand.root.parent / "r.html").read_text()
    summary = page[page.index('<table class="summary">'):page.index("</table>", page.index('<table class="summary">'))]
    assert "CPU limit 800 MHz" in summary
    assert "CPU limit 800 MHz" in hand.render("rings").stdout


def failed_run(hand, kit, tmp_path) -> tuple[dict, str]:
    """Ring counters that would say raise-ring1, in a bundle whose run failed on the guest."""
    hand.vms.append(VM)
    hand.host_port(VM)
    hand.rx_window((100, 50), (2100, 900))
    hand.target("guest-vm1", "linux", vm=VM)
    root = hand.write()
    manifest = json.loads((root / "manifest.json").read_text())
    manifest["failed"] = [{"target": "guest-vm1", "why": "127.0.0.1:1: unreachable (Connection refused)"}]
    (root / "manifest.json").write_text(json.dumps(manifest))
    out = tmp_path / "failed.json"
    esxdiag = [sys.executable, "-m", "esxdiag", "analyze", str(root)]
    done = subprocess.run(esxdiag + ["--format", "json", "-o", str(out)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(out.read_text()), esxdiag


def test_a_failed_run_carries_no_verdict_and_says_what_failed_and_what_it_holds(hand, kit, tmp_path):
    report, esxdiag = failed_run(hand, kit, tmp_path)
    assert report["bundle"]["failed"] == ["127.0.0.1:1: unreachable (Connection refused)"]
    verdict = kit.vnic(report)["verdict"]
    assert (verdict["verdict"], verdict["basis"]) == ("insufficient-evidence", "the run failed")
    assert "no verdict from a failed run" in verdict["summary"] and "Connection refused" in verdict["summary"]
    assert any("running out of buffers" in e["what"] for e in verdict["evidence"])  # what was read stays
    for fmt in ("rings", "text"):
        out = subprocess.run(esxdiag + ["--format", fmt], capture_output=True, text=True, timeout=60).stdout
        assert out.startswith("RUN FAILED: 127.0.0.1:1: unreachable (Connection refused). No verdict"), out
        assert "the partial bundle holds: net-stats -l (host port list), vsish rxSummary." in " ".join(out.split()), out
        assert "Raise RX ring" not in out and "RAISE RX RING" not in out, out
    page = tmp_path / "failed.html"
    subprocess.run(esxdiag + ["-o", str(page)], capture_output=True, text=True, timeout=60, check=True)
    html = page.read_text()
    assert html.index("RUN FAILED") < html.index("Worst severity") and "Raise RX ring" not in html


def test_the_same_bundle_without_the_failure_gives_the_verdict(hand, kit):
    """The control for the test above: the ring counters alone do say raise-ring1."""
    hand.vms.append(VM)
    hand.host_port(VM)
    hand.rx_window((100, 50), (2100, 900))
    _, report = hand.analyze()
    assert kit.vnic(report)["ring_verdict"] == "raise-ring1"
