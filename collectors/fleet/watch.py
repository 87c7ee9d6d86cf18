"""The inventory of repeated scans read once, then only what changed (serve's cycles, a library that scans
again and again from one process). docs/fleet-scan.md "Watching" says what it costs and when it reads whole.

Per vCenter a Watch keeps its login across scans, a PropertyCollector of its own (CreatePropertyCollector)
with one filter (CreateFilter) over the same objects and properties a full read asks for (the places,
and the VMs of the containers the filters select) plus each VM's whole device list and its
config.changeVersion, and a copy of
every property (updates.Kept). A full read creates them and takes the filter's whole state
(WaitForUpdatesEx from version "", page after page); every later scan asks
``WaitForUpdatesEx(version, maxWaitSeconds=0)``, which answers at once with the changes only, and
applies them. What a change cannot say exactly, and a VM whose changeVersion changed (reconfigured: a
server may not report each property it changed; vcsim reports neither a CPU allocation nor a name
set this way), is read again for those objects only.

It reads whole again: the first time; when the copy is older than ``max_age_s``; after any fault in
reading the changes (a SOAP fault, an answer cut off or not SOAP, a timeout, InvalidCollectorVersion, the
collector or filter gone: ManagedObjectNotFound), logging in again first when the login was lost
(NotAuthenticated); when the changes would take more pages than two whole reads (a truncated update set
that does not end); and when a place change
moves the containers the filters name. A scan that fails drops the watch (logout): the next logs in and
reads whole. The VM records, vNICs and places it gives are the ones a full read gives
(inventory.vm_record, read_vnics' rules); the perf counters, hosts and migration events are read as
in every scan.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from pyVmomi import vim, vmodl

from esxdiag.collectors.credentials import Credentials
from esxdiag.collectors.fleet import fastdecode, inventory
from esxdiag.collectors.fleet.fastdecode import Device
from esxdiag.collectors.fleet.perfkeep import PerfKeep
from esxdiag.collectors.fleet.updates import Kept, NotOurFilter, Updates, decode_updates, plain_updates
from esxdiag.collectors.soap_stream import fast_call
from esxdiag.collectors.vsphere_session import VsphereSession, api_errors
from esxdiag.errors import CollectionError

log = logging.getLogger(__name__)
_PS = vmodl.query.PropertyCollector
DEFAULT_MAX_AGE_S = 3600.0
CHANGE_VERSION = "config.changeVersion"  # changes with every reconfiguration: that VM is read again
WATCHED_VM_PATHS = (*inventory.VM_PATHS, inventory.DEVICE_PATH, CHANGE_VERSION)
WATCHED = {**{cls: tuple(inventory.PLACE_PATHS) for cls in inventory.PLACE_TYPES},
           vim.VirtualMachine: WATCHED_VM_PATHS}
_SIMPLE = 100  # objects per update page when no page size is given (vCenter's own default)


@dataclass
class Known:
    """One scan's inventory from the watch: what inventory.read_places and vm_pages would give, and
    each VM's whole device list (vNICs without a request)."""

    places: inventory.Places
    vms: list[dict]  # inventory.vm_record records of the selected VMs, ``vnics`` None
    devices: dict[str, list | None]  # moid -> the VM's device list (None: the server did not give it)
    how: str  # "changes" or "whole: why"
    samples: PerfKeep  # the realtime samples kept from the last scans (perfkeep.py)

    def pages(self, size: int | None) -> Iterator[tuple[list[dict], bool]]:
        step = size or 1000
        for start in range(0, len(self.vms), step):
            yield self.vms[start:start + step], start + step < len(self.vms)

    def vnics(self, vm: dict) -> tuple[list[dict] | None, bool]:
        return vnics_from_devices(vm["num_vnics"], self.devices.get(vm["moid"]))


def vnics_from_devices(num_vnics: Any, devices: list | None) -> tuple[list[dict] | None, bool]:
    """inventory.read_vnics' answer for one VM, from its whole device list: (vNICs, whether
    read_vnics reads this VM's whole device list). The keyed answer is kept only when the VM holds
    exactly ``num_vnics`` distinct vNICs at keys NIC_KEY_BASE..; then they are in key order."""
    if num_vnics == 0:
        return [], False
    if isinstance(num_vnics, int) and 0 < num_vnics <= inventory.MAX_KEYED_NICS:
        keys = range(inventory.NIC_KEY_BASE, inventory.NIC_KEY_BASE + num_vnics)
        nics = [d for d in devices or [] if isinstance(d, Device) and d.key in keys and _is_nic(d)]
        if len(nics) == num_vnics and len({d.key for d in nics}) == num_vnics:
            return inventory.vnics_of(sorted(nics, key=lambda d: d.key)), False
    return (None if devices is None else inventory.vnics_of(devices)), True


