"""The fleet scan's hot responses as the plain values its records need, read straight from the SOAP
body: the inventory's RetrievePropertiesEx / ContinueRetrievePropertiesEx pages (places, VMs, keyed
vNICs and device lists), the counter catalogue (each counter's name, id and unit) and QueryPerf in csv
format.

Both ways give the same plain values: ``decode_retrieve`` / ``decode_perf`` read the bytes with
collectors/soap_stream.py's walk and readers (which also hand them the bytes, inside pyVmomi's own
request), and ``plain_page`` / ``plain_entity`` convert what pyVmomi decoded when the fast path is
off or refused the response.
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
from xml.sax.saxutils import escape

from pyVmomi import VmomiSupport, vim, vmodl

from esxdiag.collectors import soap_stream as soap
from esxdiag.collectors.fleet import perftree
from esxdiag.collectors.soap_stream import NotDecoded, Ref, default, fast_call, wire_type
from esxdiag.collectors.vsphere_perf import counter_name
from esxdiag.collectors.vsphere_session import VsphereSession, fault_text

# pyVmomi's types, looked up once: each vim.X.Y is a lookup through its lazy type tables
_PS = vmodl.query.PropertyCollector
_CARD = vim.vm.device.VirtualEthernetCard
_DEVICE, _BACKING = vim.vm.device.VirtualDevice, vim.vm.device.VirtualDevice.BackingInfo
_CONNECT, _DESCRIPTION, _PORT = vim.vm.device.VirtualDevice.ConnectInfo, vim.Description, vim.dvs.PortConnection
_SHARES, _SHARES_LEVEL = vim.SharesInfo, vim.SharesInfo.Level
_ENTITY_CSV, _SERIES_CSV = vim.PerformanceManager.EntityMetricCSV, vim.PerformanceManager.MetricSeriesCSV
_METRIC_ID = vim.PerformanceManager.MetricId
_COUNTER_INFO, _ELEMENT_DESCRIPTION = vim.PerformanceManager.CounterInfo, vim.ElementDescription
_BACKINGS = ((_CARD.DistributedVirtualPortBackingInfo, "port"), (_CARD.NetworkBackingInfo, "deviceName"),
             (_CARD.OpaqueNetworkBackingInfo, "opaqueNetworkId"))  # _vnic's order


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


class CounterKey(NamedTuple):
    """One counter of the server's catalogue: group.name.rollup, its id and its unit."""
    name: str
    key: int | None
    unit: str | None


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
        page = _page("ContinueRetrievePropertiesExResponse",
                     lambda: collector.ContinueRetrievePropertiesEx(token=token))


def _page(response: str, call: Callable[[], Any]) -> Page | None:
    value, fast = fast_call(lambda body, version: decode_retrieve(body, version, response), call)
    return value if fast else plain_page(value)


def query_perf(session: VsphereSession, entities: list[Any], spec: Callable[..., Any]) -> list[EntityCsv]:
    """QueryPerf of ``spec(entity=e)`` for each entity (one shape: times, interval, counters). With the
    fast path on, the request is one spec serialised by pyVmomi and copied per entity with its moid
    put in (batch_request), and the answer read by decode_perf."""
    manager = session.content.perfManager
    if not soap.enabled() or not isinstance(manager, VmomiSupport.ManagedObject):
        # off, or a stand-in manager whose calls no pyVmomi stub serialises: every spec, as pyVmomi sends them
        return _every_spec(manager, entities, spec)
    built = []

    def build(serialize: Callable[[list], Any]) -> str:
        built.append(True)
        return batch_request(serialize, entities, spec)

    with soap.prepared_request("QueryPerf", build):
        # pyVmomi checks the argument before it serialises: one spec stands for the batch there
        value, fast = fast_call(decode_perf, lambda: manager.QueryPerf(querySpec=[spec(entity=entities[0])]))
    if not built:  # a stub other than pyVmomi's SOAP stub sent the one spec: ask again with all of them
        return _every_spec(manager, entities, spec)
    return value if fast else [plain_entity(m) for m in value or []]


def _every_spec(manager: Any, entities: list[Any], spec: Callable[..., Any]) -> list[EntityCsv]:
    return [plain_entity(m) for m in manager.QueryPerf(querySpec=[spec(entity=e) for e in entities]) or []]


_MARKER = "esxdiag-entity-moid"


