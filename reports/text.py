"""Terminal summary for humans, and the wording both the text and HTML reports share.

Keys read from the result (written by the engine):
  VnicResult.metrics: window_s, rx_queues, ring1_size, ring1_max, ring2_size, ring2_max and, per
    counter in COUNTERS, <name>_delta (growth in the window) and <name>_per_s (rate). Other keys
    are shown as key=value so nothing the engine adds is hidden.
  VmResult.cpu: source ("esxtop"/"vcenter"), interval_s, samples, per_vcpu: a list of
    {"vcpu": id, "rdy_max", "rdy_avg", "cstp_max", "cstp_avg", "mlmtd_max", "mlmtd_avg", ...}.
"""

from __future__ import annotations

import re
import textwrap
from collections import Counter
from typing import Any

from esxdiag.result import SEVERITIES, AnalysisResult, Remediation, VmResult, VnicResult

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
}
COUNTERS = (
    ("ring1_full", "ring-1-full"),
    ("ring2_full", "ring-2-full"),
    ("oob_drops", "out-of-buffer drops"),
    ("guest_oob", "guest pkts rx OOB"),
    ("dropped_rx", "droppedRx"),
)
RING_KEYS = ("window_s", "rx_queues", "ring1_size", "ring1_max", "ring2_size", "ring2_max")
CPU_METRICS = (("rdy", "%RDY"), ("cstp", "%CSTP"), ("mlmtd", "%MLMTD"), ("swpwt", "%SWPWT"))
ANSI = {"critical": "\x1b[1;31m", "warning": "\x1b[1;33m", "info": "\x1b[1;34m", "bold": "\x1b[1m"}
ANSI_RESET = "\x1b[0m"
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def verdict_words(verdict: str) -> str:
    return VERDICT_WORDS.get(verdict, verdict)


def severity_rank(severity: str | None) -> int:
    return SEVERITIES.index(severity) if severity in SEVERITIES else len(SEVERITIES)


def worst_severity(vm: VmResult) -> str | None:
    ranked = sorted((f.severity for f in vm.findings), key=severity_rank)
    return ranked[0] if ranked else None


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
    return "none (unlimited)" if vm.cpu_limit_mhz is None else f"{vm.cpu_limit_mhz:,} MHz"


def per_vcpu_rows(vm: VmResult) -> list[dict[str, Any]]:
    rows = vm.cpu.get("per_vcpu") or []
    return [row for row in rows if isinstance(row, dict)]


def cpu_max(vm: VmResult, metric: str) -> float | None:
    values = [row.get(f"{metric}_max") for row in per_vcpu_rows(vm)]
    values = [v for v in values if isinstance(v, (int, float))]
    return max(values) if values else None


def counter_phrases(metrics: dict[str, Any]) -> list[str]:
    phrases = []
    for key, label in COUNTERS:
        if f"{key}_delta" in metrics:
            rate = metrics.get(f"{key}_per_s")
            suffix = f" ({fmt(rate)}/s)" if rate is not None else ""
            phrases.append(f"{label} +{fmt(metrics[f'{key}_delta'])}{suffix}")
    return phrases


def ring_phrases(metrics: dict[str, Any]) -> list[str]:
    phrases = []
    for ring in ("ring1", "ring2"):
        if f"{ring}_size" in metrics:
            phrases.append(f"ring {ring[-1]} {metrics[f'{ring}_size']}/{metrics.get(f'{ring}_max', 'n/a')}")
    if "rx_queues" in metrics:
        phrases.append(f"rx queues {fmt(metrics['rx_queues'])}")
    return phrases


def other_metrics(metrics: dict[str, Any]) -> dict[str, Any]:
    known = set(RING_KEYS) | {f"{k}_{s}" for k, _ in COUNTERS for s in ("delta", "per_s")}
    return {k: v for k, v in metrics.items() if k not in known}


def first_remediation(vm: VmResult, vnic: VnicResult) -> Remediation | None:
    """The remediation for this guest's OS (or vSphere/any) that has a command, else the first one."""
    with_commands = [r for r in vnic.verdict.remediation if r.commands]
    preferred = [r for r in with_commands if r.os in (vm.guest_os, "vsphere", "any")]
    return (preferred or with_commands or [None])[0]


