"""`esxdiag rings`: one screen answering "should the rx rings be raised?" per vNIC — the
verdict, the numbers behind it, what argues against it, and the exact commands (shown, never run).
Every line goes through esxdiag.terminal as a whole, so no interpolated name reaches the terminal raw."""

from __future__ import annotations

from esxdiag.result import AnalysisResult, Evidence
from esxdiag.reports.words import (count, counter_phrases, cpu_source, failed_headline, fmt, ring_phrases,
                                   verdict_headline, whole_window_words)
from esxdiag.terminal import safe_lines


def _evidence_line(e: Evidence) -> str:
    line = str(e.what) if e.observed is None else f"{e.what}: {fmt(e.observed)}"
    if e.unit:
        line += f" {e.unit}"
    if e.threshold is not None and e.comparison:
        line += f" (threshold {e.comparison} {fmt(e.threshold)})"
    return line


def render_rings(result: AnalysisResult) -> str:
    headline = failed_headline(result)
    out: list[str] = [headline] if headline else []
    for vm in result.vms:
        cpu = vm.cpu
        cpu_line = (f"per-vCPU %RDY max {fmt(cpu.get('ready_pct_max'))}, %CSTP max {fmt(cpu.get('costop_pct_max'))}, "
                    f"%MLMTD max {fmt(cpu.get('max_limited_pct_max'))} ({cpu_source(cpu)})"
                    + whole_window_words(cpu.get("whole_window")) if cpu else "CPU not measured")
        limit = f", CPU limit {vm.cpu_limit_mhz:,} MHz" if vm.cpu_limit_mhz else ""
        out.append(f"{vm.name}: {count(vm.vcpus, 'vCPU')}{limit}; {cpu_line}")
        if not vm.vnics:
            out.append("  no vNICs found")
        for nic in vm.vnics:
            where = f"port {nic.port}" if nic.port else "no host port"
            iface = f", guest {nic.guest_interface}" if nic.guest_interface else ""
            out.append(f"  {nic.label or 'vNIC'} {nic.mac} ({nic.type or '?'}, {where}{iface})")
            out.append(f"    -> {verdict_headline(nic.verdict)} [{nic.ring_verdict}]")
            out.append(f"       {nic.verdict.summary}")
            facts = counter_phrases(nic.metrics) + ring_phrases(nic.metrics)
            if facts:
                out.append("       " + "; ".join(facts))
            for e in nic.verdict.evidence_against:
                out.append(f"       against: {_evidence_line(e)}")
            for missing in nic.verdict.missing:
                out.append(f"       missing: {missing}")
            for fix in nic.verdict.remediation:
                out.append(f"       [{fix.os}] {fix.title}")
                out += [f"         $ {c}" for c in fix.commands]
                if fix.persistence:
                    out.append(f"         persist: {fix.persistence[0]}")
                if fix.disruption:
                    out.append(f"         disruption: {fix.disruption}")
                if fix.memory_cost:
                    out.append(f"         memory: {fix.memory_cost}")
    out.append("esxdiag shows these commands; it never runs them.")
    return safe_lines(out)
