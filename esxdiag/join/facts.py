"""Typed facts the rules read: cumulative counters over the window, CPU series, per-vNIC and
per-VM facts. Built only by esxdiag.join.joiner; rules never touch bundles or parsers."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from esxdiag.result import Evidence

WINDOWS_DISCARDS = "ReceivedDiscardedPackets"  # a Windows NIC's one receive drop counter (Get-NetAdapterStatistics)
COUNTER32 = 2**32
# A reading within this of 2**32 followed by one that is at most this much past the wrap is a 32-bit
# counter wrapping, not a reset: a quarter of the 32-bit range, so a 60 s window at 10 Gb/s line rate
# (~50 million segments) is far inside it, and a reset is only misread when the counter stood in the top
# quarter of the range (docs/diagnosis.md "Samples in capture order").
WRAP_REACH = 2**30


def step_kind(start: int, end: int, bits: int | None = None) -> str:
    """One step between two readings of a counter: "rise", a 32-bit "wrap", or a "reset". A counter
    known to be 64-bit (``bits`` 64) never wraps."""
    if end >= start:
        return "rise"
    wrapped = end + COUNTER32 - start
    if bits != 64 and COUNTER32 - WRAP_REACH <= start < COUNTER32 and wrapped <= WRAP_REACH:
        return "wrap"
    return "reset"


def step_growth(start: int, end: int, bits: int | None = None) -> int:
    """What a counter counted between two readings: after a wrap the rest of the 32-bit range plus the
    end; after a reset what accumulated since (the end). Never negative."""
    kind = step_kind(start, end, bits)
    return end - start if kind == "rise" else end + COUNTER32 - start if kind == "wrap" else end


def finite_values(values: list[float]) -> tuple[list[float], float]:
    """(the values that are finite, their sum): a NaN or inf is a damaged cell, never compared or averaged.
    One sum when it is finite (a finite sum proves no value is NaN or inf), else the finite ones summed."""
    total = sum(values)
    if math.isfinite(total):
        return values, total
    values = [v for v in values if math.isfinite(v)]
    return values, sum(values)


@dataclass(frozen=True)
class CounterWindow:
    """One cumulative counter read at the start and end of the window (and any readings between).

    A counter that went backwards was reset (VM reboot, driver reload): what accumulated after the
    reset is the new value, so the delta adds it to the growth before the reset — never a negative
    rate. A 32-bit counter that went from the top of its range to a small value wrapped (``wraps``):
    the delta counts through 2**32. The largest reading (``peak``) proves exhaustion happened even
    when a reset hides it at the end (docs/diagnosis.md)."""

    what: str
    start: int | None
    end: int | None
    seconds: float | None
    source: str | None = None  # file of the end reading
    locator: str | None = None
    between: tuple[int, ...] = ()  # readings between start and end, in capture (sample) order
    bits: int | None = None  # 64: a counter known to be 64-bit (never wraps); None: width unknown
    since: str | None = None  # what a single reading counts from when not the vNIC's start (a port a move connected)

    @property
    def complete(self) -> bool:
        return self.start is not None and self.end is not None

    def _readings(self) -> list[int]:
        return [v for v in (self.start, *self.between, self.end) if v is not None]

    def _steps(self) -> list[tuple[int, int]]:
        values = self._readings()
        return list(zip(values, values[1:]))

    def _width(self) -> int | None:
        """A reading at or past 2**32 shows a counter wider than 32 bits: it never wraps."""
        return 64 if self.bits == 64 or any(v >= COUNTER32 for v in self._readings()) else self.bits

    def _kinds(self) -> list[str]:
        return [step_kind(a, b, self._width()) for a, b in self._steps()] if self.complete else []

    @property
    def resets(self) -> int:
        return self._kinds().count("reset")

    @property
    def wraps(self) -> int:
        """Times the counter wrapped past 2**32 between readings (a 32-bit counter, not a reset)."""
        return self._kinds().count("wrap")

    @property
    def reset(self) -> bool:
        return self.resets > 0

    @property
    def before_reset(self) -> int | None:
        """The reading just before the first reset: what had accumulated when the counter went back."""
        return next((a for (a, _), kind in zip(self._steps(), self._kinds()) if kind == "reset"), None)

    @property
    def delta(self) -> int | None:
        if not self.complete:
            return None
        return sum(step_growth(a, b, self._width()) for a, b in self._steps())

    @property
    def rate_per_s(self) -> float | None:
        if self.delta is None or not self.seconds:
            return None
        return self.delta / self.seconds

    @property
    def total(self) -> int | None:
        """Since-initialisation value at the latest reading."""
        return self.end if self.end is not None else self.start

    @property
    def peak(self) -> int | None:
        """The largest reading: non-zero means the event happened at some time, reset or not."""
        values = self._readings()
        return max(values) if values else None

    @property
    def since_words(self) -> str:
        """What a single reading's total counts from: the vNIC's start, or the move that connected its port."""
        return self.since or "since vNIC init"

    def reset_words(self) -> str:
        return (f"counter reset during the window (VM reboot or driver reload): {self.before_reset:,} before "
                f"the reset, {self.end:,} at the end") if self.reset else ""

    def wrap_words(self) -> str:
        return (f"wrapped past 2^32 ({COUNTER32:,}) {'once' if self.wraps == 1 else f'{self.wraps} times'}: a 32-bit "
                f"counter, counted through the wrap, not a reset") if self.wraps else ""

    def evidence(self, threshold: float | None = None, comparison: str | None = ">") -> Evidence:
        observed = self.delta if self.complete else self.total
        unit = "events in window" if self.complete else f"{self.since_words} (single reading)"
        words = [w for w in (self.reset_words(), self.wrap_words()) if w]
        what = self.what + (f" ({'; '.join(words)})" if words else "")
        if self.complete and self.rate_per_s is not None:
            unit = f"events in {self.seconds:.0f} s window ({self.rate_per_s:.2f}/s)"
        return Evidence(what, observed, unit, threshold, comparison if threshold is not None else None,
                        self.source, self.locator)


@dataclass(frozen=True)
class DropSymptom:
    """Frames dropped at the vSwitch port over the window, seen without ring counters: esxtop
    ``Network Port`` % Received Packets Dropped (%DRPRX) per sample, or vCenter net.droppedRx
    (packets per sample interval). Broadcom KB 312565: receive buffers exhausted, or the guest
    starved of CPU — the symptom, not the cause (docs/diagnosis.md)."""

    what: str
    values: tuple[float | None, ...]  # per sample
    unit: str  # "%" (esxtop) or "packets" (vCenter, per sample interval)
    source: str | None
    locator: str
    packets_rx: tuple[float | None, ...] = ()  # vCenter net.packetsRx per sample, for drops per 1,000 received
    interval_s: float | None = None  # vCenter's sample interval (20 s realtime)
    direction: str = "rx"  # "rx": received frames dropped; "tx": transmitted frames dropped (%DRPTX, droppedTx)

    @property
    def present(self) -> list[float]:
        return [v for v in self.values if v is not None and math.isfinite(v) and v >= 0]

    @property
    def rising(self) -> bool:
        return any(v > 0 for v in self.present)

    @property
    def observed(self) -> float | None:
        """Packets dropped over the window (vCenter), or the window's peak drop percentage (esxtop)."""
        if not self.present:
            return None
        return round(sum(self.present) if self.unit == "packets" else max(self.present), 2)

    def per_1000(self) -> float | None:
        received = [p for p in self.packets_rx if p is not None and math.isfinite(p) and p >= 0]
        if self.unit != "packets" or not received or not sum(received):
            return None
        return 1000 * sum(self.present) / sum(received)

    def evidence(self) -> Evidence:
        sent = self.direction == "tx"
        unit = (f"% of {'transmitted' if sent else 'received'} packets dropped, peak sample" if self.unit == "%" else
                f"{'transmitted ' if sent else ''}packets dropped in {len(self.present)} samples")
        rate = self.per_1000()
        if rate is not None:
            unit += f" ({rate:.2f} per 1,000 received)"
        return Evidence(self.what, self.observed, unit, 0, ">", self.source, self.locator)


