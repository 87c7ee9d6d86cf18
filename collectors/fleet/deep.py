"""Deep check of fleet suspects: the per-VM ring collection, grouped by ESXi host.

One bundle per host holds every suspect on it: their vCenter inventories, ONE SSH connection to
the host (net-stats -l once, vsish counters of every suspect's ports at both ends of one window,
one esxtop batch covering them all), optional guest SSH, then each VM's vCenter counters for the
same window. Hosts run in parallel (bounded). A host that cannot be reached is recorded in its
bundle and listed, never fatal. Built on the live collectors' public functions
(esxdiag.collectors.esxi, .guest_linux, .guest_windows, .ssh, .vsphere, live.parse_ssh).
"""

from __future__ import annotations

import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from esxdiag.bundle import BundleWriter, Target, slug, utcnow
from esxdiag.collectors.credentials import Credentials
from esxdiag.errors import CollectionError
from esxdiag.specs import ESXI, LINUX, VCENTER, WINDOWS


@dataclass(frozen=True)
class DeepOptions:
    output: Path  # one bundle directory per host is created under it
    window_s: float = 60.0
    esxtop_delay_s: int = 5
    command_timeout_s: float = 60.0
    host_ssh: dict[str, str] = field(default_factory=dict)  # host name -> USER@HOST[:PORT]
    default_host_ssh: str | None = None  # USER@[HOST][:PORT] for hosts not in host_ssh
    guests: bool = False
    guest_ssh: str | None = None  # USER@[HOST][:PORT]; HOST left out: the IP VMware Tools reports
    ssh_key: Path | None = None
    known_hosts: Path | None = None
    accept_new_host_keys: bool = False
    parallel_hosts: int = 4
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ), repr=False)


@dataclass
class HostGroup:
    vcenter: str  # host:port, as in the snapshot
    host: str
    vms: list[dict]  # fleet report rows (name, moid, ...)
    bundle: Path | None = None
    error: str | None = None


def group_by_host(rows: list[dict]) -> list[HostGroup]:
    groups: dict[tuple[str, str], HostGroup] = {}
    for row in rows:
        key = (row["vcenter"], row["host"] or "(unknown host)")
        groups.setdefault(key, HostGroup(key[0], key[1], [])).vms.append(row)
    return list(groups.values())


def collect_groups(groups: list[HostGroup], creds: dict[str, Credentials], opts: DeepOptions,
                   progress=None) -> list[HostGroup]:
    """Collect every group's bundle, hosts in parallel; errors land in group.error, never raise."""
    def one(group: HostGroup) -> HostGroup:
        try:
            _collect(group, creds.get(group.vcenter), opts, progress)
        except CollectionError as exc:
            group.error = exc.one_line()
        return group

    with ThreadPoolExecutor(max_workers=max(1, opts.parallel_hosts), thread_name_prefix="deep-host") as pool:
        return list(pool.map(one, groups))


def _ssh_options(opts: DeepOptions, password_env: str):
    from esxdiag.collectors.ssh import SshOptions

    own = opts.env.get("ESXDIAG_KNOWN_HOSTS")
    return SshOptions(key_file=opts.ssh_key, known_hosts=opts.known_hosts,
                      accept_new_host_keys=opts.accept_new_host_keys, password=opts.env.get(password_env) or None,
                      command_timeout_s=opts.command_timeout_s, own_known_hosts=Path(own) if own else None)


def _connect(writer: BundleWriter, kind: str, text: str | None, user: str, default_host: str | None,
             target_id: str, first_spec: str, opts: DeepOptions, password_env: str, vm: str | None = None):
    from esxdiag.collectors.live import parse_ssh
    from esxdiag.collectors.ssh import SshConnection

    target = parse_ssh(text, user, default_host)
    writer.add_target(Target(target_id, kind, str(target) if target else None, vm))
    if target is None:
        writer.record(first_spec, target_id, None, error_kind="skipped", error=f"no address for the {kind} target")
        return None, f"no address for {target_id}"
    try:
        return SshConnection(target, kind, _ssh_options(opts, password_env)).connect(), None
    except CollectionError as exc:
        now = utcnow()
        writer.record(first_spec, target_id, None, started=now, ended=now, error_kind=_kind(exc), error=exc.one_line())
        return None, exc.one_line()


def _kind(exc: CollectionError) -> str:
    from esxdiag.collectors.live import error_kind

    return error_kind(exc)


