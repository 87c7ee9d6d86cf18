"""Deep verdicts fold back (issue 16, point 2), offline: the example bundles stand in for the host
bundles a deep check writes (real collector output of the lab), so each checked VM's class, severity,
reason, score and rank follow the host evidence in every output, and --fail-on names who tripped it."""

from __future__ import annotations

import copy
import csv
import importlib.util
import io
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from esxdiag.cli import main
from esxdiag.config import load_thresholds
from esxdiag.fleet.analysis import build_report, deep_candidates
from esxdiag.fleet.deep import fold
from esxdiag.fleet.history import changes_and_record, vm_history
from esxdiag.fleet.snapshot import snapshot_from_dict, write_snapshot
from esxdiag.reports.formats import FLEET as FORMATS, RenderContext

_spec = importlib.util.spec_from_file_location("fleet_snapshots", Path(__file__).with_name("fleet_snapshots.py"))
fs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fs)
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

FLEET = [
    fs.vm("iperf-test1", drops=100),  # a warning-level ring suspicion: 5 drops/s
    fs.vm("iperf-cpu-limited", drops=100, limit=800),  # vCenter: a limit that does not throttle: ring-suspect
    fs.vm("app-healthy01", drops=300),  # a critical suspicion (15/s) the host rules out
    fs.vm("unreached", drops=400),  # its host could not be reached
    fs.vm("capped", ready=3100, limited=3000, limit=800),  # critical CPU limit, not checked
    fs.vm("old", nics=("e1000",)), fs.vm("calm"),
]


@dataclass
class Group:  # what esxdiag.collectors.fleet.deep.HostGroup gives fold()
    vcenter: str
    host: str
    vms: list
    bundle: Path | None
    error: str | None = None


def folded(tmp_path: Path) -> dict:
    snapshot = snapshot_from_dict(fs.snapshot(copy.deepcopy(FLEET)))
    t = load_thresholds()
    rows = {r.name: r for r in build_report(snapshot, t, "snap.json").rows}
    groups = []
    for name, example in (("iperf-test1", "iperf-test1-ring-exhaustion"), ("iperf-cpu-limited", "iperf-cpu-limited"),
                          ("app-healthy01", "healthy-vm")):
        bundle = tmp_path / example
        shutil.copytree(EXAMPLES / example, bundle)
        groups.append(Group("vc1:443", f"host-of-{name}", [rows[name]], bundle))
    groups.append(Group("vc1:443", "esx9", [rows["unreached"]], None, "esx9: unreachable (Connection refused)"))

    def write_report(result, bundle: Path) -> Path:
        path = bundle / "report.html"
        path.write_text("<html></html>")
        return path
    return build_report(snapshot, t, "snap.json", fold(groups, t, tmp_path, write_report)).as_dict()


def test_proof_changes_class_severity_and_rank(tmp_path):
    document = folded(tmp_path)
    rows = {r["name"]: r for r in document["vms"]}
    first = rows["iperf-test1"]
    assert (first["class"], first["severity"], first["confirmed"]) == ("ring-exhaustion", "critical", True)
    assert "proven by host ring counters" in first["reason"] and "raise-ring1" in first["reason"]
    limited = rows["iperf-cpu-limited"]
    assert (limited["class"], limited["severity"], limited["confirmed"]) == ("cpu-limit", "critical", True)
    assert "cpu-limit-first" in limited["reason"]
    healthy = rows["app-healthy01"]
    assert (healthy["class"], healthy["severity"], healthy["confirmed"]) == ("healthy", None, True)
    assert "ruled out by host counters" in healthy["reason"]
    unreached = rows["unreached"]
    assert (unreached["class"], unreached["confirmed"]) == ("ring-suspect", False)
    assert "did not decide" in unreached["reason"] and "unreachable" in unreached["reason"]
    # within a severity, frames lost per second (unreached: 20/s), then confirmed before suspected at equal
    # scores (5/s each); ranks renumbered, counts follow
    assert [(r["name"], r["score"]) for r in document["vms"][:4]] == [
        ("unreached", 20.0), ("iperf-test1", 5.0), ("iperf-cpu-limited", 5.0), ("capped", 0)]
    assert [r["rank"] for r in document["vms"]] == list(range(1, len(FLEET) + 1))
    assert document["counts"]["ring-exhaustion"] == 1 and document["counts"]["ring-suspect"] == 1
    assert {v["name"] for v in document["deep"]["vms"]} == {"iperf-test1", "iperf-cpu-limited", "app-healthy01",
                                                             "unreached"}


def test_the_confirmed_state_reaches_every_output_and_the_history(tmp_path):
    document = folded(tmp_path)
    ctx = RenderContext(top=5)
    text = FORMATS.formats["text"].render(document, ctx)
    assert any(line.split()[1:3] == ["critical", "ring-exhaustion"] and "iperf-test1" in line
               for line in text.splitlines())
    rows = {r["name"]: r for r in csv.DictReader(io.StringIO(FORMATS.formats["csv"].render(document, ctx)))}
    assert (rows["iperf-test1"]["class"], rows["iperf-test1"]["confirmed"]) == ("ring-exhaustion", "True")
    metrics = FORMATS.formats["openmetrics"].render(document, ctx)
    assert 'class="ring-exhaustion"' in metrics and 'confirmed="true"' in metrics
    page = FORMATS.formats["html"].render(document, ctx)
    assert "ring-exhaustion" in page and "confirmed" in page
    assert json.loads(FORMATS.formats["json"].render(document, ctx))["vms"][1]["confirmed"] is True
    db = tmp_path / "h.sqlite"
    changes_and_record(db, document)
    assert vm_history(db, "iperf-test1")[0]["class"] == "ring-exhaustion"


def test_deep_n_picks_by_severity_and_score_across_the_drop_classes():
    vms = [fs.vm("slow", drops=100), fs.vm("fast", drops=600), fs.vm("starved", drops=100, ready=2400),
           fs.vm("blind", drops=100), fs.vm("old", nics=("e1000",), drops=600), fs.vm("capped", ready=3100,
                                                                                      limited=3000, limit=800)]
    blind = vms[3]
    blind["perf"]["series"] = [s for s in blind["perf"]["series"] if s["counter"].startswith("net.")]
    document = fs.ReportJson(build_report(snapshot_from_dict(fs.snapshot(vms)), load_thresholds()))
    picked = [r.name for r in deep_candidates(document.report, 10)]
    assert picked[:2] == ["fast", "starved"]  # critical first, by score: 30 drops/s, then cpu-and-drops at 5/s
    assert set(picked[2:]) == {"slow", "blind"}  # warnings: a ring suspicion, drops vCenter cannot place
    assert [r.name for r in deep_candidates(document.report, 1)] == ["fast"]


def test_fail_on_names_the_vms_that_tripped_it(tmp_path, capsys):
    path = write_snapshot(fs.snapshot([fs.vm("flood", drops=600), fs.vm("capped", ready=3100, limited=3000,
                                                                        limit=800), fs.vm("calm")]),
                          tmp_path / "s.json")
    assert main(["scan", "--snapshot", str(path), "--format", "json", "-o", str(tmp_path / "r.json"),
                 "--fail-on", "critical"]) == 1
    err = capsys.readouterr().err
    assert "--fail-on critical: 2 VM(s) at critical or worse:" in err
    assert "flood (vc1:443): ring-suspect, critical" in err and "capped (vc1:443): cpu-limit, critical" in err
    assert "calm" not in err
