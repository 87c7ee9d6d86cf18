"""Suite-wide policy: in CI (ESXDIAG_REQUIRE_LAB=1) a lab or browser test that skips because a
tool is missing is a failure, so a missing install step cannot hide behind a green run."""

from __future__ import annotations

import os

import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    needs_tool = item.get_closest_marker("lab") or item.get_closest_marker("browser")
    if report.skipped and needs_tool and os.environ.get("ESXDIAG_REQUIRE_LAB"):
        report.outcome = "failed"
        report.longrepr = f"skipped, but ESXDIAG_REQUIRE_LAB=1 requires it to run: {report.longrepr}"
