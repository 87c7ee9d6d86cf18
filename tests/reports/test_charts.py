"""SVG charts: golden snapshots for fixed inputs (ESXDIAG_UPDATE_GOLDEN=1 rewrites them), and
properties that hold for any input: well-formed XML, escaping, gaps, single points, no data."""

from __future__ import annotations

import os
import pathlib
import re
import xml.etree.ElementTree as ET

import pytest

from esxdiag.reports.charts import interval_rates, line_chart, no_data_chart, rate_bars
from esxdiag.result import Series

GOLDEN = pathlib.Path(__file__).parent / "golden"
T = tuple(f"2024-05-01T12:00:{s:02d}Z" for s in range(0, 60, 5))


def rdy_series() -> list[Series]:
    return [Series("vCPU 0 %RDY", "%", T, (1.0, 2.5, 4.0, None, 12.5, 14.0, 9.0, 3.0, None, None, 2.0, 1.0)),
            Series("vCPU 1 %RDY", "%", T, (0.5, 0.5, 0.7, 1.2, 3.3, 6.0, 11.5, 8.0, 4.0, 2.0, 1.5, 0.9))]


def seed_rates() -> list[tuple[str, float | None, str]]:
    """iperf-test1 over its 62.2 s window (examples/iperf-test1-ring-exhaustion)."""
    return [("Ring 1 full (host)", 23.6, "/s"), ("Ring 2 full (host)", 10.9, "/s"),
            ("Out-of-buffer drops (host)", 34.61, "/s"), ("droppedRx (host port)", 34.62, "/s"),
            ("pkts rx OOB (guest)", 34.6, "/s")]


RDY_LINES = [("warning", 5.0), ("critical", 10.0)]


CASES = {
    "line_rdy_threshold.svg": lambda: line_chart(rdy_series(), "%RDY per vCPU", "%", RDY_LINES),
    "rate_bars.svg": lambda: rate_bars(seed_rates(), "Rates over the window (per second)", "per second"),
    "line_single_point.svg": lambda: line_chart([Series("vCPU 0 %RDY", "%", T[:1], (3.2,))], "one sample", "%"),
    "no_data.svg": lambda: line_chart([], "%RDY per vCPU", "%"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_chart_matches_golden(name):
    rendered = CASES[name]()
    golden = GOLDEN / name
    if os.environ.get("ESXDIAG_UPDATE_GOLDEN") == "1":
        GOLDEN.mkdir(exist_ok=True)
        golden.write_text(rendered + "\n", encoding="utf-8")
    assert golden.exists(), f"{golden} missing: run with ESXDIAG_UPDATE_GOLDEN=1 and review the diff"
    assert rendered + "\n" == golden.read_text(encoding="utf-8")


@pytest.mark.parametrize("name", sorted(CASES))
def test_chart_is_deterministic_wellformed_svg_without_external_references(name):
    first, second = CASES[name](), CASES[name]()
    assert first == second
    root = ET.fromstring(first)
    assert root.tag == "svg"
    assert not re.search(r"https?://|href=|src=|<script", first)


def test_line_chart_breaks_lines_at_gaps_and_draws_warning_and_critical_lines():
    root = ET.fromstring(line_chart(rdy_series(), "%RDY per vCPU", "%", RDY_LINES))
    first_series = root.findall("g[@class='series']")[0]
    # vCPU 0 has gaps at samples 3 and 8-9: three runs, each with more than one point
    assert len(first_series.findall("polyline")) == 3
    lines = [line for line in root.findall("line") if line.get("class") == "threshold"]
    assert len(lines) == 2 and lines[0].get("stroke-dasharray") != lines[1].get("stroke-dasharray")
    assert float(lines[0].get("y1")) > float(lines[1].get("y1"))  # 5 % sits below 10 %
    texts = [t.text for t in root.iter("text")]
    assert "12:00:00" in texts and "time (UTC)" in texts
    assert "vCPU 0 %RDY" in texts and "warning 5 %" in texts and "critical 10 %" in texts


def test_series_differ_by_line_style_not_only_colour():
    root = ET.fromstring(line_chart(rdy_series(), "%RDY per vCPU", "%"))
    styles = [g.find("polyline").get("stroke-dasharray") for g in root.findall("g[@class='series']")]
    assert len(set(styles)) == 2


def test_isolated_point_between_gaps_is_a_dot():
    series = Series("vCPU 0 %RDY", "%", T[:5], (None, 4.0, None, 2.0, 3.0))
    root = ET.fromstring(line_chart([series], "gaps", "%"))
    group = root.find("g[@class='series']")
    assert len(group.findall("circle")) == 1 and len(group.findall("polyline")) == 1


def test_all_zero_series_draws_on_a_unit_axis():
    series = Series("vCPU 0 %RDY", "%", T, (0.0,) * len(T))
    svg = line_chart([series], "idle", "%")
    root = ET.fromstring(svg)
    assert root.find("g[@class='series']/polyline") is not None
    assert "1" in [t.text for t in root.iter("text")]  # y axis top tick of the 0..1 axis


def test_empty_and_all_gap_inputs_say_no_data():
    gaps_only = Series("vCPU 0 %RDY", "%", T[:3], (None, None, None))
    for svg in (line_chart([], "t", "%"), line_chart([gaps_only], "t", "%"), rate_bars([("r", None, "")], "t", "n")):
        assert "no data" in svg and ET.fromstring(svg).get("class") == "chart no-data"


def test_labels_titles_and_units_are_escaped():
    hostile = "<script>alert(1)</script> & \"q\" 'a'"
    series = Series(hostile, hostile, T[:3], (1.0, 2.0, 3.0))
    for svg in (line_chart([series], hostile, hostile, [(hostile, 2.0)]), rate_bars([(hostile, 2.0, hostile)], hostile, hostile),
                no_data_chart(hostile, hostile)):
        assert "<script" not in svg
        root = ET.fromstring(svg)  # would fail on a raw '<' or '&'
        assert hostile in [t.text for t in root.iter("text")] + [root.findtext("title")]


def test_unparsable_times_fall_back_to_sample_index():
    series = Series("s", "n", ("first", "second", "third"), (1.0, 2.0, 3.0))
    root = ET.fromstring(line_chart([series], "t", "n"))
    texts = [t.text for t in root.iter("text")]
    assert {"first", "second", "third"} <= set(texts) and "sample" in texts


def test_rate_bars_share_one_axis_and_write_label_and_value_as_text():
    root = ET.fromstring(rate_bars(seed_rates(), "rates", "per second"))
    rects = root.findall("g[@class='rate']/rect")
    assert len(rects) == 5 and len({r.get("x") for r in rects}) == 1
    widths = [float(r.get("width")) for r in rects]
    assert widths.index(max(widths)) == 3 and widths[1] < widths[0] < widths[2]  # 34.62 longest, 10.9 shortest
    texts = [t.text for t in root.iter("text")]
    assert "Ring 2 full (host)" in texts and "10.9/s" in texts and "34.62/s" in texts


def test_interval_rates_turn_cumulative_counters_into_per_second_rates_and_resets_into_gaps():
    cumulative = Series("1st ring full", "count (cumulative)", T[:6], (100, 130, 130, 12, None, 40), "f.txt")
    rates = interval_rates(cumulative)
    assert rates.times == T[1:6] and rates.unit == "per second" and rates.source == "f.txt"
    assert rates.values == (6.0, 0.0, None, None, None)  # 30 in 5 s; 130 -> 12 is a reset, not -118
