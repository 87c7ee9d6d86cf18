"""The QueryPerf request made from one serialised spec per entity type: the bytes pyVmomi would send
for the whole batch, and in a real scan of vcsim every request the fast path sent is one of those."""

from __future__ import annotations

import functools
from datetime import datetime, timedelta, timezone

import pytest
from pyVmomi import SoapAdapter, vim

from esxdiag.collectors import soap_stream
from esxdiag.collectors.fleet import ScanOptions, fastdecode, scan

VERSION = "vim.version.v8_0_3_0"
_PM = vim.PerformanceManager
QUERY_STATS = _PM._GetMethodInfo("QueryStats")  # QueryPerf's wire name


def _shape():
    end = datetime(2026, 11, 28, 12, 0, 20, tzinfo=timezone.utc)
    ids = _PM.MetricId.Array([_PM.MetricId(counterId=c, instance=i) for c, i in ((12, "*"), (146, ""), (2, "0"))])
    return functools.partial(_PM.QuerySpec, startTime=end - timedelta(seconds=300), endTime=end, intervalId=20,
                             format="csv", metricId=ids)


def _pyvmomi_body(stub, entities, spec) -> str:
    body = soap_stream._serialize_request(stub, _PM("PerfMgr", stub), QUERY_STATS, [[spec(entity=e) for e in entities]])
    return body.decode() if isinstance(body, bytes) else body


@pytest.mark.parametrize("entities", [
    [vim.VirtualMachine(f"vm-{i}") for i in range(300)],
    [vim.VirtualMachine("vm-1"), vim.HostSystem("host-9"), vim.VirtualMachine("vm-2", None, "guid-1"),
     vim.VirtualMachine("vm-3")],
    [vim.HostSystem("host-1")],
])
def test_the_batch_request_is_the_body_pyvmomi_serialises(entities):
    stub = SoapAdapter.SoapStubAdapter(host="127.0.0.1", port=1, version=VERSION)  # never connects
    spec = _shape()
    made = fastdecode.batch_request(
        lambda args: soap_stream._serialize_request(stub, _PM("PerfMgr", stub), QUERY_STATS, args), entities, spec)
    assert made == _pyvmomi_body(stub, entities, spec)


def test_a_moid_with_markup_is_escaped_where_pyvmomi_writes_it_raw():
    stub = SoapAdapter.SoapStubAdapter(host="127.0.0.1", port=1, version=VERSION)
    made = fastdecode.batch_request(
        lambda args: soap_stream._serialize_request(stub, _PM("PerfMgr", stub), QUERY_STATS, args),
        [vim.VirtualMachine("vm-<1>&")], _shape())
    assert ">vm-&lt;1&gt;&amp;</entity>" in made


def test_other_methods_inside_a_prepared_request_are_pyvmomis():
    stub = SoapAdapter.SoapStubAdapter(host="127.0.0.1", port=1, version=VERSION)
    manager = _PM("PerfMgr", stub)
    info = _PM._GetMethodInfo("QueryProviderSummary")
    with soap_stream.prepared_request("QueryPerf", lambda serialize: "not this"):
        assert stub.SerializeRequest(manager, info, [vim.VirtualMachine("vm-1")]) == soap_stream._serialize_request(
            stub, manager, info, [vim.VirtualMachine("vm-1")])
        assert stub.SerializeRequest(manager, QUERY_STATS, [[]]) == "not this"
    one = [[_shape()(entity=vim.VirtualMachine("vm-1"))]]
    assert stub.SerializeRequest(manager, QUERY_STATS, one) == soap_stream._serialize_request(stub, manager, QUERY_STATS, one)


@pytest.mark.lab
def test_every_queryperf_a_scan_sends_is_the_body_pyvmomi_would_send(fleet_lab, creds_for, monkeypatch):
    sent = []
    real = fastdecode.batch_request

    def spying(serialize, entities, spec):
        body = real(serialize, entities, spec)
        sent.append((body, serialize([[spec(entity=e) for e in entities]])))
        return body

    monkeypatch.setattr(fastdecode, "batch_request", spying)
    data = scan([creds_for(fleet_lab)], ScanOptions(page_size=5, workers=1, max_metrics=10))
    assert data["vcenters"][0]["status"] == "scanned"
    assert len(sent) > 4
    for made, pyvmomis in sent:
        assert made == (pyvmomis.decode() if isinstance(pyvmomis, bytes) else pyvmomis)
    assert sum(v["perf"] is not None for v in data["vms"]) == sum(v["power_state"] == "poweredOn" for v in data["vms"])