def batch_request(serialize: Callable[[list], Any], entities: list[Any], spec: Callable[..., Any]) -> str:
    """The QueryPerf body pyVmomi would serialise for ``[spec(entity=e) for e in entities]``, made from
    one spec per entity type serialised by pyVmomi (``serialize([specs])``) with each moid put in,
    XML-escaped (pyVmomi writes a moid as it is: the same bytes for every moid without <, > or &)."""
    head = tail = ""
    shapes: dict[tuple[type, Any], tuple[str, str]] = {}
    parts = []
    for entity in entities:
        shape = (type(entity), entity._serverGuid)
        if shape not in shapes:
            whole = serialize([[spec(entity=shape[0](_MARKER, None, shape[1]))]])
            whole = whole.decode() if isinstance(whole, bytes) else whole
            if whole.count(_MARKER) != 1:
                raise ValueError("the QuerySpec template holds its marker more than once")
            start, end = whole.index("<querySpec"), whole.rindex("</querySpec>") + len("</querySpec>")
            head, tail = whole[:start], whole[end:]
            before, after = whole[start:end].split(_MARKER)
            shapes[shape] = (before, after)
        before, after = shapes[shape]
        parts.append(before + escape(entity._moId) + after)
    return head + "".join(parts) + tail


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
    if isinstance(value, list) and all(isinstance(c, _COUNTER_INFO) for c in value):
        return [CounterKey(counter_name(c.groupInfo.key, c.nameInfo.key, c.rollupType),
                           None if c.key is None else int(c.key), c.unitInfo.key) for c in value]
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

def decode_retrieve(body: bytes, version: str | None, response: str) -> Page | None:
    """A RetrievePropertiesEx / ContinueRetrievePropertiesEx answer: Page, or None for no result."""
    rows: list = []
    results: list[int] = []  # one entry per returnval
    token: list[str] = []

    def on_node(depth: int, node: list) -> None:
        if depth == 3:
            if node[0] != "returnval" or node[4]:
                raise NotDecoded("unexpected result element")
            results.append(1)
        elif node[0] == "objects" and not node[4]:
            rows.append(_object_content(node, version))
        elif node[0] == "token" and not node[4]:
            token[:] = [soap.text(node)]
        else:
            raise NotDecoded(f"unexpected {node[0]} in a RetrieveResult")

    soap.walk(body, response, 4, on_node)
    if len(results) != 1:
        if results:
            raise NotDecoded("several results")
        return None
    return Page(rows, token[0] if token else None)


def decode_perf(body: bytes, version: str | None) -> list[EntityCsv]:
    """A QueryPerf answer in csv format: read from xml.etree's tree when it has the usual shape
    (perftree.py), else walked."""
    usual = perftree.read_usual(body, version)
    if usual is not None:
        return [EntityCsv(*one) for one in usual]
    out: list[EntityCsv] = []

    def on_node(_depth: int, node: list) -> None:
        common = _common_entity(node, version)
        if common is not None:
            out.append(common)
            return
        cls = soap.typed(node, version, _ENTITY_CSV) if node[0] == "returnval" else None
        if cls is None:
            raise NotDecoded("not a PerfEntityMetricCSV")
        soap.check(node, cls, version)
        fields = soap.fields(node, cls, repeated="value")
        entity = fields.get("entity")
        if entity is None:
            raise NotDecoded("no entity")
        out.append(EntityCsv(soap.ref(entity), soap.str_field(fields, cls, "sampleInfoCSV"),
                             [_series(series, version) for series in fields.get("value", [])]))

    soap.walk(body, "QueryPerfResponse", 3, on_node)
    return out


def _common_entity(node: list, version: str | None) -> EntityCsv | None:
    """The shape vCenter and vcsim answer, read in one pass instead of checked, then read: a
    PerfEntityMetricCSV holding one entity, one sampleInfoCSV and its series, each series one id (one
    counterId in ASCII digits, one instance) and one value, no xsi:type, child or repeat below the
    returnval. Anything else is None: the general reader (check, then fields) decides, as before."""
    if node[0] != "returnval" or not node[4] or wire_type(*node[4], version) is not _ENTITY_CSV:
        return None
    entity = info = None
    series = []
    for child in node[2]:
        name = child[0]
        if child[4] or (name != "value" and child[2]):
            return None
        if name == "value":
            one = _common_series(child)
            if one is None:
                return None
            series.append(one)
        elif name == "entity" and entity is None:
            entity = child
        elif name == "sampleInfoCSV" and info is None:
            info = child
        else:
            return None
    if entity is None or info is None:
        return None
    try:
        ref = soap.ref(entity)
    except NotDecoded:
        return None
    return EntityCsv(ref, "".join(info[3]), series)


def _common_series(node: list) -> tuple[int, str, str] | None:
    """One series of _common_entity's shape: (counterId, instance, values), or None."""
    if len(node[2]) != 2:
        return None
    metric_id, values = (node[2][0], node[2][1]) if node[2][0][0] == "id" else (node[2][1], node[2][0])
    if metric_id[0] != "id" or values[0] != "value" or values[4] or values[2] or metric_id[4] \
            or len(metric_id[2]) != 2:
        return None
    counter, instance = metric_id[2] if metric_id[2][0][0] == "counterId" else metric_id[2][::-1]
    if counter[0] != "counterId" or instance[0] != "instance" or counter[4] or instance[4] or counter[2] \
            or instance[2]:
        return None
    digits = "".join(counter[3])
    if not (digits.isascii() and digits.isdigit()):
        return None
    return int(digits), "".join(instance[3]), "".join(values[3])


def _default_level(cls: type) -> Any:
    """pyVmomi's level of a SharesInfo that carried none (mypy reads a pyVmomi data type as unhashable)."""
    return default(cls, "level")


