"""Hot SOAP responses decoded straight from the bytes pyVmomi's own stub received.

pyVmomi's ``SoapStubAdapter.InvokeMethod`` serializes the request and sends it on its pooled
connection (session cookie, TLS context and thumbprint pin, timeouts; our request counter and
deadlines wrap it unchanged), then hands the response body to ``SoapResponseDeserializer``. That
class is replaced here, once, by a subclass that behaves exactly like it unless the calling thread
asked for a fast decode of its next response (``fast_call``): then it reads the body (gzip already
undone by pyVmomi's GzipReader) and gives it to the caller's decoder, which returns plain values.
Whatever a decoder does not know (a fault, an unknown type, an unexpected shape, a DTD) it refuses
with NotDecoded, and pyVmomi decodes the same bytes as it always does: the same objects, the same
faults raised, the same errors. ``ESXDIAG_FAST_DECODE=0`` turns the fast path off. Every answer, whichever reads it, is cut off past
MAX_RESPONSE_BYTES (ResponseTooLarge): vsphere_session imports this module, so the cap holds for
every session.

For decoders: ``walk`` runs expat (no DTDs, no entity declarations) over the body into small nodes,
and the readers below it take values out of them by pyVmomi's own rules (its wire-name lookup, its
property lists and defaults, its reading of numbers, booleans, enums and references), refusing
whatever pyVmomi would read differently or not at all.
"""

from __future__ import annotations

import contextlib
import functools
import io
import logging
import os
import re
import threading
import time
from typing import Any, Callable, Iterator, NamedTuple
from xml.parsers import expat

from pyVmomi import Iso8601, SoapAdapter, VmomiSupport

log = logging.getLogger(__name__)
SWITCH = "ESXDIAG_FAST_DECODE"
# one SOAP answer, fast path or pyVmomi's: a 1,000-VM inventory page with every VM's whole device
# list is tens of MB; anything past this is refused before it is held in memory
MAX_RESPONSE_BYTES = 256 * 1024**2
# one text value of an answer: the longest the scans read are a few KB (a QueryPerf sampleInfoCSV of an
# hour of 20 s samples is ~4 KB); a single value this long is no vSphere answer
MAX_TEXT_CHARS = 16 * 1024**2
XSI_TYPE = "http://www.w3.org/2001/XMLSchema-instance type"  # as expat names it with namespace_separator " "
SOAPENV = "http://schemas.xmlsoap.org/soap/envelope/"
_ENVELOPE, _BODY = SOAPENV + " Envelope", SOAPENV + " Body"
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


class ResponseTooLarge(OSError):
    """A SOAP answer longer than MAX_RESPONSE_BYTES, or one text value longer than MAX_TEXT_CHARS:
    refused, never read into memory whole."""


class BadAnswer(OSError):
    """The server's answer is not a whole SOAP answer: the call failed, whatever part of it arrived.
    ``kind`` is ``unreachable`` for an answer cut off in transit (the connection ended before the
    document did), ``bad-answer`` for one that is not SOAP at all (an HTML page from a proxy, an
    envelope without an answer), ``query`` for a SOAP answer holding a value pyVmomi cannot read
    (the server's answer to this query, like a fault)."""

    def __init__(self, message: str, kind: str = "bad-answer"):
        super().__init__(message)
        self.kind = kind

    def __str__(self) -> str:
        return self.args[0]


class AnswerTimeout(TimeoutError):
    """The call's deadline passed before its answer was read and decoded whole."""

    def __str__(self) -> str:
        return self.args[0]


# --- a deadline for the whole of one call: sending, every read of its answer, and its decoding -----
# per thread: the fleet scan sends QueryPerf from several threads on one session
_deadline = threading.local()


@contextlib.contextmanager
def answer_deadline(seconds: float | None) -> Iterator[None]:
    """The SOAP calls this thread makes inside the block must be answered (read and decoded) within
    ``seconds`` of its start: per-read timeouts alone let a server that trickles bytes hold a call
    forever. A tighter deadline already set stays; None sets none."""
    outer = getattr(_deadline, "at", None)
    if seconds is None or (outer is not None and outer[0] <= time.monotonic() + seconds):
        yield
        return
    _deadline.at = (time.monotonic() + seconds, seconds)
    try:
        yield
    finally:
        _deadline.at = outer


