"""The README's claims about the examples stay true (issue 15, point 5): the quick start's terminal
summary and report.html hold what it promises, and the example table's verdicts and warnings are
those of each example's golden report.json."""

from __future__ import annotations

import json
import re
from pathlib import Path

from esxdiag.cli import main
from esxdiag.result import VERDICTS

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def example_table() -> list[tuple[str, str]]:
    """(bundle, verdict cell) of every row of the README's "| bundle | case | verdict |" table."""
    lines = README[README.index("| bundle | case | verdict |"):].splitlines()[2:]
    rows = []
    for line in lines:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows.append((cells[0].strip("`"), cells[-1]))
    return rows


def test_the_example_table_says_what_each_golden_report_says():
    rows = example_table()
    assert len(rows) == len(list(ROOT.glob("examples/**/report.json")))  # every example has its row
    for bundle, cell in rows:
        golden = json.loads((ROOT / "examples" / bundle / "report.json").read_text(encoding="utf-8"))
        verdicts = [n["ring_verdict"] for vm in golden["vms"] for n in vm["vnics"]]
        claimed = [v for v in re.findall(r"`([a-z0-9-]+)`", cell) if v in VERDICTS]
        assert claimed == verdicts, (bundle, cell, verdicts)
        warnings = [f["rule"] for vm in golden["vms"] for f in vm["findings"] if f["severity"] == "warning"]
        for what in re.findall(r"\+ ([a-z-]+) warning", cell):
            assert any(what in rule for rule in warnings), (bundle, what, warnings)
        criticals = [f["rule"] for vm in golden["vms"] for f in vm["findings"] if f["severity"] == "critical"]
        for what in re.findall(r"\+ ([a-z-]+) critical", cell):
            assert what in criticals, (bundle, what, criticals)


def test_the_quick_start_prints_what_the_readme_promises(tmp_path, capsys):
    quick = README[README.index("## Quick start"):README.index("## What it answers")]
    assert "esxdiag analyze examples/iperf-test1-ring-exhaustion" in quick
    assert main(["analyze", str(ROOT / "examples" / "iperf-test1-ring-exhaustion"), "-o",
                 str(tmp_path / "report.html")]) == 0
    terminal = capsys.readouterr().out
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "raise RX ring 1" in quick and "RAISE RX RING 1" in terminal
    assert "ring-full and drop rates" in quick and re.search(r"ring-1-full \+[\d,]+ \([\d.]+/s\)", terminal)
    assert "per-vCPU %RDY" in quick and re.search(r"%RDY max [\d.]+ \[vCPU 0", terminal)
    assert "the `ethtool -G` command" in quick and "ethtool -G eth0 rx 4096" in terminal
    assert "`report.html` adds the\nNetworkManager / udev lines" in quick
    assert "nmcli connection modify" in html and "/etc/udev/rules.d/" in html
    assert f"report: {tmp_path / 'report.html'}" in terminal
