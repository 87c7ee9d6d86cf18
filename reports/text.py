"""Terminal summary for humans: the layout of the terminal (wrapping, colour, what is said once).
The words it shares with the other renderers are in esxdiag.reports.words."""

from __future__ import annotations

import textwrap
from collections import Counter
from typing import Any

from esxdiag.reports.words import (count, counter_phrases, cpu_limit_words, cpu_max, cpu_source, failed_headline, fmt, held_words,
                                   ledger_shown, other_metrics, per_vcpu_table, ring_phrases, utc_time,
                                   verdict_headline, vcpu_words, vnic_prefix, whole_window_words, window_seconds)
from esxdiag.result import SEVERITIES, AnalysisResult, Remediation, VmResult, VnicResult
from esxdiag.terminal import safe_text

ANSI = {"critical": "\x1b[1;31m", "warning": "\x1b[1;33m", "info": "\x1b[1;34m", "bold": "\x1b[1m"}
ANSI_RESET = "\x1b[0m"


def first_remediation(vm: VmResult, vnic: VnicResult) -> Remediation | None:
    """The remediation for this guest's OS (or vSphere/any) that has a command, else the first one."""
    with_commands = [r for r in vnic.verdict.remediation if r.commands]
    preferred = [r for r in with_commands if r.os in (vm.guest_os, "vsphere", "esxi", "any")]
    return next(iter(preferred or with_commands), None)


class _Writer:
    def __init__(self, width: int, color: bool, said: tuple[str, ...] = ()):
        self.width, self.color = max(width, 40), color
        self.lines: list[str] = []
        self.said = said  # a failed run's failures, printed in full once (the first line)
        self.held = ""  # what a failed run's partial bundle holds, listed once in the first line

    def once(self, text: str) -> str:
        """A failure already printed in full is referred to, not repeated."""
        for why in self.said:
            text = text.replace(why, "see RUN FAILED above")
        if self.held:
            text = text.replace(f"holds {self.held}.", "holds what RUN FAILED lists above.")
        return text

    def paint(self, text: str, style: str | None) -> str:
        return f"{ANSI[style]}{text}{ANSI_RESET}" if self.color and style in ANSI else text

    def line(self, text: str, indent: int = 0, style: str | None = None) -> None:
        pad = " " * indent
        wrapped = textwrap.wrap(safe_text(self.once(text)), self.width, initial_indent=pad, subsequent_indent=pad + "  ",
                                break_on_hyphens=False) or [pad]
        self.lines += [self.paint(w, style) for w in wrapped]

    def raw(self, text: str, indent: int) -> None:
        """Unwrapped (commands must stay copyable)."""
        self.lines.append(" " * indent + safe_text(text))


def _nic_facts(metrics: dict[str, Any]) -> list[str]:
    extra = other_metrics(metrics)
    facts = []
    if "mtu" in extra:
        facts.append(f"MTU {fmt(extra.pop('mtu'))} bytes")
    if "rss_enabled" in extra:
        facts.append(f"RSS {'on' if extra.pop('rss_enabled') else 'off'}")
    driver = " ".join(str(extra.pop(k)) for k in ("driver", "driver_version") if k in extra)
    if driver:
        facts.append(f"driver {driver}")
    if "device_version" in extra:
        facts.append(f"vmxnet3 {extra.pop('device_version')} device")
    extra.pop("ring_size_source", None)  # a file path: the HTML report links it
    return facts + [f"{k}={fmt(v)}" for k, v in extra.items()]


def _cpu_line(vm: VmResult) -> str:
    rows = per_vcpu_table(vm)["rows"]
    per_vcpu = ", ".join(f"{vcpu_words(who)} {fmt(row['%RDY'][0])}" for who, row in rows if "%RDY" in row)
    source = cpu_source(vm.cpu)
    covered = (f", {fmt(vm.cpu['covered_s'])} s of {fmt(vm.cpu['window_s'])}" if vm.cpu.get("whole_window")
               and vm.cpu.get("covered_s") and vm.cpu.get("window_s") else "")
    return (f"CPU ({source}{covered}): %RDY max {fmt(cpu_max(vm, 'ready_pct'))}"
            f"{f' [{per_vcpu}]' if per_vcpu else ''}, %MLMTD max {fmt(cpu_max(vm, 'max_limited_pct'))}, "
            f"%CSTP max {fmt(cpu_max(vm, 'costop_pct'))}" + whole_window_words(vm.cpu.get("whole_window")))


def _vnic_block(out: _Writer, vm: VmResult, vnic: VnicResult) -> None:
    name = " ".join(str(p) for p in (vnic.label, vnic.mac, vnic.guest_interface) if p)
    out.line(f"{vnic_prefix(vnic.label)}{name or 'unidentified'} ({vnic.type or 'type unknown'}): "
             f"{verdict_headline(vnic.verdict).upper()}", indent=2, style="bold")
    out.line(vnic.verdict.summary, indent=4)
    numbers = counter_phrases(vnic.metrics)
    window = window_seconds(vnic.metrics)
    if numbers:
        out.line("; ".join(numbers) + (f" in {window:.0f} s" if window else ""), indent=4)
    if ledger_shown(vnic.verdict.ledger):
        out.line("ledger: " + vnic.verdict.ledger.words, indent=4)
    if ring_phrases(vnic.metrics):
        out.line("rings: " + ", ".join(ring_phrases(vnic.metrics)), indent=4)
    if _nic_facts(vnic.metrics):
        out.line("adapter: " + ", ".join(_nic_facts(vnic.metrics)), indent=4)
    for missing in vnic.verdict.missing:
        if missing not in out.said:  # the failure itself is the first line
            out.line(f"missing: {missing}", indent=4)
    remedy = first_remediation(vm, vnic)
    if remedy and vnic.ring_verdict == "insufficient-evidence":  # a change that is not about rings (e1000)
        out.line(" ".join(p for p in (f"change: {remedy.title}.", remedy.disruption, *remedy.notes) if p), indent=4)
    if remedy:
        where = OS_WORDS.get(remedy.os, remedy.os)
        out.line(f"{remedy.title} ({where}; shown, never run by esxdiag):", indent=4)
        for command in remedy.commands:  # every command the HTML shows; persistence and notes stay there
            out.raw(command, indent=6)