def seconds_left() -> float | None:
    """Seconds until this thread's deadline (None: no deadline); AnswerTimeout once it has passed."""
    at = getattr(_deadline, "at", None)
    if at is None:
        return None
    left = at[0] - time.monotonic()
    if left <= 0:
        raise AnswerTimeout(f"no complete answer within {at[1]:g} s; gave up")
    return left


class _Capped:
    """The response body pyVmomi reads, cut off past ``cap`` bytes (every answer, fast or not), and
    read within the call's deadline."""

    def __init__(self, raw: Any, cap: int):
        self.raw, self.cap, self.seen = raw, cap, 0

    def read(self, n: int | None = -1) -> bytes:
        seconds_left()
        room = self.cap + 1 - self.seen
        data = self.raw.read(room if n is None or n < 0 or n > room else n)
        self.seen += len(data)
        if self.seen > self.cap:
            raise ResponseTooLarge(f"the server's answer is larger than {self.cap:,} bytes; refused")
        return data


# pyVmomi's handlers grow an element's text with ``self.data += chunk`` for every chunk expat hands
# over (8 KiB at most): quadratic in the node's size, minutes of CPU for one 48 MB node. Both readers
# below keep the chunks and join them once when the element ends (``data`` as pyVmomi would have it),
# and refuse a node past MAX_TEXT_CHARS.

def _text_start(reader: Any) -> None:
    reader._chunks, reader._chars = [], 0


def _text_add(reader: Any, data: str) -> None:
    reader._chars += len(data)
    if reader._chars > MAX_TEXT_CHARS:
        raise ResponseTooLarge(f"the server's answer holds a text value longer than {MAX_TEXT_CHARS:,} "
                               "characters; refused")
    reader._chunks.append(data)


def _text_end(reader: Any) -> None:
    if reader._chunks:
        reader.data = "".join(reader._chunks)
        reader._chunks = [reader.data]


class _DataDeserializer(SoapAdapter.SoapDeserializer):
    """pyVmomi's reader of the objects in an answer, its text kept linearly."""

    def Deserialize(self, *args: Any, **kwargs: Any) -> Any:
        _text_start(self)
        return super().Deserialize(*args, **kwargs)

    def StartElementHandler(self, tag: str, attr: dict) -> None:
        _text_start(self)
        super().StartElementHandler(tag, attr)

    def CharacterDataHandler(self, data: str) -> None:
        _text_add(self, data)

    def EndElementHandler(self, tag: str) -> None:
        _text_end(self)
        super().EndElementHandler(tag)


_SOAP_TAG = SoapAdapter.XMLNS_SOAPENV + SoapAdapter.NS_SEP
_SOAP_TYPES = ("text/xml", "application/soap+xml", "application/xml")
# the expat errors of a document that stops before its end: a body cut off in transit
_CUT = {expat.errors.codes[m] for m in (expat.errors.XML_ERROR_NO_ELEMENTS, expat.errors.XML_ERROR_UNCLOSED_TOKEN,
                                        expat.errors.XML_ERROR_PARTIAL_CHAR,
                                        expat.errors.XML_ERROR_UNCLOSED_CDATA_SECTION)}
_DECODE_ERRORS = (TypeError, ValueError, KeyError, AttributeError, IndexError, LookupError)