def _is_nic(device: Device) -> bool:
    return issubclass(device.type, vim.vm.device.VirtualEthernetCard)


class Watches:
    """One Watch per vCenter (by URL and user), kept between scans; ``close`` logs every one out."""

    def __init__(self, max_age_s: float = DEFAULT_MAX_AGE_S, clock: Callable[[], float] = time.monotonic):
        self.max_age_s, self.clock = max_age_s, clock
        self._watches: dict[tuple[str, str], Watch] = {}
        self._lock = threading.Lock()

    def get(self, creds: Credentials) -> "Watch":
        with self._lock:
            return self._watches.setdefault((creds.url, creds.username), Watch(self.max_age_s, self.clock))

    def close(self) -> None:
        with self._lock:
            watches = list(self._watches.values())
        for watch in watches:
            watch.drop()


class Watch:
    """One vCenter's login, collector, filter and kept copy. Not thread-safe: one scan at a time."""

    def __init__(self, max_age_s: float, clock: Callable[[], float] = time.monotonic):
        self.max_age_s, self.clock = max_age_s, clock
        self.session: VsphereSession | None = None
        self.how: str | None = None  # how the last read went: Known.how
        self._forget()
        self._spent, self._baseline = 0, 0

    def _forget(self) -> None:
        self.collector: Any = None  # pyVmomi's PropertyCollector and PropertyFilter (untyped)
        self.filter: Any = None
        self.views: list[Any] = []
        self.roots: list[str] = []  # the MOIDs of the containers the VM views were opened on
        self.version = ""  # the filter's data version; "" asks for the whole state
        self.kept: Kept | None = None  # None: nothing kept, the next read is whole
        self.read_at = 0.0
        self.samples = PerfKeep()  # a whole read of the inventory reads every entity's whole window too

    @property
    def _live(self) -> VsphereSession:
        """The login a read runs on (``read`` opens it before anything else is sent)."""
        if self.session is None:
            raise CollectionError("the inventory watch has no login", kind="auth")
        return self.session

    @property
    def _copy(self) -> Kept:
        """The kept copy a read of the changes applies to (``_whole`` makes it first)."""
        if self.kept is None:
            raise _Diverged("nothing kept to apply the changes to")
        return self.kept

    # --- one scan ------------------------------------------------------------------------------
    def read(self, login: Callable[[], VsphereSession], filters: inventory.Filters,
             page_size: int | None) -> tuple[VsphereSession, Known]:
        """The session to scan on and its inventory: the changes since the last scan when the copy
        can be trusted, else a whole read (``login()`` when there is no login)."""
        self._spent = 0
        if self.session is None:
            self.session = login()
        self._baseline = self.session.request_count
        self.samples.next_scan()
        why = self._why_whole()
        if why is None:
            try:
                with api_errors(self.session, "reading the inventory's changes"):
                    known = self._changes(filters, page_size)
                self.how = known.how
                return self.session, known
            except (CollectionError, NotOurFilter, _Diverged) as exc:
                why = str(exc) if isinstance(exc, _Diverged) else f"reading the changes failed ({exc})"
                if isinstance(exc, CollectionError) and exc.kind == "auth":  # the login is gone: log in again
                    self._spent += self.session.request_count - self._baseline
                    self.session = None
                    self._forget()
                    self.session = login()
                    self._baseline = self.session.request_count
        log.info("%s: reading the whole inventory: %s", self.session.where, why)
        self.how = None
        with api_errors(self.session, "reading the inventory"):
            known = self._whole(filters, page_size, why)
        self.how = known.how
        return self.session, known

    def requests(self) -> int:
        """SOAP requests sent since ``read`` began, over every login it used."""
        return self._spent + (self.session.request_count - self._baseline if self.session is not None else 0)

    def drop(self) -> None:
        """Forget everything and log out (its collector, filter and views end with the login)."""
        session, self.session = self.session, None
        self._forget()
        if session is not None:
            session.close()

    def _why_whole(self) -> str | None:
        if self.kept is None:
            return "first read"
        if self.clock() - self.read_at >= self.max_age_s:
            return f"older than {self.max_age_s:g} s"
        return None

    # --- whole ---------------------------------------------------------------------------------
    def _whole(self, filters: inventory.Filters, page_size: int | None, why: str) -> Known:
        self._discard_collector()
        session = self._live
        content = session.content
        places = inventory.read_places(session)
        roots = inventory.containers(session, places, filters)
        self.collector = content.propertyCollector.CreatePropertyCollector()
        self.views = [content.viewManager.CreateContainerView(content.rootFolder, inventory.PLACE_TYPES, True)]
        self.views += [content.viewManager.CreateContainerView(root, [vim.VirtualMachine], True) for root in roots]
        self.roots = [root._moId for root in roots]
        self.filter = self.collector.CreateFilter(_filter_spec(self.views), partialUpdates=False)
        self.kept = Kept(WATCHED, reread_on=(CHANGE_VERSION,))
        self.version = ""
        self._drain(page_size, None)
        self.read_at = self.clock()
        return self._known(filters, f"whole: {why}")

    def _discard_collector(self) -> None:
        """The old collector and views, if the login still holds them; a failure here costs nothing."""
        collector, views = self.collector, self.views
        self._forget()
        for mo, destroy in [(collector, "DestroyPropertyCollector")] + [(v, "DestroyView") for v in views]:
            if mo is None:
                continue
            try:
                getattr(mo, destroy)()
            except (vmodl.MethodFault, CollectionError, OSError) as exc:
                log.debug("%s.%s: %s", type(mo).__name__, destroy, exc)

    # --- changes -------------------------------------------------------------------------------
    def _changes(self, filters: inventory.Filters, page_size: int | None) -> Known:
        stale = self._drain(page_size, 2 * (len(self._copy.objects) // (page_size or _SIMPLE) + 1))
        if stale:
            self._read_again(stale, page_size)
        known = self._known(filters, "changes")
        now_roots = [root._moId for root in inventory.containers(self._live, known.places, filters)]
        if now_roots != self.roots:
            raise _Diverged("the containers the filters name changed")
        return known

    def _drain(self, page_size: int | None, max_pages: int | None) -> set[str]:
        """Apply update pages until no more are pending; the MOIDs to read again."""
        options = _PS.WaitOptions(maxWaitSeconds=0, maxObjectUpdates=page_size or _SIMPLE)
        stale: set[str] = set()
        pages = 0
        while True:
            updates = self._wait(self.version, options)
            if updates is None:
                return stale
            for change in updates.objects:
                if not self._copy.apply(change):
                    stale.add(change.ref.moid)
            self.version = updates.version
            pages += 1
            if not updates.truncated:
                return stale
            if max_pages is not None and pages >= max_pages:
                raise _Diverged(f"the changes took more than {max_pages} pages, two whole reads")

    def _wait(self, version: str, options: Any) -> Updates | None:
        ours = self.filter._moId
        value, fast = fast_call(lambda body, api: decode_updates(body, api, ours),
                                lambda: self.collector.WaitForUpdatesEx(version=version, options=options))
        return value if fast else plain_updates(value, ours)

    def _read_again(self, moids: set[str], page_size: int | None) -> None:
        stub, kept = self._live.si._stub, self._copy
        refs = [kept.objects[m].ref for m in moids if m in kept.objects]
        spec = _PS.FilterSpec(objectSet=[_PS.ObjectSpec(obj=r.managed(stub), skip=False) for r in refs],
                              propSet=[_PS.PropertySpec(type=cls, pathSet=list(paths)) for cls, paths in WATCHED.items()
                                       if any(issubclass(r.type, cls) for r in refs)])
        found = set()
        for rows, _more in fastdecode.retrieve_pages(self._live, [spec], page_size):
            for ref, props, missing in rows:
                kept.replace(ref, props, missing)
                found.add(ref.moid)
        for moid in moids - found:  # gone since its change
            kept.objects.pop(moid, None)

    # --- the scan's records --------------------------------------------------------------------
    def _known(self, filters: inventory.Filters, how: str) -> Known:
        stub = self._live.si._stub
        place_rows: list[tuple[Any, dict, list]] = []
        vm_entries = []
        for entry in self._copy.objects.values():
            if issubclass(entry.ref.type, vim.VirtualMachine):
                vm_entries.append(entry)
            else:
                place_rows.append((entry.ref, entry.props, []))
        places = inventory.places_of(self._live, place_rows)
        vms, devices = [], {}
        for entry in vm_entries:
            missing = [{"path": p, "fault": entry.missing[p]} for p in inventory.VM_PATHS if p in entry.missing]
            vm = inventory.vm_record(entry.ref.managed(stub), entry.props, missing, places)
            if inventory.selected(vm, filters):
                vms.append(vm)
                devices[vm["moid"]] = entry.props.get(inventory.DEVICE_PATH)
        return Known(places, vms, devices, how, self.samples)


class _Diverged(Exception):
    """The kept copy no longer matches what a whole read would give: read whole."""


def _filter_spec(views: list[Any]) -> Any:
    return _PS.FilterSpec(
        objectSet=[_PS.ObjectSpec(obj=view, skip=True, selectSet=[
            _PS.TraversalSpec(name="view", type=vim.view.ContainerView, path="view", skip=False)]) for view in views],
        propSet=[_PS.PropertySpec(type=cls, pathSet=list(paths)) for cls, paths in WATCHED.items()])
