"""serve's pages in a real browser: the system's headless Chromium driven by Playwright (no browser
download, as tests/reports/test_browser.py). From the fleet page at / a click on a VM opens its
page, which shows its class, its past as two charts and its last deep report, whose link opens
the deep check's own report. Each page keeps its CSP: no script runs, none is reported blocked."""

from __future__ import annotations

import shutil

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")]


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
    opened.set_default_timeout(30_000)
    opened.errors = []
    opened.on("console", lambda message: opened.errors.append(message.text) if message.type == "error" else None)
    opened.on("pageerror", lambda error: opened.errors.append(str(error)))
    yield opened
    opened.close()


def test_from_the_fleet_page_to_a_vm_page_and_its_deep_report(page, web_server, tmp_path):
    page.set_viewport_size({"width": 1280, "height": 1000})
    page.goto(web_server.url)
    headline = page.locator("#headline")
    assert headline.is_visible() and "vc2:443" in headline.inner_text()  # the stale vCenter, said first
    assert page.locator("body > *").first.get_attribute("id") == "headline"
    hostile = page.get_by_role("link", name="<img src=x onerror=alert(1)>")
    assert hostile.first.is_visible() and page.locator("img").count() == 0  # the hostile name is only text
    page.locator('a[href="vm/vc1%3A443/vm-1"]').first.click()
    page.wait_for_url("**/vm/vc1%3A443/vm-1")
    assert page.locator("h1").inner_text() == "ring01"
    assert page.locator("#class").inner_text() == "ring-exhaustion"  # its deep check is folded in, as in a cycle
    charts = page.locator("figure svg.chart")
    assert charts.count() == 2 and page.locator("figure svg.chart polyline").count() == 2  # a line of 2 scans each
    assert "34.614" in page.locator("#deep").inner_text()
    page.screenshot(path=str(tmp_path / "vm.png"), full_page=True)
    page.locator("#deep-report").click()
    page.wait_for_url("**/deep/vc1_443/20261123T024500Z/esx1/report.html")
    assert page.title() == "deep report"
    page.go_back()
    page.locator("text=← fleet").click()
    page.wait_for_url(web_server.url)
    assert page.errors == []
