"""One offline HTML file: inline CSS and SVG, no scripts, everything from the result autoescaped.

The template shows what an engineer would write up: the deciding evidence first, the evidence
against next, the rest folded; plain labels and units; where each figure came from in words."""

from __future__ import annotations

import os
import pathlib
from collections import defaultdict
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from esxdiag.reports import charts, words
from esxdiag.result import SEVERITIES, AnalysisResult, Finding, Series, VmResult, VnicResult

SEVERITY_CLASSES = {"critical", "warning", "info"}
SEVERITY_ICONS = {"critical": "\u25b2", "warning": "\u25c6", "info": "\u25cf"}  # shape as well as colour
VERDICT_CLASSES = {
    "raise-ring1": "act", "raise-ring2": "act", "enable-rss": "act", "at-max": "act",
    "cpu-limit-first": "cpu", "cpu-contention-first": "cpu", "memory-first": "cpu", "guest-saturated": "cpu", "driver-drops": "act",
    "drops-elsewhere": "act", "not-needed": "ok", "past-exhaustion-only": "ok", "insufficient-evidence": "unknown",
}
# threshold lines on each per-vCPU chart: (name, key of esxdiag.config.DEFAULT_THRESHOLDS)
CHART_THRESHOLDS = {"%RDY": (("warning", "cpu.ready_pct_warning"), ("critical", "cpu.ready_pct_critical")),
                    "%CSTP": (("warning", "cpu.costop_pct"),), "%MLMTD": (("warning", "cpu.max_limited_pct"),),
                    "%SWPWT": (("warning", "cpu.swap_wait_pct"),)}
CPU_WORDS = {"%RDY": "ready", "%CSTP": "co-stop", "%MLMTD": "held back by a CPU limit",
             "%SWPWT": "waiting for swapped memory"}
COUNTER_WORDS = {  # metrics key -> (what, where)
    "ring1_full": ("Ring 1 full", "host"), "ring2_full": ("Ring 2 full", "host"),
    "host_out_of_buffers": ("Out-of-buffer drops", "host"), "dropped_rx": ("droppedRx", "host port"),
    "guest_oob": ("pkts rx OOB", "guest"), "guest_discards": ("Received packets discarded", "guest"),
}
MANY_SAMPLES = 3  # a counter read this many times or more is also drawn over time


