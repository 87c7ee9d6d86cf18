"""Terminal summary for humans, and the wording both the text and HTML reports share.

Shapes read from the result (as esxdiag.engine writes them):
  VnicResult.metrics: ring1_size, ring1_max, ring2_size, ring2_max, rx_queues, ring_size_source, mtu,
    rss_enabled, driver, driver_version, and per counter in COUNTERS a dict
    {"delta", "total", "seconds", "per_s", "reset"}. Unknown keys are still shown as key=value.
  VmResult.cpu: source, normalisation, samples, <ready|costop|max_limited|swap_wait>_pct_<max|avg>.
  VmResult.charts: per-vCPU Series labelled "<%RDY|%CSTP|%MLMTD|%SWPWT> <who>", e.g. "%RDY vCPU 0".
"""

from __future__ import annotations

import re
import textwrap
from collections import Counter
from typing import Any, TypeGuard

from esxdiag.reports.words import count, held_words, utc_time, vcpu_words, vnic_prefix
from esxdiag.result import SEVERITIES, AnalysisResult, DropLedger, Remediation, RingVerdict, Series, VmResult, VnicResult
from esxdiag.terminal import safe_text

VERDICT_WORDS = {
    "raise-ring1": "Raise RX ring 1",
    "raise-ring2": "Raise RX ring 2",
    "cpu-limit-first": "CPU limit first",
    "cpu-contention-first": "CPU contention first",
    "at-max": "Rings already at maximum",
    "enable-rss": "Enable RSS",
    "not-needed": "No ring change needed",
    "past-exhaustion-only": "Past exhaustion only",
    "insufficient-evidence": "Insufficient evidence",
    "drops-elsewhere": "Drops elsewhere, not the ring",
    "memory-first": "Host memory first",
    "guest-saturated": "Guest CPU saturated",
    "driver-drops": "Drops in the NIC's own driver",
}
COUNTERS = (
    ("ring1_full", "ring-1-full"),
    ("ring2_full", "ring-2-full"),
    ("host_out_of_buffers", "out-of-buffer drops"),
    ("dropped_rx", "host port droppedRx (clientStats)"),  # not vCenter's net.droppedRx: named where it is
    ("guest_oob", "guest pkts rx OOB"),
    ("guest_discards", "guest rx discards"),
)
RING_KEYS = ("ring1_size", "ring1_max", "ring2_size", "ring2_max", "rx_queues")
CPU_METRICS = (("ready_pct", "%RDY"), ("costop_pct", "%CSTP"), ("max_limited_pct", "%MLMTD"),
               ("swap_wait_pct", "%SWPWT"))
METRIC_TOKEN = re.compile(r"%[A-Za-z]+")
ANSI = {"critical": "\x1b[1;31m", "warning": "\x1b[1;33m", "info": "\x1b[1;34m", "bold": "\x1b[1m"}
ANSI_RESET = "\x1b[0m"


def verdict_words(verdict: str) -> str:
    return VERDICT_WORDS.get(verdict, verdict)


def verdict_headline(verdict: RingVerdict) -> str:
    """The verdict's name, with what it rests on when that is less than the host's ring counters."""
    words = verdict_words(verdict.verdict)
    return f"{words}: {verdict.basis}" if verdict.basis else words


def failed_headline(result: AnalysisResult) -> str | None:
    """A failed run's first line: what failed and what the partial bundle holds, never a verdict."""
    failed = result.bundle.get("failed") or ()
    if not failed:
        return None
    held = held_words(result.coverage)
    return (f"RUN FAILED: {'; '.join(failed)}. No verdict from a failed run; the partial bundle holds: "
            f"{', '.join(held) if held else 'no capture'}.")


def severity_rank(severity: str | None) -> int:
    return SEVERITIES.index(severity) if severity in SEVERITIES else len(SEVERITIES)


def fmt(value: Any) -> str:
    """Numbers with thousands separators and at most two decimals; None as n/a."""
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.0f}" if value.is_integer() else f"{value:,.2f}".rstrip("0").rstrip(".")
    return str(value)


def cpu_limit_words(vm: VmResult) -> str:
    if vm.cpu_limit_mhz is not None:
        return f"{vm.cpu_limit_mhz:,} MHz"
    # no power state means no vCenter inventory was read: the limit is unknown, not absent
    return "unknown (no vCenter inventory)" if vm.power_state is None else "none (unlimited)"


def split_cpu_label(series: Series) -> tuple[str, str]:
    """("%RDY", "vCPU 0") from "%RDY vCPU 0"; series without a %TOKEN are grouped under their unit."""
    found = METRIC_TOKEN.search(series.label)
    if not found:
        return series.unit, series.label
    who = (series.label[:found.start()] + series.label[found.end():]).strip()
    return found.group(), who or "all vCPUs"


def _stats(values: list[float]) -> tuple[float | None, float | None]:
    return (max(values), sum(values) / len(values)) if values else (None, None)


