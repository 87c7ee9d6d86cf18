"""VM and vNIC rules besides the verdict: findings when over threshold, explicit passes and
skips otherwise."""

from __future__ import annotations

from esxdiag.result import Finding, RuleCheck
from esxdiag.rules import cpu, nic, tcp


def only(outcomes, kind):
    assert len(outcomes) == 1, outcomes
    assert isinstance(outcomes[0], kind), outcomes
    return outcomes[0]


def test_cpu_contention_bands(make, thresholds):
    assert only(cpu.cpu_contention(make.vm(cpu=make.cpu(ready=3.0)), thresholds), RuleCheck).status == "pass"
    assert only(cpu.cpu_contention(make.vm(cpu=make.cpu(ready=7.0)), thresholds), Finding).severity == "warning"
    crit = only(cpu.cpu_contention(make.vm(cpu=make.cpu(ready=12.0)), thresholds), Finding)
    assert crit.severity == "critical" and crit.evidence[0].observed == 12.0 and crit.evidence[0].threshold == 10.0
    assert only(cpu.cpu_contention(make.vm(cpu=None), thresholds), RuleCheck).status == "skip"


def test_ready_time_caused_by_a_limit_is_not_called_contention(make, thresholds):
    f = only(cpu.cpu_contention(make.vm(cpu=make.cpu(ready=69.6, limited=69.52), limit=800), thresholds), Finding)
    assert f.severity == "info" and "limit" in f.title


def test_cpu_limit(make, thresholds):
    f = only(cpu.cpu_limit(make.vm(cpu=make.cpu(limited=69.52), limit=800), thresholds), Finding)
    assert f.severity == "critical" and any(e.observed == 800 for e in f.evidence)
    idle = only(cpu.cpu_limit(make.vm(cpu=make.cpu(limited=0.0), limit=800), thresholds), Finding)
    assert idle.severity == "info"
    assert only(cpu.cpu_limit(make.vm(cpu=None, limit=800), thresholds), Finding).severity == "warning"
    assert only(cpu.cpu_limit(make.vm(), thresholds), RuleCheck).status == "pass"


def test_costop_and_swap_wait(make, thresholds):
    assert only(cpu.cpu_costop(make.vm(cpu=make.cpu(costop=4.0)), thresholds), Finding).rule == "cpu-costop"
    assert only(cpu.cpu_costop(make.vm(cpu=make.cpu(costop=1.0)), thresholds), RuleCheck).status == "pass"
    assert only(cpu.cpu_swap_wait(make.vm(cpu=make.cpu(swap=9.0)), thresholds), Finding).severity == "warning"
    assert only(cpu.cpu_swap_wait(make.vm(cpu=make.cpu(swap=0.0)), thresholds), RuleCheck).status == "pass"


def test_guest_retransmits(make, thresholds):
    seed = make.vm(retrans=(69372, 86715), sent=(40_200_000, 50_340_000))
    f = only(tcp.guest_retransmits(seed, thresholds), Finding)
    assert "17,343" in f.summary
    after = make.vm(retrans=(48, 48), sent=(1000, 900_000))
    assert only(tcp.guest_retransmits(after, thresholds), RuleCheck).status == "pass"
    assert only(tcp.guest_retransmits(make.vm(), thresholds), RuleCheck).status == "skip"


def test_ring_exhaustion_severity_follows_drop_rate(make, thresholds):
    vm = make.vm()
    fast = only(nic.ring_exhaustion(vm, make.vnic(oob=(0, 6000)), thresholds), Finding)
    slow = only(nic.ring_exhaustion(vm, make.vnic(oob=(0, 60)), thresholds), Finding)
    assert (fast.severity, slow.severity) == ("critical", "warning")
    flat = make.vnic(ring1=(5, 5), ring2=(0, 0), oob=(9, 9))
    assert only(nic.ring_exhaustion(vm, flat, thresholds), RuleCheck).status == "pass"


def test_emulated_adapter(make, thresholds):
    f = only(nic.emulated_adapter(make.vm(), make.vnic(nic_type="e1000"), thresholds), Finding)
    assert "vmxnet3" in f.summary and "link speed" in f.summary
    assert only(nic.emulated_adapter(make.vm(), make.vnic(), thresholds), RuleCheck).status == "pass"


