"""Issue 25 point 5: the fleet page in the system's headless Chromium at a 1280 px and a 1920 px
window. The fleet is the lab's own scan (tests/fixtures/fleet/lab-scan.json: `esxdiag scan` of the
lab's vcsim; the limited receiver at %RDY 69.6 with 61 drops/s). No horizontal scroll, the "why"
column on screen, the scatter's threshold labels apart, a y axis labelled up to the data's maximum,
every point inside the axes."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

from esxdiag.config import load_thresholds
from esxdiag.fleet.analysis import build_report
from esxdiag.fleet.snapshot import load_snapshot
from esxdiag.reports.fleet_html import render_fleet_html

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")]
ROOT = Path(__file__).resolve().parents[2]
SNAPSHOT = ROOT / "tests" / "fixtures" / "fleet" / "lab-scan.json"
_spec = importlib.util.spec_from_file_location("fleet_page_bench", ROOT / "bench" / "fleet_page_bench.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


@pytest.fixture(scope="module")
def document():
    return build_report(load_snapshot(SNAPSHOT), load_thresholds(), str(SNAPSHOT)).as_dict()


@pytest.fixture(scope="module")
def built(document, tmp_path_factory) -> Path:
    page = tmp_path_factory.mktemp("fleet") / "fleet-report.html"
    page.write_text(render_fleet_html(document), encoding="utf-8")
    return page


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        launched = bench.launch(driver)
        yield launched
        launched.close()


MEASURE = """() => {
  const box = e => { const r = e.getBoundingClientRect(); return {left: r.left, right: r.right, top: r.top, bottom: r.bottom}; };
  const svg = [...document.querySelectorAll('svg')].find(s => s.getAttribute('aria-label').startsWith('drops per second'));
  const axes = [...svg.querySelectorAll('line')].slice(0, 2).map(l => ['x1', 'y1', 'x2', 'y2'].map(a => +l.getAttribute(a)));
  return {
    scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth,
    why: [...document.querySelectorAll('#vm-table th, table.top th')].filter(th => th.textContent.trim() === 'why').map(box),
    labels: [...svg.querySelectorAll('text')].filter(t => t.textContent.startsWith('%RDY')).map(box),
    yticks: [...svg.querySelectorAll('text[text-anchor="end"]')].filter(t => /^[0-9,]+$/.test(t.textContent))
      .map(t => +t.textContent.replace(/,/g, '')),
    axes,
    points: [...svg.querySelectorAll('g[transform]')].map(g => { const b = g.getBBox();
      const [x, y] = g.getAttribute('transform').match(/-?[0-9.]+/g).map(Number);
      return [x, y, Math.max(b.width, b.height) / 2]; }),
    headers: [...document.querySelectorAll('th')].filter(th => th.offsetParent !== null).map(th => {
      const r = document.createRange(); r.selectNodeContents(th); const lines = [...r.getClientRects()];
      return {text: th.textContent.trim(), words: th.textContent.trim().split(/\s+/).length,
              hyphens: (th.textContent.match(/-/g) || []).length, lines: new Set(lines.map(l => Math.round(l.top))).size};
    }),
  };
}"""


@pytest.mark.parametrize("width", [1280, 1920])
def test_the_fleet_page_fits_its_window_and_its_scatter_reads(browser, built, document, width):
    page = browser.new_page(viewport={"width": width, "height": 900})
    try:
        page.goto(built.as_uri(), wait_until="load")
        got = page.evaluate(MEASURE)
    finally:
        page.close()
    assert got["scroll"] <= got["client"], got  # no horizontal scroll
    # issue 32: a header breaks between its words or after a hyphen, never inside a word ("scor e")
    broken = [h for h in got["headers"] if h["lines"] > h["words"] + h["hyphens"]]
    assert not broken, broken
    assert len(got["why"]) == 2 and all(0 <= b["left"] and b["right"] <= got["client"] for b in got["why"]), got
    (first, second) = got["labels"]
    apart = (first["right"] <= second["left"] or second["right"] <= first["left"]
             or first["bottom"] <= second["top"] or second["bottom"] <= first["top"])
    assert apart, got["labels"]  # "%RDY 5%" and "%RDY 10%" do not overlap
    rates = [r["drops_per_s"] for r in document["vms"] if r["drops_per_s"] is not None]
    assert round(max(rates)) == 61  # the limited receiver, 61 drops/s in the lab
    ticks = got["yticks"]
    assert ticks[0] == 0 and ticks[-1] >= max(rates) and len(ticks) >= 5, ticks  # labelled up to the data
    (x_axis, y_axis) = got["axes"]
    left, right, top, bottom = x_axis[0], x_axis[2], y_axis[1], y_axis[3]
    assert got["points"] and all(left <= x and x + r <= right and top <= y - r and y <= bottom
                                 for x, y, r in got["points"]), (got["points"], left, right, top, bottom)
