"""What admins install beside `esxdiag serve` (contrib/): the alerting rules pass `promtool check
rules` and their `promtool test rules` unit tests; every PromQL expression of the rules and of the
Grafana dashboard parses (promtool) and names only metrics /metrics exposes; the systemd unit is
hardened (systemd-analyze verify and security --offline)."""

from __future__ import annotations

import configparser
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from esxdiag.serve.metrics import ServeCollector
from esxdiag.serve.state import State

CONTRIB = Path(__file__).resolve().parents[2] / "contrib"
RULES = CONTRIB / "prometheus" / "esxdiag-rules.yml"
DASHBOARD = CONTRIB / "grafana" / "esxdiag-dashboard.json"
UNIT = CONTRIB / "systemd" / "esxdiag-serve.service"
PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(PROMTOOL is None, reason="promtool is not installed (apt-get install prometheus)")
PROMQL_WORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool",
                "offset", "inf", "nan"}
PROMETHEUS_OWN = {"up"}  # a series Prometheus writes itself for every scrape


def exposed_names() -> set[str]:
    """Every name /metrics can expose: the collector's families (counters with _total)."""
    names = set()
    for family in ServeCollector(State([])).describe():
        names.add(family.name + "_total" if family.type == "counter" else family.name)
    return names


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects (strings, label matchers, grouping label lists,
    ranges and function names taken out first)."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    text = re.sub(r"\{[^}]*\}", " ", text)
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    text = re.sub(r"\[[^\]]*\]", " ", text)
    text = re.sub(r"\$\{?\w+(:\w+)?\}?", " ", text)
    names = set()
    for match in re.finditer(r"(?<![A-Za-z0-9_:.])[A-Za-z_:][A-Za-z0-9_:]*(?=\s*(\()?)", text):
        if match.group(1) is None and match.group(0) not in PROMQL_WORDS and not re.fullmatch(r"\d.*", match[0]):
            names.add(match.group(0))
    return names


def rule_exprs() -> list[str]:
    return [r["expr"] for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"]]


def dashboard_exprs() -> list[str]:
    board = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in board["panels"] for t in p.get("targets", [])]
    queries = [v["query"]["query"] for v in board["templating"]["list"] if v["type"] == "query"]
    return exprs + [re.sub(r"^label_values\((.*),\s*\w+\)$", r"\1", q) for q in queries]


def test_the_name_check_catches_what_it_should():
    assert metric_names('sum by (class) (esxdiag_fleet_class_vms{vcenter=~"$vcenter"})') == {"esxdiag_fleet_class_vms"}
    assert metric_names('time() - a_b{x="up"} > 3 * c offset 5m') == {"a_b", "c"}
    assert metric_names('x * on (vcenter, moid) group_left (class) (y == 1) or vector(0)') == {"x", "y"}
    assert "esxdiag_vcenter_scans_total" in exposed_names() and "esxdiag_deep_vnic_verdict" in exposed_names()


def test_rules_and_dashboard_name_only_metrics_that_metrics_exposes():
    exposed = exposed_names() | PROMETHEUS_OWN
    used = {name: expr for expr in rule_exprs() + dashboard_exprs() for name in metric_names(expr)}
    assert {name: expr for name, expr in used.items() if name not in exposed} == {}
    assert len(dashboard_exprs()) >= 25 and len(used) >= 20


def test_the_dashboard_has_overview_suspects_scatter_and_a_drill_down():
    board = json.loads(DASHBOARD.read_text())
    titles = {p["title"]: p["type"] for p in board["panels"]}
    assert titles["Suspects (worst first)"] == "table" and titles["VMs per class"] in ("stat", "timeseries")
    assert titles["Receive drops against worst-vCPU %RDY"] == "xychart"
    assert titles["Host ring counters (deep check)"] == "timeseries"
    assert [v["name"] for v in board["templating"]["list"]] == ["datasource", "vcenter", "vm", "moid", "instance"]
    assert all(t["datasource"]["uid"] == "${datasource}" for p in board["panels"] for t in p.get("targets", []))


@needs_promtool
@pytest.mark.lab
def test_promtool_checks_and_unit_tests_the_alert_rules(tmp_path):
    for argv in (["check", "rules", RULES.name], ["test", "rules", "esxdiag-rules.test.yml"],
                 ["check", "config", "prometheus.yml"]):
        done = subprocess.run([PROMTOOL, *argv], cwd=RULES.parent, capture_output=True, text=True, timeout=120,
                              check=False)
        assert done.returncode == 0, done.stdout + done.stderr
    # every dashboard expression parses: as recording rules, with Grafana's variables filled in
    filled = [re.sub(r"\$\{?(\w+)(:\w+)?\}?", "x", e) for e in dashboard_exprs()]
    (tmp_path / "dashboard.yml").write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": [
        {"record": f"dashboard:expr{i}", "expr": e} for i, e in enumerate(filled)]}]}))
    done = subprocess.run([PROMTOOL, "check", "rules", str(tmp_path / "dashboard.yml")], capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_systemd_unit_is_hardened(tmp_path):
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str
    unit.read_string(UNIT.read_text())
    service = unit["Service"]
    assert service["User"] == "esxdiag" and service["NoNewPrivileges"] == "yes"
    assert service["ProtectSystem"] == "strict" and service["CapabilityBoundingSet"] == ""
    assert "--listen 127.0.0.1:9683" in service["ExecStart"] and "PASSWORD" not in service["ExecStart"]
    assert service["EnvironmentFile"] == "/etc/esxdiag/serve.env"  # secrets from a file, never argv
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed: the unit's keys were checked, not systemd's verdict")
    esxdiag = str(Path(sys.executable).with_name("esxdiag"))
    local = tmp_path / UNIT.name
    local.write_text(UNIT.read_text().replace("/usr/local/bin/esxdiag", esxdiag))
    done = subprocess.run([analyze, "verify", str(local)], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0 and done.stdout + done.stderr == "", done.stdout + done.stderr
    done = subprocess.run([analyze, "security", "--offline=yes", "--threshold=20", str(local)], capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stdout[-800:] + done.stderr
    assert re.search(r"Overall exposure level for \S+: [0-1]\.\d OK", done.stdout), done.stdout[-300:]
