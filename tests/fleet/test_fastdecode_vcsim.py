"""The fast decode in a real scan of vcsim: every hot response it decoded, pyVmomi decodes the same
bytes to the same values, and a scan with the fast path off gives the same snapshot."""

from __future__ import annotations

import copy
from types import SimpleNamespace

import pytest
from pyVmomi import SoapAdapter, vim, vmodl

from esxdiag.collectors import soap_stream
from esxdiag.collectors.fleet import ScanOptions, fastdecode, perf, scan
from esxdiag.collectors.vsphere_perf import perf_counters
from esxdiag.collectors.vsphere_session import connect

pytestmark = pytest.mark.lab
_PC = vmodl.query.PropertyCollector
RESULT_TYPES = {"RetrievePropertiesExResponse": _PC._GetMethodInfo("RetrievePropertiesEx").result,
                "ContinueRetrievePropertiesExResponse": _PC._GetMethodInfo("ContinueRetrievePropertiesEx").result,
                "QueryPerfResponse": vim.PerformanceManager._GetMethodInfo("QueryStats").result}


def by_pyvmomi(body: bytes, response: str, version: str | None):
    stub = SimpleNamespace(version=version, SupportServerGUIDs=lambda: False)
    value = SoapAdapter.SoapResponseDeserializer.__mro__[1](stub).Deserialize(body, RESULT_TYPES[response])
    if response == "QueryPerfResponse":
        return [fastdecode.plain_entity(m) for m in value]
    return fastdecode.plain_page(value)


def without_timing(data: dict) -> dict:
    """The snapshot less what differs between any two scans of vcsim: when, how long, and vcsim's
    perf samples (random values, and the window ends on the server's clock)."""
    data = copy.deepcopy(data)
    data.pop("collected_at")
    for vcenter in data["vcenters"]:
        vcenter.pop("seconds")
    for item in data["vms"] + data["hosts"]:
        perf = item["perf"]
        if perf is not None:
            for key in ("start", "end", "timestamps"):
                perf.pop(key)
            for series in perf["series"]:
                series.pop("values")
    return data


def test_every_hot_response_of_a_scan_is_decoded_fast_and_as_pyvmomi_decodes_it(fleet_lab, creds_for, monkeypatch):
    seen, refused = [], []

    def spying(decode, response=None):
        def spy(body, version, *rest):
            try:
                value = decode(body, version, *rest)
            except soap_stream.NotDecoded as exc:
                refused.append(str(exc))
                raise
            seen.append((body, rest[0] if rest else response, version, value))
            return value
        return spy

    monkeypatch.setattr(fastdecode, "decode_retrieve", spying(fastdecode.decode_retrieve))
    monkeypatch.setattr(fastdecode, "decode_perf", spying(fastdecode.decode_perf, "QueryPerfResponse"))
    calls = []
    real_query = perf.query_perf
    monkeypatch.setattr(perf, "query_perf", lambda *args: calls.append(args) or real_query(*args))
    data = scan([creds_for(fleet_lab)], ScanOptions(page_size=5, workers=1, max_metrics=10))
    assert data["vcenters"][0]["status"] == "scanned" and data["vcenters"][0]["whole_device_lists"] == 10
    assert refused == []
    # several QueryPerf in flight on one stub: each thread's answer went to its own decoder
    assert len(calls) > 4 and len(calls) == sum(response == "QueryPerfResponse" for _b, response, _v, _d in seen)
    kinds = {response for _body, response, _version, _value in seen}
    assert kinds == {"RetrievePropertiesExResponse", "ContinueRetrievePropertiesExResponse", "QueryPerfResponse"}
    for body, response, version, value in seen:
        assert value == by_pyvmomi(body, response, version)
    rows = [props for _b, response, _v, value in seen if response != "QueryPerfResponse"
            for _r, props, _m in value.rows]
    assert any("config.hardware.device" in props for props in rows)  # the whole device lists too
    assert any("config.hardware.device[4000]" in props for props in rows)
    assert any("perfCounter" in props for props in rows)  # the counter catalogue too


def test_the_counter_ids_read_fast_are_pyvmomis(fleet_lab, creds_for):
    session = connect(creds_for(fleet_lab), timeout_s=30)
    try:
        fast = perf.counter_keys(session)
        slow = {name: (info.key, info.unitInfo.key) for name, info in perf_counters(session).items()}
    finally:
        session.close()
    assert len(fast) > 500 and fast == slow


def test_a_scan_with_the_fast_path_off_gives_the_same_snapshot(fleet_lab, creds_for, monkeypatch):
    """Two VMs per QueryPerf, four in flight: answers decoded in several threads on one stub."""
    fast = scan([creds_for(fleet_lab)], ScanOptions(page_size=5, workers=1, max_metrics=10))
    monkeypatch.setenv(soap_stream.SWITCH, "0")
    decoded = []
    monkeypatch.setattr(fastdecode, "decode_perf", lambda *args: decoded.append(args))
    slow = scan([creds_for(fleet_lab)], ScanOptions(page_size=5, workers=1, max_metrics=10))
    assert decoded == []  # off means off
    assert without_timing(fast) == without_timing(slow)
    assert fast["vcenters"][0]["requests"] == slow["vcenters"][0]["requests"] > 0
    assert sum(v["perf"] is not None for v in fast["vms"]) == sum(v["power_state"] == "poweredOn" for v in fast["vms"])
