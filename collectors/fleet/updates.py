"""A kept copy of the inventory's properties, brought up to date by a PropertyCollector's changes.

``WaitForUpdatesEx`` answers with an UpdateSet: per object an ObjectUpdate of kind ``enter`` (the
object entered the filter: its whole watched state), ``modify`` (some of its properties changed) or
``leave`` (it left the filter: gone, or moved out of a watched container), each change a
PropertyChange (name, op ``assign``/``add``/``remove``/``indirectRemove``, value) plus a
``missingSet`` of the properties the server could not read. ``Kept.apply`` applies one ObjectUpdate
to the copy exactly where that is certain: an ``assign`` of a watched path sets it (no value: unset),
a ``remove``/``indirectRemove`` of one unsets it, a missing property is recorded as a full read
records it. A change the copy cannot apply exactly (a path below or above a watched one, such as one
vNIC of a device list, or an ``add`` into one) marks the object stale: the caller reads that object's
watched paths again (one RetrievePropertiesEx for all of them), so the copy never guesses; so does a
change of a ``reread_on`` path (a VM's ``config.changeVersion``: it was reconfigured, and a server may
not report every property a reconfiguration changed).

Values are fastdecode's plain values (fastdecode.plain_value), the ones a full read records. The
answers are read from the bytes (``decode_updates``, with fastdecode's value readers) when the fast
path takes them, else pyVmomi decodes them (``plain_updates``): the same values either way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from pyVmomi import vmodl

from esxdiag.collectors import soap_stream as soap
from esxdiag.collectors.fleet import fastdecode
from esxdiag.collectors.fleet.fastdecode import plain_value
from esxdiag.collectors.soap_stream import NotDecoded, Ref
from esxdiag.collectors.vsphere_session import fault_text

_KIND, _OP = vmodl.query.PropertyCollector.ObjectUpdate.Kind, vmodl.query.PropertyCollector.Change.Op


class ObjectChange(NamedTuple):
    kind: str  # enter | modify | leave
    ref: Ref
    changes: list  # (property path, op, plain value or None)
    missing: list  # (property path, fault text)


class Updates(NamedTuple):
    version: str
    objects: list  # ObjectChange, in the server's order
    truncated: bool  # more changes follow: ask again with ``version``


class NotOurFilter(Exception):
    """An UpdateSet about a filter the watch did not create: the copy cannot be trusted."""


def plain_updates(result: Any, filter_moid: str) -> Updates | None:
    """pyVmomi's UpdateSet as plain values; None when nothing changed."""
    if result is None:
        return None
    objects = []
    for update in result.filterSet or []:
        if update.filter._moId != filter_moid:
            raise NotOurFilter(f"an update of filter {update.filter._moId}, not {filter_moid}")
        # objects the filter could no longer read: a full read has no row for them either
        objects += [ObjectChange("leave", plain_value(gone.obj), [], []) for gone in update.missingSet or []]
        objects += [ObjectChange(str(o.kind), plain_value(o.obj),
                                 [(c.name, str(c.op), plain_value(c.val)) for c in o.changeSet or []],
                                 [(m.path, fault_text(m.fault)) for m in o.missingSet or []])
                    for o in update.objectSet or []]
    return Updates(result.version, objects, bool(result.truncated))


@dataclass
class Entry:
    ref: Ref
    props: dict = field(default_factory=dict)  # path -> plain value; an unset property is absent
    missing: dict = field(default_factory=dict)  # path -> fault text, as the server listed them