def _series(node: list, version: str | None) -> tuple[int | None, str | None, str | None]:
    cls = soap.typed(node, version, _SERIES_CSV, optional=True)
    fields = soap.fields(node, cls)
    metric_id = fields.get("id")
    if metric_id is None:
        raise NotDecoded("a series without id")
    id_cls = soap.typed(metric_id, version, _METRIC_ID, optional=True)
    id_fields = soap.fields(metric_id, id_cls)
    return (soap.int_field(id_fields, id_cls, "counterId"), soap.str_field(id_fields, id_cls, "instance"),
            soap.str_field(fields, cls, "value"))


def _object_content(node: list, version: str | None) -> tuple[Ref, dict, list]:
    obj, props = None, {}
    for child in node[2]:
        name = child[0]
        if name == "propSet" and not child[4]:
            prop_name, val = None, None
            for part in child[2]:
                if part[0] == "name" and not part[4]:
                    prop_name = soap.text(part)
                elif part[0] == "val":
                    val = _value(part, version)
                else:
                    raise NotDecoded(f"unexpected {part[0]} in a propSet")
            if prop_name is None:
                raise NotDecoded("a propSet without name")
            props[prop_name] = val
        elif name == "obj" and not child[4]:
            obj = soap.ref(child)
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
        return soap.text(node)
    if cls is bool:
        return soap.boolean(soap.text(node))
    if issubclass(cls, int) and not issubclass(cls, bool):
        return soap.to_int(cls, soap.text(node))
    if issubclass(cls, VmomiSupport.Enum):
        return soap.enum(cls, soap.text(node))
    if issubclass(cls, VmomiSupport.ManagedObject):
        return soap.ref(node)
    if issubclass(cls, _SHARES):
        soap.check(node, cls, version)
        fields = soap.fields(node, cls)
        level = fields.get("level")
        return Shares(soap.int_field(fields, cls, "shares"),
                      _default_level(cls) if level is None else soap.enum(_SHARES_LEVEL, soap.leaf(level)))
    if issubclass(cls, _DEVICE):
        return _device(node, cls, version)
    if issubclass(cls, list) and getattr(cls, "Item", None) is _DEVICE:
        return [_device(child, soap.typed(child, version, _DEVICE, optional=True), version)
                for child in node[2]]
    if issubclass(cls, list) and getattr(cls, "Item", None) is _COUNTER_INFO:
        return [_counter(child, soap.typed(child, version, _COUNTER_INFO, optional=True), version)
                for child in node[2]]
    raise NotDecoded(f"type {cls.__name__} is left to pyVmomi")


def _device(node: list, cls: type, version: str | None) -> Device:
    soap.check(node, cls, version)
    if not issubclass(cls, _CARD):
        return Device(cls)
    fields = soap.fields(node, cls)
    info = fields.get("deviceInfo")
    label = None
    if info is not None:
        info_cls = soap.typed(info, version, _DESCRIPTION, optional=True)
        label = soap.str_field(soap.fields(info, info_cls), info_cls, "label")
    connectable = fields.get("connectable")
    connected = None
    if connectable is not None:
        conn_cls = soap.typed(connectable, version, _CONNECT, optional=True)
        conn_fields = soap.fields(connectable, conn_cls)
        connected = default(conn_cls, "connected") if "connected" not in conn_fields else soap.boolean(
            soap.leaf(conn_fields["connected"]))
    return Device(cls, soap.int_field(fields, cls, "key"), label, soap.str_field(fields, cls, "macAddress"),
                  _network(fields.get("backing"), version), connected)


def _counter(node: list, cls: type, version: str | None) -> CounterKey:
    """plain_value's CounterKey of one PerfCounterInfo (pyVmomi's checks made on all of it first)."""
    soap.check(node, cls, version)
    fields = soap.fields(node, cls)
    keys = []
    for part in ("groupInfo", "nameInfo", "unitInfo"):
        info = fields.get(part)
        if info is None:
            raise NotDecoded(f"a counter without {part}")  # plain_value cannot read it either
        info_cls = soap.typed(info, version, _ELEMENT_DESCRIPTION, optional=True)
        keys.append(soap.str_field(soap.fields(info, info_cls), info_cls, "key"))
    rollup = fields.get("rollupType")
    rollup_text = default(cls, "rollupType") if rollup is None else soap.enum(
        soap.properties(cls)["rollupType"], soap.leaf(rollup))
    return CounterKey(counter_name(keys[0], keys[1], rollup_text), soap.int_field(fields, cls, "key"), keys[2])


def _network(node: list | None, version: str | None) -> str | None:
    if node is None:
        return None
    cls = soap.typed(node, version, _BACKING, optional=True)
    fields = soap.fields(node, cls)
    for backing, field in _BACKINGS:
        if issubclass(cls, backing):
            if field != "port":
                value = soap.str_field(fields, cls, field)
                return value or None if field == "deviceName" else value
            port = fields.get("port")
            if port is None:
                raise NotDecoded("a port backing without port")  # pyVmomi's reader fails there too
            port_cls = soap.typed(port, version, _PORT, optional=True)
            return soap.str_field(soap.fields(port, port_cls), port_cls, "portgroupKey")
    return None


