"""QueryPerf answers read from xml.etree's tree (collectors/fleet/perftree.py) against the walk that read
them before (fastdecode.decode_perf without the tree reader) and against pyVmomi: where the tree reader
answers, it answers as both do; everything else it leaves to the walk. The answers are the recorded vcsim
one, usual answers as vCenter and vcsim write them, and those perturbed one spelling at a time: namespace
prefixes and declarations, xsi:type spellings, the XML declaration, comments, CDATA, processing
instructions, parts in another order, ``:type`` in a text."""

from __future__ import annotations

from xml.sax.saxutils import escape

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from esxdiag.collectors.fleet import fastdecode, perftree

from .test_fastdecode import ENVELOPE, FUZZ, REFUSED, SOAP, by_fast_path, compare, perf_bodies, usual_bodies, versions

VCSIM_XSI = ('xmlns:XMLSchema-instance="http://www.w3.org/2001/XMLSchema-instance" '
             'XMLSchema-instance:type="PerfEntityMetricCSV"')


def walked(body: bytes, version: str | None):
    """decode_perf as it was before the tree reader: the walk and its one-pass reader."""
    real = perftree.read_usual
    perftree.read_usual = lambda body, version: None
    try:
        return by_fast_path(body, "QueryPerfResponse", version)
    finally:
        perftree.read_usual = real


def tree(body: bytes, version: str | None):
    usual = perftree.read_usual(body, version)
    return None if usual is None else [fastdecode.EntityCsv(*one) for one in usual]


def _series(counter: str, instance: str, csv: str) -> str:
    return (f"<value><id><counterId>{counter}</counterId><instance>{instance}</instance></id>"
            f"<value>{csv}</value></value>")


def _returnval(xsi: str, kind: str, moid: str, info: str, series: list[str]) -> str:
    return (f'<returnval {xsi}><entity type="{kind}">{moid}</entity><sampleInfoCSV>{info}</sampleInfoCSV>'
            f'{"".join(series)}</returnval>')


texts = st.text(st.characters(codec="utf-8", exclude_categories=["Cs", "Cc"]), max_size=12).map(escape)
usual_series = st.builds(_series, st.integers(0, 2**40).map(str), texts,
                         st.lists(st.integers(-1, 10**6).map(str), max_size=4).map(",".join))
usual_returnval = st.builds(
    _returnval, st.sampled_from(['xsi:type="PerfEntityMetricCSV"', VCSIM_XSI]),
    st.sampled_from(["VirtualMachine", "HostSystem"]), texts, texts, st.lists(usual_series, max_size=4))
usual_answers = st.lists(usual_returnval, max_size=3).map(
    lambda items: ENVELOPE.format(f'<QueryPerfResponse xmlns="urn:vim25">{"".join(items)}</QueryPerfResponse>'))

