"""One offline HTML file: inline CSS and SVG, no scripts, everything from the result autoescaped."""

from __future__ import annotations

import os
import pathlib
from collections import defaultdict
from urllib.parse import quote

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from esxdiag.reports import charts, text
from esxdiag.result import SEVERITIES, AnalysisResult, Finding, Series, VmResult

SEVERITY_CLASSES = {"critical", "warning", "info"}
VERDICT_CLASSES = {
    "raise-ring1": "act", "raise-ring2": "act", "enable-rss": "act", "at-max": "act",
    "cpu-limit-first": "cpu", "cpu-contention-first": "cpu",
    "not-needed": "ok", "past-exhaustion-only": "ok", "insufficient-evidence": "unknown",
}
# the threshold drawn on each per-vCPU chart (keys of esxdiag.config.DEFAULT_THRESHOLDS)
CHART_THRESHOLDS = {"%RDY": "cpu.ready_pct_critical", "%CSTP": "cpu.costop_pct",
                    "%MLMTD": "cpu.max_limited_pct", "%SWPWT": "cpu.swap_wait_pct"}
CPU_LABELS = {"source": "source", "normalisation": "normalisation", "samples": "samples",
              "vcpus_source": "vCPU count from"}


def _environment() -> Environment:
    env = Environment(loader=PackageLoader("esxdiag.templates", "."), autoescape=True,
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["fmt"] = text.fmt
    env.filters["fact"] = lambda v: text.fmt(v) if v is None or isinstance(v, (bool, float)) else str(v)
    env.filters["verdict_words"] = text.verdict_words
    env.filters["severity_class"] = lambda s: s if s in SEVERITY_CLASSES else "unknown"
    env.filters["verdict_class"] = lambda v: VERDICT_CLASSES.get(v, "unknown")
    return env


def source_href(source: str, bundle_root: pathlib.Path | None, report_path: pathlib.Path | None) -> str:
    """A relative link to a bundle file; percent-encoded, so it can never carry a URL scheme."""
    path = source.replace("\\", "/")
    if bundle_root is not None and report_path is not None:
        target = pathlib.Path(bundle_root).resolve() / path.lstrip("/")
        path = os.path.relpath(target, pathlib.Path(report_path).resolve().parent).replace(os.sep, "/")
    return quote(path, safe="/")


def vm_charts(vm: VmResult, thresholds: dict[str, float]) -> list[Markup]:
    if not vm.charts:
        return [Markup(charts.no_data_chart("CPU over the window", "no per-vCPU samples for this VM"))]
    groups: dict[str, list[Series]] = defaultdict(list)
    for one in vm.charts:
        groups[text.split_cpu_label(one)[0]].append(one)
    rendered = []
    for metric, series in groups.items():
        threshold = thresholds.get(CHART_THRESHOLDS.get(metric, ""))
        title = f"{metric} per vCPU" if metric.startswith("%") else f"{metric} over the window"
        # Markup is safe here: charts escapes every piece of text it places in the SVG.
        rendered.append(Markup(charts.line_chart(series, title, series[0].unit, threshold)))
    return rendered


def vnic_charts(series: tuple[Series, ...]) -> list[Markup]:
    if not series:
        return [Markup(charts.no_data_chart("Counter growth per sample interval", "no counter samples"))]
    growth = [charts.interval_deltas(s) if "cumulative" in s.unit else s for s in series]
    by_unit: dict[str, list[Series]] = defaultdict(list)
    for one in growth:
        by_unit[one.unit].append(one)
    return [Markup(charts.bar_chart(group, "Counter growth per sample interval", unit))
            for unit, group in by_unit.items()]


def sorted_findings(findings: tuple[Finding, ...]) -> list[Finding]:
    return sorted(findings, key=lambda f: (text.severity_rank(f.severity), f.rule, f.title))


def render_html(result: AnalysisResult, bundle_root: pathlib.Path | None = None,
                report_path: pathlib.Path | None = None) -> str:
    env = _environment()
    env.filters["href"] = lambda source: source_href(source, bundle_root, report_path)
    vms = []
    for index, vm in enumerate(result.vms):
        cpu_metrics, cpu_rows = text.per_vcpu_table(vm)
        vms.append({
            "vm": vm, "anchor": f"vm-{index}", "worst": text.worst_severity(vm),
            "cpu_metrics": cpu_metrics, "cpu_rows": cpu_rows,
            "cpu_summary": [(label, vm.cpu.get(f"{key}_max"), vm.cpu.get(f"{key}_avg"))
                            for key, label in text.CPU_METRICS if vm.cpu.get(f"{key}_max") is not None],
            "cpu_other": {k: v for k, v in vm.cpu.items() if not k.endswith(("_max", "_avg"))},
            "cpu_file": next((one.source for one in vm.charts if one.source), None),
            "cpu_limit": text.cpu_limit_words(vm), "findings": sorted_findings(vm.findings),
            "charts": vm_charts(vm, result.thresholds),
            "vnics": [{"vnic": vnic, "counters": text.counter_windows(vnic.metrics),
                       "counter_phrases": text.counter_phrases(vnic.metrics),
                       "rings": text.ring_phrases(vnic.metrics), "facts": text.other_metrics(vnic.metrics),
                       "charts": vnic_charts(vnic.charts)} for vnic in vm.vnics],
        })
    gaps = [item for item in result.coverage if item.status != "collected"]
    counts = {s: sum(1 for f in result.all_findings() if f.severity == s) for s in SEVERITIES}
    return env.get_template("report.html.j2").render(
        result=result, vms=vms, gaps=gaps, counts=counts, worst=result.worst_severity(),
        collected=len(result.coverage) - len(gaps), cpu_labels=CPU_LABELS)