@dataclass(frozen=True)
class CpuFacts:
    """Per-vCPU CPU figures over the window, from one source."""

    source: str  # "esxtop" or "vcenter-realtime" / "vcenter-historical"
    file: str | None
    times: tuple[str, ...]
    ready_pct: dict[str, tuple[float | None, ...]]  # per vCPU label -> per sample (or one "avg" series)
    costop_pct: dict[str, tuple[float | None, ...]]
    max_limited_pct: dict[str, tuple[float | None, ...]]
    swap_wait_pct: dict[str, tuple[float | None, ...]] = field(default_factory=dict)
    normalisation: str = ""
    bound: str = "exact"  # "lower" (sum / Members: vCPU count unknown) or "upper" (sum as one vCPU)
    bound_divisor: int = 1  # with a lower bound: Members (series x this = the sum, the most per vCPU)
    warnings: tuple[str, ...] = ()  # damaged values dropped
    run_pct: dict[str, tuple[float | None, ...]] = field(default_factory=dict)  # %RUN per vCPU (esxtop)
    sample_s: float | None = None  # seconds one sample covers (esxtop's delay, vCenter's interval)
    window_s: float | None = None  # the window the figures should cover (the bundle's)

    @property
    def samples_with_values(self) -> int:
        """Samples in which any vCPU has a ready figure (a VM that left the host mid-capture leaves gaps)."""
        count = len(self.times)
        return len({i for values in self.ready_pct.values() for i, v in enumerate(values[:count]) if v is not None})

    @property
    def covered_s(self) -> float | None:
        """Seconds of the window the figures cover: samples with values x the sample length."""
        return self.samples_with_values * self.sample_s if self.sample_s else None

    @staticmethod
    def _peak(series: dict[str, tuple[float | None, ...]]) -> float | None:
        values = [v for vals in series.values() for v in vals if v is not None and math.isfinite(v)]
        return max(values) if values else None

    @staticmethod
    def _mean(series: dict[str, tuple[float | None, ...]]) -> float | None:
        values, total = finite_values([v for vals in series.values() for v in vals if v is not None])
        return total / len(values) if values else None

    def average(self, name: str) -> float | None:
        """One figure's window average over its series (ready_pct, costop_pct, ...), as summary() gives it."""
        mean = self._mean(getattr(self, name))
        return None if mean is None else round(mean, 2)

    def summary(self) -> dict[str, Any]:
        samples = self.samples_with_values
        out: dict[str, Any] = {"source": self.source, "normalisation": self.normalisation, "bound": self.bound,
                               "samples": samples, "sample_s": self.sample_s,
                               "covered_s": samples * self.sample_s if self.sample_s else None,
                               "window_s": self.window_s}
        for name in ("ready_pct", "costop_pct", "max_limited_pct", "swap_wait_pct", "run_pct"):
            peak = self._peak(getattr(self, name))
            out[f"{name}_max"] = None if peak is None else round(peak, 2)
            out[f"{name}_avg"] = self.average(name)
        return out


