"""The HTML report in a real browser (headless Debian chromium): it renders, the hostile VM name
is text rather than markup, nothing scripted exists in the DOM, and a screenshot is produced."""

from __future__ import annotations

import os
import shutil
import signal
import struct
import subprocess
import zlib

import pytest

from esxdiag.reports.html import render_html

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")]
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync")
TIMEOUT_S = 90


def run_chromium(tmp_path, *args: str) -> subprocess.CompletedProcess:
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
    command = [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          start_new_session=True) as process:
        try:
            out, err = process.communicate(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            pytest.fail(f"chromium did not finish within {TIMEOUT_S} s: {command}")
    return subprocess.CompletedProcess(command, process.returncode, out, err)


@pytest.fixture
def report_file(analysis_result, tmp_path):
    path = tmp_path / "report" / "esxdiag-report.html"
    path.parent.mkdir()
    path.write_text(render_html(analysis_result, tmp_path / "bundle", path), encoding="utf-8")
    return path


def test_dom_renders_summary_and_keeps_hostile_name_as_text(report_file, tmp_path, hostile_name):
    done = run_chromium(tmp_path, "--dump-dom", report_file.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    dom = done.stdout
    assert "<h2>Summary</h2>" in dom
    assert "VM &lt;script&gt;alert(1)&lt;/script&gt;" in dom
    assert hostile_name not in dom
    assert "<script" not in dom.lower()
    assert "<b>" not in dom


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


def test_screenshot_is_a_full_non_blank_page(report_file, tmp_path):
    shot = tmp_path / "report.png"
    done = run_chromium(tmp_path, f"--screenshot={shot}", "--window-size=1280,2000", report_file.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    data = shot.read_bytes()
    width, height, pixels = png_size_and_pixels(data)
    assert (width, height) == (1280, 2000)
    assert len(data) > 50_000  # a blank or error page compresses to a few KB
    assert len(set(pixels)) > 64  # text, badges and table shading, not one flat colour
    kept = os.environ.get("ESXDIAG_KEEP_SCREENSHOT")
    if kept:
        shutil.copyfile(shot, kept)
