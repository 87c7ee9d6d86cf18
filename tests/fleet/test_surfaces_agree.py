"""One set of situations through every surface (issue 31): the fleet JSON, text, CSV and HTML rows,
the OpenMetrics export, serve's /metrics and the shipped alerts evaluated by promtool agree on each VM's
class, verdict, severity and rank order; severity is the per-VM rule (esxdiag.vocabulary.drop_severity)
and the score, frames lost per second, never rises within a severity down the ranked list.

Situations: ring exhaustion proven at a warning rate (5.5/s, raise-ring2) and a critical one (15/s,
raise-ring1), enable-rss, a CPU limit proven (cpu-limit-first, 61 drops/s), drops elsewhere (mtu), drops
placed at the uplink by the deep check, a host losing 307 frames/s on its uplink, and a healthy VM."""

from __future__ import annotations

import csv
import importlib.util
import io
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from prometheus_client import CollectorRegistry, generate_latest

from esxdiag.config import load_thresholds
from esxdiag.fleet.analysis import build_report
from esxdiag.fleet.snapshot import snapshot_from_dict
from esxdiag.reports.formats import FLEET, RenderContext
from esxdiag.serve.metrics import ServeCollector
from esxdiag.serve.state import State, VcenterState
from esxdiag.vocabulary import CLASSES, SEVERITY_VALUES, drop_severity, severity_order

_spec = importlib.util.spec_from_file_location("fleet_snapshots", Path(__file__).with_name("fleet_snapshots.py"))
fs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fs)

RULES = Path(__file__).resolve().parents[2] / "contrib" / "prometheus" / "esxdiag-rules.yml"
PROMTOOL = shutil.which("promtool")
# name: (drops per 20 s sample, CPU limited ms per sample, the deep check's verdict and host rate, causes)
SITUATIONS = {
    "ring-warn": (110, 0, ("raise-ring2", 5.5, [])),
    "ring-crit": (300, 0, ("raise-ring1", 15.0, [])),
    "rss": (400, 0, ("enable-rss", 20.0, [])),
    "limited": (1220, 3000, ("cpu-limit-first", 61.0, [])),
    "mtu": (300, 0, ("drops-elsewhere", 15.0, ["mtu"])),
    "uplinked": (300, 0, ("drops-elsewhere", 15.0, ["uplink"])),
    "calm-on-lossy-host": (0, 0, None),
    "healthy": (0, 0, None),
}
EXPECTED = {  # class, severity
    "ring-warn": ("ring-exhaustion", "warning"), "ring-crit": ("ring-exhaustion", "critical"),
    "rss": ("ring-exhaustion", "critical"), "limited": ("cpu-limit", "critical"),
    "mtu": ("drops-not-ring", "critical"), "uplinked": ("uplink-loss", "critical"),
    "calm-on-lossy-host": ("uplink-loss", "info"), "healthy": ("healthy", None),
}


@pytest.fixture(scope="module")
def document() -> dict:
    vms, deep = [], {}
    for name, (drops, limited, check) in SITUATIONS.items():
        host = "esx9" if name == "calm-on-lossy-host" else "esx1"
        one = fs.vm(name, drops=drops, limited=limited, ready=limited + 100, host=host)
        vms.append(one)
        if check is not None:
            verdict, rate, causes = check
            deep[("vc1:443", one["moid"])] = {
                "verdicts": [verdict], "error": None, "worst_severity": None, "checked_at": "2026-11-23T02:46:00Z",
                "report": None, "bundle": None,
                "vnics": [{"label": "Network adapter 1", "mac": one["vnics"][0]["mac"], "type": "vmxnet3",
                           "verdict": verdict, "causes": causes, "host_out_of_buffers": rate, "dropped_rx": rate,
                           "ring1_full": rate, "ring2_full": None, "ring1_size": 512, "ring2_size": 512}]}
    hosts = [fs.host("esx1"), fs.host("esx9", drops={"vmnic0": 0, "vmnic1": 307 * fs.INTERVAL_S})]
    return fs.ReportJson(build_report(snapshot_from_dict(fs.snapshot(vms, hosts)), load_thresholds(),
                                      evidence=fs.evidence_of(deep)))


def rows(document: dict) -> dict[str, dict]:
    return {r["name"]: r for r in document["vms"]}


def test_each_situation_has_its_class_and_the_per_vm_severity(document):
    t = load_thresholds()
    got = {n: (r["class"], r["severity"]) for n, r in rows(document).items()}
    assert got == EXPECTED
    for name, (_, _, check) in SITUATIONS.items():
        if check and check[0].startswith(("raise-", "enable-")):  # the per-VM report's own rule for the finding
            assert rows(document)[name]["severity"] == drop_severity(check[1], t)


def test_the_score_is_frames_lost_per_second_and_monotonic_within_each_severity(document):
    ranked = document["vms"]
    keys = [(severity_order(r["severity"]), -r["score"]) for r in ranked]
    assert keys == sorted(keys)
    assert {r["name"]: r["score"] for r in ranked if r["drops_per_s"]} == {
        "ring-warn": 5.5, "ring-crit": 15.0, "rss": 20.0, "limited": 61.0, "mtu": 15.0, "uplinked": 15.0}
    assert [r["name"] for r in ranked][:2] == ["limited", "rss"]  # 61/s under a limit outranks 20/s
    (lossy,) = [h for h in document["rollups"]["hosts"] if h["uplink"]]
    assert (lossy["name"], lossy["uplink_loss_per_s"]) == ("esx9", 307.0)  # the host's loss, in the same unit


