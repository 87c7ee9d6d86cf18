"""The shipped alerts (contrib/prometheus/esxdiag-rules.yml) against the vocabulary (esxdiag.vocabulary):
every fleet class that can be warning or critical, and every deep verdict that gives such a class, has an
alert path at that severity; no VM alert names a class or verdict the vocabulary does not know. A class
or verdict added without its alert fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from esxdiag.vocabulary import (ALERTED, CLASSES, SEVERITY_VALUES, VERDICT_INFO, FleetClass, Severity, Verdict,
                                verdicts_giving)

RULES = Path(__file__).resolve().parents[2] / "contrib" / "prometheus" / "esxdiag-rules.yml"


def vm_rules() -> list[dict]:
    groups = {g["name"]: g["rules"] for g in yaml.safe_load(RULES.read_text())["groups"]}
    return groups["esxdiag-vms"]


def classes_of(expr: str) -> set[str]:
    return set(re.findall(r'esxdiag_fleet_vm_class\{class="([^"]+)"\}', expr))


def verdicts_of(expr: str) -> set[str]:
    """The verdicts the expression's first (not `unless`-ed) verdict selector matches."""
    head = expr.split("unless")[0]
    return {v for m in re.findall(r'esxdiag_deep_vnic_verdict\{verdict=~"([^"]+)"\}', head) for v in m.split("|")}


def vm_severity_of(expr: str) -> int | None:
    found = re.findall(r"esxdiag_fleet_vm_severity == (\d)", expr)
    return int(found[0]) if len(found) == 1 else None


def paths(alert: str, severity: Severity) -> list[dict]:
    """The rules named ``alert`` that fire at ``severity`` for a VM at that severity."""
    return [r for r in vm_rules() if r["alert"] == alert and r["labels"]["severity"] == severity.value
            and vm_severity_of(r["expr"]) in (SEVERITY_VALUES[severity.value], None)]


@pytest.mark.parametrize("klass", [c for c in FleetClass if CLASSES[c].alerted])
def test_every_alerted_class_has_its_alert_at_each_of_its_severities(klass):
    info = CLASSES[klass]
    for severity in info.alerted:
        found = paths(info.alert, severity)
        assert found, f"{klass} at {severity}: no {info.alert} rule at that severity"
        proven = set(verdicts_giving(klass)) if klass is FleetClass.RING_EXHAUSTION else set()
        for rule in found:
            assert klass.value in classes_of(rule["expr"]) or proven and proven <= verdicts_of(rule["expr"]), \
                f"{info.alert} ({severity}) does not select {klass}: {rule['expr']}"
            if len(info.alerted) > 1:  # the class carries more than one severity: the rule picks its own
                assert vm_severity_of(rule["expr"]) == SEVERITY_VALUES[severity.value], rule["expr"]


@pytest.mark.parametrize("verdict", [v for v, i in VERDICT_INFO.items() if i.fleet_class and CLASSES[i.fleet_class].alerted])
def test_every_deciding_verdict_reaches_an_alert(verdict):
    info = VERDICT_INFO[verdict]
    assert info.alert and any(r["alert"] == info.alert for r in vm_rules()), verdict
    if info.fleet_class is FleetClass.RING_EXHAUSTION:  # said by the verdict series itself
        assert all(verdict.value in verdicts_of(r["expr"]) for r in vm_rules() if r["alert"] == info.alert)


def test_vm_alerts_name_only_known_classes_and_verdicts():
    for rule in vm_rules():
        expr = rule["expr"]
        assert classes_of(expr) <= {c.value for c in FleetClass}, expr
        assert set(re.findall(r'verdict=~?"([^"]+)"', expr)[0].split("|") if "verdict=" in expr else ()) <= \
            {v.value for v in Verdict}, expr
        assert rule["labels"]["severity"] in ("critical", "warning"), rule["alert"]


def test_a_hosts_uplink_loss_alerts_at_its_findings_severity():
    """One rule per severity the host's uplink finding can have (esxdiag.vocabulary.drop_severity), each on the
    host's own severity series at that value."""
    rules = {r["labels"]["severity"]: r["expr"] for r in vm_rules() if r["alert"] == "EsxdiagUplinkLoss"}
    assert set(rules) == {s.value for s in ALERTED}
    for severity, expr in rules.items():
        assert f"esxdiag_fleet_host_uplink_severity == {SEVERITY_VALUES[severity]}" in expr, expr


def test_a_class_with_no_alert_fails_the_check(monkeypatch):
    """The check above can fail: a class whose alert is not in the file."""
    monkeypatch.setitem(CLASSES, FleetClass.EMULATED_NIC,
                        CLASSES[FleetClass.EMULATED_NIC].__class__(**{**CLASSES[FleetClass.EMULATED_NIC].__dict__,
                                                                      "alert": "EsxdiagNoSuchAlert"}))
    with pytest.raises(AssertionError, match="no EsxdiagNoSuchAlert rule"):
        test_every_alerted_class_has_its_alert_at_each_of_its_severities(FleetClass.EMULATED_NIC)
