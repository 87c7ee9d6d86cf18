"""Issue 25 point 1 (and the "once" of point 2): a failed run's findings carry the severity their
evidence has. The bundle is a real partial bundle from the lab: `esxdiag collect --vm iperf-test1
--host-ssh esxdiaglab@127.0.0.2:1 ...` (host refused, guest read)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

BUNDLE = Path(__file__).resolve().parents[1] / "fixtures" / "failed-run" / "host-refused"
WHY = json.loads((BUNDLE / "manifest.json").read_text())["failed"][0]["why"]


def _analyze(tmp_path: Path, fmt: str) -> str:
    out = tmp_path / f"report.{fmt}"
    done = subprocess.run([sys.executable, "-m", "esxdiag", "analyze", str(BUNDLE), "--format", fmt, "-o", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return out.read_text()


def _strings(node) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [s for v in node.values() for s in _strings(v)]
    if isinstance(node, list):
        return [s for v in node for s in _strings(v)]
    return []


def test_a_failed_runs_guest_counter_alone_is_no_critical_headline(tmp_path):
    report = json.loads(_analyze(tmp_path, "json"))
    (vm,) = report["vms"]
    ring = [f for f in vm["findings"] if f["rule"] == "ring-exhaustion"]
    assert ring and all(f["severity"] == "warning" for f in ring), ring
    assert all("ring 1 filled" not in f["summary"] and "pkts rx OOB" in f["summary"] for f in ring), ring
    text = _analyze(tmp_path, "text")
    assert "CRITICAL" not in text.split("RUN FAILED", 1)[1].split("Findings:")[0].replace(WHY, ""), text
    assert "Findings: 0 critical" in text
    page = _analyze(tmp_path, "html")
    assert "CRITICAL" not in re.sub(r"<[^>]+>", " ", page) and "ring 1 filled" not in page


def test_no_python_none_in_any_text_of_a_failed_run(tmp_path):
    report = json.loads(_analyze(tmp_path, "json"))
    assert not [s for s in _strings(report) if re.search(r"\bNone\b", s)]
    for fmt in ("text", "rings", "html"):
        assert not re.search(r"\bNone\b", _analyze(tmp_path, fmt)), fmt


def test_the_failure_is_printed_in_full_once(tmp_path):
    text = " ".join(_analyze(tmp_path, "text").split())
    assert text.count(" ".join(WHY.split())) == 1, text
    assert "see RUN FAILED above" in text
