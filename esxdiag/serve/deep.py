"""The deep check inside a cycle: which suspects fit this cycle's SSH budget, running `scan`'s own
deep check on them (esxdiag.scanning.run_deep), and the ring figures each checked vNIC exports.

Budget per cycle of one vCenter: at most ``--deep`` VMs on at most ``--deep-hosts`` ESXi hosts,
only hosts with an SSH login configured (``--deep-host-ssh HOST=...``, or one without HOST= for
every host), ``--deep-parallel`` hosts at once; one deep check at a time in the whole process (a
lock shared by the vCenters), so SSH sessions never exceed ``--deep-parallel``. A VM checked less
than ``--deep-recheck`` seconds ago gives its turn to the next suspect, unless named by --deep-vm.
"""

from __future__ import annotations

import argparse
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Mapping

from esxdiag.bundle import create_unique, slug, stamp
from esxdiag.scanning import choose, host_ssh_logins, run_deep, write_html_report
from esxdiag.result import AnalysisResult
from esxdiag.serve.state import DeepCheck
from esxdiag.serve.store import iso

RING_FIGURES = (("ring1_full", "per_s"), ("ring2_full", "per_s"), ("host_out_of_buffers", "per_s"),
                ("ring1_size", None), ("ring2_size", None))


def pick(document: dict, args: argparse.Namespace, recent: Mapping[str, float], now: float) -> list[dict]:
    """The rows to deep-check this cycle (see the module's budget), most urgent first."""
    per_host, default = host_ssh_logins(args.deep_host_ssh)
    named = [r for r in document["vms"] if r["power_state"] == "poweredOn" and
             (r["name"] in args.deep_vm or r["moid"] in args.deep_vm)]
    suspects = [r for r in choose(document, len(document["vms"]), []) if r not in named and
                now - recent.get(r["moid"], float("-inf")) >= args.deep_recheck]
    chosen, hosts = [], set()
    for row in named + suspects:
        host = row["host"] or "(unknown host)"
        if len(chosen) >= max(args.deep, len(named)) or (default is None and host not in per_host):
            continue
        if host not in hosts and len(hosts) >= args.deep_hosts:
            continue
        hosts.add(host)
        chosen.append(row)
    return chosen


def vnic_figures(result: AnalysisResult) -> dict[str, list[dict]]:
    """VM name -> one row per vNIC: label, MAC, verdict, ring-full and out-of-buffer rates, ring sizes."""
    out = {}
    for vm in result.vms:
        rows = []
        for nic in vm.vnics:
            row = {"label": nic.label, "mac": nic.mac, "verdict": nic.ring_verdict}
            for key, part in RING_FIGURES:
                value = nic.metrics.get(key)
                row[key] = (value or {}).get(part) if part else value
            rows.append(row)
        out[vm.name] = rows
    return out


class DeepRunner:
    """Runs one vCenter's deep check of a cycle; the lock is shared by every vCenter's cycles."""

    def __init__(self, args: argparse.Namespace, thresholds: dict, data_dir: Path, lock: threading.Lock):
        self.args, self.thresholds, self.data_dir, self.lock = args, thresholds, data_dir, lock
        self.root = data_dir / "deep"

    def run(self, document: dict, snapshot, creds, stop: threading.Event, recent: Mapping[str, float],
            now: float) -> tuple[list[DeepCheck], int]:
        """Deep-check this cycle's picks and fold them into ``document``; (checks, hosts not reached)."""
        chosen = pick(document, self.args, recent, now)
        if not chosen:
            return [], 0
        while not self.lock.acquire(timeout=0.5):  # another vCenter's deep check holds the SSH budget
            if stop.is_set():
                return [], 0
        try:
            figures: dict[Path, dict[str, list[dict]]] = {}

            def write_report(result: AnalysisResult, bundle: Path) -> Path:
                figures[bundle.resolve()] = vnic_figures(result)
                return write_html_report(result, bundle)

            def bundles_dir() -> Path:  # deep/<vCenter>/<time>/<host bundle>
                return create_unique(self.root / slug(f"{creds.host}_{creds.port}"), stamp())

            run_deep(self.args, document, snapshot, self.thresholds, [creds], self.data_dir, bundles_dir,
                     chosen=chosen, write_report=write_report)
        finally:
            self.lock.release()
        ended = datetime.now(timezone.utc)
        checks = [_check(document["vcenters"][0]["name"], vm, figures, self.data_dir, ended)
                  for vm in (document.get("deep") or {}).get("vms", [])]
        unreached = sum(1 for h in document["deep"]["hosts"] if h["error"])
        return checks, unreached


def _check(vcenter: str, vm: dict, figures: dict, data_dir: Path, ended: datetime) -> DeepCheck:
    bundle = (data_dir / vm["bundle"]).resolve() if vm.get("bundle") else None
    vnics = figures.get(bundle, {}).get(vm["name"], []) if bundle else []
    return DeepCheck(vcenter, vm["moid"], vm["name"], iso(ended), ended.timestamp(), tuple(vm["verdicts"]),
                     vm["worst_severity"], vm["report"], vm["error"], tuple(vnics))
