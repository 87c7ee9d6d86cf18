"""Each entity's realtime samples kept between the scans of a watch (watch.py), so that a scan asks
QueryPerf only for the samples after the newest one kept (startTime: the server answers those
after it, up to and with endTime) and joins them to the kept ones, less those older than the window.
docs/fleet-scan.md "Watching" says when a scan reads an entity's whole window instead.

An entity is read whole again when nothing is kept for it (new, re-registered, powered on again, a
vMotion to another host: its realtime samples are on the new host), when its series are not the
kept ones (the counters or instances changed), when the new samples do not continue the kept ones
(more than one interval after the newest kept: samples missing in between), when no new sample
came although one was due (two intervals after the newest kept), when every kept sample is older
than the window (a scan more than a window after the last), when an answer of its
held a value that is no integer, and when the server refused the QueryPerf that asked for its new
samples (a SOAP fault). A fault of the server or the path (unreachable, a timeout, a lost login, an
answer cut off or not SOAP) fails the scan, as it does any scan; the watch then drops everything
kept, as it does whenever it reads the inventory whole (first read, the maximum age, a fault).
"""

from __future__ import annotations

import bisect
import threading
from dataclasses import dataclass, field
from datetime import datetime


@dataclass(frozen=True)
class Samples:
    """One entity's decoded answer: its sample times ascending and each series' values in that order."""

    times: tuple[datetime, ...]
    series: dict[tuple[int, str], tuple[int | None, ...]]  # (counterId, instance as sent) -> one value per time
    unreadable: dict[tuple[int, str], list[str]] = field(default_factory=dict)  # cells that are no integer


NO_SAMPLES = Samples((), {})


def joined(kept: Samples, new: Samples, window_start: datetime, interval_s: int) -> Samples | None:
    """The kept samples after ``window_start`` followed by the new ones after the newest kept: what a
    read of the whole window gives; None when the two do not join (see the module's docstring)."""
    if kept.unreadable or new.unreadable or not kept.times or kept.times[-1] <= window_start:
        return None  # the last: every kept sample is older than the window, the new ones would span more
    newest = kept.times[-1]
    fresh = bisect.bisect_right(new.times, newest)  # a server may answer the sample at startTime too
    if fresh < len(new.times):
        if set(new.series) != set(kept.series):
            return None
        if (new.times[fresh] - newest).total_seconds() > interval_s:
            return None
    first = bisect.bisect_right(kept.times, window_start)
    times = kept.times[first:] + new.times[fresh:]
    if not times:
        return None
    if fresh == len(new.times):
        series = {key: values[first:] for key, values in kept.series.items()}
    else:
        series = {key: values[first:] + new.series[key][fresh:] for key, values in kept.series.items()}
    return Samples(times, series)


class KeptPart:
    """One counter set's kept samples: entity MOID -> (where it ran, its samples). Its QueryPerf
    batches put into it from several threads."""

    def __init__(self) -> None:
        self._entries: dict[str, tuple[str | None, Samples]] = {}
        self._touched: set[str] = set()
        self._lock = threading.Lock()

    def get(self, key: str, where: str | None) -> Samples | None:
        """The samples kept for the entity, if it still runs where they were read."""
        entry = self._entries.get(key)
        return entry[1] if entry is not None and entry[0] == where else None

    def put(self, key: str, where: str | None, samples: Samples) -> None:
        """Keep this scan's samples of the entity (never one with unreadable values: read whole next time)."""
        with self._lock:
            self._touched.add(key)
            if samples.times and not samples.unreadable:
                self._entries[key] = (where, samples)
            else:
                self._entries.pop(key, None)

    def forget(self, key: str) -> None:
        with self._lock:
            self._entries.pop(key, None)

    def next_scan(self) -> None:
        """Drop what the last scan did not read (a VM powered off, gone, or not selected any more)."""
        with self._lock:
            self._entries = {k: v for k, v in self._entries.items() if k in self._touched}
            self._touched = set()

    def __len__(self) -> int:
        return len(self._entries)


class PerfKeep:
    """The kept samples of one watch, by counter set (the VMs' and the hosts' are asked apart)."""

    def __init__(self) -> None:
        self._parts: dict[tuple[str, ...], KeptPart] = {}
        self._lock = threading.Lock()

    def part(self, counters: tuple[str, ...]) -> KeptPart:
        with self._lock:
            return self._parts.setdefault(counters, KeptPart())

    def next_scan(self) -> None:
        with self._lock:
            parts = list(self._parts.values())
        for part in parts:
            part.next_scan()
