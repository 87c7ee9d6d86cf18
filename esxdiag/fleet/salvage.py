"""Reading a fleet snapshot one VM and one series at a time (docs/diagnosis.md).

One odd value never empties the fleet: a value that cannot be a counter costs its sample, a series
that cannot be read costs that series, a field that cannot be read is unknown, a VM record that
cannot be read at all costs that VM only; each with a note naming the VM, counter, instance and value.

* Not a counter: a negative number other than vCenter's -1 ("no sample", read as a gap without a
  note), a non-integer, a bool or text, a value of 2^64 or more.
* Impossible: a per-vCPU cpu.ready / costop / maxlimited time longer than its sample interval (the
  aggregate: longer than numCPU intervals). That is damaged data, not contention.

esxdiag.fleet.snapshot refuses only what is not a snapshot at all; everything below the list of VMs
comes through here.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from typing import Any

from esxdiag.errors import ParseError
from esxdiag.parsers.numbers import U64_MAX, is_count
from esxdiag.parsers.vsphere import PerfSeries, VmPerf, build_record, record_values

NO_SAMPLE = -1  # what vCenter's CSV answers for a sample it does not have
CPU_TIME_COUNTERS = ("cpu.ready.summation", "cpu.costop.summation", "cpu.maxlimited.summation")
_WHOLE = frozenset({int, type(None)})
_COUNTS = frozenset({int})
_SERIES_FIELDS = {"counter": str, "instance": str, "unit": str, "values": list}
_SERIES_KEYS = frozenset(_SERIES_FIELDS)
_SERIES_APART = frozenset({"series"})  # salvage_perf reads the series one by one


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _why_not_a_count(value: Any) -> str | None:
    """Why a JSON value cannot be a counter sample; None when it can (or is a gap)."""
    if value is None or type(value) is int and (0 <= value <= U64_MAX or value == NO_SAMPLE):
        return None
    if type(value) is int:
        return "negative" if value < 0 else "2^64 or more"
    if type(value) is float:
        return "not a number" if not math.isfinite(value) else "not an integer"
    return f"not a number ({type(value).__name__})"


def clean_values(values: list, cap: float | None) -> tuple[tuple[int | None, ...], list[tuple[int, Any, str]]]:
    """(the samples with every damaged one a gap, [(sample index, value, why)]). cap: the most a sample
    can be (a CPU time: the interval), else None."""
    kinds = set(map(type, values))
    if kinds <= _WHOLE:  # the common case, checked in one pass
        present = [v for v in values if v is not None] if type(None) in kinds else values
        if not present or min(present) >= 0 and max(present) <= (U64_MAX if cap is None else cap):
            return tuple(values), []
    out, bad = [], []
    for i, value in enumerate(values):
        why = _why_not_a_count(value)
        if why is None and value is not None and value != NO_SAMPLE and cap is not None and value > cap:
            why = f"longer than the sample ({value / cap * 100:.0f}% of it): impossible"
        if why is not None:
            bad.append((i, value, why))
        out.append(None if why is not None or value == NO_SAMPLE else value)
    return tuple(out), bad


def _cap_ms(counter: str, instance: str, interval_s: int, num_cpu: int | None) -> float | None:
    if counter not in CPU_TIME_COUNTERS:
        return None
    if instance.isdigit():  # one vCPU
        return interval_s * 1000.0
    return interval_s * 1000.0 * num_cpu if num_cpu else None  # the aggregate; unknown without numCPU


def _series_problem(raw: Any, timestamps: int) -> str | None:
    if not isinstance(raw, dict) or raw.keys() != _SERIES_KEYS:
        return "not a series record (counter, instance, unit, values)"
    instance = raw["instance"]
    if not (isinstance(raw["counter"], str) and isinstance(instance, str) and isinstance(raw["unit"], str)
            and isinstance(raw["values"], list)):  # spelt out: a loop over _SERIES_FIELDS costs as much again
        name, kind = next((n, k) for n, k in _SERIES_FIELDS.items() if not isinstance(raw[n], k))
        return f"{name} is {_shown(raw[name])}, not a {kind.__name__}"
    if (not instance.isascii() and any(ch.isdigit() and not ch.isascii() for ch in instance)
            or instance.isdigit() and not is_count(instance)):
        return f"instance {_shown(instance)} is not a vCPU number / device key in ASCII digits"
    if len(raw["values"]) != timestamps:
        return f"{len(raw['values'])} values for {timestamps} timestamps"
    return None


def salvage_perf(raw: Any, who: str, num_cpu: int | None, notes: list[str]) -> tuple[VmPerf | None, str | None]:
    """(the readable part of a vsphere_perf record, why there is none). Damage goes to notes."""
    if raw is None:
        return None, None
    try:
        if not isinstance(raw, dict) or not isinstance(raw.get("series"), list):
            raise ParseError("not a performance record with a list of series")
        head = record_values(VmPerf, raw, "perf", _SERIES_APART)
        if head["interval_s"] <= 0:
            raise ParseError(f"perf.interval_s: {head['interval_s']} is not a sample interval")
    except ParseError as exc:
        why = f"damaged performance record ({exc.why})"
        notes.append(f"{who}: {why}: no counters used")
        return None, why
    timestamps, interval_s = head["timestamps"], head["interval_s"]
    kept: dict[tuple[str, str], PerfSeries] = {}
    conflicting: set[tuple[str, str]] = set()
    for i, series in enumerate(raw["series"]):
        one = _whole_series(series, len(timestamps), interval_s, num_cpu)
        if one is None:
            one = _read_series(series, i, who, timestamps, interval_s, num_cpu, notes)
            if one is None:
                continue
        key = (one.counter, one.instance)
        first = kept.setdefault(key, one)
        if first is not one and first != one:
            conflicting.add(key)
    for key in sorted(conflicting):
        del kept[key]
        notes.append(f"{who}: {key[0][:60]} instance {key[1][:40]!r} appears twice with different values: "
                     "both dropped")
    return VmPerf(**head, series=tuple(kept.values())), None


def _whole_series(raw: Any, count: int, interval_s: int, num_cpu: int | None) -> PerfSeries | None:
    """A series with nothing to note (the common case), checked in one go; None: _read_series reads it."""
    if type(raw) is not dict or raw.keys() != _SERIES_KEYS:
        return None
    counter, instance, unit, values = raw["counter"], raw["instance"], raw["unit"], raw["values"]
    if not (type(counter) is str and type(instance) is str and type(unit) is str and type(values) is list
            and len(values) == count and instance.isascii() and (not instance.isdigit() or is_count(instance))):
        return None
    cap = _cap_ms(counter, instance, interval_s, num_cpu)
    if not (set(map(type, values)) == _COUNTS and min(values) >= 0
            and max(values) <= (U64_MAX if cap is None else cap)):
        return None
    return PerfSeries(counter, instance, unit, tuple(values))


def _read_series(raw: Any, i: int, who: str, timestamps: tuple[str, ...], interval_s: int, num_cpu: int | None,
                 notes: list[str]) -> PerfSeries | None:
    """One series of a perf record, its damage noted: a sample that cannot be a counter is a gap, a series
    that cannot be read is None."""
    problem = _series_problem(raw, len(timestamps))
    if problem is not None:
        notes.append(f"{who}: perf.series[{i}]: {problem}: series dropped")
        return None
    counter, instance = raw["counter"], raw["instance"]
    values, bad = clean_values(raw["values"], _cap_ms(counter, instance, interval_s, num_cpu))
    if bad:
        at, value, why = bad[0]
        more = f" (and {len(bad) - 1} more in this series)" if len(bad) > 1 else ""
        notes.append(f"{who}: {counter[:60]} instance {instance[:40]!r}: value {_shown(value)} at "
                     f"{timestamps[at]} is {why}: sample dropped{more}")
    return PerfSeries(counter, instance, raw["unit"], values)


def _nullable(hint: Any) -> bool:
    return typing.get_origin(hint) in (types.UnionType, typing.Union) and type(None) in typing.get_args(hint)


def _record_type(hint: Any) -> type | None:
    options = [o for o in typing.get_args(hint) if o is not type(None)] if _nullable(hint) else [hint]
    only = options[0] if len(options) == 1 else None
    return only if isinstance(only, type) and dataclasses.is_dataclass(only) else None


def lenient_record(cls: type, data: Any, where: str, notes: list[str]) -> Any:
    """cls from data, field by field: a field that cannot be read is unknown (None), an empty list, or
    read the same way one level down; only a required text field (a name, a key) that cannot be read
    raises."""
    if not isinstance(data, dict):
        raise ParseError(f"{where}: expected an object, got {type(data).__name__}")
    hints = typing.get_type_hints(cls)
    values = {}
    for f in dataclasses.fields(cls):
        hint, optional = hints[f.name], f.default is not dataclasses.MISSING
        if f.name not in data:
            if not optional:
                values[f.name] = _fallback(hint, f"{where}.{f.name}: missing", notes)
            continue
        try:
            values[f.name] = build_record(hint, data[f.name], f"{where}.{f.name}")
        except ParseError as exc:
            inner = _record_type(hint)
            if inner is not None and isinstance(data[f.name], dict):
                values[f.name] = lenient_record(inner, data[f.name], f"{where}.{f.name}", notes)
            else:
                values[f.name] = _fallback(hint, exc.why, notes)
    extra = sorted(set(data) - {f.name for f in dataclasses.fields(cls)})
    if extra:
        notes.append(f"{where}: unexpected fields {[e[:40] for e in extra[:5]]} ignored")
    return cls(**values)


def _fallback(hint: Any, why: str, notes: list[str]) -> Any:
    if _nullable(hint):
        notes.append(f"{why}: read as unknown")
        return None
    if typing.get_origin(hint) is tuple:
        notes.append(f"{why}: read as empty")
        return ()
    record = _record_type(hint)
    if record is not None and all(_nullable(h) for h in typing.get_type_hints(record).values()):
        notes.append(f"{why}: every field read as unknown")
        return record(**{f.name: None for f in dataclasses.fields(record)})
    raise ParseError(why)