def environment() -> Environment:
    """The Jinja2 environment of every esxdiag page: autoescaped, strict, with the report's filters."""
    env = Environment(loader=PackageLoader("esxdiag.templates", "."), autoescape=True,
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["fmt"] = words.fmt
    env.filters["verdict_words"] = words.verdict_words
    env.filters["severity_class"] = lambda s: s if s in SEVERITY_CLASSES else "unknown"
    env.filters["severity_icon"] = lambda s: SEVERITY_ICONS.get(s, "\u25cb")
    env.filters["verdict_class"] = lambda v: VERDICT_CLASSES.get(v, "unknown")
    env.filters["source_words"] = words.source_words
    env.filters["utc"] = words.utc_time
    env.filters["plural"] = words.count
    return env


def source_href(source: str, bundle_root: pathlib.Path | None, report_path: pathlib.Path | None) -> str:
    """A relative link to a bundle file; percent-encoded, so it can never carry a URL scheme."""
    path = source.replace("\\", "/")
    if bundle_root is not None and report_path is not None:
        target = pathlib.Path(bundle_root).resolve() / path.lstrip("/")
        path = os.path.relpath(target, pathlib.Path(report_path).resolve().parent).replace(os.sep, "/")
    return quote(path, safe="/")


def cpu_table(vm: VmResult) -> dict[str, Any]:
    """words.per_vcpu_table with vCPUs named in words ("vCPU 0", not "vmx-vcpu-0:name")."""
    table = words.per_vcpu_table(vm)
    return {**table, "rows": [(words.vcpu_words(who), row) for who, row in table["rows"]]}


def vm_charts(vm: VmResult, thresholds: dict[str, float]) -> list[Markup]:
    if not vm.charts:
        return [Markup(charts.no_data_chart("CPU over the window", "no per-vCPU samples for this VM"))]
    groups: dict[str, list[Series]] = defaultdict(list)
    for one in vm.charts:
        if any(v is not None for v in one.values):
            metric, who = words.split_cpu_label(one)
            label = "VM total / vCPUs" if who == "per-vCPU average" else words.vcpu_words(who)
            groups[metric].append(Series(label, one.unit, one.times, one.values, one.source))
    rendered = []
    for metric, series in groups.items():
        if metric != "%RDY" and not any(v for one in series for v in one.values):
            continue  # a flat zero line answers nothing: the CPU table already shows the 0
        lines = [(name, thresholds[key]) for name, key in CHART_THRESHOLDS.get(metric, ()) if key in thresholds]
        title = (f"{metric} per vCPU: time {CPU_WORDS[metric]}" if metric in CPU_WORDS
                 else f"{metric} over the window")
        # Markup is safe here: charts escapes every piece of text it places in the SVG.
        rendered.append(Markup(charts.line_chart(series, title, series[0].unit, lines)))
    return rendered


def counter_rows(metrics: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for key, label in words.COUNTERS:
        c = metrics.get(key)
        if isinstance(c, dict):
            what, where = COUNTER_WORDS.get(key, (label, ""))
            rows.append({"what": what, "where": where, "c": c, "source": c.get("source")})
    return rows


def vnic_charts(vnic: VnicResult) -> list[Markup]:
    """Rates over the window side by side (one chart, one axis); counters read many times are also
    drawn as per-second rates over time. None when no counter was read at both ends."""
    bars = [(f"{r['what']} ({r['where']})", r["c"]["per_s"], f"/s over {words.fmt(r['c'].get('seconds'))} s")
            for r in counter_rows(vnic.metrics) if r["c"].get("per_s") is not None]
    out = []
    if bars:
        out.append(Markup(charts.rate_bars(bars, "Rates over the window (per second)", "per second")))
    many = [charts.interval_rates(s) for s in vnic.charts if "cumulative" in s.unit and len(s.times) >= MANY_SAMPLES]
    if many:
        out.append(Markup(charts.line_chart(many, "Counter rates per sample interval", "per second")))
    return out  # no chart without rates: "Not available" in the card says what is missing


def adapter_facts(vnic: VnicResult) -> list[tuple[str, str]]:
    """(label, value with unit) for the adapter: driver, rings of their maximum, queues, MTU, RSS."""
    m = vnic.metrics
    facts = []
    if m.get("driver"):
        facts.append(("Guest driver", " ".join(str(m[k]) for k in ("driver", "driver_version") if m.get(k))))
    for ring in (1, 2):
        if m.get(f"ring{ring}_size") is not None:
            largest = m.get(f"ring{ring}_max")
            of = f" of {words.fmt(largest)}" if largest else ""
            facts.append((f"RX ring {ring}", f"{words.fmt(m[f'ring{ring}_size'])}{of} entries per queue"))
    if m.get("rx_queues") is not None:
        facts.append(("RX queues", words.fmt(m["rx_queues"])))
    if m.get("mtu") is not None:
        facts.append(("MTU", f"{words.fmt(m['mtu'])} bytes"))
    if m.get("rss_enabled") is not None:
        facts.append(("Receive Side Scaling", "on" if m["rss_enabled"] else "off"))
    shown = {"driver", "driver_version", "ring1_size", "ring2_size", "ring1_max", "ring2_max", "rx_queues", "mtu",
             "rss_enabled", "ring_size_source", "vcenter_dropped_rx"} | {key for key, _ in words.COUNTERS}
    facts += [(key.replace("_", " ").capitalize(), words.fmt(value)) for key, value in m.items()
              if key not in shown and value is not None and not isinstance(value, dict)]
    return facts


def vnic_view(vm: VmResult, vnic: VnicResult) -> dict[str, Any]:
    deciding, folded = words.split_evidence(vnic.verdict.evidence)
    return {
        "vnic": vnic, "deciding": deciding, "folded": folded, "adapter": adapter_facts(vnic),
        "ring_source": vnic.metrics.get("ring_size_source"), "counters": counter_rows(vnic.metrics),
        "vcenter_drops": vnic.metrics.get("vcenter_dropped_rx"),
        "counter_phrases": words.counter_phrases(vnic.metrics), "charts": vnic_charts(vnic),
        "disagreements": [f for f in vm.findings if f.rule == "drop-sources" and f.vnic == vnic.mac],
        "ledger": vnic.verdict.ledger if words.ledger_shown(vnic.verdict.ledger) else None,
    }


def sorted_findings(findings: tuple[Finding, ...]) -> list[Finding]:
    return sorted(findings, key=lambda f: (words.severity_rank(f.severity), f.rule, f.title))


def render_html(result: AnalysisResult, bundle_root: pathlib.Path | None = None,
                report_path: pathlib.Path | None = None) -> str:
    env = environment()
    env.filters["href"] = lambda source: source_href(source, bundle_root, report_path)
    vms = []
    for index, vm in enumerate(result.vms):
        vms.append({
            "vm": vm, "anchor": f"vm-{index}", "worst": vm.worst_severity(), "cpu_table": cpu_table(vm),
            "cpu_file": next((one.source for one in vm.charts if one.source), None),
            "cpu_limit": words.cpu_limit_words(vm), "findings": sorted_findings(vm.findings),
            "charts": vm_charts(vm, result.thresholds),
            "vnics": [vnic_view(vm, vnic) for vnic in vm.vnics],
        })
    gaps = [item for item in result.coverage if not item.used]
    counts = {s: sum(1 for f in result.all_findings() if f.severity == s) for s in SEVERITIES}
    return env.get_template("report.html.j2").render(
        result=result, vms=vms, gaps=gaps, counts=counts, worst=result.worst_severity(),
        failed=(words.failed_headline(result) or "").removeprefix("RUN FAILED: "),  # the badge says it
        collected=len(result.coverage) - len(gaps),
        partial=sum(1 for item in result.coverage if item.status == "partial"))
