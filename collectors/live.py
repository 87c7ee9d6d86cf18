"""Live collection of one VM: vCenter inventory, then its ESXi host and guest over SSH, sampled
at both ends of a window that esxtop covers, then vCenter performance for the same window — the
host sampler (esxdiag.collectors.sampler) the fleet deep check runs too, for one VM.

Everything lands in a bundle as it is collected (the manifest is rewritten after every
capture), so a failure or Ctrl-C leaves a valid partial bundle that says what is missing."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from esxdiag.bundle import BundleWriter
from esxdiag.collectors.credentials import resolve_credentials
from esxdiag.collectors.sampler import HostSampler, SampledVm, SamplerOptions, error_kind, parse_ssh
from esxdiag.collectors.terminal import Progress, terminal_prompt

__all__ = ["LiveOptions", "Outcome", "collect", "error_kind", "parse_ssh"]


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


def sampler_options(opts: LiveOptions) -> SamplerOptions:
    return SamplerOptions(
        window_s=opts.window_s, esxtop_delay_s=opts.esxtop_delay_s, host_ssh=opts.host_ssh, guest_ssh=opts.guest_ssh,
        guest_os=opts.guest_os, ssh_key=opts.ssh_key, known_hosts=opts.known_hosts,
        accept_new_host_keys=opts.accept_new_host_keys, command_timeout_s=opts.command_timeout_s,
        vcenter_timeout_s=opts.vcenter_timeout_s, output_cap_bytes=opts.output_cap_bytes, no_host_ssh=opts.no_host_ssh,
        no_guest=opts.no_guest, insecure_flag=opts.insecure, env=opts.env, prompt=opts.prompt)


def collect(opts: LiveOptions, progress: Progress | None = None) -> Outcome:
    """Collect one VM into opts.output. Bad usage (credentials, URL) raises before anything is
    written; everything after lands in the bundle."""
    creds = resolve_credentials(opts.vcenter, opts.username, insecure=opts.insecure, thumbprint=opts.thumbprint,
                                env=opts.env, config_path=opts.config)
    progress = progress or Progress()
    writer = BundleWriter(opts.output, opts.window_s, [opts.vm])
    run = HostSampler(sampler_options(opts), writer, progress, [SampledVm(opts.vm, opts.vm)])
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

