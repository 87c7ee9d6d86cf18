"""A QueryPerf answer in csv format read by regular expressions, when it is in the plain form vCenter
and vcsim send: the same EntityCsv values fastdecode.decode_perf reads with expat, without a Python
call per element (most of a watched scan's decoding: bench/peers_README.md).

Only a body that is exactly one SOAP envelope in that form is read here: the XML declaration,
the Envelope with the SOAP and XMLSchema-instance namespaces bound, the Body, QueryPerfResponse in
urn:vim25, then PerfEntityMetricCSV returnvals (xsi:type bound on the envelope or on the returnval
itself) of a VirtualMachine or HostSystem, each an entity, a sampleInfoCSV and its
series (id: counterId, instance; value), no whitespace between elements, no character or entity
reference, no CDATA, no comment. Anything else (a fault, a cut or non-SOAP answer, another
prefix, an attribute more, a self-closed element, an escaped character) is None: the caller reads
it with expat, as before.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from pyVmomi import vim

from esxdiag.collectors.soap_stream import MAX_TEXT_CHARS, Ref, seconds_left

_SOAPENV = "http://schemas.xmlsoap.org/soap/envelope/"
_XSI = "http://www.w3.org/2001/XMLSchema-instance"
_HEAD = re.compile(rb'(?:<\?xml version="1\.0" encoding="UTF-8"\?>)?\s*<([\w.-]+):Envelope((?: xmlns:[\w.-]+="[^"<&]*")*)>'
                   rb'<\1:Body><QueryPerfResponse xmlns="urn:vim25">')
_BINDING = re.compile(rb' xmlns:([\w.-]+)="([^"<&]*)"')
_RETURNVAL = re.compile(
    rb'<returnval(?: xmlns:([\w.-]+)="' + _XSI.encode() + rb'")? ([\w.-]+):type="PerfEntityMetricCSV">'
    rb'<entity type="(VirtualMachine|HostSystem)">([^<&]*)</entity>'
    rb'<sampleInfoCSV>([^<&]*)</sampleInfoCSV>'
    rb'((?:<value><id><counterId>\d+</counterId><instance>[^<&]*</instance></id><value>[^<&]*</value></value>)*)'
    rb'</returnval>')
_SERIES = re.compile(rb'<value><id><counterId>(\d+)</counterId><instance>([^<&]*)</instance></id>'
                     rb'<value>([^<&]*)</value></value>')
_TYPES = {b"VirtualMachine": vim.VirtualMachine, b"HostSystem": vim.HostSystem}


class EntityCsv(NamedTuple):
    """One entity of a QueryPerf answer in csv format, however it was read."""

    entity: Ref
    sample_info: str | None
    values: list  # (counterId, instance, csv) per series


def entities(body: bytes) -> list[EntityCsv] | None:
    """The answer's EntityCsv values, or None when the body is not in the plain form."""
    head = _HEAD.match(body)
    if head is None or len(body) > MAX_TEXT_CHARS:
        return None
    bound = dict(_BINDING.findall(head[2]))
    if bound.get(head[1]) != _SOAPENV.encode():
        return None
    envelope_xsi = {prefix for prefix, uri in bound.items() if uri == _XSI.encode()}
    tail = re.compile(rb"</QueryPerfResponse></" + re.escape(head[1]) + rb":Body></" + re.escape(head[1])
                      + rb":Envelope>\s*")
    out = []
    at = head.end()
    while (one := _RETURNVAL.match(body, at)) is not None:
        local, prefix = one[1], one[2]
        xsi_bound = prefix == local if local is not None else prefix in envelope_xsi
        if not xsi_bound:
            return None
        seconds_left()  # decoding is inside the call's deadline too
        out.append(EntityCsv(Ref(_TYPES[one[3]], one[4].decode()), one[5].decode(),
                             [(int(c), i.decode(), v.decode()) for c, i, v in _SERIES.findall(one[6])]))
        at = one.end()
    if tail.fullmatch(body, at) is None:
        return None
    return out