class _Deserializer(SoapAdapter.SoapResponseDeserializer):
    """pyVmomi's response reader, and: the size cap, the fast path (``fast_call``), and the rule that
    only a whole SOAP answer is an answer. A body of another content type, a document that does not
    end (no Content-Length, cut off), one that is not a SOAP envelope whose Body holds the method's
    response or a fault, one pyVmomi cannot read: each is BadAnswer, never a result (pyVmomi
    itself parses a cut-off body without error and returns None or the objects so far)."""

    def __init__(self, stub: Any):
        super().__init__(stub)
        self.deser = _DataDeserializer(stub)

    def Deserialize(self, response: Any, resultType: Any, nsMap: Any = None) -> Any:
        self._answer = _answer_of(response)
        if isinstance(response, (bytes, str)):
            if len(response) > MAX_RESPONSE_BYTES:
                raise ResponseTooLarge(f"the server's answer is larger than {MAX_RESPONSE_BYTES:,} bytes; refused")
            response = io.BytesIO(response.encode() if isinstance(response, str) else response)
        else:
            _check_content_type(response, self._answer)
        stream = _Capped(response, MAX_RESPONSE_BYTES)
        decode = getattr(_pending, "decode", None)
        if decode is None or nsMap:
            return self._whole(stream, resultType, nsMap)
        _pending.decode = None  # this request's response only: a retry or a nested call is pyVmomi's
        body = stream.read()
        try:
            return Decoded(decode(body, self.deser.version))
        except NotDecoded as exc:
            log.debug("fast decode refused (%s): pyVmomi decodes the response", exc)
        except (ResponseTooLarge, BadAnswer, AnswerTimeout):
            raise
        except Exception as exc:  # noqa: BLE001 - a decoder's own bug must cost speed, never the answer
            log.warning("fast decode failed (%s: %s): pyVmomi decodes the response", type(exc).__name__, exc)
        whole = _Capped(io.BytesIO(body), MAX_RESPONSE_BYTES)
        return self._whole(whole, resultType, nsMap)

    def _whole(self, stream: "_Capped", resultType: Any, nsMap: Any) -> Any:
        """pyVmomi's decoding of the whole stream (ParseFile: a document that does not end is an
        error), with the envelope checked on the way."""
        _text_start(self)
        self._depth, self._answered = 0, False
        self._in: list[str] = []
        try:
            result = super().Deserialize(stream, resultType, nsMap)
        except expat.ExpatError as exc:
            if exc.code in _CUT:
                raise BadAnswer(f"{self._answer} ended after {stream.seen:,} bytes, before its SOAP document "
                                "did (cut off in transit)", kind="unreachable") from None
            raise BadAnswer(f"{self._answer} is not well-formed XML ({expat.errors.messages[exc.code]} at "
                            f"line {exc.lineno}), not a SOAP answer") from None
        except (ResponseTooLarge, BadAnswer, AnswerTimeout):
            raise
        except _DECODE_ERRORS as exc:
            raise BadAnswer(f"{self._answer} holds a value pyVmomi cannot read ({type(exc).__name__}: "
                            f"{_printable(str(exc))[:120]})", kind="query") from None
        if not self._answered:
            raise BadAnswer(f"{self._answer} is a SOAP envelope without an answer (no response, no fault)")
        return result

    def StartElementHandler(self, tag: str, attr: dict) -> None:
        depth, self._depth = self._depth, self._depth + 1
        if depth == 0 and tag != _SOAP_TAG + "Envelope":
            raise BadAnswer(f"{self._answer} is XML <{_local(tag)}>, not a SOAP envelope")
        if depth == 2 and self._in[-1] == _SOAP_TAG + "Body":
            if not (tag == self.soapFaultTag or tag.endswith("Response")):
                raise BadAnswer(f"{self._answer} holds <{_local(tag)}> in its SOAP body, not an answer")
            self._answered = True
        self._in.append(tag)
        _text_start(self)
        super().StartElementHandler(tag, attr)

    def CharacterDataHandler(self, data: str) -> None:
        _text_add(self, data)

    def EndElementHandler(self, tag: str) -> None:
        self._depth -= 1
        self._in.pop()
        _text_end(self)
        super().EndElementHandler(tag)


def _answer_of(response: Any) -> str:
    """'the answer (HTTP 500, text/html)': how an error names what came back."""
    http = getattr(response, "rfile", response)  # pyVmomi's GzipReader keeps the HTTP response as rfile
    status = getattr(http, "status", None)
    getheader = getattr(http, "getheader", None)
    kind = getheader("Content-Type") if getheader else None
    said = ", ".join(x for x in (f"HTTP {status}" if status else "", _printable(kind or "")) if x)
    return f"the answer ({said})" if said else "the answer"


def _check_content_type(response: Any, answer: str) -> None:
    http = getattr(response, "rfile", response)
    getheader = getattr(http, "getheader", None)
    kind = getheader("Content-Type") if getheader else None
    if kind is None or kind.split(";")[0].strip().lower() in _SOAP_TYPES:
        return
    try:
        start = response.read(4096)
    except (OSError, ValueError):
        start = b""
    raise BadAnswer(f"{answer} is not SOAP{_gist(start)}")