def _collect(group: HostGroup, creds: Credentials | None, opts: DeepOptions, progress) -> None:
    from esxdiag.collectors import esxi
    from esxdiag.collectors.vsphere import collect_inventory, collect_perf, connect, find_vm

    names = [row["name"] for row in group.vms]
    group.bundle = opts.output / f"{slug(group.vcenter)}-{slug(group.host)}"
    writer = BundleWriter(group.bundle, opts.window_s, names)
    if creds is None:
        group.error = f"no credentials for vCenter {group.vcenter}"
        writer.note(group.error)
        return
    writer.add_target(Target("vcenter", VCENTER, group.vcenter))
    session = host = None
    guests: list[tuple] = []
    refs: dict[str, tuple] = {}
    try:
        session = connect(creds)
        for row in group.vms:
            started = utcnow()
            try:
                ref = find_vm(session, row["moid"])
                inventory = collect_inventory(session, ref)
            except CollectionError as exc:
                writer.record("vsphere_vm", "vcenter", None, params={"vm": row["name"]}, started=started,
                              ended=utcnow(), error_kind=_kind(exc), error=exc.one_line())
                continue
            writer.record("vsphere_vm", "vcenter", json.dumps(inventory, indent=1) + "\n", params={"vm": row["name"]},
                          command="PropertyCollector.RetrievePropertiesEx", started=started, ended=utcnow())
            refs[row["name"]] = (ref, inventory)
        macs = [n["mac"] for _, inv in refs.values() for n in inv.get("vnics", []) if n.get("mac")]
        host_tid = f"esxi-{slug(group.host)}"
        if progress:
            progress(f"host {group.host}: connecting for {len(refs)} VM(s)")
        conn, group.error = _connect(writer, ESXI, opts.host_ssh.get(group.host, opts.default_host_ssh), "root",
                                     group.host, host_tid, "net_stats_list", opts, "ESXDIAG_HOST_PASSWORD")
        if conn is None:
            writer.note(f"host {group.host} not reached: no ring counters or esxtop for {', '.join(names)}")
            return
        host = conn
        esxi.host_facts(conn, writer, host_tid)
        ports = esxi.discover_ports(conn, writer, host_tid, macs)
        if opts.guests:
            guests = _open_guests(writer, refs, opts)
        start = datetime.now(timezone.utc)
        _sample(conn, writer, host_tid, ports, guests, 0)
        cap = esxi.run_esxtop(conn, writer, host_tid, opts.window_s, opts.esxtop_delay_s)
        if not cap.ok:  # the window must still pass, so the two samples differ
            time.sleep(max(0.0, opts.window_s - (datetime.now(timezone.utc) - start).total_seconds()))
        _sample(conn, writer, host_tid, ports, guests, 1)
        end = datetime.now(timezone.utc)
        for name, (ref, inventory) in refs.items():
            started = utcnow()
            try:
                data = collect_perf(session, ref, inventory, start, end)
            except CollectionError as exc:
                writer.record("vsphere_perf", "vcenter", None, params={"vm": name}, started=started,
                              ended=utcnow(), error_kind=_kind(exc), error=exc.one_line())
                continue
            writer.record("vsphere_perf", "vcenter", json.dumps(data, indent=1) + "\n", params={"vm": name},
                          command="PerformanceManager.QueryPerf", started=started, ended=utcnow())
    finally:
        for conn in [host] + [g[0] for g in guests]:
            if conn is not None:
                conn.close()
        if session is not None:
            session.close()


def _open_guests(writer: BundleWriter, refs: dict[str, tuple], opts: DeepOptions) -> list[tuple]:
    opened = []
    for name, (_, inv) in refs.items():
        family = ((inv.get("guest") or {}).get("family") or "").lower()
        kind = WINDOWS if "windows" in family else LINUX
        guest = inv.get("guest") or {}
        address = guest.get("ip_address") or next(iter(guest.get("ip_addresses") or []), None)
        user = opts.env.get("ESXDIAG_GUEST_USER") or ("Administrator" if kind == WINDOWS else "root")
        tid = f"guest-{slug(name)}"
        conn, _ = _connect(writer, kind, opts.guest_ssh, user, address, tid,
                           "win_netadapter" if kind == WINDOWS else "ip_link", opts, "ESXDIAG_GUEST_PASSWORD", vm=name)
        if conn is not None:
            macs = [n["mac"] for n in inv.get("vnics", []) if n.get("mac")]
            opened.append((conn, tid, kind, macs, [None]))
    return opened


def _sample(conn, writer, host_tid, ports, guests, n: int) -> None:
    from esxdiag.collectors import esxi
    from esxdiag.collectors.guest_linux import collect_linux
    from esxdiag.collectors.guest_windows import collect_windows

    esxi.sample_ports(conn, writer, host_tid, ports, n)
    for guest_conn, tid, kind, macs, state in guests:
        if kind == WINDOWS:
            collect_windows(guest_conn, writer, tid, n)
        else:
            state[0] = collect_linux(guest_conn, writer, tid, macs, n, state[0])