@dataclass(frozen=True)
class UplinkFacts:
    """A physical uplink (vmnic) that carries the vNIC, with its receive-loss counters over the window:
    frames lost there never reach the vSwitch port, so no vNIC ring can help them (docs/diagnosis.md)."""

    vmnic: str
    host: str | None  # the host's name (or its target id in the bundle)
    mapping: str | None  # how the vNIC was tied to this vmnic; None: a host uplink not known to carry it
    counters: tuple[CounterWindow, ...] = ()  # esxcli network nic stats get: receive drops and errors
    symptoms: tuple[DropSymptom, ...] = ()  # vCenter host net.droppedRx / net.errorsRx for this vmnic


@dataclass(frozen=True)
class Move:
    """The VM changed host (vMotion, DRS) inside the window: counters before and after are two series."""

    time: str | None
    from_host: str | None
    to_host: str | None
    how: str  # the event type, or "sampled on two hosts"
    source: str | None = None  # file that says so
    from_port: int | None = None
    to_port: int | None = None


@dataclass(frozen=True)
class PortSegment:
    """One port the vNIC had in the window, on the host it lived on: its counters are a series of their own."""

    target: str  # the ESXi target id in the bundle
    host: str | None  # the host's name (vCenter's, else the target id without "esxi-")
    port: int
    portset: str | None
    first_read: str | None = None  # ISO time of the port's first and last counter reading (None: not timed)
    last_read: str | None = None


