"""Offline: a snapshot written by hand -> fleet rules -> every output, and the history. No network."""

from __future__ import annotations

import copy
import csv
import io
import json
import re

import pytest

from esxdiag.cli import main
from esxdiag.config import load_thresholds
from esxdiag.errors import ParseError
from esxdiag.fleet.analysis import build_report
from esxdiag.fleet.history import changes_and_record, vm_history
from esxdiag.fleet.snapshot import SCHEMA_SNAPSHOT, snapshot_from_dict, write_snapshot
from esxdiag.reports.fleet_csv import render_fleet_csv
from esxdiag.reports.fleet_html import render_fleet_html
from esxdiag.reports.fleet_metrics import render_fleet_metrics

HOSTILE = '<script>alert("x")</script>\n"} 1\nevil_metric 2'
SAMPLES = 15


def perf(name: str, ready_ms: int, drops: int, packets: int = 100_000, limited: int = 0) -> dict:
    stamps = [f"2026-11-23T02:{m:02d}:{s:02d}Z" for m in range(40, 45) for s in (0, 20, 40)]
    series = [{"counter": c, "instance": "", "unit": u, "values": [v] * SAMPLES} for c, u, v in (
        ("cpu.ready.summation", "millisecond", ready_ms), ("cpu.costop.summation", "millisecond", 0),
        ("cpu.maxlimited.summation", "millisecond", limited), ("net.droppedRx.summation", "number", drops),
        ("net.packetsRx.summation", "number", packets))]
    return {"schema": "esxdiag.vsphere_perf/1", "vm": name, "interval_s": 20, "rollup": "realtime", "note": None,
            "start": stamps[0], "end": stamps[-1], "timestamps": stamps, "series": series}


def vm(name: str, moid: str, ready_ms: int = 100, drops: int = 0, nic: str = "vmxnet3", host: str = "esx1",
       limit: int | None = None, limited: int = 0, power: str = "poweredOn") -> dict:
    return {
        "vcenter": "vc1:443", "moid": moid, "name": name, "power_state": power, "host": host, "host_moid": "host-1",
        "cluster": "C1", "datacenter": "DC", "num_cpu": 1,
        "cpu_allocation": {"limit_mhz": limit, "reservation_mhz": 0, "shares": 1000, "shares_level": "normal"},
        "latency_sensitivity": "normal",
        "guest": {"family": "linuxGuest", "ip_address": None}, "num_vnics": 1,
        "vnics": [{"label": "Network adapter 1", "type": nic, "mac": "00:50:56:00:00:01", "device_key": 4000,
                   "network": "VM Network", "connected": True}],
        "missing": [], "perf": perf(name, ready_ms, drops, limited=limited) if power == "poweredOn" else None,
        "perf_error": None if power == "poweredOn" else "powered off",
    }


def snapshot(vms: list[dict], failed: bool = False) -> dict:
    status = {"url": "https://vc1/sdk", "name": "vc1:443", "status": "scanned", "error": None, "error_kind": None,
              "requests": 12, "seconds": 0.5, "max_query_metrics": 64, "max_query_metrics_source": "default",
              "vms": len(vms), "perf_errors": 0, "unmatched_filters": []}
    vcenters = [status]
    if failed:
        vcenters.append({**status, "url": "https://vc2/sdk", "name": "vc2:443", "status": "failed",
                         "error": "vc2:443: unreachable (Connection refused)", "error_kind": "unreachable", "vms": 0})
    return {"schema": SCHEMA_SNAPSHOT, "collected_at": "2026-11-23T02:45:00Z", "window_s": 300, "nic_types": "all", "filters": {},
            "vcenters": vcenters, "hosts": [], "vms": vms}


FLEET = [vm("ring1", "vm-1", drops=100), vm(HOSTILE, "vm-2", drops=300), vm("=cmd|' /C calc'!A0", "vm-3"),
         vm("limited", "vm-4", ready_ms=3100, limited=3000, limit=800, drops=5), vm("old", "vm-5", nic="e1000"),
         vm("off", "vm-6", power="poweredOff")]


def document(vms=FLEET, failed=False, **kw):
    return build_report(snapshot_from_dict(snapshot(copy.deepcopy(vms), failed)), load_thresholds(**kw), "snap.json").as_dict()


def test_snapshot_errors_name_the_file_and_field(tmp_path):
    """What is not a snapshot is refused naming the file; damage inside a VM record is that VM's note
    (tests/fleet/test_damaged_snapshot.py)."""
    bad = snapshot([vm("a", "vm-1")])
    bad["vcenters"] = "vc1"
    with pytest.raises(ParseError, match=r"x\.json: vcenters: expected a list"):
        snapshot_from_dict(bad, "x.json")
    short = snapshot([vm("a", "vm-1")])
    short["vms"][0]["perf"]["series"][0]["values"].pop()
    (read,) = snapshot_from_dict(short, "x.json").vms
    assert any("a: perf.series[0]: 14 values for 15 timestamps" in n for n in read.damage)
    path = tmp_path / "broken.json"
    path.write_text('{"schema": "esxdiag.fleet_snapshot/1", ')
    assert main(["scan", "--snapshot", str(path), "--format", "json"]) == 2
    path.write_text(json.dumps({"schema": "esxdiag.bundle/1"}))
    assert main(["scan", "--snapshot", str(path), "--format", "json"]) == 2