def safe_text(value: Any) -> str:
    """Untrusted text for a terminal: control characters (escape sequences) made visible."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", str(value))


class _Writer:
    def __init__(self, width: int, color: bool):
        self.width, self.color, self.lines = max(width, 40), color, []

    def paint(self, text: str, style: str | None) -> str:
        return f"{ANSI[style]}{text}{ANSI_RESET}" if self.color and style in ANSI else text

    def line(self, text: str, indent: int = 0, style: str | None = None) -> None:
        pad = " " * indent
        wrapped = textwrap.wrap(safe_text(text), self.width, initial_indent=pad, subsequent_indent=pad + "  ",
                                break_on_hyphens=False) or [pad]
        self.lines += [self.paint(w, style) for w in wrapped]

    def raw(self, text: str, indent: int) -> None:
        """Unwrapped (commands must stay copyable)."""
        self.lines.append(" " * indent + safe_text(text))


def _vm_block(out: _Writer, vm: VmResult) -> None:
    worst = worst_severity(vm)
    head = f"VM {safe_text(vm.name)}  [{(worst or 'no findings').upper()}]"
    out.line(head, style=worst or "bold")
    out.line(f"host {safe_text(vm.host or 'n/a')}, guest {safe_text(vm.guest_os or 'unknown')}, "
             f"vCPUs {fmt(vm.vcpus)}, CPU limit {cpu_limit_words(vm)}", indent=2)
    rdy, mlmtd = cpu_max(vm, "rdy"), cpu_max(vm, "mlmtd")
    per_vcpu = ", ".join(f"vCPU {safe_text(r.get('vcpu'))} {fmt(r.get('rdy_max'))}" for r in per_vcpu_rows(vm))
    source = safe_text(vm.cpu.get("source", "source unknown"))
    out.line(f"CPU ({source}): %RDY max {fmt(rdy)} [{per_vcpu or 'no per-vCPU data'}], "
             f"%MLMTD max {fmt(mlmtd)}, %CSTP max {fmt(cpu_max(vm, 'cstp'))}", indent=2)
    for vnic in vm.vnics:
        name = " ".join(safe_text(p) for p in (vnic.label, vnic.mac, vnic.guest_interface) if p)
        out.line(f"vNIC {name or 'unidentified'} ({safe_text(vnic.type or 'type unknown')}): "
                 f"{verdict_words(vnic.ring_verdict).upper()}", indent=2, style="bold")
        out.line(safe_text(vnic.verdict.summary), indent=4)
        numbers = counter_phrases(vnic.metrics)
        window = vnic.metrics.get("window_s")
        if numbers:
            out.line("; ".join(numbers) + (f" in {fmt(window)} s" if window is not None else ""), indent=4)
        if ring_phrases(vnic.metrics):
            out.line("rings current/max: " + ", ".join(ring_phrases(vnic.metrics)), indent=4)
        extra = other_metrics(vnic.metrics)
        if extra:
            out.line("other: " + ", ".join(f"{safe_text(k)}={safe_text(fmt(v))}" for k, v in extra.items()),
                     indent=4)
        for missing in vnic.verdict.missing:
            out.line(f"missing: {safe_text(missing)}", indent=4)
        remedy = first_remediation(vm, vnic)
        if remedy:
            out.line(f"first command ({safe_text(remedy.os)}, shown, never run by esxdiag):", indent=4)
            out.raw(safe_text(remedy.commands[0]), indent=6)


def render_text(result: AnalysisResult, width: int = 100, color: bool = False) -> str:
    """The terminal summary: per VM and vNIC verdict, numbers and first command; then counts and gaps."""
    out = _Writer(width, color)
    out.line(f"{safe_text(result.tool)} summary: bundle {safe_text(result.bundle.get('path', 'n/a'))}, "
             f"window {fmt(result.bundle.get('window_s'))} s", style="bold")
    if not result.vms:
        out.line("No VMs in this bundle.")
    for vm in result.vms:
        out.lines.append("")
        _vm_block(out, vm)
    counts = Counter(f.severity for f in result.all_findings())
    out.lines.append("")
    out.line("Findings: " + ", ".join(f"{counts.get(s, 0)} {s}" for s in SEVERITIES))
    gaps = [c for c in result.coverage if c.status != "collected"]
    for gap in gaps:
        kind = f" ({safe_text(gap.error_kind)})" if gap.error_kind else ""
        target = f" on {safe_text(gap.target)}" if gap.target else ""
        out.line(f"not collected: {safe_text(gap.what)}{target}: {safe_text(gap.status)}{kind}: "
                 f"{safe_text(gap.why or 'no reason recorded')}")
    collected = len(result.coverage) - len(gaps)
    out.line(f"Coverage: {collected} of {len(result.coverage)} inputs collected.")
    return "\n".join(out.lines) + "\n"
