"""Windows guest collection plan (OpenSSH to PowerShell): adapters, advanced properties, RSS,
statistics (sampled) and logical CPU count."""

from __future__ import annotations

from esxdiag import specs
from esxdiag.bundle import BundleWriter, Capture
from esxdiag.collectors.captures import run_capture
from esxdiag.collectors.ssh import SshConnection

WINDOWS_SPECS = ("win_netadapter", "win_advprops", "win_rss", "win_stats", "win_cpu")


def collect_windows(conn: SshConnection, writer: BundleWriter, target_id: str, sample: int) -> list[Capture]:
    """Sample 0 captures everything; later samples only the cumulative counters."""
    captures = []
    for name in WINDOWS_SPECS:
        if sample > 0 and not specs.spec(name).sampled:
            continue
        captures.append(run_capture(conn, writer, target_id, name, {}, sample if specs.spec(name).sampled else None)[0])
    return captures