def test_csv_quotes_formulas_and_keeps_every_vm():
    rows = list(csv.DictReader(io.StringIO(render_fleet_csv(document()))))
    assert len(rows) == len(FLEET)
    assert {r["name"] for r in rows} >= {"'=cmd|' /C calc'!A0", HOSTILE}
    assert (rows[0]["name"], rows[0]["severity"], rows[1]["name"], rows[1]["class"]) == (
        HOSTILE, "critical", "limited", "cpu-and-drops")  # critical both: 15 frames lost per s before 0.25


def test_openmetrics_parses_and_escapes_labels():
    from prometheus_client.openmetrics.parser import text_string_to_metric_families

    families = {f.name: f for f in text_string_to_metric_families(render_fleet_metrics(document(failed=True)))}
    drops = {s.labels["vm"]: s.value for s in families["esxdiag_fleet_vm_rx_drops_per_second"].samples}
    assert drops[HOSTILE] == 15.0 and drops["ring1"] == 5.0
    assert "off" not in drops  # not measured: absent, never 0
    classes = {s.labels["vm"]: s.labels["class"] for s in families["esxdiag_fleet_vm_class"].samples}
    assert classes["old"] == "emulated-nic" and classes["off"] == "no-data"
    scanned = {s.labels["vcenter"]: s.value for s in families["esxdiag_fleet_vcenter_scanned"].samples}
    assert scanned == {"vc1:443": 1, "vc2:443": 0}
    assert "evil_metric" not in families


def test_the_score_is_frames_lost_per_second_and_orders_within_a_severity():
    """Severity first, then the score: received frames lost per second (docs/fleet-scan.md "Ranking"), never
    %RDY points: a VM waiting on CPU with fewer drops ranks after one dropping more."""
    pair = [vm("waits", "vm-1", ready_ms=1800, drops=20), vm("drops", "vm-2", ready_ms=200, drops=60)]
    rows = document(pair)["vms"]
    assert [(r["name"], r["class"], r["severity"], r["score"], r["score_terms"]) for r in rows] == [
        ("drops", "ring-suspect", "warning", 3.0, {"drops_per_s": 3.0}),
        ("waits", "ring-suspect", "warning", 1.0, {"drops_per_s": 1.0})]


def test_html_is_escaped_offline_and_complete():
    html = render_fleet_html(document(failed=True))
    # two script elements, both ours: the data (JSON, every < > & as \u escapes) and the table's code
    assert re.findall(r"<script[^>]*>", html) == ['<script type="application/json" id="fleet-data">', "<script>"]
    assert '<script>alert("x")</script>' not in html and "&lt;script&gt;" in html
    assert "\\u003cscript\\u003ealert" in html
    data = html.split('id="fleet-data">', 1)[1].split("</script>", 1)[0]
    assert "<" not in data and ">" not in data and "&" not in data
    assert any(HOSTILE in row for row in json.loads(data)["rows"])  # the name itself, intact once decoded
    assert not re.search(r"(src|href)=\"(https?:)?//", html)
    assert "script-src 'sha256-" in html and "Not scanned: vc2:443" in html and "<svg" in html
    for klass in ("cpu-and-drops", "ring-suspect", "emulated-nic", "no-data", "healthy"):
        assert f'id="class-{klass}"' in html
    assert html.index("VMs per class") < html.index("Top suspects") < html.index("All VMs")
    assert "Per cluster" in html and "Per host" in html


def test_fail_on_and_exit_codes(tmp_path):
    path = write_snapshot(snapshot(copy.deepcopy(FLEET)), tmp_path / "s.json")
    out = tmp_path / "r.json"
    assert main(["scan", "--snapshot", str(path), "--format", "json", "-o", str(out)]) == 0
    assert json.loads(out.read_text())["counts"]["ring-suspect"] == 2
    assert main(["scan", "--snapshot", str(path), "--format", "json", "-o", str(out), "--fail-on", "critical"]) == 1
    quiet = write_snapshot(snapshot([vm("calm", "vm-9")]), tmp_path / "q.json")
    assert main(["scan", "--snapshot", str(quiet), "--format", "text", "--fail-on", "warning"]) == 0
    failed = write_snapshot(snapshot([vm("calm", "vm-9")], failed=True), tmp_path / "f.json")
    assert main(["scan", "--snapshot", str(failed), "--format", "text"]) == 3
    assert main(["scan", "--snapshot", str(path), "--set", "cpu.nope=1"]) == 2


