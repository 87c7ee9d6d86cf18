"""The fleet report as typed, frozen values: the fleet path's counterpart of esxdiag/result.py.

esxdiag.fleet.analysis.build_report makes a FleetReport once the evidence is in (vCenter's counters,
the deep checks, the proofs kept from earlier checks); nothing changes it after. What comes later is
a new value made from it (``with_rows``, ``with_changes``, ``with_note``), never an edit in place.
Dicts exist only at the edges: ``as_dict()`` is the JSON document (schema esxdiag.fleet_report/2,
docs/report-schema.md) that the renderers, the history and the library read; serve's state, /metrics
and pages hold the model itself.
"""

from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from esxdiag.fleet.snapshot import VcenterStatus
from esxdiag.vocabulary import FLEET_CLASSES, class_rank, needs_attention, severity_order

Key = tuple[str, str]  # (vCenter, MOID)
JsonDict = dict[str, Any]


def _json(value: Any) -> Any:
    """Tuples as lists and nested mappings as dicts: what json.loads would give back."""
    if isinstance(value, (list, tuple)):
        return [_json(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _json(v) for k, v in value.items()}
    return value


@dataclass(frozen=True, kw_only=True)
class DeepEvidence:
    """One VM's deep check as its row carries it: from this scan's check (esxdiag.fleet.deep) or a proof
    kept from an earlier one (esxdiag.scanning.proofs). vnics: label, mac, type, verdict, causes and the
    ring figures (esxdiag.fleet.deep.RING_FIGURES)."""

    verdicts: tuple[str, ...]
    vnics: tuple[Mapping[str, Any], ...]
    worst_severity: str | None
    report: str | None  # relative to the report's folder
    bundle: str | None
    error: str | None
    checked_at: str | None  # ISO UTC, when the hosts' sampling ended

    @classmethod
    def of(cls, entry: Mapping[str, Any]) -> "DeepEvidence":
        """From a row's ``deep`` in the JSON (missing keys: None)."""
        return cls(verdicts=tuple(entry.get("verdicts") or ()), vnics=tuple(dict(v) for v in entry.get("vnics") or ()),
                   worst_severity=entry.get("worst_severity"), report=entry.get("report"), bundle=entry.get("bundle"),
                   error=entry.get("error"), checked_at=entry.get("checked_at"))

    def as_dict(self) -> JsonDict:
        return {"verdicts": list(self.verdicts), "vnics": _json(self.vnics), "worst_severity": self.worst_severity,
                "report": self.report, "bundle": self.bundle, "error": self.error, "checked_at": self.checked_at}


@dataclass(frozen=True)
class DeepHost:
    host: str
    vcenter: str
    vms: tuple[str, ...]  # VM names
    error: str | None
    bundle: str | None

    def as_dict(self) -> JsonDict:
        return {"host": self.host, "vcenter": self.vcenter, "vms": list(self.vms), "error": self.error,
                "bundle": self.bundle}


@dataclass(frozen=True)
class DeepVm:
    vcenter: str
    name: str
    moid: str
    host: str
    check: DeepEvidence

    @property
    def key(self) -> Key:
        return self.vcenter, self.moid

    def as_dict(self) -> JsonDict:
        return {"vcenter": self.vcenter, "name": self.name, "moid": self.moid, "host": self.host,
                **self.check.as_dict()}


@dataclass(frozen=True)
class DeepSection:
    """A scan's deep check: the hosts it sampled and the VMs it checked (the report's ``deep``)."""

    hosts: tuple[DeepHost, ...] = ()
    vms: tuple[DeepVm, ...] = ()

    def as_dict(self) -> JsonDict:
        return {"hosts": [h.as_dict() for h in self.hosts], "vms": [v.as_dict() for v in self.vms]}


@dataclass(frozen=True, kw_only=True)
class FleetRow:
    """One VM's line of the fleet report, in the JSON's order (``klass`` is its "class")."""

    rank: int
    vcenter: str
    moid: str
    name: str
    klass: str
    severity: str | None
    reason: str
    score: float
    score_terms: Mapping[str, float]
    power_state: str | None
    host: str | None
    cluster: str | None
    datacenter: str | None
    num_cpu: int | None
    cpu_limit_mhz: int | None
    latency_sensitivity: str | None
    num_vnics: int | None
    nic_types: tuple[str, ...] | None
    guest_ip: str | None
    tools_status: str | None
    source: str | None
    samples: int
    drops: int | None
    drops_per_s: float | None
    drops_per_1000: float | None
    packets_rx: int | None
    ready_worst_pct: float | None
    ready_worst_vcpu: str | None
    ready_bound: str | None
    ready_avg_pct: float | None
    costop_worst_pct: float | None
    max_limited_worst_pct: float | None
    drops_by_vnic: Mapping[str, int]
    notes: tuple[str, ...]
    confirmed: bool
    dropping: bool
    moves: tuple[Mapping[str, Any], ...] | None
    uplink_loss: tuple[Mapping[str, Any], ...]
    deep: DeepEvidence | None = None

    @property
    def key(self) -> Key:
        return self.vcenter, self.moid

    @property
    def attention(self) -> bool:
        return needs_attention(self.klass, self.severity)

    def order(self) -> tuple:
        return order_key(self.severity, self.confirmed, self.klass, self.score, self.name,
                         f"{self.vcenter}/{self.moid}")

    def as_dict(self) -> JsonDict:
        out = {key: getattr(self, name) for key, name in ROW_FIELDS}
        for key in NESTED_FIELDS:  # the rest are plain values already
            value = out[key]
            # texts and numbers are their own JSON: _json would ask typing's Mapping of each one, most of the time here
            if type(value) is tuple and all(type(v) is str for v in value):
                out[key] = list(value)
            elif type(value) is dict and all(type(v) in (int, float) for v in value.values()):
                out[key] = dict(value)
            else:
                out[key] = _json(value)
        out["deep"] = self.deep.as_dict() if self.deep is not None else None
        return out


ROW_FIELDS = tuple(("class" if f.name == "klass" else f.name, f.name) for f in dataclasses.fields(FleetRow)
                   if f.name != "deep")  # (JSON key, attribute), in the JSON's order
NESTED_FIELDS = ("score_terms", "nic_types", "drops_by_vnic", "notes", "moves", "uplink_loss")


def order_key(severity: str | None, confirmed: bool, klass: str, score: float, name: str, key: str) -> tuple:
    """Severity, then the score (frames lost per second: esxdiag.fleet.rules.frames_lost_per_s), then confirmed
    by host counters before suspected from vCenter's, then class: within a severity the score never rises."""
    return severity_order(severity), -score, not confirmed, class_rank(klass), name, key


def ranked(rows: list[FleetRow]) -> tuple[FleetRow, ...]:
    """The rows in report order, each with its rank."""
    return tuple(dataclasses.replace(r, rank=i) if r.rank != i else r
                 for i, r in enumerate(sorted(rows, key=FleetRow.order), 1))


@dataclass(frozen=True)
class HostContext:
    """What vCenter said of the host itself (esxdiag.fleet.analysis.host_context)."""

    cpu_usage_avg_pct: float | None = None
    pnic_drops_per_s: float | None = None
    pnic_errors_per_s: float | None = None
    uplink_loss: tuple[Mapping[str, Any], ...] = ()
    uplink: str | None = None  # the host's uplink finding, said once
    uplink_loss_per_s: float | None = None
    source: str | None = None
    error: str | None = None
    uplink_severity: str | None = None  # the uplink finding's (esxdiag.vocabulary.drop_severity of its rate)


NO_HOST_CONTEXT = HostContext()


@dataclass(frozen=True, kw_only=True)
class Rollup:
    """A cluster's or host's VMs counted by class."""

    vcenter: str
    name: str
    vms: int
    counts: Mapping[str, int]
    drops_per_s: float | None
    ready_worst_pct: float | None
    concern: int  # VMs needing attention (esxdiag.vocabulary.needs_attention), and a host's own uplink loss
    context: HostContext | None = None  # hosts only

    def order(self) -> tuple:
        """Groups with the most VMs needing attention (a host's own uplink loss counts as one) first, then by
        the host's uplink loss rate, then by the VMs' drops."""
        loss = self.context.uplink_loss_per_s if self.context is not None else None
        return -self.concern, -(loss or 0), -(self.drops_per_s or 0), self.vcenter, self.name or ""

    def as_dict(self) -> JsonDict:
        out: JsonDict = {"vcenter": self.vcenter, "name": self.name, "vms": self.vms, "counts": dict(self.counts),
                         "drops_per_s": self.drops_per_s, "ready_worst_pct": self.ready_worst_pct,
                         "concern": self.concern}
        if self.context is not None:
            out.update(_json(dataclasses.asdict(self.context)))
        return out


def _rollups(rows: tuple[FleetRow, ...], group: Callable[[FleetRow], Key]) -> dict[Key, Rollup]:
    members: dict[Key, list[FleetRow]] = defaultdict(list)
    for row in rows:
        members[group(row)].append(row)
    out = {}
    for k, rs in members.items():
        ready = [m.ready_worst_pct for m in rs if m.ready_worst_pct is not None]
        drops = [m.drops_per_s for m in rs if m.drops_per_s is not None]
        out[k] = Rollup(vcenter=k[0], name=k[1], vms=len(rs), counts=class_counts(tuple(rs)),
                        drops_per_s=round(sum(drops), 3) if drops else None,
                        ready_worst_pct=max(ready) if ready else None,
                        concern=sum(m.attention for m in rs))
    return out


def cluster_rollups(rows: tuple[FleetRow, ...]) -> tuple[Rollup, ...]:
    return tuple(sorted(_rollups(rows, lambda r: (r.vcenter, r.cluster or "(no cluster)")).values(), key=Rollup.order))


def host_rollups(rows: tuple[FleetRow, ...], context: Mapping[Key, HostContext]) -> tuple[Rollup, ...]:
    """The per-host rollups of ``rows``, each with its host's context by (vCenter, name); a host's own uplink
    finding counts once among its concerns."""
    hosts = [dataclasses.replace(g, context=c, concern=g.concern + (1 if c.uplink else 0))
             for (vc, name), g in _rollups(rows, lambda r: (r.vcenter, r.host or "(unknown host)")).items()
             for c in [context.get((vc, name), NO_HOST_CONTEXT)]]
    return tuple(sorted(hosts, key=Rollup.order))


def class_counts(rows: tuple[FleetRow, ...]) -> dict[str, int]:
    counts = Counter(str(r.klass) for r in rows)  # one pass over the rows, not one per class
    return {c: counts[c] for c in FLEET_CLASSES}


@dataclass(frozen=True)
class SnapshotInfo:
    file: str | None
    collected_at: str
    window_s: float
    nic_types: str
    filters: Mapping[str, Any]
    notes: tuple[str, ...]


@dataclass(frozen=True)
class NotScanned:
    vcenter: str
    url: str
    error: str | None
    error_kind: str | None
    stale_since: str | None = None  # a vCenter whose last cycle failed, shown from its last good report (serve)

    def as_dict(self) -> JsonDict:
        out = {"vcenter": self.vcenter, "url": self.url, "error": self.error, "error_kind": self.error_kind}
        return out if self.stale_since is None else {**out, "stale_since": self.stale_since}


@dataclass(frozen=True, kw_only=True)
class FleetReport:
    schema: str
    generated_at: str
    esxdiag_version: str
    snapshot: SnapshotInfo
    thresholds: Mapping[str, float]
    vcenters: tuple[VcenterStatus, ...]
    not_scanned: tuple[NotScanned, ...]
    counts: Mapping[str, int]
    rows: tuple[FleetRow, ...]
    clusters: tuple[Rollup, ...]
    hosts: tuple[Rollup, ...]
    changes: Mapping[str, Any] | None = None  # what changed since the last like scan (esxdiag.fleet.history)
    deep: DeepSection | None = None  # this scan's deep check (None: none ran)
    by_key: Mapping[Key, FleetRow] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_key", {r.key: r for r in self.rows})

    def with_rows(self, rows: list[FleetRow]) -> "FleetReport":
        """The report with ``rows`` in place of its own: ranked again, counts and rollups recomputed, each
        host's context kept."""
        new = ranked(rows)
        context = {(h.vcenter, h.name): h.context for h in self.hosts if h.context is not None}
        return dataclasses.replace(self, rows=new, counts=class_counts(new), clusters=cluster_rollups(new),
                                   hosts=host_rollups(new, context))

    def with_changes(self, changes: Mapping[str, Any] | None) -> "FleetReport":
        return dataclasses.replace(self, changes=changes)

    def with_note(self, note: str) -> "FleetReport":
        """The report with a note before the snapshot's own (serve: a degraded history)."""
        snapshot = dataclasses.replace(self.snapshot, notes=(note, *self.snapshot.notes))
        return dataclasses.replace(self, snapshot=snapshot)

    def as_dict(self) -> JsonDict:
        """The JSON document (docs/report-schema.md)."""
        return {
            "schema": self.schema, "generated_at": self.generated_at, "esxdiag_version": self.esxdiag_version,
            "snapshot": _json(dataclasses.asdict(self.snapshot)), "thresholds": dict(self.thresholds),
            "vcenters": [_json(dataclasses.asdict(v)) for v in self.vcenters],
            "not_scanned": [n.as_dict() for n in self.not_scanned], "counts": dict(self.counts),
            "vms": [r.as_dict() for r in self.rows],
            "rollups": {"clusters": [g.as_dict() for g in self.clusters], "hosts": [g.as_dict() for g in self.hosts]},
            "changes": _json(self.changes) if self.changes is not None else None,
            "deep": self.deep.as_dict() if self.deep is not None else None,
        }