@dataclass(frozen=True)
class RingSetting:
    """A guest configuration line that sets ring sizes at boot (a systemd unit running ethtool -G, a udev rule,
    NetworkManager ethtool.ring-rx, an ifupdown hook, ifcfg ETHTOOL_OPTS): a new ring size is lost at the next
    boot unless this line is edited."""

    file: str
    line: int
    mechanism: str  # networkmanager udev systemd networkd rc.local ifupdown network-scripts netplan other
    iface: str | None  # None: the line names no interface (a keyfile, a udev rule matched by MAC)
    rx: int | None = None
    rx_jumbo: int | None = None
    tx: int | None = None

    def value(self, option: str) -> int | None:
        """The size this line sets for an ethtool ring option: rx, rx-jumbo or tx."""
        return {"rx": self.rx, "rx-jumbo": self.rx_jumbo, "tx": self.tx}[option]


@dataclass(frozen=True)
class ClockStep:
    """A target's time stamps that disagree with the capture order or with what else measured the window
    (esxdiag.join.clocks): its clock stepped between the samples. The readings stay in sample order; the
    window's length comes from ``used_s`` (``used_from`` says where)."""

    target: str
    what: str  # the capture whose stamps stepped (spec and params)
    first_sample: int | None
    last_sample: int | None
    first_stamp: str  # ISO UTC, as the target stamped it
    last_stamp: str
    seconds: float  # last stamp minus first: negative when the clock went back past the start
    direction: str  # "back" or "forward"
    used_s: float | None
    used_from: str
    source: str | None = None  # file of the last sample