def test_windows_single_queue(make, thresholds):
    win = make.vm(guest_os="windows", vcpus=4)
    f = only(nic.windows_single_queue(win, make.vnic(queues=1, rss=False, guest_os="windows"), thresholds), Finding)
    assert f.severity == "warning"
    assert only(nic.windows_single_queue(win, make.vnic(queues=4), thresholds), RuleCheck).status == "pass"
    assert nic.windows_single_queue(make.vm(), make.vnic(queues=1), thresholds) == []


def test_ring_persistence(make, thresholds):
    raised = make.vnic(size1=4096, rings_persisted=False)
    f = only(nic.ring_persistence(make.vm(), raised, thresholds), Finding)
    assert "reboot" in f.title
    persisted = make.vnic(size1=4096, rings_persisted=True)
    assert only(nic.ring_persistence(make.vm(), persisted, thresholds), RuleCheck).status == "pass"


def test_host_guest_consistency(make, thresholds):
    agree = make.vnic(oob=(0, 1000), guest_oob=make.counter("guest", 0, 1004))
    assert only(nic.host_guest_consistency(make.vm(), agree, thresholds), RuleCheck).status == "pass"
    differ = make.vnic(oob=(0, 1000), guest_oob=make.counter("guest", 0, 400))
    assert only(nic.host_guest_consistency(make.vm(), differ, thresholds), Finding).severity == "info"


def test_link_speed_myth(make, thresholds):
    slow = make.vnic(link_speed="1 Gbps")
    f = only(nic.link_speed(make.vm(), slow, thresholds), Finding)
    assert f.severity == "info" and "not a limit" in f.title and "22 Gbps" in f.summary
    assert only(nic.link_speed(make.vm(), make.vnic(link_speed="10 Gbps"), thresholds), RuleCheck).status == "pass"
    assert nic.link_speed(make.vm(), make.vnic(), thresholds) == []
    assert nic.link_speed(make.vm(), make.vnic(link_speed="1 Gbps", nic_type="e1000"), thresholds) == []


def test_terminal_text_cannot_forge_lines():
    from esxdiag.terminal import safe_text

    assert safe_text("vm1\nFAKE: all good\t\x1b[2J") == "vm1\\x0aFAKE: all good\\x09\\x1b[2J"


def test_a_new_rule_is_a_function_in_a_rules_tuple_with_its_threshold_in_config(monkeypatch, tmp_path, capsys):
    """README "Layout", add a rule: a pure function of the joined facts, appended to its module's
    RULES (esxdiag.rules gathers them), its threshold in esxdiag.config.DEFAULT_THRESHOLDS; the
    engine, --set and every output pick it up."""
    import json
    from pathlib import Path

    from esxdiag import rules
    from esxdiag.cli import main
    from esxdiag.config import DEFAULT_THRESHOLDS

    def many_vnics(vm, t):
        if len(vm.vnics) < t["demo.vnics"]:
            return [RuleCheck("demo-many-vnics", "pass", f"{len(vm.vnics)} vNIC(s)")]
        return [Finding("demo-many-vnics", "info", vm.name, None, f"{vm.name} has {len(vm.vnics)} vNIC(s)",
                        "demonstration rule")]

    monkeypatch.setitem(DEFAULT_THRESHOLDS, "demo.vnics", 2.0)
    monkeypatch.setattr(rules, "VM_RULES", rules.VM_RULES + (many_vnics,))
    example = str(Path(__file__).resolve().parents[2] / "examples" / "healthy-vm")
    out = tmp_path / "r.json"

    assert main(["analyze", example, "--format", "json", "-o", str(out)]) == 0
    vm = json.loads(out.read_text())["vms"][0]
    assert {"rule": "demo-many-vnics", "status": "pass", "reason": "1 vNIC(s)", "vnic": None} in vm["checks"]
    assert main(["analyze", example, "--format", "json", "-o", str(out), "--set", "demo.vnics=1",
                 "--fail-on", "info"]) == 1
    assert [f["rule"] for f in json.loads(out.read_text())["vms"][0]["findings"]] == ["demo-many-vnics"]
    assert main(["analyze", example, "--format", "text", "--set", "demo.vnics=1"]) == 0
    assert "Findings: 0 critical, 0 warning, 1 info" in capsys.readouterr().out
