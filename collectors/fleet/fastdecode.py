"""The fleet scan's hot responses as the plain values its records need, read straight from the SOAP
body: the inventory's RetrievePropertiesEx / ContinueRetrievePropertiesEx pages (places, VMs, keyed
vNICs and device lists) and QueryPerf in csv format.

Both ways give the same plain values: ``decode_retrieve`` / ``decode_perf`` read the bytes with
expat (collectors/soap_stream.py hands them over inside pyVmomi's own request), and ``plain_page``
/ ``plain_entity`` convert what pyVmomi decoded when the fast path is off or refused the response.
Types are pyVmomi's own (its wire-name lookup, widened to the session's API version), so a value
means the same either way: a managed object is Ref(pyVmomi class, moid), a device Device(class,
...). The fast path reads only the fields it records and refuses (NotDecoded) anything else it
meets on the way: a fault, a missingSet, an unknown or unexpected type, a property name the type
does not have, a value pyVmomi would not accept, also in the parts of a value it does not read (a
device's slotInfo is checked as pyVmomi would check it, then dropped): where pyVmomi would fail,
pyVmomi decodes it, and fails as it always has.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, NamedTuple
from xml.parsers.expat import ExpatError

from pyVmomi import Iso8601, VmomiSupport, vim, vmodl

from esxdiag.collectors.soap_stream import XSI_TYPE, NotDecoded, Namespaces, default, fast_call, parser, properties
from esxdiag.collectors.soap_stream import SOAPENV, wire_type
from esxdiag.collectors.vsphere_session import VsphereSession, fault_text

# pyVmomi's types, looked up once: each vim.X.Y is a lookup through its lazy type tables
_PS = vmodl.query.PropertyCollector
_CARD = vim.vm.device.VirtualEthernetCard
_DEVICE, _BACKING = vim.vm.device.VirtualDevice, vim.vm.device.VirtualDevice.BackingInfo
_CONNECT, _DESCRIPTION, _PORT = vim.vm.device.VirtualDevice.ConnectInfo, vim.Description, vim.dvs.PortConnection
_SHARES, _SHARES_LEVEL = vim.SharesInfo, vim.SharesInfo.Level
_ENTITY_CSV, _SERIES_CSV = vim.PerformanceManager.EntityMetricCSV, vim.PerformanceManager.MetricSeriesCSV
_METRIC_ID = vim.PerformanceManager.MetricId
_BACKINGS = ((_CARD.DistributedVirtualPortBackingInfo, "port"), (_CARD.NetworkBackingInfo, "deviceName"),
             (_CARD.OpaqueNetworkBackingInfo, "opaqueNetworkId"))  # _vnic's order
_ENVELOPE, _BODY = SOAPENV + " Envelope", SOAPENV + " Body"


class Ref(NamedTuple):
    type: type  # the pyVmomi managed object class
    moid: str

    def managed(self, stub: Any) -> Any:
        return self.type(self.moid, stub)


class Shares(NamedTuple):
    shares: int | None
    level: str | None


class Device(NamedTuple):
    """A virtual device; the NIC fields are None for every other kind."""
    type: type
    key: int | None = None
    label: str | None = None
    mac: str | None = None
    network: str | None = None
    connected: bool | None = None


class Page(NamedTuple):
    rows: list  # (Ref, {path: plain value}, [{"path", "fault"}]) per object
    token: str | None


class EntityCsv(NamedTuple):
    entity: Ref
    sample_info: str | None
    values: list  # (counterId, instance, csv) per series


# --- calls through pyVmomi's stub -------------------------------------------------------------------

def retrieve_pages(session: VsphereSession, specs: list[Any], page_size: int | None) -> Iterator[tuple[list, bool]]:
    """vsphere_session.retrieve_pages as plain rows: (rows, whether another page follows)."""
    collector = session.content.propertyCollector
    options = _PS.RetrieveOptions(maxObjects=page_size)
    page = _page("RetrievePropertiesExResponse",
                 lambda: collector.RetrievePropertiesEx(specSet=specs, options=options))
    while page is not None:
        yield page.rows, bool(page.token)
        if not page.token:
            return
        token = page.token
        page = _page("ContinueRetrievePropertiesExResponse", lambda: collector.ContinueRetrievePropertiesEx(token=token))


def _page(response: str, call: Callable[[], Any]) -> Page | None:
    value, fast = fast_call(lambda body, version: decode_retrieve(body, version, response), call)
    return value if fast else plain_page(value)


def query_perf(session: VsphereSession, specs: list[Any]) -> list[EntityCsv]:
    value, fast = fast_call(decode_perf, lambda: session.content.perfManager.QueryPerf(querySpec=specs))
    return value if fast else [plain_entity(m) for m in value or []]


# --- pyVmomi's objects as plain values --------------------------------------------------------------

def plain_page(result: Any) -> Page | None:
    if result is None:
        return None
    rows = [(plain_value(c.obj), {p.name: plain_value(p.val) for p in c.propSet},
             [{"path": m.path, "fault": fault_text(m.fault)} for m in c.missingSet or []]) for c in result.objects]
    return Page(rows, result.token)


def plain_value(value: Any) -> Any:
    if isinstance(value, VmomiSupport.ManagedObject):
        return Ref(type(value), value._moId)
    if isinstance(value, VmomiSupport.Enum):
        return str(value)
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, _SHARES):
        return Shares(None if value.shares is None else int(value.shares),
                      None if value.level is None else str(value.level))
    if isinstance(value, _DEVICE):
        return plain_device(value)
    if isinstance(value, list) and all(isinstance(d, _DEVICE) for d in value):
        return [plain_device(d) for d in value]
    return value  # str, or a type the fleet scan does not read


def plain_device(dev: Any) -> Device:
    if not isinstance(dev, _CARD):
        return Device(type(dev))
    backing, network = dev.backing, None
    if isinstance(backing, _CARD.DistributedVirtualPortBackingInfo):
        network = backing.port.portgroupKey
    elif isinstance(backing, _CARD.NetworkBackingInfo):
        network = backing.deviceName or None
    elif isinstance(backing, _CARD.OpaqueNetworkBackingInfo):
        network = backing.opaqueNetworkId
    return Device(type(dev), int(dev.key), dev.deviceInfo.label if dev.deviceInfo else None, dev.macAddress,
                  network, dev.connectable.connected if dev.connectable else None)


def plain_entity(metric: Any) -> EntityCsv:
    return EntityCsv(plain_value(metric.entity), metric.sampleInfoCSV,
                     [(int(v.id.counterId), v.id.instance, v.value) for v in metric.value or []])


# --- the fast path: the bytes pyVmomi received -----------------------------------------------------

def _walk(body: bytes, response: str, record_depth: int, on_node: Callable[[int, list], None]) -> None:
    """Expat over one SOAP response: Envelope > Body > <response>, nothing else. Below the response
    element, nodes [local name, attributes, children, text chunks, xsi:type or None, type= or None]
    are built; each node at depth 3..record_depth goes to ``on_node(depth, node)`` when it closes and
    is not kept, so memory holds one record (an ``objects``, a ``returnval``) at a time."""
    stack: list = []  # None for the envelope, the body and the response element
    push, pop = stack.append, stack.pop
    local: dict[str, str] = {}  # "urn:vim25 propSet" -> "propSet"
    answered = []

    def start(tag: str, attrs: dict) -> None:
        depth = len(stack)
        if depth >= 3:
            name = local.get(tag)
            if name is None:
                name = local[tag] = tag[tag.rfind(" ") + 1:]
            if attrs:
                xsi, ref = attrs.get(XSI_TYPE), attrs.get("type")
                node = [name, attrs, [], [], xsi and resolve(xsi), ref and resolve(ref)]
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
            on_node(len(stack), node)

    def text(data: str) -> None:
        if stack and stack[-1] is not None:
            stack[-1][3].append(data)

    p = parser(start, end, text)
    resolve = Namespaces(p).resolve
    try:
        p.Parse(body, True)
    except ExpatError as exc:
        raise NotDecoded(str(exc)) from None


def decode_retrieve(body: bytes, version: str | None, response: str) -> Page | None:
    """A RetrievePropertiesEx / ContinueRetrievePropertiesEx answer: Page, or None for no result."""
    rows: list = []
    state = {"results": 0, "token": None}

    def on_node(depth: int, node: list) -> None:
        if depth == 3:
            if node[0] != "returnval" or node[4]:
                raise NotDecoded("unexpected result element")
            state["results"] += 1
        elif node[0] == "objects" and not node[4]:
            rows.append(_object_content(node, version))
        elif node[0] == "token" and not node[4]:
            state["token"] = _text(node)
        else:
            raise NotDecoded(f"unexpected {node[0]} in a RetrieveResult")

    _walk(body, response, 4, on_node)
    if state["results"] != 1:
        if state["results"]:
            raise NotDecoded("several results")
        return None
    return Page(rows, state["token"])


def decode_perf(body: bytes, version: str | None) -> list[EntityCsv]:
    """A QueryPerf answer in csv format."""
    out: list[EntityCsv] = []

    def on_node(_depth: int, node: list) -> None:
        cls = _typed(node, version, _ENTITY_CSV) if node[0] == "returnval" else None
        if cls is None:
            raise NotDecoded("not a PerfEntityMetricCSV")
        _check(node, cls, version)
        fields = _fields(node, cls, repeated="value")
        entity = fields.get("entity")
        if entity is None:
            raise NotDecoded("no entity")
        out.append(EntityCsv(_ref(entity), _str(fields, cls, "sampleInfoCSV"),
                             [_series(series, version) for series in fields.get("value", [])]))

    _walk(body, "QueryPerfResponse", 3, on_node)
    return out


def _series(node: list, version: str | None) -> tuple[int, str, str]:
    cls = _typed(node, version, _SERIES_CSV, optional=True)
    fields = _fields(node, cls)
    metric_id = fields.get("id")
    if metric_id is None:
        raise NotDecoded("a series without id")
    id_cls = _typed(metric_id, version, _METRIC_ID, optional=True)
    id_fields = _fields(metric_id, id_cls)
    return _int(id_fields, id_cls, "counterId"), _str(id_fields, id_cls, "instance"), _str(fields, cls, "value")


def _object_content(node: list, version: str | None) -> tuple[Ref, dict, list]:
    obj, props = None, {}
    for child in node[2]:
        name = child[0]
        if name == "propSet" and not child[4]:
            prop_name, val = None, None
            for part in child[2]:
                if part[0] == "name" and not part[4]:
                    prop_name = _text(part)
                elif part[0] == "val":
                    val = _value(part, version)
                else:
                    raise NotDecoded(f"unexpected {part[0]} in a propSet")
            if prop_name is None:
                raise NotDecoded("a propSet without name")
            props[prop_name] = val
        elif name == "obj" and not child[4]:
            obj = _ref(child)
        else:
            raise NotDecoded(f"unexpected {name} in an ObjectContent")  # missingSet among them
    if obj is None:
        raise NotDecoded("an ObjectContent without obj")
    return obj, props, []


def _value(node: list, version: str | None) -> Any:
    """A DynamicProperty's val, by its xsi:type."""
    if not node[4]:
        raise NotDecoded("a val without xsi:type")
    cls = wire_type(*node[4], version)
    if cls is None:
        raise NotDecoded(f"unknown type {node[4]}")
    if cls is str:
        return _text(node)
    if cls is bool:
        return _bool(_text(node))
    if issubclass(cls, int) and not issubclass(cls, bool):
        return _to_int(cls, _text(node))
    if issubclass(cls, VmomiSupport.Enum):
        return _enum(cls, _text(node))
    if issubclass(cls, VmomiSupport.ManagedObject):
        return _ref(node)
    if issubclass(cls, _SHARES):
        _check(node, cls, version)
        fields = _fields(node, cls)
        level = fields.get("level")
        return Shares(_int(fields, cls, "shares"),
                      default(cls, "level") if level is None else _enum(_SHARES_LEVEL, _leaf(level)))
    if issubclass(cls, _DEVICE):
        return _device(node, cls, version)
    if issubclass(cls, list) and getattr(cls, "Item", None) is _DEVICE:
        return [_device(child, _typed(child, version, _DEVICE, optional=True), version)
                for child in node[2]]
    raise NotDecoded(f"type {cls.__name__} is left to pyVmomi")


