"""A damaged capture never stops the analysis (issue 6 items 4, 12, 14): the rest renders, the
capture is 'unparsed: why' (with the line) in coverage, what a parser dropped is listed against
its file, and report.json stays strict JSON."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
from pathlib import Path

import pytest

from esxdiag.cli import main
from esxdiag.parsers import PARSERS

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ESXTOP = "esxi-esx0.lab.local/esxtop_batch@delay=5,iterations=12.txt"
OOB_END = "guest-iperf-cpu-limited/ethtool_stats@iface=eth0.s1.txt"


def _strict(name: str):
    raise AssertionError(f"report.json holds {name}")


def analyze_json(bundle: Path, tmp_path: Path) -> tuple[int, dict]:
    out = tmp_path / "report.json"
    code = main(["analyze", str(bundle), "--format", "json", "-o", str(out)])
    return code, json.loads(out.read_text(encoding="utf-8"), parse_constant=_strict)


def coverage_of(report: dict, file: str) -> dict:
    return next(item for item in report["coverage"] if item["file"] == file)


@pytest.fixture
def bundle(tmp_path) -> Path:
    copy = tmp_path / "bundle"
    shutil.copytree(EXAMPLES / "iperf-cpu-limited", copy, ignore=shutil.ignore_patterns("report.*"))
    return copy


def test_nan_cpu_cells_are_dropped_with_a_warning_on_the_file_and_json_stays_strict(bundle, tmp_path):
    path = bundle / ESXTOP
    rows = list(csv.reader(io.StringIO(path.read_text(), newline="")))
    limited = [i for i, name in enumerate(rows[0]) if name.endswith("iperf-cpu-limited)\\% Max Limited")]
    for row in rows[1:]:
        for i in limited:
            row[i] = "nan"
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    path.write_text(out.getvalue())
    code, report = analyze_json(bundle, tmp_path)
    assert code in (0, 1)
    warnings = coverage_of(report, ESXTOP)["warnings"]
    assert any("non-finite" in w and "% Max Limited" in w for w in warnings)


@pytest.mark.parametrize("damage", ["9" * 5000, "\u00b3", "-2103"])
def test_one_unparseable_counter_file_is_unparsed_with_its_line_and_the_rest_renders(bundle, tmp_path, damage):
    path = bundle / OOB_END
    text, replaced = re.subn(r"pkts rx OOB: \d+", f"pkts rx OOB: {damage}", path.read_text(), count=1)
    assert replaced == 1
    path.write_text(text)
    code, report = analyze_json(bundle, tmp_path)
    assert code in (0, 1)
    item = coverage_of(report, OOB_END)
    assert item["status"] == "unparsed" and "(line " in item["why"]
    assert report["vms"][0]["vnics"][0]["ring_verdict"]  # the rest was analysed


def test_a_capture_cut_inside_its_last_line_is_flagged_on_its_file(bundle, tmp_path):
    path = bundle / OOB_END
    path.write_text(path.read_text().rstrip("\n")[:-1])  # "tx timeout count: 0" loses its digit and line end
    code, report = analyze_json(bundle, tmp_path)
    assert code in (0, 1)
    assert any("no line end" in w for w in coverage_of(report, OOB_END)["warnings"])


def test_a_parser_bug_is_an_unparsed_capture_not_exit_70(bundle, tmp_path, monkeypatch):
    """A stand-in for an unknown parser bug: the real parser for one kind raises KeyError."""
    entry = PARSERS["ethtool-stats"]

    def broken(text):
        raise KeyError("simulated parser bug")

    monkeypatch.setattr(f"esxdiag.parsers.{entry.module}.{entry.function}", broken)
    code, report = analyze_json(bundle, tmp_path)
    assert code in (0, 1)
    item = coverage_of(report, OOB_END)
    assert item["status"] == "unparsed" and item["error_kind"] == "parser-bug" and "KeyError" in item["why"]


def test_text_summary_lists_capture_warnings(tmp_path):
    out = tmp_path / "summary.txt"
    main(["analyze", str(EXAMPLES / "seed-by-hand" / "iperf-test1"), "--format", "text", "-o", str(out)])
    assert "capture warning: " in out.read_text() and "no Vcpu instances" in out.read_text()


def test_a_capture_repeating_a_counter_many_times_says_so_in_a_bounded_list(bundle, tmp_path):
    name = "guest-iperf-cpu-limited/netstat_s.s1.txt"
    path = bundle / name
    lines = path.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith("    ") and line.strip()[0].isdigit())
    path.write_text("".join(lines[: at + 1] + [lines[at]] * 100 + lines[at + 1 :]))  # same value: kept
    _, report = analyze_json(bundle, tmp_path)
    warnings = coverage_of(report, name)["warnings"]
    assert len(warnings) == 21 and warnings[-1] == "... and 80 more warnings" and "printed twice" in warnings[0]


def test_html_report_lists_capture_warnings_against_the_file(tmp_path):
    out = tmp_path / "report.html"
    main(["analyze", str(EXAMPLES / "seed-by-hand" / "iperf-test1"), "--format", "html", "-o", str(out)])
    html = out.read_text(encoding="utf-8")
    assert "Capture warnings" in html and "no Vcpu instances" in html
