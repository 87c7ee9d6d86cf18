"""Sample order and window length for captures that carry no manifest.

Order, strongest first: the file names (before/after, start/end, s0/s1, t0/t1, a trailing 1/2),
then the time the source itself states (a sosreport's date), then file modification times. The
window length comes from the esxtop batch run (its first and last timestamps) when there is one,
else from the stated times, else from modification times, and the report says which."""

from __future__ import annotations

from datetime import datetime, timezone
from statistics import median

from esxdiag.bundle import parse_time
from esxdiag.intake import names
from esxdiag.intake.found import Found, IntakeError, kind, renamed
from esxdiag.parsers.pdh import parse_stamp
from esxdiag.specs import SPECS

_TAIL = 8 * 2**20


def order_samples(found: list[Found], notes: list[str], asked: list[str]) -> float | None:
    """Sample numbers and the window length; a set whose order or choice cannot be told adds its
    question to ``asked``."""
    sets: dict[tuple, list[Found]] = {}
    for item in found:
        sets.setdefault((item.target, item.spec, tuple(sorted(item.params.items()))), []).append(item)
    used: dict[str, list[str]] = {}
    mtime_pairs: list[float] = []
    stated_pairs: list[float] = []
    for (_, spec, _), items in sorted(sets.items(), key=lambda kv: str(kv[0])):
        if len(items) == 1 or any(p not in i.params for i in items for p in SPECS[spec].params):
            continue  # one capture; or captures not placed yet, whose question is already asked
        names_list = ", ".join(sorted(i.rel for i in items))
        if not SPECS[spec].sampled:
            try:
                _keep_latest(found, items, names_list, notes)
            except IntakeError as exc:
                asked.append(str(exc))
            continue
        method, ordered = _order(items)
        if method is None:
            words = ("before", "after") if len(items) == 2 else tuple(f"s{n}" for n in range(len(items)))
            renames = ", ".join(f"{i.rel} -> {names.with_order(i.rel, word)}" for i, word in
                                zip(sorted(items, key=lambda i: i.rel), words))
            asked.append(f"{names_list}: which {kind(spec)} capture was taken first? (same name pattern, no time in "
                         f"them, same modification time): rename them in the order they were taken, e.g. {renames}")
            continue
        for n, item in enumerate(ordered):
            item.sample = n
        used.setdefault(method, []).append(spec)
        if method == "file modification times":
            mtime_pairs.append(ordered[-1].path.stat().st_mtime - ordered[0].path.stat().st_mtime)
        first, last = parse_time(ordered[0].ended), parse_time(ordered[-1].ended)
        if first and last and last > first:
            stated_pairs.append((last - first).total_seconds())
    for method, specs in used.items():
        notes.append(f"sample order inferred from {method} for {', '.join(sorted({kind(s) for s in specs}))}")
    return _window(found, stated_pairs, mtime_pairs, notes)


def _keep_latest(found: list[Found], items: list[Found], names_list: str, notes: list[str]) -> None:
    """A one-shot capture taken twice (two sosreports of one guest): the latest, if their times say so."""
    stated = [parse_time(i.ended) for i in items]
    if not all(stated) or len(set(stated)) != len(items):
        hint = ("name the rx queue in each file name: " + ", ".join(
                    f"{i.rel} -> {renamed(i.rel, f'rxqueue{n}')}"
                    for n, i in enumerate(sorted(items, key=lambda i: i.rel)))
                if items[0].spec == "vsish_rxqueue_status" else
                "one per machine: put each machine's captures in its own sub-folder")
        raise IntakeError(f"{names_list}: the same {kind(items[0].spec)} capture more than once ({hint})")
    latest = max(zip(stated, items), key=lambda p: p[0])[1]
    for item in items:
        if item is not latest:
            found.remove(item)
    notes.append(f"{kind(items[0].spec)}: the latest of {names_list} is used ({latest.rel})")


def _order(items: list[Found]) -> tuple[str | None, list[Found]]:
    strip = tuple(v for i in items for v in i.params.values())
    hints = [names.order_hint(i.rel, strip) for i in items]
    if all(hints) and len({h[0] for h in hints}) == 1 and len({h[1] for h in hints}) == len(items):
        return f"file names ({hints[0][0]})", [i for _, i in sorted(zip((h[1] for h in hints), items),
                                                                       key=lambda p: p[0])]
    stated = [parse_time(i.ended) for i in items]
    if all(stated) and len(set(stated)) == len(items):
        return "the times stated inside the captures", [i for _, i in sorted(zip(stated, items), key=lambda p: p[0])]
    mtimes = [i.path.stat().st_mtime for i in items]
    if len(set(mtimes)) == len(items):
        return "file modification times", [i for _, i in sorted(zip(mtimes, items), key=lambda p: p[0])]
    return None, items


def _window(found: list[Found], stated_pairs: list[float], mtime_pairs: list[float],
            notes: list[str]) -> float | None:
    for item in found:
        if item.spec == "esxtop_batch":
            span = esxtop_span(item)
            if span:
                notes.append(f"window length {span:g} s: the first and last timestamps of {item.rel}")
                return span
    if stated_pairs:
        seconds = round(median(stated_pairs), 1)
        notes.append(f"window length {seconds:g} s: the times stated inside the captures (sosreport dates)")
        return seconds
    if mtime_pairs and median(mtime_pairs) >= 1:
        seconds = round(median(mtime_pairs), 1)
        notes.append(f"window length {seconds:g} s from file modification times: check it (a copy resets them) "
                     "and set window_s with 'esxdiag bundle init' if wrong")
        return seconds
    if any(i.sample for i in found if not i.ended):
        notes.append("window length unknown (no esxtop capture, no usable times): deltas are shown, rates per "
                     "second are not; set window_s with 'esxdiag bundle init'")
    return None


def esxtop_span(item: Found) -> float | None:
    """Seconds between the first and the last complete row of an esxtop batch CSV, from the row
    starts only: a real capture has 17,000 columns (100 KB+ per row) and can be hundreds of MB."""
    with open(item.path, "rb") as fh:
        fh.readline(64 * 2**20)  # the header
        first = _stamp(fh.readline(4096).decode("utf-8", "replace"))
        fh.seek(0, 2)
        size = fh.tell()
        fh.seek(max(0, size - _TAIL))
        tail = fh.read()
    end = len(tail) - 1 if tail.endswith(b"\n") else tail.rfind(b"\n")  # the last row must be complete
    last = None
    for _ in range(1000):
        start = tail.rfind(b"\n", 0, end)
        if start < 0 or end <= 0:
            break
        last = _stamp(tail[start + 1: start + 80].decode("utf-8", "replace"))
        if last:
            break
        end = start
    if first and last and last > first:
        return (last - first).total_seconds()
    return None


def _stamp(line: str) -> datetime | None:
    cell = line.split(",", 1)[0].strip().strip('"')
    stamp = parse_stamp(cell, 0)
    return stamp.utc.astimezone(timezone.utc) if stamp else None