def test_history_changes_and_vm_history(tmp_path, capsys):
    db = tmp_path / "h.sqlite"
    first = document()
    assert changes_and_record(db, first) is None
    healed = copy.deepcopy(FLEET)
    healed[0] = vm("ring1", "vm-1")  # stopped dropping
    healed[4] = vm("old", "vm-5", drops=40)  # an emulated NIC that now drops: still a concern, other reason
    healed.append(vm("newbie", "vm-7", drops=90))
    second = document(healed)
    changes = changes_and_record(db, second)
    assert [c["name"] for c in changes["recovered"]] == ["ring1"]
    assert [c["name"] for c in changes["new"]] == ["newbie"]
    assert changes["previous_at"] == "2026-11-23T02:45:00Z"
    rows = vm_history(db, "ring1")
    assert [r["class"] for r in rows] == ["healthy", "ring-suspect"]
    assert main(["history", "vm-1", "--history", str(db)]) == 0
    printed = capsys.readouterr().out
    assert "ring-suspect" in printed and "healthy" in printed
    assert main(["history", "ring1", "--history", str(tmp_path / "none.sqlite")]) == 2


def test_vcenters_from_the_config_file(tmp_path):
    from types import SimpleNamespace

    from esxdiag.scanning.options import vcenter_urls

    config = tmp_path / "config.ini"
    config.write_text("[fleet]\nvcenters = vc1.example.com, https://vc2.example.com:8443/sdk\n  vc1.example.com\n")
    assert vcenter_urls(SimpleNamespace(vcenter=[], config=config)) == [
        "vc1.example.com", "https://vc2.example.com:8443/sdk"]
    assert vcenter_urls(SimpleNamespace(vcenter=["a", "a", "b"], config=config)) == ["a", "b"]
    config.write_text("[vcenter]\nurl = vc9\n")
    assert vcenter_urls(SimpleNamespace(vcenter=[], config=config)) == [None]  # one, from env / [vcenter]


def test_a_new_output_format_is_one_function_and_one_table_entry(tmp_path, monkeypatch, capsys):
    """README "Layout", add an output format: one render function, one entry in its result's table;
    --format, -o and the terminal summary follow without touching the command line."""
    from esxdiag.reports.formats import FLEET as FLEET_FORMATS, Format

    def render_names(doc: dict, context) -> str:
        return "".join(f"{r['rank']} {r['name']}\n" for r in doc["vms"])

    monkeypatch.setitem(FLEET_FORMATS.formats, "names", Format(render_names, "text/plain"))
    path = write_snapshot(snapshot(copy.deepcopy(FLEET)), tmp_path / "s.json")
    assert main(["scan", "--snapshot", str(path), "--format", "names"]) == 0
    assert "2 limited" in capsys.readouterr().out.splitlines()  # 1: the hostile name, over several lines
    out = tmp_path / "names.txt"
    assert main(["scan", "--snapshot", str(path), "--format", "names", "-o", str(out), "--top", "1"]) == 0
    assert "\n2 limited\n" in out.read_text()
    assert f"report: {out.resolve()}" in capsys.readouterr().err


def test_format_choices_are_the_renderer_tables():
    from esxdiag.cli import build_parser
    from esxdiag.reports import formats

    commands = build_parser()._subparsers._group_actions[0].choices
    expected = {"analyze": formats.REPORT, "report": formats.REPORT, "rings": formats.RINGS, "scan": formats.FLEET,
                "diff": formats.DIFF, "history": formats.HISTORY}
    for command, table in expected.items():
        action = next(a for a in commands[command]._actions if a.dest == "format")
        assert (tuple(action.choices), action.default) == (table.choices(), table.default), command


def test_every_fleet_class_is_named_in_every_place_a_new_class_needs():
    """README "Layout", add a fleet class: its name in esxdiag.vocabulary (order = urgency), the
    rule that sets it, a colour and a section in the HTML page, a count in every output, and its
    row in docs/fleet-scan.md."""
    from pathlib import Path

    import esxdiag.fleet.rules
    from esxdiag.reports.fleet_html import CLASS_COLOURS
    from esxdiag.reports.fleet_text import render_fleet_text
    from esxdiag.vocabulary import FLEET_CLASSES

    docs = (Path(__file__).resolve().parents[2] / "docs" / "fleet-scan.md").read_text(encoding="utf-8")
    doc = document()
    html, text, metrics = render_fleet_html(doc), render_fleet_text(doc), render_fleet_metrics(doc)
    for klass in FLEET_CLASSES:
        assert f"`{klass}`" in docs and f"  {klass} " in esxdiag.fleet.rules.__doc__
        assert klass in CLASS_COLOURS and f'id="class-{klass}"' in html
        assert f"{klass} {doc['counts'][klass]}" in text and f'esxdiag_fleet_class_vms{{class="{klass}"}}' in metrics
