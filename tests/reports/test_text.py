"""Terminal summary: verdicts in plain words, the numbers behind them, first command, counts, gaps."""

from __future__ import annotations

from dataclasses import replace

from esxdiag.reports.text import render_text
from esxdiag.reports.words import fmt


def block(report: str, vm_name: str) -> str:
    start = report.index(f"VM {vm_name}  [")
    end = report.find("\nVM ", start + 1)
    return report[start:end if end != -1 else None]


def test_ring_exhaustion_vm_shows_verdict_numbers_and_first_command(analysis_result):
    ring = block(render_text(analysis_result), "iperf-test1")
    assert "RAISE RX RING 1" in ring and "[WARNING]" in ring
    assert "ring-1-full +4,248 (23.6/s)" in ring
    assert "out-of-buffer drops +6,228 (34.6/s)" in ring
    assert "in 180 s" in ring
    assert "ring 1 256 of 4,096, ring 2 256 of 4,096, rx queues 2" in ring
    assert "%RDY max 1.9 [vCPU 0 1.9, vCPU 1 1.7]" in ring and "%MLMTD max 0" in ring
    assert "CPU limit none (unlimited)" in ring
    assert "\n      ethtool -G eth0 rx 4096" in ring  # unwrapped, copyable


def test_cpu_limit_and_rss_and_insufficient_evidence(analysis_result, hostile_name):
    report = render_text(analysis_result)
    limited = block(report, "iperf-cpu-limited")
    assert "CPU LIMIT FIRST" in limited and "CPU limit 800 MHz" in limited and "%MLMTD max 69.52" in limited
    assert "govc vm.change -vm iperf-cpu-limited -cpu.limit -1" in limited
    windows = block(report, "win-sql01")
    assert "ENABLE RSS" in windows and '-DisplayName "Receive Side Scaling"' in windows
    hostile = block(report, hostile_name)
    assert "INSUFFICIENT EVIDENCE" in hostile
    assert "missing: vsish rxSummary: ssh authentication failed on esx0.lab.local" in hostile


def test_findings_counts_and_coverage_gaps(analysis_result):
    report = render_text(analysis_result)
    assert "Findings: 1 critical, 2 warning, 1 info" in report
    assert report.count("not collected: ") == 2 and report.count("not used: ") == 1  # failed, not-collected; unparsed
    assert "not collected: esxtop batch on esx0.lab.local: not-collected: --no-esxtop was given" in report
    assert "not used: guest ethtool -S eth0 on win-sql01: unparsed (parse): ParseError" in report
    assert "Coverage: 1 of 4 inputs read." in report


def test_plain_ascii_without_colour_and_width_respected(analysis_result):
    report = render_text(analysis_result, width=80)
    assert report.isascii() and "\x1b" not in report
    commands = {"      " + c for vm in analysis_result.vms for n in vm.vnics
                for r in n.verdict.remediation for c in r.commands}
    assert all(len(line) <= 80 for line in report.splitlines() if line not in commands)


def test_colour_only_when_asked(analysis_result):
    coloured = render_text(analysis_result, color=True)
    assert "\x1b[1;31m" in coloured and "\x1b[0m" in coloured


def test_terminal_escape_sequences_in_names_are_neutralised(analysis_result):
    vm = replace(analysis_result.vms[0], name="evil\x1b]0;pwned\x07\x1b[2J")
    report = render_text(replace(analysis_result, vms=(vm,)))
    assert "\x1b" not in report and "\x07" not in report
    assert "evil\\x1b]0;pwned\\x07\\x1b[2J" in report


def test_number_formatting():
    assert [fmt(None), fmt(12345), fmt(2.0), fmt(69.52), fmt(0.125), fmt(True)] == \
        ["n/a", "12,345", "2", "69.52", "0.12", "yes"]


def test_counter_phrases_for_single_reading_and_reset():
    from esxdiag.reports.words import counter_phrases

    metrics = {"ring1_full": {"delta": None, "total": 10370, "seconds": None, "per_s": None, "reset": False},
               "host_out_of_buffers": {"delta": None, "total": 5, "seconds": 60.0, "per_s": None, "reset": True}}
    assert counter_phrases(metrics) == ["ring-1-full 10,370 since vNIC init (one reading)",
                                        "out-of-buffer drops: counter reset in the window"]


def test_per_vcpu_table_comes_from_the_chart_series(analysis_result):
    from esxdiag.reports.words import per_vcpu_table

    table = per_vcpu_table(analysis_result.vms[1])
    assert table["metrics"] == ["%RDY", "%MLMTD"] and table["whole_vm"] == []
    (who, row), = table["rows"]
    assert who == "vCPU 0" and row["%RDY"][0] == 69.6 and row["%MLMTD"][0] == 69.52
    assert row["%MLMTD"][1] < row["%MLMTD"][0]  # average over the samples, gaps skipped
    assert table["summary"]["%RDY"] == row["%RDY"]  # one vCPU: the summary row is that vCPU


def test_whole_vm_figures_appear_only_in_the_summary():
    from esxdiag.reports.words import per_vcpu_table
    from esxdiag.result import Series, VmResult

    times = ("t0", "t1")
    vm = VmResult("vm", None, 2, None, None, None, (), (), charts=(
        Series("%RDY vmx-vcpu-0:vm", "%", times, (1.0, 3.0)), Series("%RDY vmx-vcpu-1:vm", "%", times, (2.0, None)),
        Series("%CSTP per-vCPU average", "%", times, (0.5, 0.1))))
    table = per_vcpu_table(vm)
    assert [who for who, _ in table["rows"]] == ["vmx-vcpu-0:vm", "vmx-vcpu-1:vm"]
    assert all("%CSTP" not in row for _, row in table["rows"]) and table["whole_vm"] == ["%CSTP"]
    assert table["summary"] == {"%RDY": (3.0, 2.0), "%CSTP": (0.5, 0.3)}


def test_counts_are_pluralised_with_separators_and_times_name_their_zone(analysis_result):
    report = render_text(analysis_result, width=200)
    assert "collected 2024-05-01 12:03:05 UTC" in report
    assert ", 1 vCPU, CPU limit 800 MHz" in block(report, "iperf-cpu-limited")
    assert ", 2 vCPUs, " in block(report, "iperf-test1") and "1 vCPUs" not in report
    assert "MTU 1,500 bytes" in report


def test_rings_screen_says_1_vcpu(analysis_result):
    from esxdiag.reports.rings import render_rings

    screen = render_rings(analysis_result)
    assert "iperf-cpu-limited: 1 vCPU, CPU limit 800 MHz;" in screen and "1 vCPUs" not in screen
