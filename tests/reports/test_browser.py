"""The HTML reports in a real browser: the system's headless Chromium driven by Playwright over the
DevTools protocol (``executable_path``: no browser download). Playwright's evaluate() runs through
DevTools, so the report's CSP (script-src 'none') stays in force for the page itself.

* Every example's report at 1280 px and 800 px: the page, and the summary above all, has no
  horizontal scroll; a screenshot is taken (ESXDIAG_KEEP_SCREENSHOTS=DIR keeps them to look at).
* Printed to PDF on A4 and Letter: a sane page count, and no table row or chart split across
  pages (folded <details> print unfolded). How a split is detected: before printing, each visible
  table row and chart figure gets two marker words positioned absolutely at its top and bottom
  edge (absolute positioning takes no space, so the layout and page breaks are the report's own).
  Chromium fragments a box that breaks across pages, and its bottom marker then lands on a later
  page than its top marker.
  The PDF's text is extracted per page with pypdf and each pair must be found on one page.
  Printed at the page's printable width, nothing is wider than the page (cut off on paper).
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import struct
import zlib

import pytest
from pypdf import PdfReader

from esxdiag.reports.html import render_html

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")]
EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"
REPORTS = sorted(p for p in EXAMPLES.rglob("report.html"))
PAPER = {"A4": (210, 297), "Letter": (215.9, 279.4)}  # mm
MARGIN_MM = 12  # left and right, as @page in templates/base.css
MM_TO_CSS_PX = 96 / 25.4

MARK = """(() => {
  const boxes = [...document.querySelectorAll('tr, figure')].filter(box => box.checkVisibility());
  boxes.forEach((box, i) => {
    const cells = box.tagName === 'TR' ? [...box.cells] : [box];
    const edges = [['top', cells[0], 'qzTOP' + i + 'zq'], ['bottom', cells[cells.length - 1], 'qzEND' + i + 'zq']];
    for (const [edge, host, word] of edges) {
      host.style.position = 'relative';
      const mark = document.createElement('span');
      mark.textContent = word;
      mark.style.cssText = `position:absolute;${edge}:0;left:0;font-size:3px;line-height:3px;color:#fff`;
      host.appendChild(mark);
    }
  });
  return boxes.length;
})()"""
OVERFLOW = """(() => {
  const root = document.documentElement, summary = document.getElementById('summary');
  return {page: root.scrollWidth - root.clientWidth,
          summary: summary ? summary.scrollWidth - summary.clientWidth : 0};
})()"""


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        launched = driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        yield launched
        launched.close()


@pytest.fixture
def page(browser):
    opened = browser.new_page()
    opened.set_default_timeout(60_000)
    yield opened
    opened.close()


def keep(path: pathlib.Path, name: str) -> None:
    kept = os.environ.get("ESXDIAG_KEEP_SCREENSHOTS")
    if kept:
        pathlib.Path(kept).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, pathlib.Path(kept) / name)


def example_name(report: pathlib.Path) -> str:
    return str(report.parent.relative_to(EXAMPLES)).replace("/", "-")


@pytest.mark.parametrize("width", [1280, 800])
@pytest.mark.parametrize("report", REPORTS, ids=example_name)
def test_example_report_has_no_horizontal_scroll(page, report, width, tmp_path):
    page.set_viewport_size({"width": width, "height": 1200})
    page.goto(report.as_uri())
    overflow = page.evaluate(OVERFLOW)
    assert overflow == {"page": 0, "summary": 0}, f"{report} scrolls sideways at {width} px: {overflow}"
    shot = tmp_path / "shot.png"
    page.screenshot(path=str(shot), full_page=True)
    width_px, _, pixels = png_size_and_pixels(shot.read_bytes())
    assert width_px == width and len(set(pixels)) > 64  # text, badges, shading: not a blank page
    keep(shot, f"{example_name(report)}-{width}.png")


def vm_count(report: pathlib.Path) -> int:
    return len(json.loads((report.parent / "report.json").read_text(encoding="utf-8"))["vms"])


@pytest.mark.parametrize("paper", sorted(PAPER))
@pytest.mark.parametrize("report", REPORTS, ids=example_name)
def test_example_report_prints_without_split_rows_or_charts(page, report, paper, tmp_path):
    width_mm, _ = PAPER[paper]
    printable = int((width_mm - 2 * MARGIN_MM) * MM_TO_CSS_PX)
    page.emulate_media(media="print")
    page.set_viewport_size({"width": printable, "height": 1000})
    page.goto(report.as_uri())
    assert page.evaluate(OVERFLOW)["page"] <= 0, f"{report} is wider than a {paper} page"
    boxes = page.evaluate(MARK)
    pdf = tmp_path / f"report-{paper}.pdf"
    page.pdf(path=str(pdf), format=paper, print_background=True, prefer_css_page_size=True)
    keep(pdf, f"{example_name(report)}-{paper}.pdf")
    texts = ["".join(p.extract_text().split()) for p in PdfReader(pdf).pages]
    vms = vm_count(report)
    # up to 6 pages a VM: its drop ledger (issue 29) is a table of its own beside the evidence
    assert 1 + vms <= len(texts) <= 3 + 6 * vms, f"{len(texts)} {paper} pages for {vms} VM(s)"
    split = []
    for i in range(boxes):
        top = [n for n, t in enumerate(texts) if f"qzTOP{i}zq" in t]
        end = [n for n, t in enumerate(texts) if f"qzEND{i}zq" in t]
        assert top and end, f"marker {i} missing from the PDF text"
        if top != end:
            split.append(i)
    assert not split, f"{len(split)} of {boxes} rows/charts split across {paper} pages in {report}"


def test_dom_renders_summary_and_keeps_hostile_name_as_text(page, analysis_result, hostile_name, tmp_path):
    report = tmp_path / "report" / "esxdiag-report.html"
    report.parent.mkdir()
    report.write_text(render_html(analysis_result, tmp_path / "bundle", report), encoding="utf-8")
    page.goto(report.as_uri())
    dom = page.content()
    assert "<h2>Summary</h2>" in dom
    assert "VM &lt;script&gt;alert(1)&lt;/script&gt;" in dom
    assert hostile_name not in dom
    assert "<script" not in dom.lower() and "<b>" not in dom
    assert page.evaluate("document.querySelectorAll('script').length") == 0


def png_size_and_pixels(data: bytes) -> tuple[int, int, bytes]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    chunks, offset = [], 8
    while offset < len(data):
        length, kind = struct.unpack(">I4s", data[offset:offset + 8])
        if kind == b"IDAT":
            chunks.append(data[offset + 8:offset + 8 + length])
        offset += 12 + length
    return width, height, zlib.decompress(b"".join(chunks))