def _gist(start: bytes) -> str:
    """': "503 Service Unavailable"', the page's title or first words, for the error line."""
    text = start.decode("utf-8", "replace")
    found = re.search(r"<title[^>]*>(.*?)</title>", text, re.S | re.I)
    words = _printable(re.sub(r"<[^>]*>", " ", found.group(1) if found else text))[:80]
    return f': "{words}"' if words else ""


def _printable(text: str) -> str:
    return " ".join("".join(c if c.isprintable() else " " for c in text).split())


def _local(tag: str) -> str:
    return _printable(tag.rsplit(SoapAdapter.NS_SEP, 1)[-1])[:40]


if SoapAdapter.SoapResponseDeserializer.__name__ == "SoapResponseDeserializer":  # once per process
    SoapAdapter.SoapResponseDeserializer = _Deserializer  # type: ignore[misc]  # pyVmomi looks it up by name


# --- a request body made by the caller, sent by pyVmomi's stub as its own -------------------------

@contextlib.contextmanager
def prepared_request(method: str, build: Callable[[Callable[[list], Any]], str]) -> Iterator[None]:
    """Inside the block, this thread's calls of ``method`` (its wire name, e.g. "QueryPerf") send
    ``build(serialize)`` as their body: ``serialize(args)`` is pyVmomi's own SerializeRequest of the
    call on the stub that sends it (session headers and all), for the parts the builder copies. Every
    send is built anew (a retry after a new login too); other methods (the login) are pyVmomi's."""
    outer = getattr(_pending, "request", None)
    _pending.request = (method, build)
    try:
        yield
    finally:
        _pending.request = outer


_serialize_request = SoapAdapter.SoapStubAdapter.SerializeRequest


def _serialize(stub: Any, mo: Any, info: Any, args: Any) -> Any:
    pending = getattr(_pending, "request", None)
    if pending is None or info.wsdlName != pending[0]:
        return _serialize_request(stub, mo, info, args)
    return pending[1](lambda own_args: _serialize_request(stub, mo, info, own_args))


if SoapAdapter.SoapStubAdapter.SerializeRequest is _serialize_request:  # once per process
    SoapAdapter.SoapStubAdapter.SerializeRequest = _serialize  # type: ignore[method-assign]


def parser(start: Callable, end: Callable, text: Callable) -> Any:
    """An expat parser with namespaces ("uri local" names) that refuses DTDs and entity declarations,
    so nothing in the body expands beyond its own bytes."""
    p = expat.ParserCreate(namespace_separator=" ")
    p.buffer_text = True
    p.ordered_attributes = False
    p.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    p.StartDoctypeDeclHandler = _refuse
    p.EntityDeclHandler = _refuse
    p.ExternalEntityRefHandler = _refuse_entity
    p.StartElementHandler, p.EndElementHandler, p.CharacterDataHandler = start, end, text
    return p


def _refuse(*_args: Any) -> None:
    raise NotDecoded("DTDs and entity declarations are left to pyVmomi")


def _refuse_entity(*_args: Any) -> int:
    """expat's external-entity handler returns a status; this one never returns (nothing is fetched)."""
    _refuse()
    return 0


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
        declared, sep, name = qname.partition(":")
        prefix = declared if sep else None
        if not sep:
            name = qname
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
def _compatible(cls: type, version: str) -> type:
    return VmomiSupport.GetCompatibleType(cls, version)


@functools.lru_cache(maxsize=512)
def properties(cls: type) -> dict[str, Any]:
    """Property name -> declared type of a pyVmomi data type."""
    return {p.name: p.type for p in cls._GetPropertyList()}  # type: ignore[attr-defined]  # pyVmomi's own


@functools.lru_cache(maxsize=512)
def default(cls: type, name: str) -> Any:
    """What pyVmomi leaves in a property the response did not carry."""
    return getattr(cls(), name)


class Ref(NamedTuple):
    type: type  # the pyVmomi managed object class
    moid: str

    def managed(self, stub: Any) -> Any:
        return self.type(self.moid, stub)