def _device(node: list, cls: type, version: str | None) -> Device:
    _check(node, cls, version)
    if not issubclass(cls, _CARD):
        return Device(cls)
    fields = _fields(node, cls)
    info = fields.get("deviceInfo")
    label = None
    if info is not None:
        info_cls = _typed(info, version, _DESCRIPTION, optional=True)
        label = _str(_fields(info, info_cls), info_cls, "label")
    connectable = fields.get("connectable")
    connected = None
    if connectable is not None:
        conn_cls = _typed(connectable, version, _CONNECT, optional=True)
        conn_fields = _fields(connectable, conn_cls)
        connected = default(conn_cls, "connected") if "connected" not in conn_fields else _bool(
            _leaf(conn_fields["connected"]))
    return Device(cls, _int(fields, cls, "key"), label, _str(fields, cls, "macAddress"),
                  _network(fields.get("backing"), version), connected)


def _network(node: list | None, version: str | None) -> str | None:
    if node is None:
        return None
    cls = _typed(node, version, _BACKING, optional=True)
    fields = _fields(node, cls)
    for backing, field in _BACKINGS:
        if issubclass(cls, backing):
            if field != "port":
                value = _str(fields, cls, field)
                return value or None if field == "deviceName" else value
            port = fields.get("port")
            if port is None:
                raise NotDecoded("a port backing without port")  # pyVmomi's reader fails there too
            port_cls = _typed(port, version, _PORT, optional=True)
            return _str(_fields(port, port_cls), port_cls, "portgroupKey")
    return None