@dataclass
class Kept:
    """moid -> Entry for every object the filter holds, in the order they entered."""

    paths: dict  # pyVmomi managed object class -> the watched paths of its objects
    reread_on: tuple = ()  # watched paths whose change (an object's config changeVersion) has it read again
    objects: dict = field(default_factory=dict)

    def watched(self, ref: Ref) -> tuple[str, ...]:
        for cls, paths in self.paths.items():
            if issubclass(ref.type, cls):
                return paths
        return ()

    def apply(self, change: ObjectChange) -> bool:
        """Apply one ObjectUpdate; False when its object must be read again (stale)."""
        moid = change.ref.moid
        if change.kind == "leave":
            self.objects.pop(moid, None)
            return True
        if change.kind == "enter":
            self.objects[moid] = Entry(change.ref)
        elif moid not in self.objects:  # a change to an object the copy never saw entering
            return False
        entry, watched, exact = self.objects[moid], self.watched(change.ref), True
        for name, op, value in change.changes:
            if name not in watched or op not in ("assign", "remove", "indirectRemove"):
                exact = False
            elif op == "assign" and value is not None:
                entry.props[name] = value
                entry.missing.pop(name, None)
            else:
                entry.props.pop(name, None)
                entry.missing.pop(name, None)
        for path, fault in change.missing:
            if path not in watched:
                exact = False
                continue
            entry.props.pop(path, None)
            entry.missing[path] = fault
        if change.kind == "modify" and any(name in self.reread_on for name, _op, _value in change.changes):
            exact = False
        return exact

    def replace(self, ref: Ref, props: dict, missing: list[dict]) -> None:
        """An object read again whole (a RetrievePropertiesEx row)."""
        self.objects[ref.moid] = Entry(ref, {k: v for k, v in props.items() if v is not None},
                                       {m["path"]: m["fault"] for m in missing})


# --- the fast path: WaitForUpdatesEx's answer read from the bytes (soap_stream.walk, fastdecode's values) ---

def decode_updates(body: bytes, version: str | None, filter_moid: str) -> Updates | None:
    """A WaitForUpdatesEx answer as plain_updates gives it; NotDecoded (pyVmomi decodes it) for
    anything else: a missingSet, another filter, a value fastdecode does not read."""
    state: dict = {"version": None, "truncated": False, "results": 0}
    objects: list = []

    def on_node(depth: int, node: list) -> None:
        name = node[0]
        if depth == 3:
            if name != "returnval" or node[4]:
                raise NotDecoded("unexpected result element")
            state["results"] += 1
        elif depth == 4 and name in ("version", "truncated") and not node[4]:
            state[name] = soap.text(node) if name == "version" else soap.boolean(soap.text(node))
        elif depth == 4 and name == "filterSet" and not node[4] and not node[2]:
            pass  # its children came at depth 5
        elif depth == 5 and name == "filter" and not node[4]:
            if soap.ref(node).moid != filter_moid:
                raise NotDecoded("an update of another filter")
        elif depth == 5 and name == "objectSet" and not node[4]:
            objects.append(_object_update(node, version))
        else:
            raise NotDecoded(f"unexpected {name} in an UpdateSet")  # a filter's missingSet among them

    soap.walk(body, "WaitForUpdatesExResponse", 5, on_node)
    if state["results"] != 1:
        if state["results"]:
            raise NotDecoded("several results")
        return None
    if state["version"] is None:
        raise NotDecoded("an UpdateSet without version")
    return Updates(state["version"], objects, state["truncated"])


def _object_update(node: list, version: str | None) -> ObjectChange:
    kind, ref, changes = None, None, []
    for child in node[2]:
        name = child[0]
        if child[4]:
            raise NotDecoded(f"xsi:type on {name}")
        if name == "kind":
            kind = soap.enum(_KIND, soap.text(child))
        elif name == "obj":
            ref = soap.ref(child)
        elif name == "changeSet":
            changes.append(_change(child, version))
        else:
            raise NotDecoded(f"unexpected {name} in an ObjectUpdate")  # missingSet among them
    if kind is None or ref is None:
        raise NotDecoded("an ObjectUpdate without kind or obj")
    return ObjectChange(kind, ref, changes, [])


def _change(node: list, version: str | None) -> tuple[str, str, Any]:
    fields: dict = {}
    for part in node[2]:
        if part[0] not in ("name", "op", "val") or part[0] in fields or (part[4] and part[0] != "val"):
            raise NotDecoded(f"unexpected {part[0]} in a PropertyChange")
        fields[part[0]] = part
    if "name" not in fields or "op" not in fields:
        raise NotDecoded("a PropertyChange without name or op")
    value = fastdecode._value(fields["val"], version) if "val" in fields else None
    return soap.text(fields["name"]), soap.enum(_OP, soap.text(fields["op"])), value
