"""QueryPerf answers in the shape vCenter and vcsim send, read from the tree xml.etree's C parser builds:
no Python call per element, so ~1.3-1.7x less CPU than the expat walk (bench/decode_alternatives_bench.py;
half of what is left is the C parse itself).

``read_usual(body, version)`` gives exactly what fastdecode.decode_perf's walk and its one-pass reader
(fastdecode._common_entity) give, or None, and the walk reads the answer as before. It reads only what
it can prove the walk reads alike, and leaves everything else to the walk:

- the bytes: UTF-8 declared (or no declaration), nothing after it but elements, attributes and text (no
  DTD, comment, CDATA or processing instruction: ``<!`` or ``<?``), no NUL, at most MAX_TEXT_CHARS long
  (so no text value can be longer), every default namespace declared ``urn:vim25``;
- the tree: Envelope > Body > QueryPerfResponse, then each returnval written without a prefix (so the
  default namespace, urn:vim25, is in scope there and below: an unprefixed xsi:type or type= value
  resolves against it, as the walk resolves it), every element in urn:vim25 with the walk's names,
  and the one-pass reader's shape in the order both send it: the entity, the sampleInfoCSV, then series
  of one id (counterId in ASCII digits, then instance) and one value; no xsi:type below the returnval
  (an xsi:type attribute is always written prefix:type, so ``:type`` is counted in the bytes) and no
  child where a text is read.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree

from pyVmomi import VmomiSupport, vim

from esxdiag.collectors import soap_stream as soap
from esxdiag.collectors.soap_stream import Ref, wire_type

VIM25 = "urn:vim25"
_V = "{" + VIM25 + "}"
_XSI_TYPE = "{http://www.w3.org/2001/XMLSchema-instance}type"
_ENVELOPE, _BODY, _ANSWER = "{%s}Envelope" % soap.SOAPENV, "{%s}Body" % soap.SOAPENV, _V + "QueryPerfResponse"
_RETURNVAL, _ENTITY, _INFO, _VALUE, _ID = (_V + n for n in ("returnval", "entity", "sampleInfoCSV", "value", "id"))
_COUNTER, _INSTANCE = _V + "counterId", _V + "instance"
_DECLARATION = b'<?xml version="1.0" encoding="UTF-8"?>'
_DEFAULT_NAMESPACE = re.compile(rb"xmlns\s*=\s*[\"']")  # a match's value must be urn:vim25 and its quote
_ENTITY_CSV = vim.PerformanceManager.EntityMetricCSV


def read_usual(body: bytes, version: str | None) -> list[tuple[Ref, str, list]] | None:
    """(entity, sampleInfoCSV, [(counterId, instance, values)]) per returnval of an answer in the usual
    shape, or None: the walk reads it."""
    if not _plain_bytes(body):
        return None
    try:
        root = ElementTree.fromstring(body)
    except ElementTree.ParseError:
        return None  # the walk says what is wrong with it
    if root.tag != _ENVELOPE or len(root) != 1 or root[0].tag != _BODY or len(root[0]) != 1:
        return None
    answer = root[0][0]
    if answer.tag != _ANSWER or body.count(b"<returnval") != len(answer) or body.count(b":type") != len(answer):
        # a returnval written with a prefix, or an xsi:type (always prefix:type) on anything but the returnvals
        return None
    if wire_type(VIM25, "PerfEntityMetricCSV", version) is not _ENTITY_CSV:
        return None
    out = []
    for metric in answer:
        one = _entity_metric(metric)
        if one is None:
            return None
        out.append(one)
    soap.seconds_left()  # decoding is inside the call's deadline, as the walk's is
    return out


def _plain_bytes(body: bytes) -> bool:
    start = len(_DECLARATION) if body.startswith(_DECLARATION) else 0
    if (len(body) > soap.MAX_TEXT_CHARS or not (start or body.startswith(b"<")) or body.find(b"<?", start) != -1
            or b"<!" in body or b"\x00" in body):
        return False
    for found in _DEFAULT_NAMESPACE.finditer(body):
        quote = body[found.end() - 1:found.end()]
        if not body.startswith(VIM25.encode() + quote, found.end()):
            return False
    return True


def _entity_metric(metric) -> tuple[Ref, str, list] | None:
    """(entity, sampleInfoCSV, series) of one returnval, its parts in the order vCenter and vcsim send
    them (the type's property order), or None. No xsi:type below it: read_usual counted them."""
    if metric.tag != _RETURNVAL or metric.get(_XSI_TYPE) != "PerfEntityMetricCSV" or len(metric) < 2:
        return None
    entity, info, *values = metric
    if entity.tag != _ENTITY or info.tag != _INFO or len(entity) or len(info):
        return None
    series = []
    for one in values:
        if one.tag != _VALUE or len(one) != 2:
            return None
        metric_id, csv = one
        if metric_id.tag != _ID or csv.tag != _VALUE or len(csv) or len(metric_id) != 2:
            return None
        counter, instance = metric_id
        if counter.tag != _COUNTER or instance.tag != _INSTANCE or len(counter) or len(instance):
            return None
        digits = counter.text or ""
        if not (digits.isascii() and digits.isdigit()):
            return None
        series.append((int(digits), instance.text or "", csv.text or ""))
    ref = _ref(entity)
    return None if ref is None else (ref, info.text or "", series)


def _ref(entity) -> Ref | None:
    """soap_stream.ref's answer for an entity whose type= is unprefixed (resolved against urn:vim25)."""
    kind = entity.get("type")
    if not kind or ":" in kind:
        return None
    cls = wire_type(VIM25, kind, None, allow_ref=False)
    if cls is None or not isinstance(cls, type) or not issubclass(cls, VmomiSupport.ManagedObject):
        return None
    return Ref(cls, entity.text or "")
