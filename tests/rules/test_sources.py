"""Disagreeing drop sources: vCenter net.droppedRx against the drop counter the verdict reads.
Figures from the iperf-test1 example: the host counted 2,153 out-of-buffer drops in the window
while vCenter's droppedRx samples summed to 0."""

from __future__ import annotations

from esxdiag.join.facts import DropSymptom
from esxdiag.result import Finding, RuleCheck
from esxdiag.rules import VNIC_RULES
from esxdiag.rules.sources import drop_sources


def vcenter_drops(values) -> DropSymptom:
    return DropSymptom("vCenter net.droppedRx over the window", values, "packets", "vcenter/perf.json",
                       "net.droppedRx.summation[4000]")


def only(outcomes, kind):
    assert len(outcomes) == 1, outcomes
    assert isinstance(outcomes[0], kind), outcomes
    return outcomes[0]


def test_vcenter_zero_while_host_counted_drops_names_the_conflict_and_the_trusted_source(make, thresholds):
    nic = make.vnic(oob=(8373, 10526), drop_symptoms=(vcenter_drops((0.0, 0.0, None, 0.0)),))
    finding = only(drop_sources(make.vm(vnics=[nic]), nic, thresholds), Finding)
    assert finding.severity == "info" and "disagree" in finding.title
    assert "summed 0 packets" in finding.summary and "counted 2,153" in finding.summary
    assert "The verdict trusts the host's out-of-buffer counter (vsish rxSummary)" in finding.summary
    assert "both ends of exactly this window" in finding.summary
    assert [e.observed for e in finding.evidence] == [2153, 0]


def test_vcenter_drops_while_host_counted_none_is_the_reverse_conflict(make, thresholds):
    nic = make.vnic(ring1=(5, 5), oob=(300, 300), drop_symptoms=(vcenter_drops((120.0, 80.0, 0.0)),))
    finding = only(drop_sources(make.vm(vnics=[nic]), nic, thresholds), Finding)
    assert "summed 200 packets while the host's out-of-buffer counter (vsish rxSummary) counted 0" in finding.summary
    assert "longer window" in finding.summary


def test_agreeing_sources_pass_and_missing_sources_skip(make, thresholds):
    both = make.vnic(oob=(100, 300), drop_symptoms=(vcenter_drops((150.0, 50.0)),))
    assert only(drop_sources(make.vm(), both, thresholds), RuleCheck).status == "pass"
    quiet = make.vnic(ring1=(5, 5), oob=(300, 300), drop_symptoms=(vcenter_drops((0.0, 0.0)),))
    assert only(drop_sources(make.vm(), quiet, thresholds), RuleCheck).status == "pass"
    no_vcenter = make.vnic()
    assert only(drop_sources(make.vm(), no_vcenter, thresholds), RuleCheck).status == "skip"
    one_reading = make.vnic(ring1=None, ring2=None, oob=(None, 300), drop_symptoms=(vcenter_drops((0.0,)),))
    assert only(drop_sources(make.vm(), one_reading, thresholds), RuleCheck).status == "skip"


def test_rule_runs_for_every_vnic():
    assert drop_sources in VNIC_RULES
