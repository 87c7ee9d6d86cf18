"""Rule thresholds: defaults from docs/diagnosis.md, overridable by a config file and --set.

Config file (INI), section [thresholds], keys as below, e.g.::

    [thresholds]
    cpu.ready_pct_critical = 8
"""

from __future__ import annotations

import configparser
import math
from pathlib import Path

from esxdiag.errors import EsxdiagError

DEFAULT_THRESHOLDS: dict[str, float] = {
    # per-vCPU CPU figures (docs/diagnosis.md)
    "cpu.ready_pct_warning": 5.0,  # %RDY 5-10: investigate
    "cpu.ready_pct_critical": 10.0,  # %RDY > 10: contention (vCheck default)
    "cpu.costop_pct": 3.0,  # %CSTP > 3: too many vCPUs
    "cpu.max_limited_pct": 0.0,  # %MLMTD > 0: a limit is throttling
    "cpu.swap_wait_pct": 5.0,  # %SWPWT > 5: memory pressure
    "cpu.max_limited_share_of_ready": 0.8,  # %MLMTD >= this share of %RDY: the limit, not other VMs, causes the
    #                                         wait (seed, section 1: %RDY 69.60 of which %MLMTD 69.52)
    # vmxnet3 rings over the window (docs/diagnosis.md)
    "ring.full_events": 0.0,  # ring-full delta above this = exhaustion happening now
    "ring.drops": 0.0,  # out-of-buffer drop delta above this = drops happening now
    "ring.drops_per_s_critical": 10.0,  # drop rate that makes ring exhaustion critical
    "ring.max_size": 4096.0,  # vmxnet3 device maximum per ring
    "ring.memory_kb_per_ring1_entry": 2.4,  # seed: ~18 MB for 2 queues x (4096-256)
    "ring.memory_kb_per_ring2_entry": 4.0,  # page-sized buffers
    "ring.persist_warn_size": 1024.0,  # Linux ring 1 above this, not set at boot: warn (largest default, RX 1024)
    # host and guest out-of-buffer deltas count the same device counter (section 3): they agree within the larger
    # of these (esxdiag's own allowance for the two samples being taken a moment apart)
    "ring.host_guest_tolerance_pct": 10.0,  # % of the larger delta
    "ring.host_guest_tolerance_min": 10.0,  # packets
    # other causes of loss (docs/diagnosis.md)
    "uplink.drops": 0.0,  # vmnic receive drops/errors over the window above this = loss on the uplink now
    "uplink.drops_per_s_critical": 10.0,  # the same rate that makes ring exhaustion critical
    "rx.other_drops": 0.0,  # vmxnet3 drops for a reason other than the ring (MTU, steering...) above this
    "tx.drops": 0.0,  # transmit drops (port droppedTx, guest tx ring full) above this = happening now
    "cpu.run_pct_saturated": 95.0,  # every vCPU %RUN at or above: the guest itself is saturated (section 10: "near
    #                                 100 %"); the seed's ring-starved receiver ran ~92 % and a ring raise fixed it
    "cpu.esxtop_coverage_min_pct": 50.0,  # esxtop samples covering less of the window: CPU judged on part of it,
    #                                        so vCenter's whole-window per-vCPU figures are judged beside them
    # the per-VM noise floor (docs/diagnosis.md "A floor for one VM"): drops under BOTH are not exhaustion worth
    # guest memory, the same numbers as the fleet's floor below ("well under 0.1 per second and 0.01 per 1,000
    # packets" is noise: broadcast storms, a guest briefly slow to post buffers, a vMotion stun)
    "ring.drops_per_s_floor": 0.1,
    "ring.drops_per_million_floor": 10.0,  # per million frames the port received (0.01 per 1,000)
    "ring.hot_queue_share_pct": 90.0,  # the fewest rx queues holding this share of the drops: hot queues
    "ring.hot_queues_max_pct": 50.0,  # ... when they are at most this % of the vNIC's rx queues (1 of 2, 2 or 3 of
    #                                   8); esxdiag's own cut: more than half the queues is spread, not a few flows
    # vNIC facts (docs/diagnosis.md)
    "nic.link_speed_fast_gbps": 10.0,  # reported speed below this gets the "not a limit" note (vmxnet3: 10 Gbps)
    # vCenter realtime statistics (docs/diagnosis.md): 20 s samples; fewer than this many
    # cannot tell steady drops from one burst, so a vCenter-only answer on them is insufficient evidence
    "vcenter.min_samples": 3.0,
    # fleet triage (docs/diagnosis.md; docs/fleet-scan.md "Noise floor"): vCenter net.droppedRx below
    # BOTH floors is a note, not a class -- a healthy VM's broadcast storms, a guest briefly slow to post
    # buffers or a vMotion stun leave "a handful in five minutes out of millions of packets (well under
    # 0.1 per second and 0.01 per 1,000 packets)"
    "fleet.drops_per_s_floor": 0.1,
    "fleet.drops_per_1000_floor": 0.01,
    # a host uplink (vCenter host net.droppedRx + net.errorsRx per vmnicN, docs/diagnosis.md) losing received
    # frames faster than this is a finding for every VM on the host (docs/fleet-scan.md "Uplink loss"): the same
    # "well under 0.1 per second" as a VM's floor (section 8), on its own key because the scan reads no host
    # packet count (no per-1,000 floor beside it) and some pNIC drivers count frames they filter as drops
    "fleet.uplink_drops_per_s_floor": 0.1,
    # guest TCP
    "tcp.retransmit_pct": 1.0,  # retransmitted / sent segments in the window
    "tcp.retransmits_per_s": 10.0,  # or a sustained retransmit rate (the seed's sender: ~290/s)
}


