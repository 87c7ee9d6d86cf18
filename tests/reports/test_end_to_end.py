"""The example bundles in examples/ through the real analyzer (esxdiag.engine) into both renderers:
the reports must carry the engine's verdicts and numbers, parse, and stay free of scripts."""

from __future__ import annotations

import json
import pathlib
import re
import shutil
from html.parser import HTMLParser
from urllib.parse import unquote

import pytest

from esxdiag.config import DEFAULT_THRESHOLDS
from esxdiag.engine import analyze
from esxdiag.reports.html import render_html
from esxdiag.reports.text import render_text
from esxdiag.reports.words import VERDICT_WORDS

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"
BUNDLES = sorted(p.parent for p in EXAMPLES.rglob("manifest.json"))


class Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.names = []

    def handle_starttag(self, tag, attrs):
        self.names.append(tag)


@pytest.mark.parametrize("bundle", BUNDLES, ids=lambda p: p.name)
def test_example_bundle_renders_engine_verdicts(bundle, tmp_path):
    result = analyze(bundle, dict(DEFAULT_THRESHOLDS))
    report = tmp_path / "report.html"
    document = render_html(result, bundle, report)
    summary = render_text(result)
    tags = Tags()
    tags.feed(document)
    assert "script" not in tags.names and not re.search(r"https?://", document)
    for vm in result.vms:
        assert vm.name in summary
        for vnic in vm.vnics:
            words = VERDICT_WORDS[vnic.ring_verdict]
            assert words in document and words.upper() in summary
    for link in re.findall(r'href="([^"#][^"]*)"', document):
        target = (tmp_path / unquote(link)).resolve()
        assert target.is_relative_to(bundle.resolve()) and target.is_file(), link


def test_examples_exist():
    assert len(BUNDLES) >= 3, f"no example bundles under {EXAMPLES}"


def test_seed_example_names_every_source_in_words_and_the_disagreeing_drop_counts(tmp_path):
    """iperf-test1: the host counted 2,186 out-of-buffer drops; vCenter's droppedRx, made to sum 0 (as
    vcsim's own counters did), disagrees."""
    bundle = tmp_path / "bundle"
    shutil.copytree(EXAMPLES / "iperf-test1-ring-exhaustion", bundle, ignore=shutil.ignore_patterns("report.*"))
    perf = bundle / "vcenter" / "vsphere_perf@vm=iperf-test1.json"
    doc = json.loads(perf.read_text())
    for series in doc["series"]:
        if series["counter"] == "net.droppedRx.summation":
            series["values"] = [0] * len(series["values"])
    perf.write_text(json.dumps(doc))
    document = render_html(analyze(bundle, dict(DEFAULT_THRESHOLDS)), bundle, tmp_path / "report.html")
    counters = document[document.index("<caption>Counters over the window</caption>"):]
    counters = counters[:counters.index("</table>")]
    for words in ("vsish rxSummary (port 33554464), reading 2", "vsish clientStats (port 33554464), reading 2",
                  "guest ethtool -S eth0, reading 2", "vCenter performance counters"):
        assert words in counters
    assert counters.count('<td class="from"><a href=') == 6  # every counter says where it came from
    assert "Ring sizes from" in document and "vsish rx queue 0 status (port 33554464)" in document
    card = document[document.index('<p class="disagree">'):]
    assert "summed 0 packets" in card[:2000] and "counted 2,184" in card[:2000]
    # vCenter's net.droppedRx counts the port's drops: it is weighed against the port's own count
    assert "The verdict trusts the host port&#39;s droppedRx" in card[:2000]
    assert "%SWPWT" in document  # every CPU figure the capture has


@pytest.mark.parametrize("bundle", BUNDLES, ids=lambda p: p.name)
def test_cpu_summary_row_matches_the_engine_figures_the_rules_judged(bundle):
    """The all-vCPUs row is computed from the series the same way CpuFacts.summary() is."""
    from esxdiag.reports.words import CPU_METRICS, per_vcpu_table

    for vm in analyze(bundle, dict(DEFAULT_THRESHOLDS)).vms:
        summary = per_vcpu_table(vm)["summary"]
        for key, metric in CPU_METRICS:
            if metric in summary:
                peak, mean = summary[metric]
                assert (round(peak, 2), round(mean, 2)) == (vm.cpu[f"{key}_max"], vm.cpu[f"{key}_avg"]), metric