def walk(body: bytes, response: str, record_depth: int, on_node: Callable[[int, list], None]) -> None:
    """Expat over one SOAP response: Envelope > Body > <response>, nothing else. Below the response
    element, nodes [local name, attributes, children, text chunks, xsi:type or None, type= or None]
    are built; each node at depth 3..record_depth goes to ``on_node(depth, node)`` when it closes and
    is not kept, so memory holds one record (an ``objects``, a ``returnval``) at a time."""
    stack: list = []  # None for the envelope, the body and the response element
    push, pop = stack.append, stack.pop
    local: dict[str, str] = {}  # "urn:vim25 propSet" -> "propSet"
    answered: list[str] = []

    def start(tag: str, attrs: dict) -> None:
        depth = len(stack)
        if depth >= 3:
            name = local.get(tag)
            if name is None:
                name = local[tag] = tag[tag.rfind(" ") + 1:]
            node: list
            if attrs:
                xsi, mo_type = attrs.get(XSI_TYPE), attrs.get("type")
                node = [name, attrs, [], [], xsi and resolve(xsi), mo_type and resolve(mo_type)]
            else:
                node = [name, attrs, [], [], None, None]
            if depth > record_depth:
                stack[-1][2].append(node)
            push(node)
            return
        if depth == 2:
            if answered or tag[tag.rfind(" ") + 1:] != response:
                raise NotDecoded(f"not a {response}: {tag}")
            answered.append(tag)
        elif tag != (_ENVELOPE, _BODY)[depth]:
            raise NotDecoded(f"unexpected {tag}")
        push(None)

    def end(_tag: str) -> None:
        node = pop()
        if node is not None and len(stack) <= record_depth:
            seconds_left()  # decoding is inside the call's deadline too
            on_node(len(stack), node)

    text_of: list[Any] = [None, 0]  # the node receiving text, and how much it received

    def on_text(data: str) -> None:
        if stack and (node := stack[-1]) is not None:
            node[3].append(data)
            if text_of[0] is not node:
                text_of[0], text_of[1] = node, 0
            text_of[1] += len(data)
            if text_of[1] > MAX_TEXT_CHARS:
                raise NotDecoded("a text value past MAX_TEXT_CHARS")  # pyVmomi refuses it, saying why

    p = parser(start, end, on_text)
    resolve = Namespaces(p).resolve
    try:
        p.Parse(body, True)
    except expat.ExpatError as exc:
        raise NotDecoded(str(exc)) from None
    if not answered:
        raise NotDecoded(f"no {response}")  # an envelope without an answer is no answer: pyVmomi says why


# --- readers of walk()'s nodes: each refuses what pyVmomi would not decode the same way -----------

_TEXT_TYPES = (str, int, float)  # read by pyVmomi as type(text); bool is read apart, below


def check(node: list, cls: type, version: str | None) -> None:
    """Refuse a data object pyVmomi would not decode: walks the whole subtree (a loop, not recursion:
    nesting depth is the sender's choice) checking property names, types and values."""
    todo = [(node, cls)]
    while todo:
        node, cls = todo.pop()
        plan = _plan(cls, version)
        for child in node[2]:
            entry = plan.get(child[0])
            if entry is None:
                raise NotDecoded(f"{cls.__name__} has no property {child[0]}")
            declared, kind, category = entry
            if child[4]:
                kind = typed(child, version, declared, optional=True)
                category = _category(_compatible(kind, version) if version else kind)
            if category is _DATA:
                todo.append((child, kind))
            elif category is _REF:
                if not issubclass(ref(child).type, declared):
                    raise NotDecoded(f"{child[0]}: not a {declared.__name__}")
            elif child[2]:
                raise NotDecoded(f"{child[0]} is not a plain value")
            elif category is not _STR:
                check_leaf(child, kind)


_DATA, _REF, _STR, _LEAF = "data object", "managed object", "string", "other value"


@functools.lru_cache(maxsize=512)
def _plan(cls: type, version: str | None) -> dict[str, tuple[type, type, str]]:
    """Property name -> (declared type, the type pyVmomi reads it as without xsi:type, its category)."""
    out = {}
    for name, declared in properties(cls).items():
        item = declared.Item if issubclass(declared, list) else declared
        kind = _compatible(item, version) if version else item
        out[name] = (item, kind, _category(kind))
    return out


@functools.lru_cache(maxsize=512)
def _category(kind: type) -> str:
    if issubclass(kind, VmomiSupport.DataObject):
        return _DATA
    if issubclass(kind, VmomiSupport.ManagedObject):
        return _REF
    return _STR if kind is str else _LEAF


