"""Suite-wide policy: in CI (ESXDIAG_REQUIRE_LAB=1) a lab or browser test that skips because a
tool is missing is a failure, so a missing install step cannot hide behind a green run. Also the
one fixture two suites share: a vCenter that trickles (tests/lab/trickle_server.py)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

TRICKLE_SERVER = Path(__file__).resolve().parent / "lab" / "trickle_server.py"


@pytest.fixture
def trickle():
    """A TLS server on 127.0.0.1 that answers one byte every 0.5 s (each connection ends after 60 s)."""
    spec = importlib.util.spec_from_file_location("esxdiag_trickle_server", TRICKLE_SERVER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    server = module.TrickleServer(interval_s=0.5, limit_s=60)
    yield server
    server.stop()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    needs_tool = item.get_closest_marker("lab") or item.get_closest_marker("browser")
    expected_failure = hasattr(report, "wasxfail")  # pytest reports an xfail as skipped: not a missing tool
    if report.skipped and needs_tool and not expected_failure and os.environ.get("ESXDIAG_REQUIRE_LAB"):
        report.outcome = "failed"
        report.longrepr = f"skipped, but ESXDIAG_REQUIRE_LAB=1 requires it to run: {report.longrepr}"