# --- small readers: each refuses what pyVmomi would not decode the same way -------------------------

_TEXT_TYPES = (str, int, float)  # read by pyVmomi as type(text); bool is read apart, below


def _check(node: list, cls: type, version: str | None) -> None:
    """Refuse a data object pyVmomi would not decode: walks the whole subtree (a loop, not recursion:
    nesting depth is the sender's choice) checking property names, types and values."""
    todo = [(node, cls)]
    while todo:
        node, cls = todo.pop()
        names = properties(cls)
        for child in node[2]:
            declared = names.get(child[0])
            if declared is None:
                raise NotDecoded(f"{cls.__name__} has no property {child[0]}")
            if issubclass(declared, list):
                declared = declared.Item
            kind = _typed(child, version, declared, optional=True) if child[4] else declared
            if version:
                kind = VmomiSupport.GetCompatibleType(kind, version)
            if issubclass(kind, VmomiSupport.DataObject):
                todo.append((child, kind))
            elif issubclass(kind, VmomiSupport.ManagedObject):
                if not issubclass(_ref(child).type, declared):
                    raise NotDecoded(f"{child[0]}: not a {declared.__name__}")
            else:
                _check_leaf(child, kind)


def _check_leaf(node: list, kind: type) -> None:
    text = _text(node)
    if kind is bool:
        _bool(text)
    elif issubclass(kind, VmomiSupport.Enum):
        _enum(kind, text)
    elif kind is VmomiSupport.datetime:
        if not Iso8601.ParseISO8601(text):
            raise NotDecoded(f"not a time: {text[:40]!r}")
    elif issubclass(kind, _TEXT_TYPES) and not issubclass(kind, (list, VmomiSupport.binary)):
        try:
            kind(text)
        except (ValueError, TypeError, OverflowError):
            raise NotDecoded(f"not a {kind.__name__}: {text[:40]!r}") from None
    else:
        raise NotDecoded(f"{node[0]}: type {kind.__name__} is left to pyVmomi")


