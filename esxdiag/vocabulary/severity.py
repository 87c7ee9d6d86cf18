"""Severities, and the one rule that turns a drop rate into one (docs/diagnosis.md, README "Thresholds").

The per-VM report, every fleet table, /metrics and the shipped alerts take a drop's severity from
``drop_severity``: critical above the threshold's rate, warning at or under it or when the rate is
not known."""

from __future__ import annotations

from typing import Mapping

from esxdiag.vocabulary.ids import Id


class Severity(Id):
    CRITICAL = "critical"
    WARNING = "warning"
    INFO = "info"


SEVERITIES: tuple[str, ...] = tuple(s.value for s in Severity)  # most severe first
# /metrics' esxdiag_fleet_vm_severity value for each (none: 0): alert on >= 2
SEVERITY_VALUES: dict[str | None, int] = {None: 0, **{s.value: len(Severity) - i for i, s in enumerate(Severity)}}
ALERTED = (Severity.CRITICAL, Severity.WARNING)  # the severities a shipped alert says


def severity_order(severity: str | None) -> int:
    """0 for critical, then warning, info; none (or anything else) last."""
    return SEVERITIES.index(severity) if severity in SEVERITIES else len(SEVERITIES)


def drop_severity(rate_per_s: float | None, t: Mapping[str, float],
                  threshold: str = "ring.drops_per_s_critical") -> Severity:
    """Critical when frames are lost faster than ``t[threshold]`` per second, else warning (an unknown
    rate included): ring exhaustion, an emulated vNIC's drops and a drop suspicion use
    ring.drops_per_s_critical, an uplink's loss uplink.drops_per_s_critical."""
    return Severity.CRITICAL if rate_per_s is not None and rate_per_s > t[threshold] else Severity.WARNING
