"""A scan behind a fault-injecting proxy (faultproxy.py) in front of a small vcsim: nothing lost,
nothing claimed. An answer that is cut off, that is not SOAP, that trickles or holds a huge text
node fails its vCenter, of the kind that blames the right party, with one line naming what came
back; never a complete-looking scan with VMs missing. One bad perf value costs one sample.

Each fault is injected into one call of the scan (by SOAP method, after ``skip`` of them): the
places pass is the first RetrievePropertiesEx, the VM pass the second (its next pages are
ContinueRetrievePropertiesEx: page size 2 over 6 VMs)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from esxdiag.collectors import soap_stream
from esxdiag.collectors.fleet import ScanOptions, scan

pytestmark = pytest.mark.lab
VMS = 6  # the faults fixture's vcsim (conftest.py): 1 cluster, 2 hosts
PLACES = ("RetrievePropertiesEx", 0)
FIRST_VM_PAGE = ("RetrievePropertiesEx", 1)
NEXT_VM_PAGE = ("ContinueRetrievePropertiesEx", 0)
LAST_VM_PAGE = ("ContinueRetrievePropertiesEx", 1)
QUERY_PERF = ("QueryPerf", 0)


def scanned(proxy, timeout_s: float = 20, **options) -> tuple[dict, dict]:
    done = scan([proxy.creds()], ScanOptions(window_s=60, workers=1, page_size=2, timeout_s=timeout_s, **options))
    return done["vcenters"][0], done


def assert_failed(status: dict, kind: str, *words: str) -> None:
    assert status["status"] == "failed", status
    assert status["error_kind"] == kind, status
    assert "\n" not in status["error"] and status["error"].startswith(status["name"] + ": "), status
    for word in words:
        assert word in status["error"], status


@pytest.fixture(params=["1", "0"], ids=["fast-decode", "pyvmomi-only"])
def decoders(request, monkeypatch):
    monkeypatch.setenv(soap_stream.SWITCH, request.param)
    return request.param


def test_the_proxy_passes_a_whole_scan_through(proxy, decoders):
    status, done = scanned(proxy)
    assert status["status"] == "scanned" and len(done["vms"]) == VMS and len(done["hosts"]) == 2


# --- 1. a cut answer is a failed call, never the last page ----------------------------------------

@pytest.mark.parametrize("call", [PLACES, FIRST_VM_PAGE, NEXT_VM_PAGE, LAST_VM_PAGE, QUERY_PERF],
                         ids=["places", "first-vm-page", "next-vm-page", "last-vm-page", "queryperf"])
@pytest.mark.parametrize("cut", [200, 1, 4000], ids=["200-bytes-short", "1-byte-short", "most-of-it"])
def test_an_answer_cut_short_without_content_length_fails_the_vcenter(proxy, decoders, call, cut):
    method, skip = call
    proxy.add(method, "cut", size=cut, skip=skip)
    status, done = scanned(proxy)
    assert_failed(status, "unreachable", "cut off in transit")
    assert done["vms"] == []  # no VM of a vCenter that failed is listed as scanned


def test_a_whole_close_delimited_answer_is_read_whole(proxy, decoders):
    for method, skip in (PLACES, FIRST_VM_PAGE, NEXT_VM_PAGE, QUERY_PERF):
        proxy.add(method, "close", skip=skip)
    status, done = scanned(proxy)
    assert status["status"] == "scanned" and len(done["vms"]) == VMS and len(done["hosts"]) == 2


def test_an_answer_cut_short_of_its_content_length_fails_the_vcenter(proxy, decoders):
    proxy.add(*NEXT_VM_PAGE[:1], "cut-length", size=200)
    status, _ = scanned(proxy)
    assert_failed(status, "unreachable")


# --- 2. a 200 answer that is not SOAP is a failed call naming what came back ----------------------

NOT_SOAP = {"html": "text/html", "html-as-xml": "XML <html>, not a SOAP envelope",
            "xhtml": "XML <html>, not a SOAP envelope",
            "not-envelope": "XML <status>, not a SOAP envelope",
            "empty-envelope": "a SOAP envelope without an answer"}


@pytest.mark.parametrize("action", list(NOT_SOAP))
@pytest.mark.parametrize("call", [PLACES, FIRST_VM_PAGE, NEXT_VM_PAGE, QUERY_PERF, ("CurrentTime", 0)],
                         ids=["places", "first-vm-page", "next-vm-page", "queryperf", "clock"])
def test_a_200_answer_that_is_not_soap_fails_the_vcenter_naming_it(proxy, decoders, action, call):
    method, skip = call
    proxy.add(method, action, skip=skip)
    status, done = scanned(proxy)
    assert_failed(status, "bad-answer", "HTTP 200", NOT_SOAP[action])
    assert done["vms"] == []


def test_an_html_page_for_every_queryperf_fails_the_vcenter_not_each_vm(proxy, decoders):
    proxy.add("QueryPerf", "html", times=None)
    status, done = scanned(proxy)
    assert_failed(status, "bad-answer", "Service Unavailable")
    assert done["vms"] == [] and proxy.seen.count("QueryPerf") == 1  # no retry one VM at a time


# --- 11. fault kinds blame the right party -------------------------------------------------------

@pytest.mark.parametrize("status_code", [500, 503, 502])
def test_an_html_error_page_from_vcenter_is_the_servers_failure_not_esxdiags(proxy, decoders, status_code):
    proxy.add("CurrentTime", "html", status=status_code)
    status, _ = scanned(proxy)
    assert_failed(status, "bad-answer", f"HTTP {status_code}")


def test_a_server_fault_during_login_is_not_a_credentials_problem(proxy):
    proxy.add("Login", "fault", text="SystemError")
    status, _ = scanned(proxy)
    assert_failed(status, "query", "SystemError")


def test_a_refused_login_is_still_auth(proxy):
    proxy.add("Login", "fault", text="InvalidLogin")
    status, _ = scanned(proxy)
    assert_failed(status, "auth")


# --- 6. a deadline for each whole answer ---------------------------------------------------------

@pytest.mark.parametrize("call", [("CurrentTime", 0), NEXT_VM_PAGE, QUERY_PERF], ids=["clock", "vm-page", "queryperf"])
def test_a_trickling_answer_is_cut_off_at_the_timeout(proxy, decoders, call):
    method, skip = call
    proxy.add(method, "trickle", size=16, every=0.5, skip=skip)  # each read is prompt; the whole takes > 14 s
    started = time.monotonic()
    status, done = scanned(proxy, timeout_s=4)
    assert_failed(status, "timeout", "within 4 s")
    assert time.monotonic() - started < 10 and done["vms"] == []


# --- 7. a huge text node costs no unbounded CPU --------------------------------------------------

@pytest.mark.parametrize("size", [40_000_000, 17_000_000])
def test_a_huge_text_node_is_refused_quickly(proxy, decoders, size):
    proxy.add("CurrentTime", "huge-fault", size=size)
    started = time.monotonic()
    status, _ = scanned(proxy, timeout_s=10)
    assert_failed(status, "query", "text value longer than")
    assert time.monotonic() - started < 8


def test_a_long_text_node_under_the_cap_decodes_in_linear_time(proxy, decoders):
    proxy.add("CurrentTime", "huge-fault", size=12_000_000)  # pyVmomi's own += took ~1 s here, 30 s at 32 MB
    started = time.monotonic()
    status, _ = scanned(proxy, timeout_s=10)
    assert_failed(status, "query", "SystemError: xxx")  # the fault itself, read whole
    assert len(status["error"]) < 500  # its 12 MB message is cut for the one line
    assert time.monotonic() - started < 4


# --- 9. one bad perf value is one VM's warning ---------------------------------------------------

@pytest.mark.parametrize("value", ["abc", "1.5", "1e3", "--"])
def test_one_non_integer_perf_value_costs_one_sample_with_a_warning(proxy, decoders, value):
    proxy.add("QueryPerf", "perf-value", text=value)
    status, done = scanned(proxy)
    assert status["status"] == "scanned" and len(done["vms"]) == VMS
    noted = [vm for vm in done["vms"] if vm["perf"] and "not an integer" in (vm["perf"]["note"] or "")]
    assert len(noted) == 1, [vm["perf"] and vm["perf"]["note"] for vm in done["vms"]]
    note = noted[0]["perf"]["note"]
    assert f"{noted[0]['name']}: cpu." in note or f"{noted[0]['name']}: net." in note, note
    series = [s for s in noted[0]["perf"]["series"] if None in s["values"]]
    assert len(series) == 1 and series[0]["values"].count(None) == 1
    assert all(vm["perf"] and vm["perf_error"] is None for vm in done["vms"])


@pytest.mark.parametrize("value", ["yesterday", "2026-13-45T99:00:00Z", ""])
def test_one_entitys_sample_times_that_are_no_times_cost_that_vm_its_figures_only(proxy, decoders, value):
    proxy.add("QueryPerf", "sample-time", text=value)
    status, done = scanned(proxy)
    assert status["status"] == "scanned" and len(done["vms"]) == VMS
    failed = [vm for vm in done["vms"] if vm["perf_error"]]
    assert len(failed) == 1 and "sample times from vCenter that are no times" in failed[0]["perf_error"]
    assert failed[0]["perf"] is None and all(vm["perf"] for vm in done["vms"] if vm is not failed[0])


# --- as a user runs it: exit status and history -------------------------------------------------

def _env(tmp_path: Path, password: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ESXDIAG_", "GOVC_"))}
    env.update(ESXDIAG_PASSWORD=password, HOME=str(tmp_path), XDG_DATA_HOME=str(tmp_path / "data"),
               XDG_CONFIG_HOME=str(tmp_path / "config"))
    return env


def test_a_cut_vm_page_is_exit_3_and_no_vm_is_recorded_gone(proxy, tmp_path):
    argv = [sys.executable, "-m", "esxdiag", "scan", "--vcenter", proxy.url, "--user", proxy.lab.username,
            "--insecure", "--page-size", "2", "--window", "60", "--format", "json", "-o", "r.json"]
    env = _env(tmp_path, proxy.lab.password)
    good = subprocess.run(argv, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert good.returncode == 0, good.stderr
    proxy.add("ContinueRetrievePropertiesEx", "cut")
    cut = subprocess.run(argv, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert cut.returncode == 3, (cut.stdout, cut.stderr)
    assert "cut off in transit" in cut.stdout + cut.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert not (report.get("changes") or {}).get("gone"), report.get("changes")
