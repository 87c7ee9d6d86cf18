"""SVG charts: golden snapshots for fixed inputs (ESXDIAG_UPDATE_GOLDEN=1 rewrites them), and
properties that hold for any input: well-formed XML, escaping, gaps, single points, no data."""

from __future__ import annotations

import os
import pathlib
import re
import xml.etree.ElementTree as ET

import pytest

from esxdiag.reports.charts import bar_chart, line_chart, no_data_chart
from esxdiag.result import Series

GOLDEN = pathlib.Path(__file__).parent / "golden"
T = tuple(f"2024-05-01T12:00:{s:02d}Z" for s in range(0, 60, 5))


def rdy_series() -> list[Series]:
    return [Series("vCPU 0 %RDY", "%", T, (1.0, 2.5, 4.0, None, 12.5, 14.0, 9.0, 3.0, None, None, 2.0, 1.0)),
            Series("vCPU 1 %RDY", "%", T, (0.5, 0.5, 0.7, 1.2, 3.3, 6.0, 11.5, 8.0, 4.0, 2.0, 1.5, 0.9))]


def counter_series() -> list[Series]:
    return [Series("# of times the 1st ring is full", "events/interval", T[1:], (118, 130, 90, 0, 0, 45, 200, 180, 60, 0, 5)),
            Series("running out of buffers", "events/interval", T[1:], (173, 190, 140, 0, 0, 70, 290, 260, 80, 0, 9))]


CASES = {
    "line_rdy_threshold.svg": lambda: line_chart(rdy_series(), "%RDY per vCPU", "%", threshold=10.0),
    "bar_counters.svg": lambda: bar_chart(counter_series(), "Counter growth per sample interval", "events/interval"),
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


def test_line_chart_breaks_lines_at_gaps_and_draws_threshold():
    root = ET.fromstring(line_chart(rdy_series(), "%RDY per vCPU", "%", threshold=10.0))
    first_series = root.findall("g[@class='series']")[0]
    # vCPU 0 has gaps at samples 3 and 8-9: three runs, each with more than one point
    assert len(first_series.findall("polyline")) == 3
    assert [line.get("class") for line in root.findall("line") if line.get("class")] == ["threshold"]
    texts = [t.text for t in root.iter("text")]
    assert "12:00:00" in texts and "time (UTC)" in texts
    assert "vCPU 0 %RDY" in texts and "threshold 10 %" in texts


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
    for svg in (line_chart([], "t", "%"), line_chart([gaps_only], "t", "%"), bar_chart([gaps_only], "t", "n")):
        assert "no data" in svg and ET.fromstring(svg).get("class") == "chart no-data"


def test_labels_titles_and_units_are_escaped():
    hostile = "<script>alert(1)</script> & \"q\" 'a'"
    series = Series(hostile, hostile, T[:3], (1.0, 2.0, 3.0))
    for svg in (line_chart([series], hostile, hostile, threshold=2.0), bar_chart([series], hostile, hostile),
                no_data_chart(hostile, hostile)):
        assert "<script" not in svg
        root = ET.fromstring(svg)  # would fail on a raw '<' or '&'
        assert hostile in [t.text for t in root.iter("text")] + [root.findtext("title")]


def test_unparsable_times_fall_back_to_sample_index():
    series = Series("s", "n", ("first", "second", "third"), (1.0, 2.0, 3.0))
    root = ET.fromstring(line_chart([series], "t", "n"))
    texts = [t.text for t in root.iter("text")]
    assert {"first", "second", "third"} <= set(texts) and "sample" in texts


def test_bars_sit_on_the_axis_and_scale_with_value():
    root = ET.fromstring(bar_chart(counter_series(), "bars", "events/interval"))
    rects = root.findall("g[@class='series']/rect")
    assert len(rects) == 22
    bottoms = {round(float(r.get("y")) + float(r.get("height")), 2) for r in rects}
    assert len(bottoms) == 1
    heights = [float(r.get("height")) for r in rects[:11]]
    assert heights.index(max(heights)) == 6  # the 200 sample of the first series is the tallest


def test_interval_deltas_turn_cumulative_counters_into_growth_and_resets_into_gaps():
    from esxdiag.reports.charts import interval_deltas

    cumulative = Series("1st ring full", "count (cumulative)", T[:6], (100, 130, 130, 12, None, 40), "f.txt")
    growth = interval_deltas(cumulative)
    assert growth.times == T[1:6] and growth.unit == "per interval" and growth.source == "f.txt"
    assert growth.values == (30, 0, None, None, None)  # 130 -> 12 is a reset, not -118
