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
does not have, a value pyVmomi would not accept. Subtrees it does not read (a device's slotInfo)
are checked for well-formedness only.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, NamedTuple
from xml.parsers.expat import ExpatError

from pyVmomi import VmomiSupport, vim, vmodl

from esxdiag.collectors.soap_stream import XSI_TYPE, NotDecoded, Namespaces, default, fast_call, parser, properties
from esxdiag.collectors.soap_stream import SOAPENV, wire_type
from esxdiag.collectors.vsphere_session import VsphereSession, fault_text

_PS = vmodl.query.PropertyCollector
_CARD = vim.vm.device.VirtualEthernetCard
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
    if isinstance(value, vim.SharesInfo):
        return Shares(None if value.shares is None else int(value.shares),
                      None if value.level is None else str(value.level))
    if isinstance(value, vim.vm.device.VirtualDevice):
        return plain_device(value)
    if isinstance(value, list) and all(isinstance(d, vim.vm.device.VirtualDevice) for d in value):
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

class _Body:
    """Expat over one SOAP response: Envelope > Body > <response>, nothing else. Below the response
    element, nodes [local name, attributes, children, text chunks, xsi:type or None, type= or None]
    are built; each node at depth 3..record_depth goes to ``on_node(depth, node)`` when it closes and
    is not kept, so memory holds one record (an ``objects``, a ``returnval``) at a time."""

    def __init__(self, response: str, record_depth: int, on_node: Callable[[int, list], None]):
        self.response, self.record_depth, self.on_node = response, record_depth, on_node
        self.p = parser(self.start, self.end, self.text)
        self.ns = Namespaces(self.p)
        self.stack: list = []
        self.answered = False

    def parse(self, body: bytes) -> None:
        try:
            self.p.Parse(body, True)
        except ExpatError as exc:
            raise NotDecoded(str(exc)) from None

    def start(self, tag: str, attrs: dict) -> None:
        depth = len(self.stack)
        if depth >= 3:
            xsi = attrs.get(XSI_TYPE) if attrs else None
            ref = attrs.get("type") if attrs else None
            node = [tag[tag.rfind(" ") + 1:], attrs, [], [], xsi and self.ns.resolve(xsi), ref and self.ns.resolve(ref)]
            if depth > self.record_depth:
                self.stack[-1][2].append(node)
            self.stack.append(node)
            return
        if depth == 2:
            if self.answered or tag[tag.rfind(" ") + 1:] != self.response:
                raise NotDecoded(f"not a {self.response}: {tag}")
            self.answered = True
        elif tag != (_ENVELOPE, _BODY)[depth]:
            raise NotDecoded(f"unexpected {tag}")
        self.stack.append(None)

    def end(self, _tag: str) -> None:
        node = self.stack.pop()
        depth = len(self.stack)
        if 3 <= depth <= self.record_depth:
            self.on_node(depth, node)

    def text(self, data: str) -> None:
        top = self.stack[-1] if self.stack else None
        if top is not None:
            top[3].append(data)


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

    _Body(response, 4, on_node).parse(body)
    if state["results"] != 1:
        if state["results"]:
            raise NotDecoded("several results")
        return None
    return Page(rows, state["token"])


def decode_perf(body: bytes, version: str | None) -> list[EntityCsv]:
    """A QueryPerf answer in csv format."""
    out: list[EntityCsv] = []

    def on_node(_depth: int, node: list) -> None:
        cls = _typed(node, version, vim.PerformanceManager.EntityMetricCSV) if node[0] == "returnval" else None
        if cls is None:
            raise NotDecoded("not a PerfEntityMetricCSV")
        fields = _fields(node, cls, repeated="value")
        entity = fields.get("entity")
        if entity is None:
            raise NotDecoded("no entity")
        out.append(EntityCsv(_ref(entity), _str(fields, cls, "sampleInfoCSV"),
                             [_series(series, version) for series in fields.get("value", [])]))

    _Body("QueryPerfResponse", 3, on_node).parse(body)
    return out


def _series(node: list, version: str | None) -> tuple[int, str, str]:
    cls = _typed(node, version, vim.PerformanceManager.MetricSeriesCSV, optional=True)
    fields = _fields(node, cls)
    metric_id = fields.get("id")
    if metric_id is None:
        raise NotDecoded("a series without id")
    id_cls = _typed(metric_id, version, vim.PerformanceManager.MetricId, optional=True)
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
    if issubclass(cls, vim.SharesInfo):
        fields = _fields(node, cls)
        level = fields.get("level")
        return Shares(_int(fields, cls, "shares"),
                      default(cls, "level") if level is None else _enum(vim.SharesInfo.Level, _leaf(level)))
    if issubclass(cls, vim.vm.device.VirtualDevice):
        return _device(node, cls, version)
    if issubclass(cls, list) and getattr(cls, "Item", None) is vim.vm.device.VirtualDevice:
        return [_device(child, _typed(child, version, vim.vm.device.VirtualDevice, optional=True), version)
                for child in node[2]]
    raise NotDecoded(f"type {cls.__name__} is left to pyVmomi")


def _device(node: list, cls: type, version: str | None) -> Device:
    if not issubclass(cls, _CARD):
        return Device(cls)
    fields = _fields(node, cls)
    info = fields.get("deviceInfo")
    label = None
    if info is not None:
        info_cls = _typed(info, version, vim.Description, optional=True)
        label = _str(_fields(info, info_cls), info_cls, "label")
    connectable = fields.get("connectable")
    connected = None
    if connectable is not None:
        conn_cls = _typed(connectable, version, vim.vm.device.VirtualDevice.ConnectInfo, optional=True)
        conn_fields = _fields(connectable, conn_cls)
        connected = default(conn_cls, "connected") if "connected" not in conn_fields else _bool(
            _leaf(conn_fields["connected"]))
    return Device(cls, _int(fields, cls, "key"), label, _str(fields, cls, "macAddress"),
                  _network(fields.get("backing"), version), connected)


def _network(node: list | None, version: str | None) -> str | None:
    if node is None:
        return None
    cls = _typed(node, version, vim.vm.device.VirtualDevice.BackingInfo, optional=True)
    fields = _fields(node, cls)
    for backing, field in _BACKINGS:
        if issubclass(cls, backing):
            if field != "port":
                value = _str(fields, cls, field)
                return value or None if field == "deviceName" else value
            port = fields.get("port")
            if port is None:
                raise NotDecoded("a port backing without port")  # pyVmomi's reader fails there too
            port_cls = _typed(port, version, vim.dvs.PortConnection, optional=True)
            return _str(_fields(port, port_cls), port_cls, "portgroupKey")
    return None


# --- small readers: each refuses what pyVmomi would not decode the same way -------------------------

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
