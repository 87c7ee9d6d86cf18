"""A host's uplinks: received frames lost on its physical NICs, before the vSwitch (docs/diagnosis.md
section 9, docs/fleet-scan.md "Uplink loss").

A frame the vmnic drops (net.droppedRx: missed, FIFO, no buffer) or rejects (net.errorsRx: CRC, length)
never reaches any VM's port: no vNIC ring can help it, and no VM's own net.droppedRx counts it. So a
host whose uplink loses frames over ``fleet.uplink_drops_per_s_floor`` is one finding of the host (its
rollup, ranked by the loss rate), not N ring suspects: a VM on it with no drops of its own is class
``uplink-loss`` at ``info`` only (no symptom of its own), one with drops keeps its own class and severity
and names the uplink. vCenter answers instance "*" with one series per
vmnic ("vmnic1") beside the host's aggregate (""); vcsim echoes one aggregate only. The words name the
vmnic when vCenter did, and say it is not known when it did not.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from esxdiag.fleet.snapshot import FleetHost
from esxdiag.vocabulary import FleetClass, Severity, class_rank, severity_order

UPLINK = re.compile(r"vmnic[0-9]{1,4}|vusb[0-9]{1,3}")  # a physical uplink's instance name
DROPS, ERRORS = "net.droppedRx.summation", "net.errorsRx.summation"

Judgement = tuple[str, "str | None", str]  # class, severity, reason


@dataclass(frozen=True)
class VmnicLoss:
    vmnic: str | None  # None: the host's aggregate (vCenter gave no per-vmnic series)
    drops: int
    errors: int | None  # None: not read (snapshots before net.errorsRx was asked for)
    seconds: float

    @property
    def per_s(self) -> float:
        return (self.drops + (self.errors or 0)) / self.seconds

    def words(self) -> str:
        errors = "errorsRx not read" if self.errors is None else f"errorsRx {self.errors / self.seconds:.2f}/s"
        return f"{self.per_s:.2f} received frames/s lost (droppedRx {self.drops / self.seconds:.2f}/s, {errors})"


@dataclass(frozen=True)
class HostUplink:
    vcenter: str
    host: str
    vmnics: tuple[VmnicLoss, ...]  # every uplink measured (or the aggregate alone)

    def lossy(self, t: dict[str, float]) -> tuple[VmnicLoss, ...]:
        """The uplinks losing frames at or over the floor (both 0 at the floor: any loss counts)."""
        return tuple(v for v in self.vmnics if v.drops + (v.errors or 0) > 0
                     and v.per_s >= t["fleet.uplink_drops_per_s_floor"])

    def per_s(self, t: dict[str, float]) -> float:
        return sum(v.per_s for v in self.lossy(t))

    def words(self, t: dict[str, float]) -> str:
        """"uplink loss on esx0 vmnic1: 6.20 received frames/s lost (...)", every lossy vmnic named."""
        parts = [f"{v.vmnic}: {v.words()}" if v.vmnic else
                 f"(which vmnic is not known: vCenter gave the host's aggregate only): {v.words()}"
                 for v in self.lossy(t)]
        return f"uplink loss on {self.host} " + "; ".join(parts)


def _totals(series: Sequence[int | None], interval_s: int) -> tuple[int, float] | None:
    values = [v for v in series if v is not None]
    return (sum(values), len(values) * interval_s) if values else None


def host_uplink(host: FleetHost) -> HostUplink | None:
    """The host's uplink figures over the window; None without host counters."""
    perf = host.perf
    if perf is None:
        return None
    by = {(s.counter, s.instance): s.values for s in perf.series if s.counter in (DROPS, ERRORS)}
    nics = sorted({i for c, i in by if c == DROPS and UPLINK.fullmatch(i)})
    out = []
    for nic in nics or ([""] if (DROPS, "") in by else []):
        drops = _totals(by[(DROPS, nic)], perf.interval_s)
        if drops is None:
            continue
        errors = _totals(by.get((ERRORS, nic), ()), perf.interval_s)
        out.append(VmnicLoss(nic or None, drops[0], errors[0] if errors else None, drops[1]))
    return HostUplink(host.vcenter, host.name, tuple(out))


def fold(judgement: Judgement, own_drops: bool, uplinks: Sequence[HostUplink], t: dict[str, float]) -> Judgement:
    """The VM's class once the uplinks of the hosts it ran on in the window are known. A VM whose own
    port drops are over the floor (or whose class the host counters proved) keeps its class and the
    severity its own drops give, and the reason names the uplink loss. A VM with no drops of its own has
    no symptom: it is ``uplink-loss`` at ``info`` (the host's loss is said once, ranked by its rate, in the
    host rollup), unless its own class is more urgent (severity, then class order), which then keeps it
    with the same words."""
    klass, severity, reason = judgement
    lossy = [u for u in uplinks if u.lossy(t)]
    if not lossy:
        return judgement
    words = "; ".join(u.words(t) for u in lossy)
    if klass == FleetClass.UPLINK_LOSS:
        return klass, severity, f"{reason}; vCenter: {words}"
    mine = (FleetClass.UPLINK_LOSS, Severity.INFO, f"{words}: before the vSwitch, not the ring, and not seen at this "
            f"VM's port (the host's finding, in its rollup); the VM itself: {reason}")
    also = (klass, severity, f"{reason}; its host also loses frames: {words}: not the ring, and not in the "
                              "VM's port drops")
    if own_drops or klass in (FleetClass.RING_EXHAUSTION, FleetClass.DROPS_NOT_RING):
        return also
    return min(mine, also, key=lambda j: (severity_order(j[1]), class_rank(j[0])))
