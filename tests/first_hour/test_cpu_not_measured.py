"""Issue 25 point 6: "CPU not measured" only when no source measured CPU (esxtop recorded the
window: it was measured), and once per host however many of its VMs vCenter returned no samples for."""

from __future__ import annotations

import contextlib
import io
from datetime import datetime, timezone

import pytest

from esxdiag.bundle import BundleWriter
from esxdiag.collectors import vsphere
from esxdiag.collectors.sampler import HostSampler, SampledVm, SamplerOptions
from esxdiag.collectors.terminal import Progress

VMS = ("web01", "web02", "web03")


class _Session:  # what perf() asks of a vCenter session: a deadline around each read
    def within(self, _timeout_s, _what):
        return contextlib.nullcontext()


@pytest.fixture
def no_samples(monkeypatch):
    """vCenter answers, but with no samples for the window (a --window shorter than a 20 s sample)."""
    monkeypatch.setattr(vsphere, "collect_perf", lambda *_a: {"vm": "x", "timestamps": [], "series": []})
    monkeypatch.setattr(vsphere, "collect_events", lambda *_a: {"events": []})
    monkeypatch.setattr(vsphere, "collect_host_perf", lambda *_a: {"series": []})


def _said(tmp_path, esxtop_ok: bool) -> str:
    out = io.StringIO()
    vms = [SampledVm(name, name, ref=object(), inventory={"name": name, "host_moid": "host-1", "host": "esx1"})
           for name in VMS]
    sampler = HostSampler(SamplerOptions(window_s=10), BundleWriter(tmp_path / "b", 10, list(VMS)), Progress(out), vms,
                          "esx1")
    sampler.session, sampler.esxtop_ok = _Session(), esxtop_ok
    now = datetime.now(timezone.utc)
    sampler.perf(now, now)
    return out.getvalue()


def test_cpu_measured_by_esxtop_is_never_called_not_measured(tmp_path, no_samples):
    assert "CPU not measured" not in _said(tmp_path, esxtop_ok=True)


def test_cpu_not_measured_from_any_source_is_said_once_per_host(tmp_path, no_samples):
    said = _said(tmp_path, esxtop_ok=False)
    assert said.count("CPU not measured") == 1, said
    assert all(name in said for name in VMS), said
