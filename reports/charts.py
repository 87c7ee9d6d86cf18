"""Inline SVG charts for the HTML report: pure functions, deterministic output.

Every piece of text that reaches the markup (titles, labels, units, times) goes through
xml.sax.saxutils.escape / quoteattr, so the returned string can be embedded as markup.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import TypeGuard
from xml.sax.saxutils import escape, quoteattr

from esxdiag.bundle import parse_time
from esxdiag.result import Series

WIDTH, HEIGHT = 720, 260
LEFT, RIGHT, TOP, BOTTOM = 64, 58, 30, 44
LEGEND_ROW = 18
# Okabe-Ito palette: distinguishable with the common colour-vision deficiencies.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442")
# Line styles that tell series apart in a greyscale print, where the palette does not.
DASHES = ("", "8 3", "2 3", "10 3 2 3", "4 4", "1 2", "12 4", "6 2 2 2")
THRESHOLD_STYLES = {"warning": ("#8A5300", "6 4"), "critical": ("#B00020", "2 3")}
TICK_STEPS_S = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400)
MAX_TIME_TICKS = 7


def _num(value: float) -> str:
    """Coordinates and tick values with a fixed, short, locale-free representation."""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _parse_time(text: str | None) -> float | None:
    moment = parse_time(text)
    return moment.timestamp() if moment else None


def _clock(epoch_s: float) -> str:
    return datetime.fromtimestamp(epoch_s, tz=timezone.utc).strftime("%H:%M:%S")


def _nice_ceiling(value: float) -> float:
    if value <= 0:
        return 1.0
    magnitude = 10 ** math.floor(math.log10(value))
    for factor in (1, 2, 2.5, 5, 10):
        if value <= factor * magnitude + 1e-12:
            return factor * magnitude
    return 10 * magnitude


class _Frame:
    """Maps (time, value) to SVG coordinates; times fall back to sample index when unparsable."""

    def __init__(self, series: list[Series], ymax: float, legend_rows: int):
        self.height = HEIGHT + legend_rows * LEGEND_ROW + 4
        self.plot_w = WIDTH - LEFT - RIGHT
        self.plot_h = HEIGHT - TOP - BOTTOM
        parsed = {t: _parse_time(t) for s in series for t in s.times}
        moments = {t: moment for t, moment in parsed.items() if moment is not None}
        self.by_time = len(moments) == len(parsed)
        self.position: dict[str | None, float]
        if self.by_time:
            self.position = moments
        else:
            longest = max(series, key=lambda s: len(s.times))
            self.position = {t: float(i) for i, t in enumerate(longest.times)}
            self.position.update({t: float(i) for s in series for i, t in enumerate(s.times)
                                  if t not in self.position})
        points = sorted(self.position.values())
        self.x0, self.x1 = (points[0], points[-1]) if points else (0.0, 1.0)
        self.ymax = ymax

    def x(self, moment: float) -> float:
        if self.x1 == self.x0:
            return LEFT + self.plot_w / 2
        return LEFT + (moment - self.x0) / (self.x1 - self.x0) * self.plot_w

    def y(self, value: float) -> float:
        return TOP + self.plot_h - min(value, self.ymax) / self.ymax * self.plot_h

    def x_ticks(self) -> list[tuple[float, str]]:
        if not self.by_time:
            labels = sorted(self.position.items(), key=lambda kv: kv[1])
            stride = max(1, math.ceil(len(labels) / MAX_TIME_TICKS))
            return [(self.x(pos), text or "") for text, pos in labels[::stride]]
        span = self.x1 - self.x0
        if span == 0:
            return [(self.x(self.x0), _clock(self.x0))]
        step = next((s for s in TICK_STEPS_S if span / s <= MAX_TIME_TICKS), TICK_STEPS_S[-1])
        first = math.ceil(self.x0 / step) * step
        ticks: list[tuple[float, str]] = []
        moment = first
        while moment <= self.x1 and len(ticks) <= MAX_TIME_TICKS:
            ticks.append((self.x(moment), _clock(moment)))
            moment += step
        return ticks


def _open(title: str, height: int, description: str) -> list[str]:
    return [
        f'<svg class="chart" role="img" viewBox="0 0 {WIDTH} {height}"'
        f' width="{WIDTH}" height="{height}" font-family="sans-serif" font-size="11">',
        f"<title>{escape(title)}</title>",
        f"<desc>{escape(description)}</desc>",
        f'<text x="{LEFT}" y="18" font-size="13" font-weight="bold">{escape(title)}</text>',
    ]


def no_data_chart(title: str, reason: str = "no data") -> str:
    """A small placeholder that says why there is no chart."""
    return "".join([
        f'<svg class="chart no-data" role="img" viewBox="0 0 {WIDTH} 60"'
        f' width="{WIDTH}" height="60" font-family="sans-serif" font-size="11">',
        f"<title>{escape(title)}: {escape(reason)}</title>",
        f'<text x="4" y="18" font-size="13" font-weight="bold">{escape(title)}</text>',
        f'<text x="4" y="42" fill="#555">{escape(reason)}</text>',
        "</svg>",
    ])


def _axes(frame: _Frame, unit: str) -> list[str]:
    bottom = TOP + frame.plot_h
    parts = [f'<g class="axes" stroke="#888" stroke-width="1">'
             f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{bottom}"/>'
             f'<line x1="{LEFT}" y1="{bottom}" x2="{LEFT + frame.plot_w}" y2="{bottom}"/></g>']
    for i in range(5):
        value = frame.ymax * i / 4
        y = _num(frame.y(value))
        parts.append(f'<line x1="{LEFT}" y1="{y}" x2="{LEFT + frame.plot_w}" y2="{y}" stroke="#e4e4e4"/>')
        parts.append(f'<text x="{LEFT - 6}" y="{y}" text-anchor="end" dominant-baseline="middle">'
                     f"{escape(_num(value))}</text>")
    for x, label in frame.x_ticks():
        parts.append(f'<line x1="{_num(x)}" y1="{bottom}" x2="{_num(x)}" y2="{bottom + 4}" stroke="#888"/>')
        parts.append(f'<text x="{_num(x)}" y="{bottom + 16}" text-anchor="middle">{escape(label)}</text>')
    axis_name = "time (UTC)" if frame.by_time else "sample"
    parts.append(f'<text x="{LEFT + frame.plot_w}" y="{bottom + 32}" text-anchor="end">{axis_name}</text>')
    parts.append(f'<text x="14" y="{TOP + frame.plot_h / 2:.0f}" text-anchor="middle" '
                 f'transform="rotate(-90 14 {TOP + frame.plot_h / 2:.0f})">{escape(unit)}</text>')
    return parts


def _legend_layout(labels: list[str]) -> tuple[int, int]:
    """(columns, rows): three columns when labels are short, else one per row."""
    columns = 3 if labels and max(len(label) for label in labels) <= 28 else 1
    return columns, math.ceil(len(labels) / columns)


def _legend(series: list[Series], extra: Sequence[tuple[str, str, str]] = ()) -> list[str]:
    """Legend below the plot: colour and line style swatch plus the label as text (not colour alone)."""
    entries = [(PALETTE[i % len(PALETTE)], s.label, DASHES[i % len(DASHES)]) for i, s in enumerate(series)]
    entries += list(extra)
    columns, _ = _legend_layout([label for _, label, _ in entries])
    column_w = (WIDTH - LEFT - RIGHT) / columns
    parts = ['<g class="legend">']
    for index, (colour, label, dash) in enumerate(entries):
        x = LEFT + (index % columns) * column_w
        y = HEIGHT + (index // columns) * LEGEND_ROW + 4
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        parts.append(f'<line x1="{_num(x)}" y1="{y}" x2="{_num(x + 22)}" y2="{y}" stroke={quoteattr(colour)}'
                     f' stroke-width="3"{dash_attr}/>')
        parts.append(f'<text x="{_num(x + 28)}" y="{y}" dominant-baseline="middle">{escape(label)}</text>')
    parts.append("</g>")
    return parts


def _finite(value: float | None) -> TypeGuard[float]:
    return value is not None and math.isfinite(value)


def line_chart(series: list[Series], title: str, unit: str,
               thresholds: Sequence[tuple[str, float]] = ()) -> str:
    """Lines per series over time, gaps (None) break the line; dashed, labelled threshold lines
    (name "warning" / "critical" picks the style)."""
    series = [s for s in series if any(_finite(v) for v in s.values)]
    if not series:
        return no_data_chart(title)
    peak = max(v for s in series for v in s.values if _finite(v))
    ymax = _nice_ceiling(max([peak] + [value for _, value in thresholds]) * 1.05)
    styles = [(name, value) + THRESHOLD_STYLES.get(name, ("#B00020", "6 4")) for name, value in thresholds]
    extra = [(colour, f"{name} {_num(value)} {unit}", dash) for name, value, colour, dash in styles]
    _, legend_rows = _legend_layout([s.label for s in series] + [label for _, label, _ in extra])
    frame = _Frame(series, ymax, legend_rows)
    description = f"{len(series)} series, maximum {_num(peak)} {unit}"
    parts = _open(title, frame.height, description) + _axes(frame, unit)
    for name, value, colour, dash in styles:
        y = _num(frame.y(value))
        parts.append(f'<line class="threshold" x1="{LEFT}" y1="{y}" x2="{LEFT + frame.plot_w}" y2="{y}"'
                     f' stroke={quoteattr(colour)} stroke-width="1.5" stroke-dasharray="{dash}"/>')
        # the higher line's name sits above it, the others' below, so close lines keep readable names
        above = value == max(v for _, v in thresholds)
        parts.append(f'<text x="{LEFT + frame.plot_w + 3}" y="{y}" dominant-baseline="{"auto" if above else "hanging"}"'
                     f' font-size="10" fill={quoteattr(colour)}>{escape(name)}</text>')
    for index, one in enumerate(series):
        colour = quoteattr(PALETTE[index % len(PALETTE)])
        dash = DASHES[index % len(DASHES)]
        runs: list[list[tuple[float, float]]] = []
        run: list[tuple[float, float]] = []
        for moment, reading in zip(one.times, one.values):
            if _finite(reading):
                run.append((frame.x(frame.position[moment]), frame.y(reading)))
            elif run:
                runs.append(run)
                run = []
        if run:
            runs.append(run)
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        parts.append(f"<g class=\"series\" stroke={colour} fill={colour}>"
                     f"<title>{escape(one.label)}</title>")
        for run in runs:
            if len(run) == 1:
                parts.append(f'<circle cx="{_num(run[0][0])}" cy="{_num(run[0][1])}" r="3"/>')
            else:
                points = " ".join(f"{_num(x)},{_num(y)}" for x, y in run)
                parts.append(f'<polyline points="{points}" fill="none" stroke-width="2"{dash_attr}/>')
        parts.append("</g>")
    parts += _legend(series, extra)
    parts.append("</svg>")
    return "".join(parts)


def rate_bars(rows: list[tuple[str, float | None, str]], title: str, unit: str) -> str:
    """One horizontal bar per (label, value, suffix) on a shared axis, the label left of the bar and
    the value (with its suffix, e.g. "/s over 62 s") after it: comparable side by side, readable
    without colour."""
    bars = [(label, value, note) for label, value, note in rows if _finite(value)]
    if not bars:
        return no_data_chart(title)
    row_h, label_w, top = 26, 260, TOP + 4
    plot_w = WIDTH - label_w - 90
    peak = max(max(value, 0.0) for _, value, _ in bars)
    xmax = _nice_ceiling(peak * 1.05) if peak > 0 else 1.0
    height = top + row_h * len(bars) + 34
    description = f"{len(bars)} rates, largest {_num(peak)} {unit}"
    parts = _open(title, height, description)
    bottom = top + row_h * len(bars)
    for i in range(5):
        x = _num(label_w + plot_w * i / 4)
        parts.append(f'<line x1="{x}" y1="{top}" x2="{x}" y2="{bottom}" stroke="#e4e4e4"/>')
        parts.append(f'<text x="{x}" y="{bottom + 14}" text-anchor="middle">{escape(_num(xmax * i / 4))}</text>')
    parts.append(f'<text x="{label_w + plot_w}" y="{bottom + 28}" text-anchor="end">{escape(unit)}</text>')
    parts.append(f'<line x1="{label_w}" y1="{top}" x2="{label_w}" y2="{bottom}" stroke="#888"/>')
    for index, (label, value, note) in enumerate(bars):
        y = top + index * row_h
        width = max(value, 0.0) / xmax * plot_w
        shown = f"{value:,.2f}".rstrip("0").rstrip(".") + note
        parts.append(f'<g class="rate"><title>{escape(label)}: {escape(shown)} {escape(unit)}</title>'
                     f'<text x="{label_w - 8}" y="{y + row_h / 2:.0f}" text-anchor="end"'
                     f' dominant-baseline="middle">{escape(label)}</text>'
                     f'<rect x="{label_w}" y="{y + 5}" width="{_num(width)}" height="{row_h - 10}"'
                     f' fill="#0072B2" stroke="#1b1b1b" stroke-width="0.5"/>'
                     f'<text x="{_num(label_w + width + 6)}" y="{y + row_h / 2:.0f}" dominant-baseline="middle"'
                     f' font-weight="bold">{escape(shown)}</text></g>')
    parts.append("</svg>")
    return "".join(parts)


def interval_rates(series: Series) -> Series:
    """Cumulative counter readings -> growth per second over each sample interval. A decrease is a
    counter reset (VM reboot, driver reload), shown as a gap, never as a negative value."""
    values = [_interval_rate(_parse_time(t0), before, _parse_time(t1), after)
              for (t0, before), (t1, after) in zip(zip(series.times, series.values),
                                                   zip(series.times[1:], series.values[1:]))]
    return Series(series.label, "per second", series.times[1:], tuple(values), series.source)


def _interval_rate(start: float | None, before: float | None, end: float | None, after: float | None) -> float | None:
    if start is None or end is None or not _finite(before) or not _finite(after):
        return None
    if after < before or end <= start:
        return None
    return (after - before) / (end - start)