@dataclass(frozen=True)
class VnicFacts:
    vm: str
    mac: str | None
    label: str | None
    type: str | None
    portset: str | None
    port: int | None
    guest_os: str | None
    guest_interface: str | None
    ring1_full: CounterWindow | None
    ring2_full: CounterWindow | None
    host_out_of_buffers: CounterWindow | None
    dropped_rx: CounterWindow | None  # clientStats
    guest_oob: CounterWindow | None  # sum of ethtool pkts rx OOB over rx queues
    guest_discards: CounterWindow | None  # Windows ReceivedDiscardedPackets
    lro_packets: CounterWindow | None
    ring1_size: int | None
    ring2_size: int | None
    ring_size_source: str | None
    ring1_max: int
    ring2_max: int
    rx_queues: int | None
    rx_queues_source: str | None
    mtu: int | None
    rss_enabled: bool | None  # Windows
    windows_adapter: str | None
    small_rx_buffers: int | None
    ethtool_current_rx: int | None
    driver: str | None
    driver_version: str | None
    link_speed: str | None = None  # as the guest reports it ("10 Gbps"); not a limit (docs/diagnosis.md §5)
    link_speed_source: str | None = None
    network: str | None = None  # portgroup (vCenter inventory)
    drop_symptoms: tuple[DropSymptom, ...] = ()  # vSwitch port drops without ring counters (esxtop, vCenter)
    series: dict[str, Any] = field(default_factory=dict)  # per-sample counters for charts
    missing: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    # differential diagnosis (docs/diagnosis.md): causes of loss besides the ring
    uplinks: tuple[UplinkFacts, ...] = ()
    uplinks_unknown: str | None = None  # why the vNIC's team uplink is not known (no esxcli port list, ...)
    rx_reasons: dict[str, CounterWindow] = field(default_factory=dict)  # drop-reason label -> its counter
    #                                        (esxdiag.join.causes.reason_family says which cause a label is)
    packets_rx: CounterWindow | None = None  # frames the port delivered (clientStats pktsRxOK): the floor's denominator
    tx: dict[str, CounterWindow] = field(default_factory=dict)  # droppedTx, droppedTxExceedMTU, guest tx ring full
    tx_symptoms: tuple[DropSymptom, ...] = ()  # esxtop %DRPTX
    guest_queue_oob: dict[int, CounterWindow] = field(default_factory=dict)  # guest pkts rx OOB per rx queue
    device_version: str | None = None  # vmxnet3 device: "v7" (ESXi 8, VM hardware 20+), "pre-v7", None unknown
    device_version_why: str | None = None  # what says so, or why it is unknown
    segments: tuple[PortSegment, ...] = ()  # the vNIC's ports in the window, in order (more than one: it moved)
    moves: tuple[Move, ...] = ()  # its moves, each with the ports it left and joined (esxdiag.join.moves)
    # Linux: the lines that set this interface's ring sizes at boot; None: the persistence search was not captured
    ring_settings: tuple[RingSetting, ...] | None = None
    large_rx_buffers: int | None = None  # Windows Large Rx Buffers (ring 2's pool)
    tx_ring_size: int | None = None  # ethtool -g TX / Windows Tx Ring Size
    # a NIC outside the vSwitch: "sriov" (an SR-IOV VF), "passthrough" (DirectPath I/O), "guest-only" (a guest
    # interface no inventory device claims). No port, no vmxnet3 rings: its driver's own counters are the evidence
    attachment: str | None = None
    driver_counters: dict[str, CounterWindow] = field(default_factory=dict)  # guest ethtool -S of a non-vmxnet3
    #                                        driver, every counter by its own name (esxdiag.rules.driver_nic reads them)
    ring_rx_max: int | None = None  # the driver's own ethtool -g RX maximum (any driver; not capped at vmxnet3's)
    tied_by: str | None = None  # how a device without a MAC was tied to its guest interface, when it was

    @property
    def rings_persisted(self) -> bool | None:
        """A mechanism sets this interface's ring 1 (rx) at boot (None: not known)."""
        return None if self.ring_settings is None else any(s.rx is not None for s in self.ring_settings)


@dataclass(frozen=True)
class PoolFacts:
    """A resource pool (or vApp) above the VM, from vCenter: a CPU limit there throttles the VM (%MLMTD) as
    its own does, and only that pool's setting removes it."""

    name: str
    moid: str | None
    path: str | None  # inventory path (/DC/host/cluster/Resources/pool), None when a parent could not be read
    kind: str  # "pool" or "vapp"
    cpu_limit_mhz: int | None  # None: unlimited (-1)
    root: bool = False  # the compute resource's root pool ("Resources"): its limit is the capacity, not a setting


@dataclass(frozen=True)
class VmFacts:
    name: str
    host: str | None
    power_state: str | None
    vcpus: int | None
    vcpus_source: str | None
    cpu_limit_mhz: int | None
    cpu_reservation_mhz: int | None
    guest_os: str | None
    guest_os_name: str | None
    inventory_file: str | None
    cpu: CpuFacts | None
    retransmits: CounterWindow | None
    segments_sent: CounterWindow | None
    vnics: tuple[VnicFacts, ...]
    missing: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    latency_sensitivity: str | None = None  # config.latencySensitivity.level: low, normal, medium, high
    hardware_version: str | None = None  # config.version ("vmx-20")
    esxi_version: str | None = None  # the host's ESXi version ("8.0.2"), from vCenter or vmware -vl
    moves: tuple[Move, ...] = ()  # host changes inside the window (vCenter events, or two hosts' captures)
    cpu_whole: CpuFacts | None = None  # vCenter per-vCPU figures for the whole window beside esxtop's
    #                                    (esxdiag.rules.cpustats.judged_on: used when esxtop covers part of it)
    # the VM's resource pool first, then its parents up to the root pool; None: not read (older bundles, no vCenter)
    resource_pools: tuple[PoolFacts, ...] | None = None
    clock_steps: tuple[ClockStep, ...] = ()  # stamps a stepped clock made unusable for the window's length
