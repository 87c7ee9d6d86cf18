"""The analysis result: what rules conclude, with evidence. JSON (schema docs/report-schema.md)
is the canonical rendering; HTML and the terminal summary render the same objects."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from esxdiag.vocabulary import SEVERITIES as SEVERITIES, VERDICTS as VERDICTS  # the result model's names

SCHEMA_VERSION = 1
# A capture in the coverage: read (parsed, nothing skipped), partial (parsed with warnings: lines skipped,
# values dropped or doubted), unparsed (why, line), no-data (ran, nothing to report), failed (not
# captured), not-collected (an input the analysis wanted and no capture holds)
COVERAGE_STATUSES = ("read", "partial", "unparsed", "no-data", "failed", "not-collected")
USED_STATUSES = ("read", "partial")


@dataclass(frozen=True)
class Evidence:
    """One observed fact behind (or against) a conclusion."""

    what: str
    observed: Any
    unit: str | None = None
    threshold: Any = None
    comparison: str | None = None  # how observed was compared with threshold: ">", ">=", "<", "=="
    source: str | None = None  # bundle-relative file the value came from
    locator: str | None = None  # counter label / column / JSON path inside that file


@dataclass(frozen=True)
class Remediation:
    """What to run: shown, never executed by esxdiag."""

    os: str  # linux, windows (in the guest), vsphere (PowerCLI / govc), esxi (the host's shell), any
    title: str
    commands: tuple[str, ...] = ()
    persistence: tuple[str, ...] = ()
    disruption: str | None = None
    memory_cost: str | None = None
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Finding:
    rule: str
    severity: str
    vm: str
    vnic: str | None  # MAC, for per-vNIC findings
    title: str
    summary: str
    evidence: tuple[Evidence, ...] = ()
    evidence_against: tuple[Evidence, ...] = ()
    remediation: tuple[Remediation, ...] = ()


@dataclass(frozen=True)
class LedgerLine:
    """One counter in a vNIC's drop ledger: what it says of the port's drops."""

    cause: str  # ring, a drop-reason family (mtu, large-headers, ..., unknown), uplink
    what: str  # the counter in its own words
    delta: int | None  # over the window
    unit: str  # "packets" or "events" (ring-full episodes, a queue stopped: shown, never summed)
    counted: bool  # part of the port's drops: summed into ``explained``
    source: str | None = None
    locator: str | None = None


@dataclass(frozen=True)
class DropLedger:
    """The port's received-frame drops over the window on one side, every counter that accounts for them on
    the other, and the residue no counter read explains (docs/diagnosis.md "The drop ledger")."""

    port_drops: int | None  # None: no drop count of the port itself was read over the window
    port_counter: str | None  # which counter: "port droppedRx (clientStats)", "vCenter net.droppedRx"
    seconds: float | None
    lines: tuple[LedgerLine, ...]
    explained: int  # packets the counted lines account for
    unexplained: int | None  # port drops no counter explains (None without port_drops)
    words: str


@dataclass(frozen=True)
class RingVerdict:
    verdict: str  # one of VERDICTS
    summary: str
    evidence: tuple[Evidence, ...] = ()
    evidence_against: tuple[Evidence, ...] = ()
    remediation: tuple[Remediation, ...] = ()
    missing: tuple[str, ...] = ()  # inputs that were not available and why
    basis: str | None = None  # shown with the verdict's name when it rests on less than the host's ring counters
    causes: tuple[str, ...] = ()  # causes other than the ring that this vNIC's counters show (esxdiag.rules.causes)
    ledger: DropLedger | None = None  # the port's drops and what accounts for them


@dataclass(frozen=True)
class Series:
    """A time series for charts: label, unit, ISO-UTC times and values (None = gap)."""

    label: str
    unit: str
    times: tuple[str | None, ...]  # None: a reading whose time the bundle does not say
    values: tuple[float | None, ...]
    source: str | None = None


@dataclass(frozen=True)
class VnicResult:
    mac: str | None
    label: str | None  # "Network adapter 1"
    type: str | None  # vmxnet3, e1000, ...
    portset: str | None
    port: int | None
    guest_interface: str | None
    ring_verdict: str
    verdict: RingVerdict
    metrics: dict[str, Any] = field(default_factory=dict)  # ring sizes, deltas, rates used by the verdict
    charts: tuple[Series, ...] = ()


@dataclass(frozen=True)
class CoverageItem:
    """One expected input and whether it made it into the analysis."""

    what: str  # human label: "vsish rxSummary, port 33554464 (start)"
    spec: str
    target: str | None
    status: str  # one of COVERAGE_STATUSES
    why: str | None = None
    file: str | None = None
    error_kind: str | None = None
    warnings: tuple[str, ...] = ()  # what the parser skipped, dropped or doubted in a capture it read

    @property
    def used(self) -> bool:
        """The capture was parsed and its records went into the analysis (wholly or in part)."""
        return self.status in USED_STATUSES


@dataclass(frozen=True)
class RuleCheck:
    """A rule that ran without a finding: an explicit pass, or a skip with the missing input."""

    rule: str
    status: str  # pass, skip
    reason: str
    vnic: str | None = None


@dataclass(frozen=True)
class VmResult:
    name: str
    host: str | None
    vcpus: int | None
    cpu_limit_mhz: int | None
    guest_os: str | None  # linux, windows, None
    power_state: str | None
    vnics: tuple[VnicResult, ...]
    findings: tuple[Finding, ...]
    cpu: dict[str, Any] = field(default_factory=dict)  # window max/avg per-vCPU %RDY, %CSTP, %MLMTD + source
    charts: tuple[Series, ...] = ()
    checks: tuple[RuleCheck, ...] = ()
    notes: tuple[str, ...] = ()
    tcp: dict[str, Any] = field(default_factory=dict)  # guest retransmitted / sent segments over the window

    def worst_severity(self) -> str | None:
        return worst_of(f.severity for f in self.findings)


@dataclass(frozen=True)
class AnalysisResult:
    schema_version: int
    tool: str
    bundle: dict[str, Any]  # path, created, window_s, format_version, notes
    thresholds: dict[str, float]
    vms: tuple[VmResult, ...]
    coverage: tuple[CoverageItem, ...]
    notes: tuple[str, ...] = ()

    def all_findings(self) -> list[Finding]:
        return [f for vm in self.vms for f in vm.findings]

    def worst_severity(self) -> str | None:
        return worst_of(f.severity for f in self.all_findings())


def worst_of(severities) -> str | None:
    """The most severe of these (SEVERITIES order), None when there is none."""
    present = set(severities)
    return next((s for s in SEVERITIES if s in present), None)
