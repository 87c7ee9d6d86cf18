"""A target's clock that stepped between the window's samples (docs/diagnosis.md "Samples in capture
order"): the readings stay in capture order, and the report says which clock stepped, its two stamps and
what measured the window instead."""

from __future__ import annotations

from datetime import timedelta

from esxdiag.join.facts import ClockStep, VmFacts
from esxdiag.result import Evidence, Finding

RULE = "data-quality"


def _span(seconds: float) -> str:
    """A step's size as h:mm:ss ("1:00:02")."""
    return f"{timedelta(seconds=round(abs(seconds)))} (h:mm:ss)"


def _samples(step: ClockStep) -> str:
    return (f"sample {step.first_sample if step.first_sample is not None else 0} stamped {step.first_stamp}, "
            f"sample {step.last_sample if step.last_sample is not None else 1} stamped {step.last_stamp} "
            f"({step.seconds:+,.0f} s)")


def _used(step: ClockStep) -> str:
    if step.used_s is None:
        return f"rates per second are not given ({step.used_from})"
    return f"rates use {step.used_s:.0f} s, {step.used_from}"


def clock_steps(vm: VmFacts, t: dict[str, float]):
    by_target: dict[str, list[ClockStep]] = {}
    for step in vm.clock_steps:
        by_target.setdefault(step.target, []).append(step)
    findings = []
    for target, steps in by_target.items():
        first = steps[0]
        moved = "stepped back" if first.direction == "back" else "jumped forward"
        size = f" by {_span(first.seconds - first.used_s)}" if first.used_s is not None else ""
        others = f" The same for {len(steps) - 1} more of its captures." if len(steps) > 1 else ""
        findings.append(Finding(
            RULE, "info", vm.name, None,
            f"Clock step: the clock of {target} {moved}{size} between the window's samples",
            f"{first.what} on {target}: {_samples(first)}. The readings are taken in capture order (sample 0 is "
            f"the window's start, docs/bundle-format.md), not in the order of these stamps, and the stamps do not "
            f"measure the window: {_used(first)}.{others} Check the target's time source (NTP, VMware Tools time "
            "sync) before comparing its logs with the other targets'.",
            evidence=tuple(Evidence(f"{s.target} clock: {s.what}, last sample's stamp minus the first's "
                                    f"({_samples(s)})", round(s.seconds, 1), "s",
                                    None if s.used_s is None else round(s.used_s, 1), None, s.source,
                                    "started/ended (manifest)") for s in steps)))
    return findings


RULES = (clock_steps,)
