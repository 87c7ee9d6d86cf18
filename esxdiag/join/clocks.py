"""How long the window was, from the captures' time stamps, and the clock steps that make a stamp unusable.

Readings are taken in capture order: the manifest's ``sample`` numbers (0 the window's start, the
highest its end; docs/bundle-format.md), never the order of their stamps. The stamps only measure the
window's length, and only when they agree with that order, with the other targets' stamps (each target
may stamp with its own clock) and with the bundle's ``window_s``. A clock stepped back (NTP stepping a
drifted clock, a guest resumed from a snapshot, someone setting the date) gives a negative or short
span; one jumped forward an hour-long one. Either is a data-quality finding (ClockStep), and the length
then comes from the other targets' stamps, else ``window_s`` — never from the stepped clock."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from statistics import median

from esxdiag.bundle import Bundle
from esxdiag.join.facts import ClockStep
from esxdiag.join.readings import Reading

# Two targets read the same window; their spans differ only by the time the captures between took (a few
# seconds per host or guest, more when one answers slowly). Spans further apart than the larger of these
# did not measure the same window: an hour's step is far outside, a one-minute window's overhead inside.
SLACK_S = 60.0
SLACK_SHARE = 0.5  # of the shorter span


def agree(span: float, other: float) -> bool:
    """Two targets' stamps measured the same window."""
    return span > 0 and other > 0 and abs(span - other) <= max(SLACK_S, SLACK_SHARE * min(span, other))


def fits_window(span: float, window_s: float) -> bool:
    """Stamps that fit the bundle's window: no longer than it and the slack, whatever the other targets
    say (one clock stamping every capture, the collector's, can step for all of them at once). Shorter is
    no step: a window ended early (Ctrl-C) is shorter than the window_s asked for."""
    return 0 < span <= window_s + max(SLACK_S, SLACK_SHARE * window_s)


def trusted(span: float, others: list[float], window_s: float | None) -> bool:
    """A positive span within the bundle's window that agrees with at least half of what else measured the
    window: the other targets' spans (those within the window) and window_s. With no other target, any
    positive span within the window (a back step that leaves it positive cannot be told from Ctrl-C)."""
    if span <= 0 or (window_s and not fits_window(span, window_s)):
        return False
    peers = [other for other in others if other > 0 and (not window_s or fits_window(other, window_s))]
    if not peers:
        return True
    votes = [agree(span, other) for other in peers] + ([agree(span, window_s)] if window_s else [])
    return 2 * sum(votes) >= len(votes)


def span_of(stamps: list[datetime | None]) -> float | None:
    """Seconds from the first to the last stamp, or None when a stamp is missing."""
    first, last = (stamps[0], stamps[-1]) if len(stamps) > 1 else (None, None)
    if first is None or last is None or not all(stamps):
        return None
    return (last - first).total_seconds()


def in_order(stamps: list[datetime]) -> bool:
    return all(b > a for a, b in zip(stamps, stamps[1:]))


def target_spans(bundle: Bundle) -> dict[str, float]:
    """Each target's window as its own stamps measure it: the median over its sampled captures (one spec
    and params, read at two or more sample numbers), in sample order."""
    sets: dict[tuple, dict[int, datetime | None]] = {}
    for cap in bundle.captures:
        if cap.sample is not None and cap.ok:
            sets.setdefault((cap.target, cap.spec, tuple(sorted(cap.params.items()))), {})[cap.sample] = cap.time
    spans: dict[str, list[float]] = {}
    for (target, *_), by_sample in sets.items():
        span = span_of([by_sample[n] for n in sorted(by_sample)])
        if span is not None:
            spans.setdefault(target, []).append(span)
    return {target: median(values) for target, values in spans.items()}


@dataclass
class Clocks:
    """The bundle's window as each target's stamps measure it; ``noticed`` collects the clock steps met
    while counters were read (the joiner hands each VM the ones its counters met)."""

    window_s: float | None
    spans: dict[str, float] = field(default_factory=dict)
    noticed: list[ClockStep] = field(default_factory=list)

    @classmethod
    def of(cls, bundle: Bundle) -> "Clocks":
        return cls(bundle.window_s, target_spans(bundle))

    def _others(self, target: str) -> dict[str, float]:
        return {t: s for t, s in self.spans.items() if t != target}

    def fallback(self, target: str) -> tuple[float | None, str]:
        """The window's length when ``target``'s stamps cannot say it: the other targets' trusted stamps,
        else the bundle's window_s."""
        good = {t: s for t, s in self._others(target).items()
                if trusted(s, list(self._others(t).values()), self.window_s)}
        if good:
            return median(good.values()), f"what the stamps of {', '.join(sorted(good))} measure"
        if self.window_s:
            swapped = ("; every target's stamps run backwards against the sample numbers: if the manifest's sample "
                       "numbers are swapped, fix them (0 is the window's start)"
                       if self.spans and all(s < 0 for s in self.spans.values()) else "")
            return float(self.window_s), "the bundle's window_s" + swapped
        return None, "unknown: no other target's stamps and no window_s in the manifest"

    def seconds(self, readings: list[Reading]) -> float | None:
        """Seconds between the first and the last reading (in sample order): their stamps when they can be
        trusted, else the fallback, with the step noticed."""
        if len(readings) < 2:
            return None
        target = readings[0].capture.target
        read_at = [r.capture.time for r in readings]
        stamps = [t for t in read_at if t is not None]
        span = span_of(read_at)
        if span is None or len(stamps) < len(read_at):
            return float(self.window_s) if self.window_s else None
        if in_order(stamps) and trusted(span, list(self._others(target).values()), self.window_s):
            return span
        used, source = self.fallback(target)
        back = not in_order(stamps) or span < (used or self.window_s or 0)
        first, last = readings[0].capture, readings[-1].capture
        self.noticed.append(ClockStep(target, _kind(first), first.sample, last.sample, _iso(stamps[0]),
                                      _iso(stamps[-1]), span, "back" if back else "forward", used, source,
                                      last.file))
        return used


def _kind(cap) -> str:
    params = ", ".join(f"{k} {v}" for k, v in sorted(cap.params.items()))
    return cap.spec + (f" ({params})" if params else "")


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
