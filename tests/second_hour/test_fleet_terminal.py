"""Issue 32: the scan table fits the terminal (80 and 120 columns), each reason wrapped under its row; a pipe
without COLUMNS keeps whole lines for grep."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SNAPSHOT = Path(__file__).resolve().parents[2] / "examples" / "fleet" / "esxdiag-scan-20261123T034500Z.json"


def scan_text(columns: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if columns:
        env["COLUMNS"] = columns
    return subprocess.run([sys.executable, "-m", "esxdiag", "scan", "--snapshot", str(SNAPSHOT), "--format", "text",
                           "--no-history"], capture_output=True, text=True, env=env, timeout=120, check=True).stdout


@pytest.mark.parametrize("width", [80, 120])
def test_the_scan_table_fits_the_terminal(width):
    out = scan_text(str(width))
    assert max(len(line) for line in out.splitlines()) <= width, out
    header = next(line for line in out.splitlines() if line.startswith("#   severity class"))
    assert "VM" in header and "drops/s" in header and "%RDY max" in header
    row = next(line for line in out.splitlines() if line.startswith("1 "))
    assert row.split()[1:4] == ["critical", "cpu-and-drops", "batch01"]
    reason = out[out.index(row) + len(row):].split("\n2 ")[0]
    assert "fix CPU first" in " ".join(reason.split())  # the whole reason, wrapped under its row
    assert all(line.startswith("    ") for line in reason.strip("\n").splitlines())


def test_a_wide_terminal_shows_every_column():
    header = next(line for line in scan_text("200").splitlines() if line.startswith("#   severity"))
    assert header.split() == ["#", "severity", "class", "VM", "vCenter", "host", "drops/s", "/1k", "pkts",
                              "%RDY", "max", "%CSTP", "%MLMTD", "score"]


def test_a_pipe_keeps_whole_lines():
    out = scan_text(None)
    assert any(len(line) > 120 for line in out.splitlines())


def test_the_fleet_page_says_one_vm_and_keeps_its_thresholds_behind_a_details_element():
    from esxdiag.config import load_thresholds
    from esxdiag.fleet.analysis import build_report
    from esxdiag.fleet.snapshot import load_snapshot
    from esxdiag.reports.fleet_html import MARKERS, render_fleet_html

    page = render_fleet_html(build_report(load_snapshot(SNAPSHOT), load_thresholds(), str(SNAPSHOT)).as_dict())
    assert "1 VMs" not in page and "1 VM is not drawn" in page
    details = page.index('<details class="thresholds">')
    assert details < page.index("Thresholds (the per-VM rules' own)") < page.index("</details>", details)
    assert details < page.index("<h2>Top suspects</h2>") if "<h2>Top suspects</h2>" in page else True
    # every class its own shape-and-colour pair: no two classes told apart by colour alone
    assert len({(colour, shape, filled) for colour, shape, filled in MARKERS.values()}) == len(MARKERS)
    assert len({(colour, shape) for colour, shape, _ in MARKERS.values()}) == len(MARKERS)