def vm_headline(vm: VmResult) -> str:
    """The VM's worst severity; without a finding, an unanswered vNIC is no all-clear."""
    worst = vm.worst_severity()
    if worst is None and any(n.ring_verdict == "insufficient-evidence" for n in vm.vnics):
        return "insufficient evidence"
    return worst or "no findings"


def _vm_block(out: _Writer, vm: VmResult, verbose: bool = False) -> None:
    worst = vm.worst_severity()
    out.line(f"VM {vm.name}  [{vm_headline(vm).upper()}]", style=worst or "bold")
    out.line(f"host {vm.host or 'n/a'}, guest {vm.guest_os or 'unknown'}, {vm.power_state or 'power n/a'}, "
             f"{count(vm.vcpus, 'vCPU')}, CPU limit {cpu_limit_words(vm)}", indent=2)
    out.line(_cpu_line(vm), indent=2)
    for vnic in vm.vnics:
        _vnic_block(out, vm, vnic)
    for finding in vm.findings:  # every finding by its title, info too: a count alone says nothing
        out.line(f"{finding.severity.upper()}: {finding.title}", indent=2, style=finding.severity)
        remedy = next((r for r in finding.remediation if r.os in (vm.guest_os, "vsphere", "esxi", "any")),
                      finding.remediation[0] if finding.remediation else None)
        if remedy:
            out.line(f"remedy ({remedy.os}): {remedy.title}", indent=4)
            shown = {c for n in vm.vnics if (r := first_remediation(vm, n)) for c in r.commands}
            new = [command for command in remedy.commands if command not in shown]
            for command in new:  # the commands the HTML shows, unless a vNIC above showed them
                out.raw(command, indent=6)
            if new and remedy.disruption:
                out.line(f"disruption: {remedy.disruption}", indent=6)
        elif finding.rule in SAID_IN_FULL:  # its title alone says nothing
            out.line(finding.summary, indent=4)
    for note in vm.notes:
        out.line(f"note: {note}", indent=2)
    if verbose:
        for line in dict.fromkeys(f"{c.status}: {c.rule}: {c.reason}" for c in vm.checks if c.status != "pass"):
            out.line(line, indent=2)  # a check skipped the same way on every vNIC is said once


def window_words(result: AnalysisResult) -> str:
    """The window as asked and as the counters measured it, said once (the figures below give rates over it)."""
    asked = result.bundle.get("window_s")
    measured = next((w for vm in result.vms for n in vm.vnics if (w := window_seconds(n.metrics))), None)
    if asked is None:
        return f"counters read {measured:.0f} s apart" if measured else "no window recorded"
    if measured is None or abs(measured - asked) <= 1:
        return f"window {fmt(asked)} s"
    return f"window {fmt(asked)} s (counters read {measured:.0f} s apart)"


OS_WORDS = {"linux": "in the Linux guest", "windows": "in the Windows guest, PowerShell",
            "vsphere": "PowerCLI / govc", "esxi": "in the ESXi shell", "any": "anywhere"}
SAID_IN_FULL = ("data-quality",)  # findings whose title is a heading: the terminal shows their text


def render_text(result: AnalysisResult, width: int = 100, color: bool = False, verbose: bool = False) -> str:
    """The terminal summary: per VM and vNIC verdict, numbers and first command; then counts and gaps."""
    out = _Writer(width, color)
    if headline := failed_headline(result):  # first: what failed, before anything that reads like an answer
        out.line(headline, style="critical")
        out.said = tuple(result.bundle.get("failed") or ())
        out.held = ", ".join(held_words(result.coverage))
    created = f", collected {utc_time(result.bundle['created'])}" if result.bundle.get("created") else ""
    out.line(f"{result.tool} summary: bundle {result.bundle.get('path', 'n/a')}{created}, "
             f"{window_words(result)}", style="bold")
    if not result.vms:
        out.line("No VMs in this bundle.")
    for vm in result.vms:
        out.lines.append("")
        _vm_block(out, vm, verbose)
    counts = Counter(f.severity for f in result.all_findings())
    out.lines.append("")
    out.line("Findings: " + ", ".join(f"{fmt(counts.get(s, 0))} {s}" for s in SEVERITIES))
    gaps = [c for c in result.coverage if not c.used]
    for gap in gaps:
        kind = f" ({gap.error_kind})" if gap.error_kind else ""
        target = f" on {gap.target}" if gap.target else ""
        head = "not collected" if gap.status in ("failed", "not-collected") else "not used"
        out.line(f"{head}: {gap.what}{target}: {gap.status}{kind}: {gap.why or 'no reason recorded'}")
    for item in result.coverage:
        for warning in item.warnings:
            out.line(f"capture warning: {item.file or item.what}: {warning}")
    partial = sum(1 for c in result.coverage if c.status == "partial")
    out.line(f"Coverage: {fmt(len(result.coverage) - len(gaps))} of {fmt(len(result.coverage))} inputs read"
             + (f" ({fmt(partial)} partial: lines skipped or values doubted, see the warnings)." if partial else "."))
    for note in result.notes:
        out.line(f"note: {note}")
    return "\n".join(out.lines) + "\n"