def test_every_rendered_table_shows_the_same_class_severity_and_order(document):
    ctx = RenderContext(top=20)
    order = [r["name"] for r in document["vms"]]
    data = json.loads(FLEET.formats["json"].render(document, ctx))
    assert [(r["name"], r["class"], r["severity"]) for r in data["vms"]] == \
        [(n, *EXPECTED[n]) for n in order]
    table = list(csv.DictReader(io.StringIO(FLEET.formats["csv"].render(document, ctx))))
    assert [(r["name"], r["class"], r["severity"] or None) for r in table] == [(n, *EXPECTED[n]) for n in order]
    text = FLEET.formats["text"].render(document, ctx)
    listed = [line.split() for line in text.splitlines() if re.match(r"\d+\s+(critical|warning|info)\s", line)]
    attention = [n for n in order if EXPECTED[n][1] in ("critical", "warning")]  # the top list: needing attention
    assert [(cells[3], cells[2], cells[1]) for cells in listed] == [(n, *EXPECTED[n]) for n in attention]
    assert [float(cells[-1]) for cells in listed] == [rows(document)[n]["score"] for n in attention]
    page = FLEET.formats["html"].render(document, ctx)
    top = page[page.index('<table class="fleet top">'):]
    top = top[:top.index("</table>")]
    cells = [(re.search(r'class="cls"[^>]*>([^<]+)<', row).group(1), re.search(r'<td class="who">([^<]+)<', row).group(1))
             for row in re.findall(r'<tr id="vm-\d+">(.*?)</tr>', top, re.S)]
    assert cells == [(EXPECTED[n][0], n) for n in attention]
    for n, row in zip(attention, re.findall(r'<tr id="vm-\d+">(.*?)</tr>', top, re.S)):
        assert f"sev-{EXPECTED[n][1]}" in row.split("</td>")[1], n  # the severity cell


def test_openmetrics_and_serve_metrics_export_the_rows_class_severity_and_verdict(document):
    exported = FLEET.formats["openmetrics"].render(document, RenderContext(top=20))
    served = serve_metrics(document)
    for n, (klass, severity) in EXPECTED.items():
        moid = rows(document)[n]["moid"]
        assert re.search(rf'esxdiag_fleet_vm_class\{{[^}}]*vm="{n}"[^}}]*class="{klass}"[^}}]*severity="'
                         rf'{severity or "none"}"', exported), n
        for text in (exported, served):
            value = re.search(rf'esxdiag_fleet_vm_severity\{{[^}}]*moid="{moid}"[^}}]*\}} (\S+)', text)
            assert value and float(value.group(1)) == SEVERITY_VALUES[severity], (n, text[:0])
        assert re.search(rf'esxdiag_fleet_vm_class\{{[^}}]*class="{klass}"[^}}]*moid="{moid}"|'
                         rf'esxdiag_fleet_vm_class\{{[^}}]*moid="{moid}"[^}}]*class="{klass}"', served), n
        check = SITUATIONS[n][2]
        if check:
            assert re.search(rf'esxdiag_deep_vnic_verdict\{{[^}}]*moid="{moid}"[^}}]*verdict="{check[0]}"', served), n


def serve_metrics(document) -> str:
    registry = CollectorRegistry()
    registry.register(ServeCollector(State([VcenterState("vc1:443", "https://vc1/sdk", 300, document=document.report,
                                                         good_ts=1.0, last_ts=1.0, last_ok=True, cycles=1)])))
    return generate_latest(registry).decode()


def input_series(served: str) -> list[dict]:
    """serve's /metrics samples the alerts read, as promtool input series held for 20 minutes."""
    wanted = ("esxdiag_fleet_vm_class", "esxdiag_fleet_vm_severity", "esxdiag_deep_vnic_verdict",
              "esxdiag_fleet_host_uplink_severity", "esxdiag_vcenter_stale")
    out = []
    for line in served.splitlines():
        m = re.match(r"(\w+)\{(.*)\} (\S+)$", line)
        if m and m.group(1) in wanted:
            labels = f'job="esxdiag",instance="esxdiag:9683",{m.group(2)}'
            out.append({"series": f"{m.group(1)}{{{labels}}}", "values": f"{float(m.group(3)):g}x20"})
    return out


@pytest.mark.skipif(PROMTOOL is None, reason="promtool is not installed (apt-get install prometheus)")
def test_the_shipped_alerts_say_every_warning_and_critical_vm_at_its_severity(document, tmp_path):
    """Evaluated by promtool on the /metrics series: each VM at warning or critical has its class's alert at
    that severity (by VM), the lossy host its uplink alert (by host, at its finding's severity), and nothing else
    fires."""
    expected = []
    for r in document["vms"]:
        if r["severity"] in ("critical", "warning"):
            expected.append({"labels": f'{{alertname="{CLASSES[r["class"]].alert}",host="{r["host"]}",'
                                       f'severity="{r["severity"]}",vm="{r["name"]}"}}', "value": 1})
    expected += [{"labels": f'{{alertname="EsxdiagUplinkLoss",host="{h["name"]}",severity="{h["uplink_severity"]}"}}',
                  "value": 1} for h in document["rollups"]["hosts"] if h["uplink_severity"]]
    assert any(h["uplink_severity"] for h in document["rollups"]["hosts"])
    (tmp_path / "rules.yml").write_text(RULES.read_text())
    test = {"rule_files": ["rules.yml"], "evaluation_interval": "1m", "tests": [{
        "interval": "1m", "input_series": input_series(serve_metrics(document)),
        "promql_expr_test": [{"expr": "count by (alertname, severity, vm, host) (ALERTS{alertstate=\"firing\"})",
                              "eval_time": "16m", "exp_samples": expected}]}]}
    (tmp_path / "test.yml").write_text(yaml.safe_dump(test))
    run = subprocess.run([PROMTOOL, "test", "rules", "test.yml"], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