class ConfigError(EsxdiagError):
    pass


def describe_config_error(exc: Exception) -> str:
    """What is wrong with a config file, by line number only: a malformed line may hold a secret."""
    if isinstance(exc, configparser.MissingSectionHeaderError):
        return f"no [section] header before line {exc.lineno}"
    if isinstance(exc, configparser.ParsingError):
        return "cannot parse line " + ", ".join(str(n) for n in sorted({n for n, _ in exc.errors}))
    if isinstance(exc, (configparser.DuplicateOptionError, configparser.DuplicateSectionError)):
        return f"duplicate {'option' if isinstance(exc, configparser.DuplicateOptionError) else 'section'} " \
               f"at line {exc.lineno}"
    if isinstance(exc, UnicodeDecodeError):
        return "not UTF-8 text"
    if isinstance(exc, OSError):
        return exc.strerror or type(exc).__name__
    return type(exc).__name__


def load_thresholds(config_file: str | Path | None = None, overrides: list[str] | None = None) -> dict[str, float]:
    values = dict(DEFAULT_THRESHOLDS)
    if config_file:
        parser = configparser.ConfigParser()
        try:
            with open(config_file, encoding="utf-8") as fh:
                parser.read_file(fh)
        except (OSError, UnicodeDecodeError, configparser.Error) as exc:
            raise ConfigError(f"{config_file}: cannot read config ({describe_config_error(exc)})") from None
        if parser.has_section("thresholds"):
            for key, raw in parser.items("thresholds"):
                values[key] = _number(key, raw, str(config_file))
    for item in overrides or []:
        key, sep, raw = item.partition("=")
        if not sep:
            raise ConfigError(f"--set {item!r}: expected rule.key=value")
        values[key.strip()] = _number(key.strip(), raw, "--set")
    return values


def _number(key: str, raw: str, where: str) -> float:
    if key not in DEFAULT_THRESHOLDS:
        known = ", ".join(sorted(DEFAULT_THRESHOLDS))
        raise ConfigError(f"{where}: unknown threshold {key!r} (known: {known})")
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{where}: {key} must be a number, got {raw.strip()!r}") from None
    low, high = _RANGES.get(key, (0.0, 1e9))
    if not math.isfinite(value) or not low <= value <= high:
        raise ConfigError(f"{where}: {key} must be between {low:g} and {high:g}, got {raw.strip()!r}")
    return value


_RANGES = {  # everything else: 0 .. 1e9
    "ring.max_size": (32.0, 4096.0),  # vmxnet3 device limits
    "ring.persist_warn_size": (32.0, 4096.0),  # a ring 1 size
    "cpu.max_limited_share_of_ready": (0.0, 1.0),  # a share of %RDY
    "vcenter.min_samples": (1.0, 180.0),  # 180 realtime samples = vCenter's one hour
    "fleet.drops_per_s_floor": (0.0, 1e6),
    "fleet.uplink_drops_per_s_floor": (0.0, 1e6),
    "fleet.drops_per_1000_floor": (0.0, 1000.0),  # per 1,000 packets received
    "ring.drops_per_s_floor": (0.0, 1e6),
    "ring.drops_per_million_floor": (0.0, 1e6),  # per million packets received
    **{key: (0.0, 100.0) for key in DEFAULT_THRESHOLDS if key.endswith("_pct") or "_pct_" in key},
}