def _typed(node: list, version: str | None, declared: type, optional: bool = False) -> type:
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


def _fields(node: list, cls: type, repeated: str | None = None) -> dict[str, Any]:
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


def _leaf(node: list) -> str:
    """A property's text, of its declared type (an xsi:type on it is left to pyVmomi)."""
    if node[4]:
        raise NotDecoded(f"{node[0]}: xsi:type on a plain value")
    return _text(node)


def _text(node: list) -> str:
    """A typed val's text (its xsi:type already read)."""
    if node[2]:
        raise NotDecoded(f"{node[0]} is not a plain value")
    return "".join(node[3])


def _str(fields: dict, cls: type, name: str) -> str | None:
    node = fields.get(name)
    return default(cls, name) if node is None else _leaf(node)


def _int(fields: dict, cls: type, name: str) -> int | None:
    node = fields.get(name)
    if node is None:
        value = default(cls, name)
        return None if value is None else int(value)
    return _to_int(properties(cls)[name], _leaf(node))


def _to_int(cls: type, text: str) -> int:
    try:
        return int(cls(text))
    except (ValueError, TypeError):
        raise NotDecoded(f"not a number: {text[:40]!r}") from None


def _bool(text: str) -> bool:
    """pyVmomi's reading of xsd:boolean."""
    lowered = text.lower()
    if text == "0" or lowered == "false":
        return False
    if text == "1" or lowered == "true":
        return True
    raise NotDecoded(f"not a boolean: {text[:40]!r}")


def _enum(cls: type, text: str) -> str:
    if text not in _enum_values(cls):
        raise NotDecoded(f"not a {cls.__name__}: {text[:40]!r}")
    return text


_ENUM_VALUES: dict[type, frozenset] = {}


def _enum_values(cls: type) -> frozenset:
    values = _ENUM_VALUES.get(cls)
    if values is None:
        values = _ENUM_VALUES[cls] = frozenset(cls.values)
    return values


def _ref(node: list) -> Ref:
    if not node[5]:
        raise NotDecoded(f"{node[0]}: a managed object reference without type")
    cls = wire_type(*node[5], None, allow_ref=False)
    if cls is None or not isinstance(cls, type) or not issubclass(cls, VmomiSupport.ManagedObject):
        raise NotDecoded(f"{node[0]}: unknown managed object type {node[5]}")
    if node[2]:
        raise NotDecoded(f"{node[0]} has children")
    return Ref(cls, "".join(node[3]))
