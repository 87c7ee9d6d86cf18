"""CpuFacts' sample count and averages, computed once per VM by the fleet analysis: the same figures as
their definitions (a sample counts when any vCPU has a ready figure in it; series may be ragged)."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from esxdiag.join.facts import CpuFacts
from esxdiag.rules.cpustats import window_stat

SERIES = st.lists(st.one_of(st.none(), st.floats(min_value=0, max_value=100)), max_size=8).map(tuple)


def facts(times: int, ready: list[tuple], costop: tuple) -> CpuFacts:
    return CpuFacts("vcenter-realtime", None, tuple(f"t{i}" for i in range(times)),
                    {f"vCPU {i}": s for i, s in enumerate(ready)}, {"per-vCPU average": costop}, {}, sample_s=20.0)


@settings(max_examples=300, derandomize=True)
@given(st.integers(0, 8), st.lists(SERIES, max_size=4), SERIES)
def test_samples_and_averages_are_their_definitions(times, ready, costop):
    cpu = facts(times, ready, costop)
    with_values = sum(1 for i in range(times) if any(i < len(s) and s[i] is not None for s in ready))
    assert cpu.samples_with_values == with_values
    summary = cpu.summary()
    assert (summary["samples"], summary["covered_s"]) == (with_values, with_values * 20.0)
    for name, series in (("ready_pct", [v for s in ready for v in s]), ("costop_pct", list(costop))):
        present = [v for v in series if v is not None]
        expected = round(sum(present) / len(present), 2) if present else None
        assert cpu.average(name) == summary[f"{name}_avg"] == expected


ODD = st.lists(st.one_of(st.none(), st.sampled_from([math.nan, math.inf, -math.inf, 1e308]),
                         st.floats(min_value=0, max_value=100)), max_size=8).map(tuple)


def finite_mean(values) -> float | None:
    present = [v for v in values if v is not None and math.isfinite(v)]
    return sum(present) / len(present) if present else None


@settings(max_examples=300, derandomize=True)
@given(st.lists(ODD, min_size=1, max_size=4))
def test_the_finite_sum_shortcut_gives_the_figures_of_the_finite_values(ready):
    """window_stat and average add the values first and filter NaN/inf only when the sum is not finite
    (an overflow too): the same figures as filtering first."""
    cpu = facts(8, ready, ())
    means = [(finite_mean(s), label) for label, s in cpu.ready_pct.items() if finite_mean(s) is not None]
    stat = window_stat(cpu, "ready_pct")
    if not means:
        assert stat is None
    else:
        worst = max(means, key=lambda m: m[0])  # the first of equal averages, as window_stat keeps it
        assert (stat.worst_avg, stat.vcpu) == worst
    mean = finite_mean([v for s in ready for v in s])
    assert cpu.average("ready_pct") == (None if mean is None else round(mean, 2))