# one spelling changed at a time (each the first occurrence of ``old``; a pair of changes made together):
# what the tree reader must read as the walk does, or leave to it
PERTURBATIONS = [
    ('<?xml version="1.0" encoding="UTF-8"?>\n', ""),
    ('<?xml version="1.0" encoding="UTF-8"?>', "<?xml version='1.0' encoding='UTF-8'?>"),
    ('<?xml version="1.0" encoding="UTF-8"?>', '<?xml version="1.0" encoding="ISO-8859-1"?>'),
    ('<?xml version="1.0" encoding="UTF-8"?>\n', '\ufeff'),
    ('<QueryPerfResponse xmlns="urn:vim25">', '<v:QueryPerfResponse xmlns:v="urn:vim25">'),
    ("</QueryPerfResponse>", "</v:QueryPerfResponse>"),
    ('<QueryPerfResponse xmlns="urn:vim25">', '<QueryPerfResponse xmlns="urn:vim25" xmlns:v="urn:vim25">'),
    ('<QueryPerfResponse xmlns="urn:vim25">', '<QueryPerfResponse xmlns="urn:other">'),
    ('<QueryPerfResponse xmlns="urn:vim25">', "<QueryPerfResponse xmlns = 'urn:vim25'>"),
    ("<returnval ", '<returnval xmlns="" '),
    ("<returnval ", "<returnval xmlns='urn:vim25' "),
    ("<returnval ", '<v:returnval xmlns:v="urn:vim25" '),
    ("</returnval>", "</v:returnval>"),
    ('xsi:type="PerfEntityMetricCSV"', 'xsi:type="vim25:PerfEntityMetricCSV" xmlns:vim25="urn:vim25"'),
    ('xsi:type="PerfEntityMetricCSV"', 'xsi:type="PerfEntityMetric"'),
    ('xsi:type="PerfEntityMetricCSV"', 'xsi:type=""'),
    ('xsi:type="PerfEntityMetricCSV"', ""),
    ('XMLSchema-instance:type="PerfEntityMetricCSV"',
     'XMLSchema-instance:type="PerfEntityMetricCSV" xmlns="urn:vim25"'),
    ('<entity type="', '<entity xmlns="" type="'),
    ('<entity type="', '<entity xsi:type="ManagedObjectReference" type="'),
    ('type="VirtualMachine"', 'type="vim25:VirtualMachine" xmlns:vim25="urn:vim25"'),
    ('type="VirtualMachine"', 'type="NoSuchType"'),
    ('type="VirtualMachine"', ""),
    ("<entity ", '<v:entity xmlns:v="urn:vim25" '),
    ("</entity>", "</v:entity>"),
    (("<entity ", '<v:entity xmlns:v="urn:vim25" xmlns="urn:other" '), ("</entity>", "</v:entity>")),
    (("<entity ", '<v:entity xmlns:v="urn:vim25" xmlns="urn:vim25" '), ("</entity>", "</v:entity>")),
    ("<instance>", '<o:instance xmlns:o="urn:other">'),
    ("</instance>", "</o:instance>"),
    ("<instance>", "<instance><!-- c -->"),
    ("<instance>", "<instance><![CDATA[a<b]]>"),
    ("<instance>", "<instance><?pi x?>"),
    ("<instance>", "<instance>a:type="),
    ("<instance>", '<instance xsi:type="xsd:string">'),
    ("<counterId>", "<counterId> "),
    ("<counterId>", "<counterId>٣"),
    ("<counterId>", '<counterId xsi:type="xsd:int">'),
    ("<sampleInfoCSV>", "<sampleInfoCSV><x/>"),
    ("<sampleInfoCSV>", '<sampleInfoCSV xmlns="urn:vim25">'),
    ("<value><id>", '<value xsi:type="PerfMetricSeriesCSV"><id>'),
    ("<value><id>", "<value><dynamicType>t</dynamicType><id>"),
    ("</id>", "</id><value>1</value>"),
    ("<id><counterId>", "<id><instance>x</instance><counterId>"),
    ("</returnval>", "<nosuch>1</nosuch></returnval>"),
    ("</returnval>", "<sampleInfoCSV>20,t</sampleInfoCSV></returnval>"),
    ("<soapenv:Body>", "<soapenv:Header/><soapenv:Body>"),
    ("</soapenv:Body>", "</soapenv:Body><!-- after -->"),
    ("</QueryPerfResponse>", "</QueryPerfResponse><QueryPerfResponse/>"),
    ("</QueryPerfResponse>", ""),  # cut short
    ("<returnval ", "<returnval\n\t"),
    ("</value></value>", "</value>\n</value>"),
]
perturbed = st.builds(
    lambda body, changes: _apply(body, changes), usual_answers, st.lists(st.sampled_from(PERTURBATIONS), max_size=3))


def _apply(body: str, changes: list) -> bytes:
    for change in changes:
        for old, new in change if isinstance(change[0], tuple) else [change]:
            body = body.replace(old, new, 1)
    return body.encode("utf-8")


@FUZZ
@given(perturbed | perf_bodies | usual_bodies, versions)
@example(ENVELOPE.format('<QueryPerfResponse xmlns="urn:vim25">'
                         + _returnval(VCSIM_XSI, "VirtualMachine", "vm-1", "20,t", [_series("6", "", "1,2")])
                         + "</QueryPerfResponse>").encode(), None)
def test_the_tree_reader_reads_as_the_walk_or_leaves_it_to_it(body, version):
    read = tree(body, version)
    if read is not None:
        assert read == walked(body, version) != REFUSED
        assert read == compare(body, "QueryPerfResponse", version)  # and as pyVmomi decodes it


@FUZZ
@given(usual_answers, versions)
def test_usual_answers_take_the_tree_reader(body, version):
    read = tree(body.encode(), version)
    assert read is not None and read == walked(body.encode(), version)


def test_the_recorded_vcsim_answer_takes_the_tree_reader():
    body = (SOAP / "queryperf-csv.xml").read_bytes()
    read = tree(body, None)
    assert read is not None and [e.entity.moid for e in read] == ["vm-52", "vm-55", "vm-58", "vm-61"]
    assert read == walked(body, None) == fastdecode.decode_perf(body, None)


@pytest.mark.parametrize("old, new", [
    ('<entity type="VirtualMachine">vm-1</entity>',
     '<v:entity xmlns:v="urn:vim25" xmlns="urn:other" type="VirtualMachine">vm-1</v:entity>'),
    ("<instance>", "<instance><![CDATA[x]]>"), ("<returnval ", '<returnval xmlns="" '),
    ("<returnval ", '<v:returnval xmlns:v="urn:vim25" '), ("<instance>", "<instance>a:type="),
    ('<QueryPerfResponse xmlns="urn:vim25">', '<QueryPerfResponse xmlns="urn:other">'),
    ('xsi:type="PerfEntityMetricCSV"', 'xsi:type="vim25:PerfEntityMetricCSV" xmlns:vim25="urn:vim25"'),
])
def test_a_spelling_it_cannot_prove_alike_goes_to_the_walk(old, new):
    body = ENVELOPE.format('<QueryPerfResponse xmlns="urn:vim25">'
                           + _returnval('xsi:type="PerfEntityMetricCSV"', "VirtualMachine", "vm-1", "20,t",
                                        [_series("6", "", "1,2")]) + "</QueryPerfResponse>")
    assert tree(body.encode(), None) is not None
    changed = body.replace(old, new, 1)
    assert changed != body and tree(changed.encode(), None) is None

