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
    assert "%MLMTD" in limited and "69.6" in limited and "800 MHz" in limited and "esxtop" in limited
    ring = document[document.index('id="vm-0"'):document.index('id="vm-1"')]
    assert "<pre>ethtool -G eth0 rx 4096\nethtool -g eth0</pre>" in ring
    assert "esxdiag shows these commands; it never runs them." in ring
    assert "Disruption:" in ring and "Guest memory cost:" in ring and "Make it persistent:" in ring
    assert "Evidence against it" in ring and "&lt; 10" in ring
    # the %RDY chart (%MLMTD is flat zero and answers nothing), the rates over the window side by
    # side, and, with 37 readings of each counter, their rates over time
    assert ring.count("<svg") == 3 and "Rates over the window" in ring and "Counter rates per sample interval" in ring
    assert "<td>vCPU 1</td>" in ring and "Configured CPU limit: <strong>none (unlimited)</strong>" in ring
    assert "guest-tcp-retransmits" in ring and "guest netstat -s was not collected" in ring
    assert "guest clock 2 s ahead of the host" in ring
    assert "Since vNIC init" in ring and "23.6/s" in ring
    severities = re.findall(r'class="sev sev-(\w+)"', document[document.index("<h3>Findings"):])
    assert severities[0] == "warning"


def test_vnic_card_uses_words_and_units_not_field_names(analysis_result):
    document = render_html(analysis_result)
    card = document[document.index('<article class="card c-act">'):document.index("</article>")]
    text = " ".join("".join(parse(card).text).split())
    for key in ("mtu", "driver_version", "ring_size_source", "ring1_full", "host_out_of_buffers"):
        assert key not in text
    assert "<dt>MTU</dt><dd>1,500 bytes</dd>" in card and "<dt>RX queues</dt><dd>2</dd>" in card
    assert "<dt>Guest driver</dt><dd>vmxnet3 1.1.29.0-k-NAPI</dd>" in card
    assert "<dt>RX ring 1</dt><dd>256 of 4,096 entries per queue</dd>" in card
    assert "Ring sizes from vsish rx queue 0 status (port 33554464)" in text
    assert "Out-of-buffer drops (host)" in text


def test_deciding_evidence_first_then_against_then_the_rest_folded(analysis_result):
    from dataclasses import replace

    from esxdiag.result import Evidence

    vm = analysis_result.vms[0]
    vnic = vm.vnics[0]
    quiet = Evidence("2nd ring full (growth in window)", 0, "events", 0, ">", "x/rxSummary.txt")
    verdict = replace(vnic.verdict, evidence=(quiet,) + vnic.verdict.evidence)
    result = replace(analysis_result, vms=(replace(vm, vnics=(replace(vnic, verdict=verdict),)),))
    card = render_html(result)
    card = card[card.index('<article class="card'):card.index("</article>")]
    decided, against = card.index("Evidence that decided the verdict"), card.index("Evidence against it")
    folded = card.index('<details class="fold">')
    assert decided < against < folded
    assert card.index("2nd ring full (growth in window)") > folded
    assert card.index("running out of buffers (growth in window)") < against
    assert "Also checked: 1 figure that did not reach its threshold" in card


def test_cpu_table_one_row_per_vcpu_and_a_summary_row_computed_the_same_way(analysis_result):
    document = render_html(analysis_result)
    ring = document[document.index('id="vm-0"'):document.index('id="vm-1"')]
    table = ring[ring.index('<table class="cpu">'):ring.index("</table>")]
    rows = re.findall(r"<tr>(?:<td>|<th)(.*?)</tr>", table, re.S)
    assert "<td>vCPU 0</td>" in table and "<td>vCPU 1</td>" in table
    assert "All 2 vCPUs" in table  # never "1 vCPUs": see the pluralisation test
    assert "n/a" not in table  # every cell is a figure or says why there is none
    vm = analysis_result.vms[0]
    rdy = [v for s in vm.charts if s.label.startswith("%RDY") for v in s.values if v is not None]
    summary = table[table.index('class="total"'):]
    numbers = re.findall(r'<td class="num">([^<]*)</td>', summary)
    assert numbers[:2] == [f"{max(rdy):g}", f"{sum(rdy) / len(rdy):.2f}".rstrip("0").rstrip(".")]
    assert rows


def test_source_disagreement_is_named_in_the_vnic_card(analysis_result):
    from dataclasses import replace

    from esxdiag.result import Finding

    vm = analysis_result.vms[0]
    clash = Finding("drop-sources", "info", vm.name, vm.vnics[0].mac, "Sources disagree on dropped packets",
                    "vCenter net.droppedRx summed 0 packets over the window while the host's out-of-buffer counter "
                    "(vsish rxSummary) counted 2,153. The verdict trusts the host's out-of-buffer counter.")
    result = replace(analysis_result, vms=(replace(vm, findings=vm.findings + (clash,)),))
    card = render_html(result)
    card = card[card.index('<article class="card'):card.index("</article>")]
    assert '<p class="disagree">' in card and "The verdict trusts the host" in card and "2,153" in card


def test_times_carry_their_time_zone_and_counts_their_plural(analysis_result):
    document = render_html(analysis_result)
    assert "collected 2024-05-01 12:03:05 UTC" in document and "12:03:05Z" not in document
    assert "4 VMs" in document
    limited = document[document.index('id="vm-1"'):document.index('id="vm-2"')]
    assert "All 1 vCPU<" in limited and "1 vCPUs" not in document


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


def test_severity_is_labelled_in_text_and_icon_not_only_colour(analysis_result):
    document = render_html(analysis_result)
    for icon, label in (("\u25b2", "CRITICAL"), ("\u25c6", "WARNING"), ("\u25cf", "INFO")):
        assert f'<span class="icon" aria-hidden="true">{icon}</span> {label}</span>' in document
