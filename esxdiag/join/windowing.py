"""Cumulative counters read over the window: a CounterWindow from every usable reading (start,
any between, end) and the real time between the ends.

Damaged readings must not invent a reset (docs/diagnosis.md): a reading between the
ends that dips below its neighbours and comes back is dropped with a note, and per-queue sums
are taken over the queues every reading has, so a queue cut off the end of a capture is not
read as the counter going back."""

from __future__ import annotations

from typing import Callable, Iterable

from esxdiag.join.clocks import Clocks
from esxdiag.join.facts import CounterWindow
from esxdiag.join.readings import Reading

RX_SUMMARY_RING1 = "# of times the 1st ring is full"
RX_SUMMARY_RING2 = "# of times the 2nd ring is full"
RX_SUMMARY_OOB = "running out of buffers"
RX_SUMMARY_LRO = "LRO pkts rx ok"


# captures whose counters are 64-bit (vsish's uint64 port and vmxnet3 statistics, Windows' UInt64 adapter
# statistics): they never wrap. Others (netstat -s / nstat, ethtool -S, esxcli nic stats) may be 32-bit.
COUNTERS_64_BIT = ("vsish_rxsummary", "vsish_clientstats", "win_stats")


def window_seconds(readings: list[Reading], clocks: Clocks | float | None) -> float | None:
    """Real time between the first and the last reading (in sample order): their stamps when a stepped
    clock did not make them, else what the other targets' stamps or the bundle's window say
    (esxdiag.join.clocks). ``clocks`` may be the bundle's window_s alone."""
    if not isinstance(clocks, Clocks):
        clocks = Clocks(clocks)
    return clocks.seconds(readings)


def counter(what: str, readings: Iterable[Reading | None], get: Callable, seconds: float | None,
            locator: str | None, notes: list[str] | None = None) -> CounterWindow | None:
    """A CounterWindow from the readings in capture order and an accessor; None when no reading has the
    value. One reading is the end (since-init total only)."""
    pairs = [(r, v) for r in readings if r is not None for v in (get(r.record),) if v is not None]
    if not pairs:
        return None
    values = _drop_dips([v for _, v in pairs], what, notes)
    source = pairs[-1][0].file
    bits = 64 if all(r.capture.spec in COUNTERS_64_BIT for r, _ in pairs) else None
    if len(values) == 1:
        return CounterWindow(what, None, values[0], None, source, locator, bits=bits)
    return CounterWindow(what, values[0], values[-1], seconds, source, locator, tuple(values[1:-1]), bits)


def _drop_dips(values: list[int], what: str, notes: list[str] | None) -> list[int]:
    """A middle reading below the one before it, with a later reading back at or above that value, is
    damage (a cut or garbled capture), not a reset: a reset starts again from zero."""
    kept = [values[0]]
    for i, v in enumerate(values[1:-1], 1):
        if v < kept[-1] and any(later >= kept[-1] for later in values[i + 1:]):
            if notes is not None:
                notes.append(f"{what}: reading {i + 1} of {len(values)} ({v:,}) dips below the readings around "
                             "it: a damaged sample, not a reset; left out")
            continue
        kept.append(v)
    return kept + values[-1:] if len(values) > 1 else kept


def queue_sum(what: str, readings: list[Reading], per_queue: Callable, seconds: float | None, locator: str | None,
              notes: list[str]) -> CounterWindow | None:
    """Sum of a per-queue counter (``per_queue(record) -> {queue: value}``) over the queues every reading
    has. A queue missing from one reading (a capture cut short), or going back while the others rise
    (a garbled value; a real reset re-initialises every queue), is left out with a note."""
    maps = [(r, {q: v for q, v in per_queue(r.record).items() if v is not None}) for r in readings]
    maps = [(r, m) for r, m in maps if m]
    if not maps:
        return None
    common = set.intersection(*(set(m) for _, m in maps))
    everywhere = set.union(*(set(m) for _, m in maps))
    if common != everywhere:
        notes.append(f"{what}: rx queue(s) {', '.join(map(str, sorted(everywhere - common)))} missing from some "
                     f"readings (capture cut short?): summed over queues {', '.join(map(str, sorted(common)))} only")
    if len(maps) > 1:  # in one step some queues went back while others rose: not a device reset
        steps = list(zip((m for _, m in maps), (m for _, m in maps[1:])))
        went_back = {q for a, b in steps if any(b[q] > a[q] for q in common) for q in common if b[q] < a[q]}
        if went_back:
            notes.append(f"{what}: rx queue(s) {', '.join(map(str, sorted(went_back)))} went back while the others "
                         "rose: a damaged reading, not a reset; left out")
            common -= went_back
    if not common:
        return None
    return counter(what, [r for r, _ in maps], lambda rec: _sum_of(per_queue(rec), common), seconds, locator, notes)


def _sum_of(values: dict, queues: set) -> int | None:
    picked = [v for q in queues if (v := values.get(q)) is not None]
    return sum(picked) if len(picked) == len(queues) else None


def sample_time(reading: Reading | None) -> str | None:
    if reading is None:
        return None
    t = reading.capture.time
    return t.isoformat().replace("+00:00", "Z") if t else None
