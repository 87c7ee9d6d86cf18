"""Issue 29, item 4: samples in capture order. A 32-bit counter that goes from the top of its range to a small
value wrapped (not reset); the window's length comes from stamps only when they agree with the sample order,
the other targets' stamps and the bundle's window_s (esxdiag.join.clocks)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from esxdiag.bundle import Capture
from esxdiag.join.clocks import Clocks, agree, fits_window, trusted
from esxdiag.join.facts import COUNTER32, CounterWindow
from esxdiag.join.readings import Reading
from esxdiag.join.windowing import counter, window_seconds
from esxdiag.rules.clocks import clock_steps
from esxdiag.rules.tcp import guest_retransmits

T0 = datetime(2026, 11, 26, 20, 38, 15, tzinfo=timezone.utc)
SENT0, SENT1 = 4_294_448_425, 716_658  # segments sent across 2**32: +1,235,529


def stamp(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def reading(target: str, sample: int, at: datetime | None, spec: str = "netstat_s", value: int | None = None):
    cap = Capture(spec, target, f"{target}/{spec}.s{sample}.txt", {}, sample, None,
                  stamp(at) if at else None, stamp(at) if at else None)
    return Reading(cap, value)


def pair(target: str, span_s: float, spec: str = "netstat_s", start: datetime = T0) -> list[Reading]:
    return [reading(target, 0, start, spec), reading(target, 1, start + timedelta(seconds=span_s), spec)]


# --- 32-bit wraps ----------------------------------------------------------------------------------------

def test_a_32_bit_counter_past_2_32_wrapped_and_counts_through():
    sent = CounterWindow("TCP segments sent", SENT0, SENT1, 60.0)
    assert (sent.delta, sent.wraps, sent.reset) == (1_235_529, 1, False)
    assert sent.rate_per_s == pytest.approx(1_235_529 / 60)
    assert "wrapped" in sent.evidence().what and "reset" not in sent.reset_words()


def test_a_wrap_between_readings_counts_every_step():
    sent = CounterWindow("sent", COUNTER32 - 2_000, 5_000, 90.0, between=(COUNTER32 - 500,))
    assert (sent.delta, sent.wraps, sent.resets) == (7_000, 1, 0)


@pytest.mark.parametrize("start, end, bits, why", [
    (SENT0, SENT1, 64, "a 64-bit counter never wraps"),
    (2_000_000_000, 100, None, "far from the top of the 32-bit range: a reset"),
    (COUNTER32 - 100, 2**31, None, "the wrapped growth would be half the range: a reset"),
])
def test_going_back_is_a_reset_when_a_wrap_is_not_plausible(start, end, bits, why):
    window = CounterWindow("c", start, end, 60.0, bits=bits)
    assert (window.reset, window.wraps, window.delta) == (True, 0, end), why


def test_a_counter_seen_past_2_32_is_64_bit_and_resets():
    window = CounterWindow("c", COUNTER32 - 10, 7, 60.0, between=(COUNTER32 + 5,))
    assert (window.wraps, window.resets, window.delta) == (0, 1, 15 + 7)


def test_vsish_and_windows_counters_are_64_bit_netstat_may_be_32():
    values = {"s0": SENT0, "s1": SENT1}
    for spec, wraps in (("vsish_rxsummary", 0), ("win_stats", 0), ("netstat_s", 1), ("ethtool_stats", 1)):
        readings = [Reading(r.capture, values[f"s{r.capture.sample}"]) for r in pair("t", 60, spec)]
        window = counter("c", readings, lambda v: v, 60.0, None)
        assert window.wraps == wraps, spec


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(st.lists(st.integers(min_value=0, max_value=2**64 - 1), min_size=2, max_size=6),
       st.sampled_from([None, 64]), st.floats(min_value=0.001, max_value=1e6))
def test_a_delta_and_a_rate_are_never_negative(values, bits, seconds):
    window = CounterWindow("c", values[0], values[-1], seconds, between=tuple(values[1:-1]), bits=bits)
    assert window.delta >= 0 and window.rate_per_s >= 0
    if values == sorted(values):
        assert window.delta == values[-1] - values[0] and not window.reset and not window.wraps


def test_the_retransmit_rule_counts_sent_through_the_wrap(make):
    vm = replace(make.vm(), retransmits=CounterWindow("TCP segments retransmitted", 12, 1_912, 60.0),
                 segments_sent=CounterWindow("TCP segments sent", SENT0, SENT1, 60.0))
    (finding,) = guest_retransmits(vm, {"tcp.retransmit_pct": 1.0, "tcp.retransmits_per_s": 10.0})
    assert "0.15% of 1,235,529 sent" in finding.summary and "wrapped" in finding.summary
    assert any("wrapped" in e.what for e in finding.evidence)


# --- the window's length -----------------------------------------------------------------------------------

def test_agreement_and_the_window_cap():
    assert agree(63.2, 61.8) and not agree(63.2, 3661.8) and not agree(-3538, 63)
    assert fits_window(20, 60) and fits_window(119, 60) and not fits_window(3661, 60) and not fits_window(-1, 60)
    assert trusted(63.2, [61.8], 60) and not trusted(3661.8, [63.2], 60) and not trusted(-3538, [63.2], 60)
    assert trusted(63.2, [3661.8], 60) and trusted(63.2, [-3538.2], 60)  # a stepped peer does not outvote it
    assert not trusted(100, [603], 600) and trusted(603, [100], 600)  # the one window_s sides with
    assert trusted(20, [21], 60)  # a window ended early (Ctrl-C): every target is short
    assert not trusted(63, [200], None) and not trusted(200, [63], None)  # two clocks, no window: cannot tell


def clocks_of(*sets: list[Reading], window_s: float | None = 60.0) -> Clocks:
    spans = {s[0].capture.target: (s[-1].capture.time - s[0].capture.time).total_seconds() for s in sets}
    return Clocks(window_s, spans)


@pytest.mark.parametrize("step_s, direction", [(-3600, "back"), (3600, "forward")])
def test_a_stepped_guest_clock_takes_the_window_from_the_host(step_s, direction):
    host, guest = pair("host", 63.2, "vsish_rxsummary"), pair("guest", 61.8 + step_s)
    clocks = clocks_of(host, guest)
    assert clocks.seconds(guest) == pytest.approx(63.2)
    assert clocks.seconds(host) == pytest.approx(63.2) and len(clocks.noticed) == 1
    (step,) = clocks.noticed
    assert (step.target, step.direction, step.first_stamp) == ("guest", direction, stamp(T0))
    assert step.seconds == pytest.approx(61.8 + step_s) and "host" in step.used_from


def test_a_stepped_host_clock_takes_the_window_from_the_guest():
    host, guest = pair("host", 63.2 - 3600, "vsish_rxsummary"), pair("guest", 61.8)
    clocks = clocks_of(host, guest)
    assert clocks.seconds(host) == pytest.approx(61.8) and clocks.noticed[0].target == "host"


def test_stamps_against_the_sample_order_are_a_step_even_when_the_span_is_positive():
    three = [reading("g", n, T0 + timedelta(seconds=s)) for n, s in ((0, 0), (1, 50), (2, 40))]
    clocks = Clocks(60.0)
    assert clocks.seconds(three) == 60.0 and clocks.noticed[0].direction == "back"


def test_without_other_targets_the_window_s_caps_the_stamps():
    assert window_seconds(pair("guest", 3661.8), 60.0) == 60.0  # forward an hour
    assert window_seconds(pair("guest", -3538.2), 60.0) == 60.0  # back an hour
    assert window_seconds(pair("guest", 61.8), 60.0) == pytest.approx(61.8)
    assert window_seconds(pair("guest", 20.0), 60.0) == pytest.approx(20.0)  # Ctrl-C ended the window early
    assert window_seconds(pair("guest", -3538.2), None) is None  # nothing to measure it by
    assert window_seconds([reading("g", 0, None), reading("g", 1, None)], 60.0) == 60.0


def test_every_target_backwards_says_the_sample_numbers_may_be_swapped():
    host, guest = pair("host", -63.2, "vsish_rxsummary"), pair("guest", -61.8)
    clocks = clocks_of(host, guest)
    assert clocks.seconds(guest) == 60.0 and "sample numbers are swapped" in clocks.noticed[0].used_from


def test_the_clock_step_finding_names_the_target_and_both_stamps(make):
    host, guest = pair("esxi-esx0", 63.2, "vsish_rxsummary"), pair("guest-vm1", 61.8 - 3600)
    clocks = clocks_of(host, guest)
    clocks.seconds(guest)
    (finding,) = clock_steps(replace(make.vm(), clock_steps=tuple(clocks.noticed)), {})
    assert finding.rule == "data-quality" and "guest-vm1" in finding.title and "stepped back" in finding.title
    assert stamp(T0) in finding.summary and stamp(T0 + timedelta(seconds=61.8 - 3600)) in finding.summary
    assert "63 s" in finding.summary and "esxi-esx0" in finding.summary


# --- property: a stepped clock never makes the window negative or longer than the bundle's -----------------

STEP = st.one_of(st.just(0.0), st.floats(min_value=-36_000, max_value=36_000))


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(st.floats(min_value=1, max_value=7_200), st.lists(st.tuples(st.floats(min_value=0, max_value=30), STEP),
                                                          min_size=1, max_size=4), st.booleans())
def test_window_seconds_are_never_negative_nor_past_the_bundle_window(window_s, targets, known):
    sets = [pair(f"t{i}", window_s + overhead + step) for i, (overhead, step) in enumerate(targets)]
    clocks = clocks_of(*sets, window_s=window_s if known else None)
    for readings in sets:
        seconds = clocks.seconds(readings)
        assert seconds is None or seconds > 0
        if known:
            assert seconds is not None and seconds <= window_s + max(60.0, 0.5 * window_s)
    stepped = {i for i, (overhead, step) in enumerate(targets) if window_s + overhead + step < 0}
    assert stepped <= {int(s.target[1:]) for s in clocks.noticed}  # every clock gone back past the start is named
