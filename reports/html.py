"""One offline HTML file: inline CSS and SVG, no scripts, everything from the result autoescaped."""

from __future__ import annotations

import os
import pathlib
import re
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
CPU_LABELS = {"source": "source", "interval_s": "sample interval (s)", "samples": "samples", "file": "file"}
_METRIC_TOKEN = re.compile(r"%[A-Za-z]+")


def _environment() -> Environment:
    env = Environment(loader=PackageLoader("esxdiag.templates", "."), autoescape=True,
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["fmt"] = text.fmt
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


def _metric_of(one: Series) -> str:
    """Group key for a VM chart: the esxtop-style token in the label ("vCPU 0 %RDY" -> "%RDY")."""
    found = _METRIC_TOKEN.search(one.label)
    return found.group() if found else one.unit


def vm_charts(vm: VmResult, thresholds: dict[str, float]) -> list[Markup]:
    groups: dict[str, list[Series]] = defaultdict(list)
    for one in vm.charts:
        groups[_metric_of(one)].append(one)
    rendered = []
    for metric, series in groups.items():
        threshold = thresholds.get(f"{metric.lstrip('%').lower()}_pct") if metric.startswith("%") else None
        title = f"{metric} per vCPU" if metric.startswith("%") else f"{metric} over the window"
        # Markup is safe here: charts escapes every piece of text it places in the SVG.
        rendered.append(Markup(charts.line_chart(series, title, series[0].unit, threshold)))
    return rendered


def vnic_charts(series: tuple[Series, ...]) -> list[Markup]:
    if not series:
        return [Markup(charts.no_data_chart("Counter growth per sample interval", "no counter samples"))]
    by_unit: dict[str, list[Series]] = defaultdict(list)
    for one in series:
        by_unit[one.unit].append(one)
    return [Markup(charts.bar_chart(group, "Counter growth per sample interval", unit))
            for unit, group in by_unit.items()]


def sorted_findings(findings: tuple[Finding, ...]) -> list[Finding]:
    return sorted(findings, key=lambda f: (text.severity_rank(f.severity), f.rule, f.title))


def render_html(result: AnalysisResult, bundle_root: pathlib.Path | None = None,
                report_path: pathlib.Path | None = None) -> str:
    env = _environment()
    env.filters["href"] = lambda source: source_href(source, bundle_root, report_path)
    vms = [{
        "vm": vm,
        "anchor": f"vm-{index}",
        "worst": text.worst_severity(vm),
        "cpu_rows": text.per_vcpu_rows(vm),
        "cpu_metrics": [(key, label) for key, label in text.CPU_METRICS
                        if any(f"{key}_max" in row for row in text.per_vcpu_rows(vm))],
        "cpu_other": {k: v for k, v in vm.cpu.items() if k != "per_vcpu"},
        "cpu_limit": text.cpu_limit_words(vm),
        "findings": sorted_findings(vm.findings),
        "charts": vm_charts(vm, result.thresholds) if vm.charts else
        [Markup(charts.no_data_chart("CPU over the window", "no per-vCPU samples for this VM"))],
        "vnics": [{"vnic": vnic, "counters": text.counter_phrases(vnic.metrics),
                   "rings": text.ring_phrases(vnic.metrics), "charts": vnic_charts(vnic.charts)}
                  for vnic in vm.vnics],
    } for index, vm in enumerate(result.vms)]
    gaps = [item for item in result.coverage if item.status != "collected"]
    counts = {s: sum(1 for f in result.all_findings() if f.severity == s) for s in SEVERITIES}
    return env.get_template("report.html.j2").render(
        result=result, vms=vms, gaps=gaps, counts=counts, worst=result.worst_severity(),
        collected=len(result.coverage) - len(gaps), cpu_labels=CPU_LABELS)
