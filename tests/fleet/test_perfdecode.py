"""QueryPerf answers in the plain form read by collectors/fleet/perfdecode.py's expressions give what
expat's reading (fastdecode.decode_perf's own) gives; any other form is left to expat. pyVmomi's own
decoding of the same bodies: test_fastdecode.py (its generated answers go through this path too)."""

from __future__ import annotations

import pytest

from esxdiag.collectors.fleet import fastdecode, perf, perfdecode
from esxdiag.collectors.vsphere_session import connect

_XSI = "http://www.w3.org/2001/XMLSchema-instance"
VCENTER = (  # the form a vCenter sends: xsi bound on the envelope, instances expanded
    '<?xml version="1.0" encoding="UTF-8"?>\n<soapenv:Envelope xmlns:soapenc="http://schemas.xmlsoap.org/soap/'
    'encoding/" xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:xsd="http://www.w3.org/2001/'
    f'XMLSchema" xmlns:xsi="{_XSI}"><soapenv:Body><QueryPerfResponse xmlns="urn:vim25">{{}}</QueryPerfResponse>'
    '</soapenv:Body></soapenv:Envelope>\n')
ENTITY = ('<returnval xsi:type="PerfEntityMetricCSV"><entity type="VirtualMachine">vm-42</entity>'
          '<sampleInfoCSV>20,2026-11-28T12:00:20Z,20,2026-11-28T12:00:40Z</sampleInfoCSV>'
          '<value><id><counterId>6</counterId><instance></instance></id><value>10,20</value></value>'
          '<value><id><counterId>6</counterId><instance>0</instance></id><value>4,-1</value></value></returnval>')
HOST = ('<returnval xsi:type="PerfEntityMetricCSV"><entity type="HostSystem">host-7</entity>'
        '<sampleInfoCSV></sampleInfoCSV></returnval>')


def by_expat(body: bytes, monkeypatch) -> list:
    with monkeypatch.context() as patch:
        patch.setattr(perfdecode, "entities", lambda _body: None)
        return fastdecode.decode_perf(body, None)


def test_the_vcenter_form_is_read_by_the_expressions_as_expat_reads_it(monkeypatch):
    body = VCENTER.format(ENTITY + HOST + ENTITY.replace("vm-42", "vm-43")).encode()
    got = perfdecode.entities(body)
    assert got is not None and len(got) == 3
    assert got == by_expat(body, monkeypatch)
    assert got[0].values == [(6, "", "10,20"), (6, "0", "4,-1")] and got[1].sample_info == ""


@pytest.mark.parametrize("body", [
    VCENTER.format(ENTITY.replace("vm-42", "vm&amp;42")),  # a reference: expat unescapes it
    VCENTER.format(ENTITY.replace("</entity><sampleInfoCSV>", "</entity>\n  <sampleInfoCSV>")),  # whitespace
    VCENTER.format(ENTITY.replace("<instance></instance>", "<instance/>")),  # self-closed
    VCENTER.format(ENTITY.replace('<returnval xsi:type', '<returnval a="1" xsi:type')),  # an attribute more
    VCENTER.format(ENTITY.replace("xsi:type", "xsd:type")),  # a prefix bound elsewhere
    VCENTER.format(ENTITY.replace("PerfEntityMetricCSV", "PerfEntityMetric")),  # not the csv form
    VCENTER.format(ENTITY.replace('"VirtualMachine"', '"Datastore"')),  # another entity type
    VCENTER.format(ENTITY.replace("<sampleInfoCSV>20,2026-11-28T12:00:20Z,20,2026-11-28T12:00:40Z</sampleInfoCSV>",
                                  "")),  # no sampleInfoCSV: pyVmomi's default, not ours
    VCENTER.format(ENTITY.replace("10,20", "<![CDATA[10,20]]>")),  # CDATA
    VCENTER.format(ENTITY).replace("http://schemas.xmlsoap.org/soap/envelope/", "urn:other"),  # not SOAP
    VCENTER.format(ENTITY)[:-40],  # cut off
    VCENTER.format(ENTITY) + "<more/>",  # something after the envelope
])
def test_any_other_form_is_left_to_expat(body):
    assert perfdecode.entities(body.encode()) is None


@pytest.fixture(scope="module")
def lab(lab_module, tmp_path_factory):
    lab = lab_module.start_vcsim(tmp_path_factory.mktemp("perfdecode-vcsim"),
                                 ("-cluster", "1", "-host", "2", "-vm", "3", "-standalone-host", "0"), timeout_s=120)
    yield lab
    lab.stop()


@pytest.mark.lab
def test_vcsim_answers_are_read_by_the_expressions_as_expat_reads_them(lab, creds_for, monkeypatch):
    seen = []
    real = perfdecode.entities

    def spy(body):
        got = real(body)
        seen.append((body, got))
        return got
    monkeypatch.setattr(perfdecode, "entities", spy)
    session = connect(creds_for(lab), timeout_s=60)
    try:
        view = session.content.viewManager.CreateContainerView(session.content.rootFolder, [], True)
        objs = [o for o in view.view if o.__class__.__name__ in ("vim.VirtualMachine", "vim.HostSystem")]
        view.DestroyView()
        end = session.si.CurrentTime()
        for counters in (perf.VM_COUNTERS, perf.HOST_COUNTERS):
            kind = "vim.VirtualMachine" if counters is perf.VM_COUNTERS else "vim.HostSystem"
            entities = [perf.Entity(o._moId, o._moId, o) for o in objs if o.__class__.__name__ == kind]
            perf.query(session, entities, counters, end, 300, perf.BatchLimits(64), 1)
    finally:
        session.close()
    assert len(seen) == 2
    for body, got in seen:
        assert got is not None and got == by_expat(body, monkeypatch)
        assert got and all(e.values for e in got)
