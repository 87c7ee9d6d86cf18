"""Deep check of fleet suspects: the per-VM ring collection, grouped by ESXi host.

One bundle per host holds every suspect on it, collected by the same host sampler `esxdiag report`
runs (esxdiag.collectors.sampler): the vCenter inventories within an overall deadline, ONE SSH
connection to the host (preflight, net-stats -l once, vsish counters of every suspect's ports at both
ends of one window, one esxtop batch covering them all), optional guests, then each VM's vCenter
counters for the same window. Hosts run in parallel (bounded). A host that cannot be reached, or
whose connection dies, is recorded in its bundle and listed, never fatal.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from esxdiag.bundle import BundleWriter, slug
from esxdiag.collectors.credentials import Credentials
from esxdiag.collectors.sampler import HostSampler, SampledVm, SamplerOptions
from esxdiag.collectors.terminal import Progress
from esxdiag.errors import CollectionError


@dataclass(frozen=True)
class DeepOptions:
    output: Path  # one bundle directory per host is created under it
    window_s: float = 60.0
    esxtop_delay_s: int = 5
    command_timeout_s: float = 60.0
    vcenter_timeout_s: float = 60.0  # overall, for the login and lookups and again for the performance query
    output_cap_bytes: int | None = None  # replaces every command's own output cap
    host_ssh: dict[str, str] = field(default_factory=dict)  # host name -> USER@HOST[:PORT]
    default_host_ssh: str | None = None  # USER@[HOST][:PORT] for hosts not in host_ssh
    guests: bool = False
    guest_ssh: str | None = None  # USER@[HOST][:PORT]; HOST left out: the IP VMware Tools reports
    ssh_key: Path | None = None
    known_hosts: Path | None = None
    accept_new_host_keys: bool = False
    parallel_hosts: int = 4
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ), repr=False)


@dataclass(frozen=True)
class Suspect:
    """A VM to check, as the fleet report names it (esxdiag.fleet.model.FleetRow has these attributes)."""

    vcenter: str  # host:port, as in the snapshot
    host: str | None
    name: str
    moid: str


@dataclass
class HostGroup:
    vcenter: str  # host:port, as in the snapshot
    host: str
    vms: list[Suspect]
    bundle: Path | None = None
    error: str | None = None


class _Progress(Progress):
    """The sampler's progress lines, prefixed with the host (hosts run in parallel; no countdowns)."""

    def __init__(self, host: str, say: Callable[[str], None] | None):
        super().__init__()
        self.host, self.say = host, say

    def step(self, text: str) -> None:
        if self.say:
            self.say(f"host {self.host}: {text}")

    def wait(self, what: str, elapsed: float, total: float) -> None:
        pass


def group_by_host(rows: Iterable[Any]) -> list[HostGroup]:
    """rows: anything with vcenter, host, name and moid (the fleet report's rows)."""
    groups: dict[tuple[str, str], HostGroup] = {}
    for row in rows:
        key = (row.vcenter, row.host or "(unknown host)")
        groups.setdefault(key, HostGroup(key[0], key[1], [])).vms.append(Suspect(row.vcenter, row.host, row.name,
                                                                                   row.moid))
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


def sampler_options(opts: DeepOptions, host: str) -> SamplerOptions:
    return SamplerOptions(
        window_s=opts.window_s, esxtop_delay_s=opts.esxtop_delay_s,
        host_ssh=opts.host_ssh.get(host, opts.default_host_ssh), guest_ssh=opts.guest_ssh, ssh_key=opts.ssh_key,
        known_hosts=opts.known_hosts, accept_new_host_keys=opts.accept_new_host_keys,
        command_timeout_s=opts.command_timeout_s, vcenter_timeout_s=opts.vcenter_timeout_s,
        output_cap_bytes=opts.output_cap_bytes, no_guest=not opts.guests, no_guest_why="no --deep-guests",
        env=opts.env, prompt=None)  # hosts run in parallel threads: never a password prompt


def _collect(group: HostGroup, creds: Credentials | None, opts: DeepOptions, progress) -> None:
    names = [row.name for row in group.vms]
    group.bundle = opts.output / f"{slug(group.vcenter)}-{slug(group.host)}"
    writer = BundleWriter(group.bundle, opts.window_s, names)
    if creds is None:
        group.error = f"no credentials for vCenter {group.vcenter}"
        writer.note(group.error)
        return
    vms = [SampledVm(row.moid, row.name) for row in group.vms]
    sampler = HostSampler(sampler_options(opts, group.host), writer, _Progress(group.host, progress), vms, group.host)
    try:
        sampler.run(creds)
    finally:
        sampler.close()
    problems = [sampler.fatal] if sampler.fatal else []
    problems += sampler.unreached_why
    problems += [f"{target}: connection lost" for target in sampler.lost]
    if sampler.fatal:
        writer.note(sampler.fatal)
    if sampler.unreached and sampler.host is None:
        writer.note(f"host {group.host} not reached: no ring counters or esxtop for {', '.join(names)}")
    group.error = "; ".join(problems) or None
