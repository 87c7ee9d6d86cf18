"""HTML report: parses with strict tag balance, has no external resources or scripts, escapes
untrusted text, links evidence relative to the report, and keeps the documented section order."""

from __future__ import annotations

import html
import pathlib
import re
from html.parser import HTMLParser

from esxdiag.reports.html import render_html, source_href

VOID = {"meta", "br", "hr", "img", "input", "link", "col", "wbr"}


class TagBalance(HTMLParser):
    """Fails on any close tag that does not match the innermost open element."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.tags, self.errors, self.text = [], [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'} at {self.getpos()}")
        else:
            self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


def parse(document: str) -> TagBalance:
    parser = TagBalance()
    parser.feed(document)
    parser.close()
    return parser


def test_report_is_balanced_html(analysis_result):
    parser = parse(render_html(analysis_result))
    assert parser.errors == []
    assert parser.stack == []
    assert parser.tags[0][0] == "html"


def test_no_external_resources_and_no_script(analysis_result):
    document = render_html(analysis_result, pathlib.Path("/b"), pathlib.Path("/r/report.html"))
    assert not re.search(r"https?://|//[a-z0-9.-]+\.[a-z]{2,}/|\bsrc\s*=|@import|url\(", document, re.I)
    tags = parse(document).tags
    assert not [t for t, _ in tags if t in ("script", "iframe", "object", "embed", "img", "link")]
    assert not [a for _, attrs in tags for a in attrs if a.startswith("on")]  # no event handlers
    hrefs = [attrs["href"] for _, attrs in tags if "href" in attrs]
    assert hrefs and all(not re.match(r"[a-z][a-z0-9+.-]*:", h, re.I) for h in hrefs)


def test_hostile_vm_name_and_evidence_are_escaped(analysis_result, hostile_name, hostile_evidence):
    document = render_html(analysis_result)
    assert hostile_name not in document
    assert "<b>" not in document and "<i>" not in document
    assert html.escape(hostile_name) in document
    parser = parse(document)
    text = "".join(parser.text)
    assert f"VM {hostile_name}" in text  # shown to the reader as text
    assert hostile_evidence in text
    assert '<b>5703</b> & "2593"' in text
    assert "Authentication failed for user 'root' <esx0> & retried 0 times" in text


def test_evidence_source_links_are_relative_to_the_report(analysis_result, tmp_path):
    bundle, report = tmp_path / "bundles" / "b1", tmp_path / "reports" / "out" / "report.html"
    document = render_html(analysis_result, bundle, report)
    hrefs = {attrs["href"] for _, attrs in parse(document).tags if "href" in attrs}
    wanted = "../../bundles/b1/host/esx0.lab.local/vsish/vSwitch0/33554464/rxSummary.end.txt"
    assert wanted in hrefs
    plain = render_html(analysis_result)
    assert 'href="host/esx0.lab.local/vsish/vSwitch0/33554464/rxSummary.end.txt"' in plain


def test_source_href_cannot_become_a_url_scheme():
    assert source_href("javascript:alert(1)", None, None) == "javascript%3Aalert%281%29"
    assert source_href("dir\\file name.txt", None, None) == "dir/file%20name.txt"


def test_layout_order_summary_vms_coverage_footer(analysis_result):
    document = render_html(analysis_result)
    marks = [document.index(m) for m in ('<section id="summary">', 'id="vm-0"', 'id="vm-3"',
                                         '<section id="coverage">', "<footer>")]
    assert marks == sorted(marks)
    summary = document[marks[0]:marks[1]]
    for words in ("Raise RX ring 1", "CPU limit first", "Enable RSS", "Insufficient evidence"):
        assert words in summary
    assert "Ring 1 filled 23.6 times/s at 256 entries" in summary


def test_vm_section_has_cpu_panel_cards_commands_and_sorted_findings(analysis_result):
    document = render_html(analysis_result)
    limited = document[document.index('id="vm-1"'):document.index('id="vm-2"')]
    assert "%MLMTD max" in limited and "69.6" in limited and "800 MHz" in limited and "esxtop" in limited
    ring = document[document.index('id="vm-0"'):document.index('id="vm-1"')]
    assert "<pre>ethtool -G eth0 rx 4096\nethtool -g eth0</pre>" in ring
    assert "esxdiag shows these commands; it never runs them." in ring
    assert "Disruption:" in ring and "Guest memory cost:" in ring and "Make it persistent:" in ring
    assert "Evidence against" in ring and "&lt; 10" in ring
    assert ring.count("<svg") == 3  # per-vCPU %RDY and %MLMTD line charts, the counter bar chart
    assert "<td>vCPU 1</td>" in ring and "configured CPU limit: <strong>none (unlimited)</strong>" in ring
    assert "guest-tcp-retransmits" in ring and "guest netstat -s was not collected" in ring
    assert "guest clock 2 s ahead of the host" in ring
    assert "<th>Total since vNIC init</th>" in ring and "23.6/s" in ring
    severities = re.findall(r'class="sev sev-(\w+)"', document[document.index("<h3>Findings"):])
    assert severities[0] == "warning"


def test_findings_sorted_by_severity_within_a_vm(analysis_result):
    from dataclasses import replace

    vm = analysis_result.vms[0]
    extra = replace(vm.findings[0], severity="info", rule="a-info")
    crit = replace(vm.findings[0], severity="critical", rule="z-critical")
    result = replace(analysis_result, vms=(replace(vm, findings=(extra,) + vm.findings + (crit,)),))
    document = render_html(result)
    table = document[document.index('<table class="findings">'):]
    table = table[:table.index("</table>")]
    assert re.findall(r'class="sev sev-(\w+)"', table) == ["critical", "warning", "info"]


def test_coverage_and_footer(analysis_result):
    document = render_html(analysis_result)
    coverage = document[document.index('<section id="coverage">'):document.index("<footer>")]
    assert "1 of 4 expected inputs" in coverage
    for text in ("failed", "auth", "not-collected", "--no-esxtop was given", "unparsed", "parse"):
        assert text in coverage
    footer = document[document.index("<footer>"):]
    assert "esxdiag 0.1.0" in footer and "/var/tmp/bundles/esx0-2024-05-01" in footer
    assert "cpu.ready_pct_critical" in footer and "window 180 s" in footer


def test_severity_is_labelled_in_text_not_only_colour(analysis_result):
    document = render_html(analysis_result)
    for label in ("CRITICAL", "WARNING", "INFO"):
        assert f">{label}</span>" in document