def per_vcpu_table(vm: VmResult) -> dict[str, Any]:
    """From the VM's per-vCPU chart series: one row per vCPU with every per-vCPU figure, and a
    summary over all vCPUs computed the same way for every metric (window max of any sample, mean
    of every sample). A metric the capture has only for the whole VM (divided by the vCPU count,
    "per-vCPU average") appears in the summary alone and is listed in "whole_vm"."""
    per_metric: dict[str, dict[str, list[float]]] = {}
    for series in vm.charts:
        metric, who = split_cpu_label(series)
        if metric.startswith("%"):
            per_metric.setdefault(metric, {})[who] = [v for v in series.values if v is not None]
    metrics = [m for m in per_metric if any(per_metric[m].values())]
    vcpus = sorted({who for m in metrics for who in per_metric[m] if who != "per-vCPU average"},
                   key=lambda who: (len(who), who))
    rows = [(who, {m: _stats(per_metric[m][who]) for m in metrics if who in per_metric[m]}) for who in vcpus]
    return {"metrics": metrics, "rows": rows,
            "summary": {m: _stats([v for values in per_metric[m].values() for v in values]) for m in metrics},
            "whole_vm": [m for m in metrics if not any(who in per_metric[m] for who in vcpus)],
            "samples": max((len(v) for m in metrics for v in per_metric[m].values()), default=0)}


def cpu_max(vm: VmResult, key: str) -> float | None:
    """Window maximum for ready_pct / costop_pct / max_limited_pct, from the summary or the series."""
    value = vm.cpu.get(f"{key}_max")
    if isinstance(value, (int, float)):
        return value
    return per_vcpu_table(vm)["summary"].get(dict(CPU_METRICS)[key], (None,))[0]


def counter_windows(metrics: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(key, label, metrics[key]) for key, label in COUNTERS if isinstance(metrics.get(key), dict)]


def counter_phrases(metrics: dict[str, Any]) -> list[str]:
    """Each counter's growth, or its one reading and what that counts from: the vNIC's start, or the move
    that connected the port it was read on (one phrase for the counters it applies to)."""
    phrases: list[str | list[str]] = []
    since: dict[str, list[str]] = {}
    for _, label, c in counter_windows(metrics):
        if c.get("reset"):
            phrases.append(f"{label}: counter reset in the window")
        elif c.get("delta") is None and c.get("since"):
            if c["since"] not in since:
                since[c["since"]] = []
                phrases.append([c["since"]])
            since[c["since"]].append(f"{label} {fmt(c.get('total'))}")
        elif c.get("delta") is None:
            phrases.append(f"{label} {fmt(c.get('total'))} since vNIC init (one reading)")
        else:
            rate = f" ({fmt(c['per_s'])}/s)" if c.get("per_s") is not None else ""
            phrases.append(f"{label} +{fmt(c['delta'])}{rate}")
    return [p if isinstance(p, str) else f"{', '.join(since[p[0]])} {p[0]} (one reading)" for p in phrases]


def window_seconds(metrics: dict[str, Any]) -> float | None:
    return next((c["seconds"] for _, _, c in counter_windows(metrics) if c.get("seconds")), None)


def ring_phrases(metrics: dict[str, Any]) -> list[str]:
    phrases = []
    for ring in ("ring1", "ring2"):
        if metrics.get(f"{ring}_size") is not None:
            phrases.append(f"ring {ring[-1]} {fmt(metrics[f'{ring}_size'])} of {fmt(metrics.get(f'{ring}_max'))}")
    if metrics.get("rx_queues") is not None:
        phrases.append(f"rx queues {fmt(metrics['rx_queues'])}")
    return phrases


def other_metrics(metrics: dict[str, Any]) -> dict[str, Any]:
    known = set(RING_KEYS) | {key for key, _ in COUNTERS}
    return {k: v for k, v in metrics.items() if k not in known and v is not None and not isinstance(v, dict)}


def ledger_shown(ledger: DropLedger | None) -> TypeGuard[DropLedger]:
    """A ledger says something when the port dropped frames or a counter that explains drops rose."""
    return ledger is not None and bool(ledger.port_drops or any(line.delta for line in ledger.lines
                                                                if line.counted or line.cause == "uplink"))


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


def cpu_source(cpu: dict[str, Any]) -> str:
    """"esxtop", or "esxtop, lower bound" when the vCPU count was unknown (VmResult.cpu["bound"])."""
    bound = cpu.get("bound")
    return (cpu.get("source") or "no CPU source") + (f", {bound} bound" if bound not in (None, "exact") else "")


def _cpu_line(vm: VmResult) -> str:
    rows = per_vcpu_table(vm)["rows"]
    per_vcpu = ", ".join(f"{vcpu_words(who)} {fmt(row['%RDY'][0])}" for who, row in rows if "%RDY" in row)
    source = cpu_source(vm.cpu)
    covered = (f", {fmt(vm.cpu['covered_s'])} s of {fmt(vm.cpu['window_s'])}" if vm.cpu.get("whole_window")
               and vm.cpu.get("covered_s") and vm.cpu.get("window_s") else "")
    return (f"CPU ({source}{covered}): %RDY max {fmt(cpu_max(vm, 'ready_pct'))}"
            f"{f' [{per_vcpu}]' if per_vcpu else ''}, %MLMTD max {fmt(cpu_max(vm, 'max_limited_pct'))}, "
            f"%CSTP max {fmt(cpu_max(vm, 'costop_pct'))}" + whole_window_words(vm.cpu.get("whole_window")))


def whole_window_words(whole: dict[str, Any] | None) -> str:
    """vCenter's figures for the whole window, when esxtop covered part of it and both were judged."""
    if not whole:
        return ""
    return (f"; {whole.get('source')} over the whole window (judged too: the worse decides): "
            f"%RDY avg {fmt(whole.get('ready_pct_avg'))} max {fmt(whole.get('ready_pct_max'))}, "
            f"%MLMTD max {fmt(whole.get('max_limited_pct_max'))}, %CSTP max {fmt(whole.get('costop_pct_max'))}")


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
