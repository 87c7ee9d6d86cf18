"""Hot SOAP responses decoded straight from the bytes pyVmomi's own stub received.

pyVmomi's ``SoapStubAdapter.InvokeMethod`` serializes the request and sends it on its pooled
connection (session cookie, TLS context and thumbprint pin, timeouts; our request counter and
deadlines wrap it unchanged), then hands the response body to ``SoapResponseDeserializer``. That
class is replaced here, once, by a subclass that behaves exactly like it unless the calling thread
asked for a fast decode of its next response (``fast_call``): then it reads the body (gzip already
undone by pyVmomi's GzipReader) and gives it to the caller's decoder, which returns plain values.
Whatever a decoder does not know (a fault, an unknown type, an unexpected shape, a DTD) it refuses
with NotDecoded, and pyVmomi decodes the same bytes as it always does: the same objects, the same
faults raised, the same errors. ``ESXDIAG_FAST_DECODE=0`` turns the fast path off.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
from typing import Any, Callable
from xml.parsers import expat

from pyVmomi import SoapAdapter, VmomiSupport

log = logging.getLogger(__name__)
SWITCH = "ESXDIAG_FAST_DECODE"
XSI_TYPE = "http://www.w3.org/2001/XMLSchema-instance type"  # as expat names it with namespace_separator " "
SOAPENV = "http://schemas.xmlsoap.org/soap/envelope/"
# .decode: the decoder for this thread's next response, or None. The scan reads QueryPerf in several
# threads on one stub; each thread's request and response pass through InvokeMethod in that thread.
_pending = threading.local()
_lookup = SoapAdapter.SoapDeserializer(None)  # pyVmomi's own wire-name -> type rules


class NotDecoded(Exception):
    """The fast decoder does not know this response: pyVmomi decodes it."""


class Decoded:
    """A decoder's plain values, told apart from whatever pyVmomi would return."""

    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value = value


def enabled() -> bool:
    return os.environ.get(SWITCH, "1").strip() != "0"


def fast_call(decode: Callable[[bytes, str | None], Any], call: Callable[[], Any]) -> tuple[Any, bool]:
    """Run ``call`` (one SOAP method call through pyVmomi's stub) with ``decode(body, api_version)``
    offered its response: (the decoder's values, True), or (pyVmomi's result, False) when the fast
    path is off or the decoder refused."""
    if not enabled():
        return call(), False
    _pending.decode = decode
    try:
        result = call()
    finally:
        _pending.decode = None
    if isinstance(result, Decoded):
        return result.value, True
    return result, False


class _Deserializer(SoapAdapter.SoapResponseDeserializer):
    def Deserialize(self, response: Any, resultType: Any, nsMap: Any = None) -> Any:
        decode = getattr(_pending, "decode", None)
        if decode is None or nsMap:
            return super().Deserialize(response, resultType, nsMap)
        _pending.decode = None  # this request's response only: a retry or a nested call is pyVmomi's
        body = response if isinstance(response, bytes) else response.read()
        try:
            return Decoded(decode(body, self.deser.version))
        except NotDecoded as exc:
            log.debug("fast decode refused (%s): pyVmomi decodes the response", exc)
            return super().Deserialize(body, resultType, nsMap)


if SoapAdapter.SoapResponseDeserializer.__name__ == "SoapResponseDeserializer":  # once per process
    SoapAdapter.SoapResponseDeserializer = _Deserializer


def parser(start: Callable, end: Callable, text: Callable) -> Any:
    """An expat parser with namespaces ("uri local" names) that refuses DTDs and entity declarations,
    so nothing in the body expands beyond its own bytes."""
    p = expat.ParserCreate(namespace_separator=" ")
    p.buffer_text = True
    p.ordered_attributes = False
    p.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    p.StartDoctypeDeclHandler = _refuse
    p.EntityDeclHandler = _refuse
    p.ExternalEntityRefHandler = _refuse
    p.StartElementHandler, p.EndElementHandler, p.CharacterDataHandler = start, end, text
    return p


def _refuse(*_args: Any) -> None:
    raise NotDecoded("DTDs and entity declarations are left to pyVmomi")


class Namespaces:
    """prefix -> namespace in scope, for xsi:type values ("xsd:int", "VirtualVmxnet3"), resolved as
    pyVmomi resolves them (an unbound prefix: namespace "")."""

    def __init__(self, p: Any):
        self.bound: dict[str | None, list[str]] = {}
        p.StartNamespaceDeclHandler = self.start
        p.EndNamespaceDeclHandler = self.end

    def start(self, prefix: str | None, uri: str) -> None:
        self.bound.setdefault(prefix, []).append(uri)

    def end(self, prefix: str | None) -> None:
        self.bound[prefix].pop()

    def resolve(self, qname: str) -> tuple[str, str]:
        prefix, sep, name = qname.partition(":")
        if not sep:
            prefix, name = None, qname
        uris = self.bound.get(prefix)
        return (uris[-1] if uris else ""), name


@functools.lru_cache(maxsize=512)
def wire_type(ns: str, name: str, version: str | None, allow_ref: bool = True) -> type | None:
    """The pyVmomi type a wire name stands for, as pyVmomi picks it (an xsi:type widened to the
    session's API version; a managed object's type= as it stands); None when pyVmomi does not know it."""
    try:
        found = _lookup.LookupWsdlType(ns, name, allowManagedObjectReference=allow_ref)
    except (KeyError, TypeError, AttributeError):
        return None
    return VmomiSupport.GetCompatibleType(found, version) if version else found


@functools.lru_cache(maxsize=512)
def properties(cls: type) -> dict[str, Any]:
    """Property name -> declared type of a pyVmomi data type."""
    return {p.name: p.type for p in cls._GetPropertyList()}


@functools.lru_cache(maxsize=512)
def default(cls: type, name: str) -> Any:
    """What pyVmomi leaves in a property the response did not carry."""
    return getattr(cls(), name)
