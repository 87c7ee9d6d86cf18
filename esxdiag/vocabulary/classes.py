"""Fleet classes: one per VM in a fleet report, each with its meaning, its rank (most urgent first),
the severities it can carry, whether it needs someone's attention, and the shipped alert that says it
(contrib/prometheus/esxdiag-rules.yml). docs/fleet-scan.md "Classes" says when each applies."""

from __future__ import annotations

from dataclasses import dataclass
from esxdiag.vocabulary.ids import Id

from esxdiag.vocabulary.severity import Severity

C, W, I = Severity.CRITICAL, Severity.WARNING, Severity.INFO


class FleetClass(Id):
    RING_EXHAUSTION = "ring-exhaustion"
    CPU_AND_DROPS = "cpu-and-drops"
    RING_SUSPECT = "ring-suspect"
    UPLINK_LOSS = "uplink-loss"
    DROPS_NOT_RING = "drops-not-ring"
    CPU_LIMIT = "cpu-limit"
    CPU_CONTENTION = "cpu-contention"
    EMULATED_NIC = "emulated-nic"
    NO_DATA = "no-data"
    HEALTHY = "healthy"


@dataclass(frozen=True)
class ClassInfo:
    meaning: str
    severities: tuple[Severity | None, ...]  # every severity the fleet rules can give it
    severity_rule: str
    concern: bool  # counted per cluster/host, "new suspect" / "recovered" in history
    alert: str | None  # the shipped alert for a VM of this class at warning or critical
    drop_suspicion: bool = False  # vCenter's drop counters suspect it; the deep check proves or clears it

    @property
    def alerted(self) -> tuple[Severity, ...]:
        return tuple(s for s in self.severities if s in (C, W))


RATE = "drop_severity of the drops' rate (ring.drops_per_s_critical)"
CLASSES: dict[FleetClass, ClassInfo] = {
    FleetClass.RING_EXHAUSTION: ClassInfo(
        "rx ring exhaustion proven by the deep check's host counters (raise-ring1, raise-ring2, at-max, enable-rss)",
        (C, W), f"{RATE} of the proven vNICs' host drops", True, "EsxdiagRingExhaustionConfirmed"),
    FleetClass.CPU_AND_DROPS: ClassInfo(
        "drops while the VM is CPU limited or contended, or the host swaps it (memory-first) or every vCPU is "
        "saturated (guest-saturated): fix CPU or memory first", (C,), "always critical", True,
        "EsxdiagCpuAndDrops", drop_suspicion=True),
    FleetClass.RING_SUSPECT: ClassInfo(
        "drops on a vmxnet3 vNIC with CPU measured healthy: rx ring exhaustion likely, not proven", (C, W), RATE,
        True, "EsxdiagRingSuspectSustained", drop_suspicion=True),
    FleetClass.UPLINK_LOSS: ClassInfo(
        "the VM's host loses received frames on a physical uplink; proven when the deep check says "
        "drops-elsewhere naming the uplink", (C, W, I),
        "info without drops of its own (the host's loss: EsxdiagUplinkLoss by host, at its finding's severity); "
        "confirmed: the "
        "suspicion's, else warning", True, "EsxdiagUplinkLossConfirmed"),
    FleetClass.DROPS_NOT_RING: ClassInfo(
        "the deep check found the ring counters flat: the drops have another cause (drops-elsewhere)", (C, W),
        "the drop suspicion's, else warning", True, "EsxdiagDropsNotRing"),
    FleetClass.CPU_LIMIT: ClassInfo(
        "%MLMTD over threshold, or a limit set with no %MLMTD figures; or cpu-limit-first on the host", (C, W),
        "critical over cpu.max_limited_pct or proven, else warning", True, "EsxdiagCpuLimit"),
    FleetClass.CPU_CONTENTION: ClassInfo(
        "worst-vCPU %RDY over the warning threshold or %CSTP over its threshold; or cpu-contention-first", (C, W),
        "critical when contended or proven, else warning", True, "EsxdiagCpuContention"),
    FleetClass.EMULATED_NIC: ClassInfo(
        "an e1000 / e1000e vNIC: the adapter type is the fix", (C, W), f"with drops: {RATE}; without: warning",
        True, "EsxdiagEmulatedNic"),
    FleetClass.NO_DATA: ClassInfo(
        "powered off, no counters, or drops that cannot be placed (no CPU figures, vNIC types unread)", (W, I, None),
        "warning for drops esxdiag cannot place, else info or none", False, "EsxdiagDropsUndecided"),
    FleetClass.HEALTHY: ClassInfo("CPU and drops measured, nothing over threshold", (None,), "none", False, None),
}
if set(CLASSES) != set(FleetClass):  # a class without its entry fails here, at import
    raise ImportError(f"fleet classes without an entry: {sorted(set(FleetClass) - set(CLASSES))}")
if any(info.alerted and not info.alert for info in CLASSES.values()):
    raise ImportError("a fleet class that can be warning or critical has no alert")

FLEET_CLASSES: tuple[str, ...] = tuple(c.value for c in FleetClass)  # most urgent first: the rank
CONCERN_CLASSES: tuple[str, ...] = tuple(c.value for c in FleetClass if CLASSES[c].concern)
DROP_CLASSES: tuple[str, ...] = tuple(c.value for c in FleetClass if CLASSES[c].drop_suspicion)


def class_rank(klass: str) -> int:
    """0 for the most urgent class; an unknown class raises ValueError."""
    return FLEET_CLASSES.index(FleetClass(klass).value)


def needs_attention(klass: str, severity: str | None) -> bool:
    """A fleet row someone should look at: a concern class, but not a VM with no symptom of its own on a host
    whose uplink loses frames (uplink-loss at info or none): the host's rollup says that loss once."""
    return CLASSES[FleetClass(klass)].concern and not (
        klass == FleetClass.UPLINK_LOSS and severity in (None, Severity.INFO))
