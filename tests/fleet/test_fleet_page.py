"""The fleet page at 10,000 VMs in a real browser (issue 16, point 7): the system's headless Chromium
driven by Playwright (no browser download). A 10,000-VM snapshot is built offline
(bench/fleet_page_bench.py), analysed and rendered; the page must stay within its budget (<= 10 MB,
loaded in < 3 s, < 20,000 px tall), load nothing from anywhere, and work: class cards filter, the
search finds any VM, headers sort, pages turn, notes are folded, print shows the top suspects, and a
hostile VM name stays text."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")]
BENCH = Path(__file__).resolve().parents[2] / "bench" / "fleet_page_bench.py"
_spec = importlib.util.spec_from_file_location("fleet_page_bench", BENCH)
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)
VMS = 10_000
ROWS = "#vm-rows tr"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("fleet-page") / "fleet-report.html"
    made = bench.render_page(VMS, out)
    return out, made["document"]


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        launched = bench.launch(driver)
        yield launched
        launched.close()


@pytest.fixture
def page(browser, built):
    opened = browser.new_page(viewport={"width": 1280, "height": 900})
    opened.set_default_timeout(60_000)
    requests, errors = [], []
    opened.on("request", lambda r: requests.append(r.url))
    opened.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    opened.on("pageerror", lambda e: errors.append(str(e)))
    opened.goto(built[0].as_uri(), wait_until="load")
    yield opened
    assert all(url.startswith(("file:", "data:")) for url in requests), requests  # nothing from the network
    assert not errors, errors  # no script error, no CSP violation
    opened.close()


def cells(page, column: int) -> list[str]:
    return page.eval_on_selector_all(ROWS, f"rows => rows.map(r => r.cells[{column}].textContent)")


def test_the_page_meets_its_budget_at_10000_vms(browser, built):
    path, _ = built
    assert path.stat().st_size <= 10 * 2**20
    tries = []
    for _ in range(3):  # the best of three: the machine is shared
        opened = browser.new_page(viewport={"width": 1280, "height": 900})
        tries.append(bench.measure(opened, path))
        opened.close()
        if tries[-1]["load_ms"] < 3000:
            break
    assert min(t["load_ms"] for t in tries) < 3000, tries
    assert tries[-1]["height_px"] < 20_000, tries


def test_cards_filter_headers_sort_and_pages_turn(page, built):
    _, document = built
    assert page.locator(ROWS).count() == 100
    assert cells(page, 0)[:3] == ["1", "2", "3"]
    page.click("#class-emulated-nic")
    assert set(cells(page, 2)) == {"emulated-nic"}
    assert page.get_attribute("#class-emulated-nic", "aria-pressed") == "true"
    page.click("#class-emulated-nic")  # again: the filter is off
    page.click("th[data-key=drops_per_s]")
    top = max(r["drops_per_s"] or 0 for r in document["vms"])
    assert float(cells(page, 5)[0].replace(",", "")) == pytest.approx(top, abs=0.001)
    page.click("#show-all")
    page.click("#page-next")
    assert cells(page, 0)[0] == "101"
    page.click("#page-last")
    assert cells(page, 0)[-1] == str(VMS)
    assert "page 100 of 100" in page.text_content("#page-info")


def test_typing_a_vm_name_leaves_its_row(page, built):
    _, document = built
    deep = document["vms"][9_876]  # far past the first page
    page.fill("input[type=search]", deep["name"])
    assert cells(page, 0) == [str(deep["rank"])]
    assert deep["name"] in cells(page, 3)[0]
    page.fill("input[type=search]", "no such vm")
    assert cells(page, 0) == ["No VM matches."]


def test_notes_are_folded_per_row(page):
    folds = page.eval_on_selector_all(f"{ROWS} details.fold", "ds => ds.map(d => d.open)")
    assert len(folds) == 100 and not any(folds)
    first = page.locator(f"{ROWS} details.fold").first
    first.locator("summary").click()
    assert first.locator("li").count() >= 2  # the reason in full and its notes


def test_a_hostile_vm_name_stays_text(page, built):
    _, document = built
    hostile = next(r for r in document["vms"] if r["name"].startswith(bench.HOSTILE))
    page.fill("input[type=search]", hostile["name"][-30:])
    assert hostile["name"] in cells(page, 3)[0]
    assert page.eval_on_selector_all("#vm-rows img, #vm-rows script", "found => found.length") == 0
    assert page.title().startswith("esxdiag fleet scan")  # the onerror never ran


def test_print_shows_the_summary_and_top_suspects_not_the_whole_table(page):
    page.emulate_media(media="print")
    assert page.is_visible("#top") and page.is_visible("table.fleet.top")
    assert not page.is_visible("#vm-table") and not page.is_visible(".controls")
    assert page.is_visible("#summary")


def test_rollups_by_cluster_and_host(page):
    assert page.locator("table.rollup").count() >= 2
    assert "Per cluster" in page.content() and "Per host" in page.content()
