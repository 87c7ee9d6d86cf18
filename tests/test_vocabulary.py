"""esxdiag.vocabulary: every id the pipeline produces is in it, and its registries are whole. An
unknown id fails here (or at import), never as a KeyError in the middle of an analysis."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from esxdiag.join.causes import PAGE_ABSENT_FAMILY, RX_REASON_FAMILIES
from esxdiag.rules.causes import EVENT_WORDS, REASON_WORDS
from esxdiag.vocabulary import (CLASSES, CONCERN_CLASSES, FLEET_CLASSES, PORT_CAUSES, SEVERITIES, VERDICT_INFO,
                                CauseId, EventId, FleetClass, Severity, Verdict, class_rank, drop_severity,
                                needs_attention, severity_order)

ROOT = Path(__file__).resolve().parents[1]


def test_the_port_causes_are_the_families_the_join_reads_and_the_rules_word():
    packets = {family for family, _, unit in RX_REASON_FAMILIES if unit == "packets"}
    events = {family for family, _, unit in RX_REASON_FAMILIES if unit == "events"}
    assert set(PORT_CAUSES) == packets | {PAGE_ABSENT_FAMILY, "unknown"} == set(REASON_WORDS)
    assert set(EventId) == events == set(EVENT_WORDS)
    assert CauseId.UPLINK not in REASON_WORDS


def _literals(pattern: str) -> set[str]:
    """Every string constant of the Python files ``pattern`` matches (docstrings included)."""
    out = set()
    for path in ROOT.glob(pattern):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                out.add(node.value)
    return out


@pytest.mark.parametrize("folder", ["esxdiag/rules/*.py", "esxdiag/fleet/*.py", "esxdiag/serve/*.py",
                                    "esxdiag/scanning/*.py"])
def test_no_module_spells_a_verdict_as_a_string(folder):
    assert _literals(folder) & {v.value for v in Verdict} == set()


@pytest.mark.parametrize("folder", ["esxdiag/fleet/*.py", "esxdiag/serve/*.py", "esxdiag/scanning/*.py",
                                    "reports/fleet_*.py"])
def test_no_fleet_module_spells_a_fleet_class_as_a_string(folder):
    """(The per-VM rules' own rule ids, esxdiag.rules, share a few of these words: they name rules, not classes.)"""
    assert _literals(folder) & {c.value for c in FleetClass} == set()


def test_every_class_and_verdict_has_its_entry_and_classes_rank_in_order():
    assert set(CLASSES) == set(FleetClass) and set(VERDICT_INFO) == set(Verdict)
    assert [class_rank(c) for c in FLEET_CLASSES] == list(range(len(FleetClass)))
    with pytest.raises(ValueError):
        class_rank("vmotion")


def test_concern_is_a_property_of_each_class_not_a_position():
    assert CONCERN_CLASSES == tuple(c.value for c in FleetClass if CLASSES[c].concern)
    assert "no-data" not in CONCERN_CLASSES and "healthy" not in CONCERN_CLASSES and "emulated-nic" in CONCERN_CLASSES
    assert not needs_attention("uplink-loss", "info")
    assert needs_attention("uplink-loss", "warning")
    with pytest.raises(ValueError):
        needs_attention("vmotion", "warning")


@pytest.mark.parametrize("rate, severity", [(None, "warning"), (0.0, "warning"), (5.5, "warning"), (10.0, "warning"),
                                            (10.01, "critical"), (307.0, "critical")])
def test_drop_severity_is_critical_above_the_threshold_only(rate, severity):
    assert drop_severity(rate, {"ring.drops_per_s_critical": 10.0}) == severity


def test_severities_in_order():
    assert SEVERITIES == ("critical", "warning", "info") == tuple(Severity)
    assert [severity_order(s) for s in (*SEVERITIES, None)] == [0, 1, 2, 3]
