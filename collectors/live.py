"""Live collection of one VM: vCenter inventory, then its ESXi host and guest over SSH, sampled
at both ends of a window that esxtop covers, then vCenter performance for the same window — the
host sampler (esxdiag.collectors.sampler) the fleet deep check runs too, for one VM.

Everything lands in a bundle as it is collected (the manifest is rewritten after every
capture), so a failure or Ctrl-C leaves a valid partial bundle that says what is missing."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from esxdiag.bundle import BundleWriter
from esxdiag.collectors.credentials import resolve_credentials
from esxdiag.collectors.sampler import HostSampler, SampledVm, SamplerOptions, error_kind, parse_ssh
from esxdiag.collectors.terminal import Progress, terminal_prompt

__all__ = ["LiveOptions", "Outcome", "collect", "error_kind", "parse_ssh"]


@dataclass(frozen=True)
class LiveOptions:
    """One VM's live run: the VM, where its bundle goes, its vCenter login, and how its host and guest
    are sampled (the options the fleet deep check gives the same sampler)."""

    vm: str
    output: Path
    sampling: SamplerOptions = field(
        default_factory=lambda: SamplerOptions(env=dict(os.environ), prompt=terminal_prompt()))
    vcenter: str | None = None
    username: str | None = None
    insecure: bool | None = None
    thumbprint: str | None = None
    config: Path | None = None


@dataclass(frozen=True)
class Outcome:
    bundle: Path | None  # None: nothing was collected, so no folder was kept (esxdiag.cli.live)
    fatal: str | None  # why the VM could not be covered (vCenter unreachable, VM not found, off)
    interrupted: bool = False
    unreached: tuple[str, ...] = ()  # host/guest targets that could not be connected to
    lost: tuple[str, ...] = ()  # host/guest targets whose connection died during the run

    @property
    def incomplete(self) -> bool:
        return bool(self.fatal or self.unreached or self.lost)


def collect(opts: LiveOptions, progress: Progress | None = None) -> Outcome:
    """Collect one VM into opts.output. Bad usage (credentials, URL) raises before anything is
    written; everything after lands in the bundle."""
    creds = resolve_credentials(opts.vcenter, opts.username, insecure=opts.insecure, thumbprint=opts.thumbprint,
                                env=opts.sampling.env, config_path=opts.config)
    progress = progress or Progress()
    writer = BundleWriter(opts.output, opts.sampling.window_s, [opts.vm])
    run = HostSampler(opts.sampling, writer, progress, [SampledVm(opts.vm, opts.vm)])
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
        writer.note(run.fatal)  # the caller keeps the folder only if something was collected into it
    else:
        progress.step(f"bundle written: {writer.root}")
    return Outcome(writer.root, run.fatal, unreached=tuple(run.unreached), lost=tuple(run.lost))

