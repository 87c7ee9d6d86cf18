"""One ESXi host sampled for one or more of its VMs in one window: the routine both `esxdiag report
--vm` (one VM) and the fleet deep check (every suspect on a host) run.

vCenter first (one session, an overall deadline for the login and lookups and again for each read
after the window), then ONE SSH connection to the host (version, preflight, net-stats -l for every
VM's MACs), optional guests (each preflighted), then the two samples of every port and guest around
one esxtop window (the first Ctrl-C ends it early), then each VM's vCenter counters and migration
events for the same window, and each of their hosts' uplink counters once. A connection that dies
is noted once and nothing more is sent on it; a tool the preflight found missing is skipped, never
sent; output is capped; every failed capture is recorded one way (collectors/captures.record_failure
/ run_capture). Everything lands in the bundle as it is collected.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from esxdiag.bundle import ERROR_KINDS, BundleWriter, Target, slug, utcnow
from esxdiag.collectors.credentials import insecure_warning
from esxdiag.collectors.terminal import FirstCtrlC, Progress
from esxdiag.errors import CollectionError
from esxdiag.specs import ESXI, LINUX, VCENTER, WINDOWS

if TYPE_CHECKING:
    from esxdiag.collectors.guest_linux import LinuxGuest
    from esxdiag.collectors.ssh import SshConnection
    from esxdiag.collectors.vsphere_session import VsphereSession

    Pair = tuple[SshConnection, str]  # (connection, target id)


@dataclass(frozen=True)
class SamplerOptions:
    window_s: float = 60.0
    esxtop_delay_s: int = 5
    host_ssh: str | None = None  # USER@HOST[:PORT]; HOST may be empty: the VMs' host name
    guest_ssh: str | None = None  # USER@HOST[:PORT]; HOST may be empty: the IP VMware Tools reports
    guest_os: str | None = None  # linux / windows; default from each VM's guest family
    ssh_key: Path | None = None
    known_hosts: Path | None = None
    accept_new_host_keys: bool = False
    command_timeout_s: float = 60.0
    vcenter_timeout_s: float = 60.0  # overall, for the login and lookups and again for each later read
    output_cap_bytes: int | None = None  # replaces every command's own output cap
    no_host_ssh: bool = False
    no_guest: bool = False
    no_guest_why: str = "--no-guest"  # the flag that turned guests off, for the bundle's note
    insecure_flag: bool | None = None  # --insecure was given (for the TLS warning's words)
    env: dict[str, str] = field(default_factory=dict, repr=False)
    prompt: Callable[[str], str] | None = field(default=None, repr=False)


def error_kind(exc: CollectionError) -> str:
    return exc.kind if exc.kind in ERROR_KINDS else "error"


def parse_ssh(text: str | None, default_user: str, default_host: str | None):
    """USER@HOST[:PORT] with HOST (and USER@) optional; None when no host can be known."""
    from esxdiag.collectors.ssh import SshTarget

    text = text or ""
    user, sep, rest = text.rpartition("@") if "@" in text else (default_user, "@", text)
    if rest.startswith(":") or rest == "":
        if not default_host:
            return None
        rest = (f"[{default_host}]" if ":" in default_host else default_host) + rest
    return SshTarget.parse(f"{user or default_user}@{rest}")


@dataclass
class SampledVm:
    lookup: str  # name, inventory path, MOID or instance UUID
    label: str  # the captures' vm= parameter
    ref: Any = None
    inventory: dict | None = None
    skipped: str | None = None  # why this VM has no host port, guest or counters (lookup failed, powered off)
    guest: Pair | None = None
    guest_kind: str | None = None
    linux_state: LinuxGuest | None = None

    def words(self) -> str:
        """The VM as a person knows it: its name, with the MOID or path it is looked up by in brackets."""
        return repr(self.label) + (f" ({self.lookup})" if self.lookup != self.label else "")

    @property
    def known(self) -> dict:
        """What vCenter said of the VM (empty until it was found)."""
        return self.inventory or {}

    def macs(self) -> list[str]:
        return [n["mac"] for n in self.known.get("vnics", []) if n.get("mac")]


class HostSampler:
    def __init__(self, opts: SamplerOptions, writer: BundleWriter, progress: Progress, vms: list[SampledVm],
                 host_name: str | None = None):
        self.opts, self.writer, self.progress, self.vms = opts, writer, progress, vms
        self.host_name = host_name
        self.session: VsphereSession | None = None
        self.host: Pair | None = None
        self.ports: list = []
        self.uplinks: list[str] = []  # team uplinks (vmnicN) of the VMs' vNICs, sampled with the ports
        self.unreached: list[str] = []  # targets that could not be connected to
        self.unreached_why: list[str] = []  # and why, one line each
        self.lost: list[str] = []
        self.esxtop_ok = False  # esxtop recorded the window: CPU is measured whatever vCenter returns
        self._announced = 0

    @property
    def vsphere(self) -> VsphereSession:
        """The vCenter session, once ``vcenter`` opened it (nothing is looked up or read before)."""
        if self.session is None:
            raise RuntimeError("no vCenter session: HostSampler.vcenter did not connect")
        return self.session

    @property
    def found(self) -> list[SampledVm]:
        return [v for v in self.vms if v.skipped is None and v.inventory is not None]

    @property
    def fatal(self) -> str | None:
        """Why no VM could be covered (vCenter, every lookup, every power state), else None."""
        return None if self.found else next((v.skipped for v in self.vms if v.skipped), None)

    def announce_failures(self) -> None:
        """One progress line per capture that failed since the last call (the error names the target)."""
        captures = self.writer.manifest["captures"]
        for cap in captures[self._announced:]:
            if cap.get("error_kind") and cap["error_kind"] != "skipped":
                self.progress.step(f"{cap['spec']}: {cap['error']}")
        self._announced = len(captures)

    # --- vCenter --------------------------------------------------------------------------
    def vcenter(self, creds) -> None:
        from esxdiag.collectors.vsphere import connect

        o = self.opts
        self.writer.add_target(Target("vcenter", VCENTER, f"{creds.host}:{creds.port}"))  # never the raw URL
        warning = insecure_warning(creds, o.insecure_flag, o.env)
        if warning:
            self.progress.step(warning)
        started = utcnow()
        try:
            self.progress.step(f"vCenter {creds.host}: finding VM {self.vms[0].words()}")
            self.session = connect(creds, timeout_s=min(30.0, o.vcenter_timeout_s), deadline_s=o.vcenter_timeout_s)
        except CollectionError as exc:
            for vm in self.vms:
                self._lookup_failed(vm, exc, started)
            return
        for i, vm in enumerate(self.vms):
            if i:
                self.progress.step(f"vCenter {creds.host}: finding VM {vm.words()}")
            self._lookup(vm)
        if self.found:
            self.writer.set("subject", {"vms": [(v.inventory or {}).get("name") or v.label for v in self.vms]})

    def _lookup(self, vm: SampledVm) -> None:
        from esxdiag.collectors.vsphere import collect_inventory, find_vm

        started = utcnow()
        try:
            with self.vsphere.within(self.opts.vcenter_timeout_s, f"finding VM {vm.words()}"):
                vm.ref = find_vm(self.vsphere, vm.lookup)
                vm.inventory = collect_inventory(self.vsphere, vm.ref)
        except CollectionError as exc:
            self._lookup_failed(vm, exc, started)
            return
        self.writer.record("vsphere_vm", "vcenter", json.dumps(vm.inventory, indent=1) + "\n",
                           params={"vm": vm.label}, command="PropertyCollector.RetrievePropertiesEx",
                           started=started, ended=utcnow())
        state = vm.known.get("power_state")
        if state != "poweredOn":
            vm.skipped = (f"VM {vm.inventory['name']!r} is {state}: no host port, guest or counters to "
                          "collect; power it on and run again")
            self.progress.step(vm.skipped)

    def _lookup_failed(self, vm: SampledVm, exc: CollectionError, started: str) -> None:
        vm.skipped = exc.one_line()
        self.writer.record("vsphere_vm", "vcenter", None, params={"vm": vm.label}, started=started,
                           ended=utcnow(), error_kind=error_kind(exc), error=exc.one_line())
        self.announce_failures()

    def perf(self, start: datetime, end: datetime) -> None:
        """Each VM's counters and migration events, then each of their hosts' uplink counters once."""
        from esxdiag.collectors.vsphere import collect_events, collect_host_perf, collect_perf
        from esxdiag.collectors.vsphere_events import MAX_EVENTS

        if self.session is None or not self.found:
            return
        self.progress.step(f"vCenter: performance counters, migration events and host uplink counters from "
                           f"{start:%H:%M:%S} to {end:%H:%M:%S} UTC")
        unsampled = []  # VMs vCenter returned no samples for
        for vm in self.found:
            params = {"vm": vm.label}
            data = self._read("vsphere_perf", params, "PerformanceManager.QueryPerf", "reading performance counters",
                              partial(collect_perf, self.vsphere, vm.ref, vm.known, start, end))
            if data is not None and not data.get("timestamps"):
                unsampled.append(vm.label)
            events = self._read("vsphere_events", params, "EventManager.QueryEvents", "reading migration events",
                                partial(collect_events, self.session, vm.ref, start, end))
            if events is not None and len(events["events"]) >= MAX_EVENTS:
                self.writer.note(f"{vm.label}: vCenter returned {MAX_EVENTS} migration events for the window, the "
                                 "most one query reads: others may be missing")
        if unsampled and not self.esxtop_ok:  # said once for the host, and only when no source measured CPU
            self.progress.step(f"vCenter returned no performance samples for that time and esxtop did not run: "
                               f"CPU not measured ({', '.join(unsampled)})")
        hosts: dict[str, str] = {}  # host moid -> name, each host once however many of its VMs were sampled
        for vm in self.found:
            if vm.known.get("host_moid"):
                hosts.setdefault(vm.known["host_moid"], vm.known.get("host") or vm.known["host_moid"])
        for moid, name in hosts.items():
            self._read("vsphere_host_perf", {"host": name}, "PerformanceManager.QueryPerf",
                       f"reading uplink counters of host {name}",
                       partial(collect_host_perf, self.session, moid, name, start, end))

    def _read(self, spec: str, params: dict, command: str, what: str, read: Callable[[], dict]) -> dict | None:
        """One vCenter read within --vcenter-timeout, recorded as ``spec``; a failure is recorded, never raised."""
        started = utcnow()
        try:
            with self.vsphere.within(self.opts.vcenter_timeout_s, what):
                data = read()
        except CollectionError as exc:
            self.writer.record(spec, "vcenter", None, params=params, started=started, ended=utcnow(),
                               error_kind=error_kind(exc), error=exc.one_line())
            return None
        self.writer.record(spec, "vcenter", json.dumps(data, indent=1) + "\n", params=params, command=command,
                           started=started, ended=utcnow())
        return data

    # --- SSH ------------------------------------------------------------------------------
    def ssh_options(self, password_env: str):
        from esxdiag.collectors.ssh import SshOptions

        o = self.opts
        own = o.env.get("ESXDIAG_KNOWN_HOSTS")
        return SshOptions(key_file=o.ssh_key, known_hosts=o.known_hosts, accept_new_host_keys=o.accept_new_host_keys,
                          password=o.env.get(password_env) or None, command_timeout_s=o.command_timeout_s,
                          output_cap_bytes=o.output_cap_bytes, own_known_hosts=Path(own) if own else None)

    def open(self, kind: str, target_text: str | None, default_user: str, default_host: str | None,
             target_id: str, first_spec: str, password_env: str, vm: str | None = None):
        from esxdiag.collectors.captures import record_failure
        from esxdiag.collectors.ssh import SshConnection

        target = parse_ssh(target_text, default_user, default_host)
        self.writer.add_target(Target(target_id, kind, str(target) if target else None, vm))
        if target is None:
            self.writer.record(first_spec, target_id, None, error_kind="skipped",
                               error=f"no address for the {kind} target: pass --{'host' if kind == ESXI else 'guest'}-ssh")
            return None
        self.progress.step(f"{kind} {target}: connecting")
        options = self.ssh_options(password_env)
        try:
            try:
                return SshConnection(target, kind, options).connect()
            except CollectionError as exc:
                if exc.kind != "auth" or options.password is not None or self.opts.prompt is None:
                    raise
                self.progress.step(f"{target}: no key was accepted")  # ask, as ssh does on a terminal
                password = self.opts.prompt(f"Password for {target}: ")
                return SshConnection(target, kind, replace(options, password=password)).connect()
        except CollectionError as exc:
            record_failure(self.writer, target_id, first_spec, None, exc)
            self.writer.failed(target_id, exc.one_line())  # the run failed: no verdict rests on this target
            self.unreached.append(str(target))
            self.unreached_why.append(exc.one_line())
            self.announce_failures()
            return None

    def open_host(self) -> None:
        from esxdiag.collectors import esxi

        o = self.opts
        if o.no_host_ssh:
            self.writer.note("host SSH skipped (--no-host-ssh): no vsish ring counters or esxtop")
            return
        host_name = next((v.known.get("host") for v in self.found if v.known.get("host")), self.host_name)
        target_id = f"esxi-{slug(host_name or (o.host_ssh or 'host'))}"
        conn = self.open(ESXI, o.host_ssh, "root", host_name, target_id, "net_stats_list", "ESXDIAG_HOST_PASSWORD")
        if conn is None:
            return
        self.host = (conn, target_id)
        self.progress.step("host: vmware -vl, preflight (vsish, esxtop), net-stats -l, rx queues, team uplinks")
        esxi.host_facts(conn, self.writer, target_id)
        self.preflight(self.host)
        macs = [m for v in self.found for m in v.macs()]
        self.ports = esxi.discover_ports(conn, self.writer, target_id, macs)
        self.announce_failures()
        if not self.ports:
            self.writer.note(f"{target_id}: no port with the VM's MACs {', '.join(macs) or '(unknown)'}: "
                             "is the VM on this host?")
        self.open_uplinks()

    def open_uplinks(self) -> None:
        """Before sample 0, once per host: which team uplinks (vmnicN) carry the VMs' vNICs, so their
        counters are read at both ends of the window (a frame lost there never reaches a vNIC ring)."""
        from esxdiag.collectors import esxi

        if self.host is None or not self.alive(self.host, "team uplinks (esxcli)"):
            return
        conn, target_id = self.host
        subjects = [esxi.uplink_subject(v.label, v.known.get("name"), v.macs(), self.ports)
                    for v in self.found if v.macs()]
        self.uplinks = esxi.discover_uplinks(conn, self.writer, target_id, subjects, self.progress.step)
        self._announced = len(self.writer.manifest["captures"])  # discover_uplinks said its own failures

    def open_guests(self) -> None:
        o = self.opts
        if o.no_guest:
            self.writer.note(f"guest collection skipped ({o.no_guest_why})")
            return
        for vm in self.found:
            inv = vm.known
            guest = inv.get("guest") or {}
            kind = o.guest_os or (WINDOWS if "windows" in (guest.get("family") or "").lower() else LINUX)
            vm.guest_kind = kind
            address = guest.get("ip_address") or next(iter(guest.get("ip_addresses") or []), None)
            user = o.env.get("ESXDIAG_GUEST_USER") or ("Administrator" if kind == WINDOWS else "root")
            name = inv.get("name") or vm.label
            conn = self.open(kind, o.guest_ssh, user, address, f"guest-{slug(name)}",
                             "win_netadapter" if kind == WINDOWS else "ip_link", "ESXDIAG_GUEST_PASSWORD", vm=name)
            if conn is not None:
                vm.guest = (conn, f"guest-{slug(name)}")
                self.preflight(vm.guest)

    def preflight(self, pair) -> None:
        """Before sample 0: the tools exist and run (each gap said once, with what it costs)."""
        from esxdiag.collectors.preflight import preflight

        conn, tid = pair
        self.announce_failures()
        preflight(conn, self.writer, tid, self.progress.step)
        self._announced = len(self.writer.manifest["captures"])  # preflight said its own failures

    def host_samples(self) -> bool:
        """The host has something to give over a window: esxtop, or vsish with the VMs' ports."""
        if not self.host:
            return False
        missing = self.host[0].unavailable
        return "esxtop" not in missing or ("vsish" not in missing and bool(self.ports))

    # --- the window -----------------------------------------------------------------------
    def alive(self, pair, what: str) -> bool:
        """False (noted once; the run is then incomplete) when the connection of ``pair`` died."""
        conn, tid = pair
        if conn.connected:
            return True
        if str(conn.target) not in self.lost:
            self.lost.append(str(conn.target))
            text = f"{conn.target}: connection lost; {what} not collected"
            self.writer.note(text)
            self.writer.failed(tid, text)
            self.progress.step(text)
        return False

    def sample(self, n: int) -> None:
        from esxdiag.collectors import esxi
        from esxdiag.collectors.guest_linux import collect_linux
        from esxdiag.collectors.guest_windows import collect_windows

        label = "window start" if n == 0 else "window end"
        if self.host and self.alive(self.host, f"ring counters ({label})"):
            conn, tid = self.host
            uplinks = f" and uplink {', '.join(self.uplinks)} counters" if self.uplinks else ""
            self.progress.step(f"host: vsish ring counters{uplinks} ({label})")
            esxi.sample_ports(conn, self.writer, tid, self.ports, n, uplinks=self.uplinks)
        for vm in self.found:
            if vm.guest and self.alive(vm.guest, f"guest counters ({label})"):
                conn, tid = vm.guest
                self.progress.step(f"guest: {'PowerShell adapter' if vm.guest_kind == WINDOWS else 'ethtool/netstat'} "
                                   f"counters ({label})")
                if vm.guest_kind == WINDOWS:
                    collect_windows(conn, self.writer, tid, n)
                else:
                    vm.linux_state = collect_linux(conn, self.writer, tid, vm.macs(), n, vm.linux_state)

    def window(self) -> None:
        """esxtop (or a plain wait) for the window; the first Ctrl-C ends it early."""
        from esxdiag.collectors import esxi

        o = self.opts
        deadline = time.monotonic() + o.window_s
        with FirstCtrlC(self.progress) as ctrl_c:
            if self.host and self.alive(self.host, "esxtop"):
                conn, tid = self.host
                if "esxtop" not in conn.unavailable:  # else recorded as skipped, with the preflight's reason
                    self.progress.step(f"host: esxtop batch for {o.window_s:g} s (every {o.esxtop_delay_s} s; "
                                       "Ctrl-C ends the window early)")

                def on_wait(done: float, _total: float) -> bool:
                    self.progress.wait("esxtop window", done, o.window_s)
                    return ctrl_c.pressed

                cap = esxi.run_esxtop(conn, self.writer, tid, o.window_s, o.esxtop_delay_s, on_wait=on_wait)
                self.announce_failures()
                self.esxtop_ok = cap.ok
                if cap.ok:
                    return self.ended_early(ctrl_c, deadline)
            # no esxtop (or it failed): still let the window pass, so the two samples differ
            while (left := deadline - time.monotonic()) > 0 and not ctrl_c.pressed:
                self.progress.wait("window", o.window_s - left, o.window_s)
                time.sleep(min(0.5, left))
            self.ended_early(ctrl_c, deadline)

    def ended_early(self, ctrl_c: FirstCtrlC, deadline: float) -> None:
        if ctrl_c.pressed:
            short = self.opts.window_s - max(0.0, deadline - time.monotonic())
            self.writer.note(f"window ended early by Ctrl-C after {short:.0f} of {self.opts.window_s:g} s "
                             "(esxtop stopped there: its rows until then are used)")

    def announce_costs(self) -> None:
        """Say at once what the targets that cannot be sampled cost."""
        if not self.host:
            self.progress.step("no host sampling: no vsish ring counters (ring full, out of buffers) and no esxtop; "
                               "CPU from vCenter's 20 s statistics only")
        if not any(v.guest for v in self.found):
            self.progress.step("no guest sampling: no ethtool ring sizes, per-queue drops or TCP retransmits")

    def run(self, creds) -> None:
        self.vcenter(creds)
        self.announce_failures()
        if self.fatal:
            self.writer.failed("vcenter", self.fatal)
            return  # vCenter, every lookup or power state: nothing else can be attributed to the VMs
        for vm in self.vms:
            if vm.skipped:
                self.writer.note(f"{vm.label}: {vm.skipped}")
        self.open_host()
        self.open_guests()
        self.announce_costs()
        if not self.host_samples() and not any(v.guest for v in self.found):  # vCenter's recent past, now
            end = datetime.now(timezone.utc)
            self.writer.note(f"no host or guest sampled: vCenter realtime statistics for the last "
                             f"{self.opts.window_s:g} s, no window waited; host SSH would add the vsish ring "
                             "counters and esxtop (where the host runs them), guest SSH the ring sizes and per-queue "
                             "drops")
            self.perf(end - timedelta(seconds=self.opts.window_s), end)
            self.announce_failures()
            return
        start = datetime.now(timezone.utc)
        self.sample(0)
        self.announce_failures()
        self.window()
        self.sample(1)
        self.perf(start, datetime.now(timezone.utc))
        self.announce_failures()

    def close(self) -> None:
        for pair in [self.host] + [v.guest for v in self.vms]:
            if pair:
                for text in pair[0].notes:  # a reconnect: the bundle says it happened, and where
                    self.writer.note(text)
                pair[0].close()
        if self.session is not None:
            self.session.close()