def check_leaf(node: list, kind: type) -> None:
    value = text(node)
    if kind is bool:
        boolean(value)
    elif issubclass(kind, VmomiSupport.Enum):
        enum(kind, value)
    elif kind is VmomiSupport.datetime:  # type: ignore[attr-defined]  # pyVmomi's name for the time type
        if not Iso8601.ParseISO8601(value):
            raise NotDecoded(f"not a time: {value[:40]!r}")
    elif issubclass(kind, _TEXT_TYPES) and not issubclass(kind, (list, VmomiSupport.binary)):
        try:
            kind(value)
        except (ValueError, TypeError, OverflowError):
            raise NotDecoded(f"not a {kind.__name__}: {value[:40]!r}") from None
    else:
        raise NotDecoded(f"{node[0]}: type {kind.__name__} is left to pyVmomi")


def typed(node: list, version: str | None, declared: type, optional: bool = False) -> type:
    """The node's type: its xsi:type if it has one (a subtype of ``declared``), else ``declared``
    when the xsi:type may be left out."""
    if not node[4]:
        if optional:
            return declared
        raise NotDecoded(f"{node[0]} without xsi:type")
    cls = wire_type(*node[4], version)
    if cls is None or not isinstance(cls, type) or not issubclass(cls, declared):
        raise NotDecoded(f"{node[0]}: type {node[4]} is not a {declared.__name__}")
    return cls


def fields(node: list, cls: type, repeated: str | None = None) -> dict[str, Any]:
    """Child name -> its node (the last one, as pyVmomi keeps the last), or the list of them for the
    ``repeated`` property; a name the type does not have is refused."""
    names = properties(cls)
    out: dict[str, Any] = {}
    for child in node[2]:
        name = child[0]
        if name not in names:
            raise NotDecoded(f"{cls.__name__} has no property {name}")
        if name == repeated:
            out.setdefault(name, []).append(child)
        else:
            out[name] = child
    return out


def leaf(node: list) -> str:
    """A property's text, of its declared type (an xsi:type on it is left to pyVmomi)."""
    if node[4]:
        raise NotDecoded(f"{node[0]}: xsi:type on a plain value")
    return text(node)


def text(node: list) -> str:
    """A typed val's text (its xsi:type already read)."""
    if node[2]:
        raise NotDecoded(f"{node[0]} is not a plain value")
    return "".join(node[3])


def str_field(fields: dict, cls: type, name: str) -> str | None:
    node = fields.get(name)
    return default(cls, name) if node is None else leaf(node)


def int_field(fields: dict, cls: type, name: str) -> int | None:
    node = fields.get(name)
    if node is None:
        value = default(cls, name)
        return None if value is None else int(value)
    return to_int(properties(cls)[name], leaf(node))


def to_int(cls: type, text: str) -> int:
    try:
        return int(cls(text))
    except (ValueError, TypeError):
        raise NotDecoded(f"not a number: {text[:40]!r}") from None


def boolean(text: str) -> bool:
    """pyVmomi's reading of xsd:boolean."""
    lowered = text.lower()
    if text == "0" or lowered == "false":
        return False
    if text == "1" or lowered == "true":
        return True
    raise NotDecoded(f"not a boolean: {text[:40]!r}")


def enum(cls: type, text: str) -> str:
    if text not in _enum_values(cls):
        raise NotDecoded(f"not a {cls.__name__}: {text[:40]!r}")
    return text


_ENUM_VALUES: dict[type, frozenset] = {}


def _enum_values(cls: type) -> frozenset:
    values = _ENUM_VALUES.get(cls)
    if values is None:
        values = _ENUM_VALUES[cls] = frozenset(cls.values)  # type: ignore[attr-defined]  # a pyVmomi Enum
    return values


def ref(node: list) -> Ref:
    if not node[5]:
        raise NotDecoded(f"{node[0]}: a managed object reference without type")
    cls = wire_type(*node[5], None, allow_ref=False)
    if cls is None or not isinstance(cls, type) or not issubclass(cls, VmomiSupport.ManagedObject):
        raise NotDecoded(f"{node[0]}: unknown managed object type {node[5]}")
    if node[2]:
        raise NotDecoded(f"{node[0]} has children")
    return Ref(cls, "".join(node[3]))
