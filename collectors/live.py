"""Live collection of one VM: vCenter inventory, then its ESXi host and guest over SSH, sampled
at both ends of a window that esxtop covers, then vCenter performance for the same window.

Everything lands in a bundle as it is collected (the manifest is rewritten after every
capture), so a failure or Ctrl-C leaves a valid partial bundle that says what is missing."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Callable

from esxdiag.bundle import ERROR_KINDS, BundleWriter, Target, slug, utcnow
from esxdiag.collectors.credentials import resolve_credentials
from esxdiag.collectors.terminal import FirstCtrlC, Progress, terminal_prompt
from esxdiag.errors import CollectionError
from esxdiag.specs import ESXI, LINUX, VCENTER, WINDOWS


@dataclass(frozen=True)
class LiveOptions:
    vm: str
    output: Path
    window_s: float = 60.0
    esxtop_delay_s: int = 5
    vcenter: str | None = None
    username: str | None = None
    insecure: bool | None = None
    thumbprint: str | None = None
    config: Path | None = None
    host_ssh: str | None = None  # USER@HOST[:PORT]; HOST may be empty: the VM's host name
    guest_ssh: str | None = None  # USER@HOST[:PORT]; HOST may be empty: the IP VMware Tools reports
    guest_os: str | None = None  # linux / windows; default from the VM's guest family
    ssh_key: Path | None = None
    known_hosts: Path | None = None
    accept_new_host_keys: bool = False
    command_timeout_s: float = 60.0
    vcenter_timeout_s: float = 60.0  # overall, for the lookup and again for the performance query
    output_cap_bytes: int | None = None  # replaces every command's own output cap
    no_host_ssh: bool = False
    no_guest: bool = False
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ), repr=False)
    prompt: Callable[[str], str] | None = field(default_factory=terminal_prompt, repr=False)


@dataclass(frozen=True)
class Outcome:
    bundle: Path
    fatal: str | None  # why the VM could not be covered (vCenter unreachable, VM not found, off)
    interrupted: bool = False
    unreached: tuple[str, ...] = ()  # host/guest targets that could not be connected to
    lost: tuple[str, ...] = ()  # host/guest targets whose connection died during the run

    @property
    def incomplete(self) -> bool:
        return bool(self.fatal or self.unreached or self.lost)


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


class LiveRun:
    def __init__(self, opts: LiveOptions, writer: BundleWriter, progress: Progress):
        self.opts, self.writer, self.progress = opts, writer, progress
        self.fatal: str | None = None
        self.session = self.vm_ref = self.inventory = None
        self.host = self.guest = None  # (connection, target id)
        self.guest_kind: str | None = None
        self.ports: list = []
        self.linux_state = None
        self.unreached: list[str] = []
        self.lost: list[str] = []
        self._announced = 0

    def announce_failures(self) -> None:
        """One stderr line per capture that failed since the last call (the error names the target)."""
        captures = self.writer.manifest["captures"]
        for cap in captures[self._announced:]:
            if cap.get("error_kind") and cap["error_kind"] != "skipped":
                self.progress.step(f"{cap['spec']}: {cap['error']}")
        self._announced = len(captures)

    # --- vCenter --------------------------------------------------------------------------
    def vcenter(self, creds) -> None:
        from esxdiag.collectors.vsphere import collect_inventory, connect, find_vm

        o = self.opts
        self.writer.add_target(Target("vcenter", VCENTER, f"{creds.host}:{creds.port}"))  # never the raw URL
        if creds.insecure and not creds.thumbprint:
            why = "--insecure" if o.insecure else next(
                (f"{k}={o.env[k]}" for k in ("ESXDIAG_INSECURE", "GOVC_INSECURE") if o.env.get(k)),
                "insecure= in the config file")
            self.progress.step(f"warning: TLS certificate verification is OFF for {creds.host}:{creds.port} "
                               f"({why}): anyone on the path can read the vCenter password")
        started = utcnow()
        try:
            self.progress.step(f"vCenter {creds.host}: finding VM {o.vm!r}")
            self.session = connect(creds, timeout_s=min(30.0, o.vcenter_timeout_s), deadline_s=o.vcenter_timeout_s)
            with self.session.within(o.vcenter_timeout_s, f"finding VM {o.vm!r}"):
                self.vm_ref = find_vm(self.session, o.vm)
                self.inventory = collect_inventory(self.session, self.vm_ref)
        except CollectionError as exc:
            self.fatal = exc.one_line()
            self.writer.record("vsphere_vm", "vcenter", None, params={"vm": o.vm}, started=started,
                               ended=utcnow(), error_kind=error_kind(exc), error=exc.one_line())
            self.writer.failed("vcenter", self.fatal)
            self.announce_failures()
            return
        self.writer.set("subject", {"vms": [self.inventory["name"]]})  # --vm may be a MOID or UUID

        self.writer.record("vsphere_vm", "vcenter", json.dumps(self.inventory, indent=1) + "\n",
                           params={"vm": o.vm}, command="PropertyCollector.RetrievePropertiesEx",
                           started=started, ended=utcnow())
        state = self.inventory.get("power_state")
        if state != "poweredOn":
            self.fatal = (f"VM {self.inventory['name']!r} is {state}: no host port, guest or counters to "
                          "collect; power it on and run again")
            self.writer.failed("vcenter", self.fatal)
            self.progress.step(self.fatal)

    def perf(self, start: datetime, end: datetime) -> None:
        if self.session is None or self.vm_ref is None or self.inventory is None or self.fatal:
            return
        from esxdiag.collectors.vsphere import collect_perf

        self.progress.step(f"vCenter: performance counters from {start:%H:%M:%S} to {end:%H:%M:%S} UTC")
        started = utcnow()
        try:
            with self.session.within(self.opts.vcenter_timeout_s, "reading performance counters"):
                data = collect_perf(self.session, self.vm_ref, self.inventory, start, end)
        except CollectionError as exc:
            self.writer.record("vsphere_perf", "vcenter", None, params={"vm": self.opts.vm}, started=started,
                               ended=utcnow(), error_kind=error_kind(exc), error=exc.one_line())
            return
        self.writer.record("vsphere_perf", "vcenter", json.dumps(data, indent=1) + "\n", params={"vm": self.opts.vm},
                           command="PerformanceManager.QueryPerf", started=started, ended=utcnow())
        if not data.get("timestamps"):
            self.progress.step("vCenter returned no performance samples for that time: CPU not measured")

    # --- SSH ------------------------------------------------------------------------------
    def ssh_options(self, password_env: str):
        from esxdiag.collectors.ssh import SshOptions

        o = self.opts
        return SshOptions(key_file=o.ssh_key, known_hosts=o.known_hosts, accept_new_host_keys=o.accept_new_host_keys,
                          password=o.env.get(password_env) or None, command_timeout_s=o.command_timeout_s,
                          output_cap_bytes=o.output_cap_bytes,
                          own_known_hosts=Path(o.env["ESXDIAG_KNOWN_HOSTS"]) if o.env.get("ESXDIAG_KNOWN_HOSTS") else None)

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
            self.writer.failed(target_id, exc.one_line())
            self.unreached.append(str(target))
            self.announce_failures()
            return None

    def open_host(self) -> None:
        o, inv = self.opts, self.inventory or {}
        if o.no_host_ssh:
            self.writer.note("host SSH skipped (--no-host-ssh): no vsish ring counters or esxtop")
            return
        host_name = inv.get("host")
        target_id = f"esxi-{slug(host_name or (o.host_ssh or 'host'))}"
        conn = self.open(ESXI, o.host_ssh, "root", host_name, target_id, "net_stats_list", "ESXDIAG_HOST_PASSWORD")
        if conn is not None:
            self.host = (conn, target_id)

    def open_guest(self) -> None:
        o, inv = self.opts, self.inventory or {}
        if o.no_guest:
            self.writer.note("guest collection skipped (--no-guest)")
            return
        family = ((inv.get("guest") or {}).get("family") or "").lower()
        kind = o.guest_os or (WINDOWS if "windows" in family else LINUX)
        self.guest_kind = kind
        guest = inv.get("guest") or {}
        address = guest.get("ip_address") or next(iter(guest.get("ip_addresses") or []), None)
        user = o.env.get("ESXDIAG_GUEST_USER") or ("Administrator" if kind == WINDOWS else "root")
        first = "win_netadapter" if kind == WINDOWS else "ip_link"
        name = inv.get("name") or o.vm
        conn = self.open(kind, o.guest_ssh, user, address, f"guest-{slug(name)}", first,
                         "ESXDIAG_GUEST_PASSWORD", vm=name)
        if conn is not None:
            self.guest = (conn, f"guest-{slug(name)}")

    def vnic_macs(self) -> list[str]:
        return [n["mac"] for n in (self.inventory or {}).get("vnics", []) if n.get("mac")]

    def preflight(self, pair) -> None:
        """Before sample 0: the tools exist and run (each gap said once, with what it costs)."""
        from esxdiag.collectors.preflight import preflight

        conn, tid = pair
        self.announce_failures()
        preflight(conn, self.writer, tid, self.progress.step)
        self._announced = len(self.writer.manifest["captures"])  # preflight said its own failures

    def host_samples(self) -> bool:
        """The host has something to give over a window: esxtop, or vsish with the VM's ports."""
        if not self.host:
            return False
        missing = self.host[0].unavailable
        return "esxtop" not in missing or ("vsish" not in missing and bool(self.ports))

    # --- the window -----------------------------------------------------------------------
    def alive(self, pair, what: str) -> bool:
        """False (recorded once, exit 3) when the connection of ``pair`` died during the run."""
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
            self.progress.step(f"host: vsish ring counters ({label})")
            esxi.sample_ports(conn, self.writer, tid, self.ports, n)
        if self.guest and self.alive(self.guest, f"guest counters ({label})"):
            conn, tid = self.guest
            self.progress.step(f"guest: {'PowerShell adapter' if self.guest_kind == WINDOWS else 'ethtool/netstat'} "
                               f"counters ({label})")
            if self.guest_kind == WINDOWS:
                collect_windows(conn, self.writer, tid, n)
            else:
                self.linux_state = collect_linux(conn, self.writer, tid, self.vnic_macs(), n, self.linux_state)

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
        if not self.guest:
            self.progress.step("no guest sampling: no ethtool ring sizes, per-queue drops or TCP retransmits")

    def run(self, creds) -> None:
        from esxdiag.collectors import esxi

        self.vcenter(creds)
        self.announce_failures()
        if self.fatal:
            return  # vCenter, the VM lookup or its power state: nothing else can be attributed to it
        self.open_host()
        if self.host:
            conn, tid = self.host
            self.progress.step("host: vmware -vl, preflight (vsish, esxtop), net-stats -l, rx queues")
            esxi.host_facts(conn, self.writer, tid)
            self.preflight(self.host)
            self.ports = esxi.discover_ports(conn, self.writer, tid, self.vnic_macs())
            self.announce_failures()
            if not self.ports:
                self.writer.note(f"{tid}: no port with the VM's MACs {', '.join(self.vnic_macs()) or '(unknown)'}: "
                                 "is the VM on this host?")
        self.open_guest()
        if self.guest:
            self.preflight(self.guest)
        self.announce_costs()
        if not self.host_samples() and not self.guest:  # nothing to sample at two ends: vCenter's recent past, now
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
        for pair in (self.host, self.guest):
            if pair:
                pair[0].close()
        if self.session is not None:
            self.session.close()


def collect(opts: LiveOptions, progress: Progress | None = None) -> Outcome:
    """Collect one VM into opts.output. Bad usage (credentials, URL) raises before anything is
    written; everything after lands in the bundle."""
    creds = resolve_credentials(opts.vcenter, opts.username, insecure=opts.insecure, thumbprint=opts.thumbprint,
                                env=opts.env, config_path=opts.config)
    progress = progress or Progress()
    writer = BundleWriter(opts.output, opts.window_s, [opts.vm])
    run = LiveRun(opts, writer, progress)
    try:
        run.run(creds)
    except KeyboardInterrupt:
        writer.note("interrupted (Ctrl-C): this bundle holds what was collected until then")
        progress.step(f"interrupted: partial bundle in {writer.root}")
        return Outcome(writer.root, run.fatal, interrupted=True, unreached=tuple(run.unreached),
                       lost=tuple(run.lost))
    finally:
        run.close()
    if run.fatal:
        writer.note(run.fatal)
    progress.step(f"bundle written: {writer.root}")
    return Outcome(writer.root, run.fatal, unreached=tuple(run.unreached), lost=tuple(run.lost))

