"""Plain words for bundle paths, evidence tests, vCPU names, times and counts."""

from __future__ import annotations

import pytest

from esxdiag.reports.words import count, source_words, split_evidence, threshold_met, utc_time, vcpu_words
from esxdiag.result import Evidence


@pytest.mark.parametrize("path, words", [
    ("esxi-esx0.lab.local/vsish_rxsummary@port=33554464,portset=vSwitch0.s1.txt",
     "vsish rxSummary (port 33554464), reading 2"),
    ("esxi-esx0.lab.local/vsish_rxqueue_status@port=33554464,portset=vSwitch0,queue=0.txt",
     "vsish rx queue 0 status (port 33554464)"),
    ("esxi-esx0.lab.local/esxtop_batch@delay=5,iterations=12.txt", "esxtop batch capture"),
    ("guest-iperf-test1/ethtool_stats@iface=eth0.s0.txt", "guest ethtool -S eth0, reading 1"),
    ("vcenter/vsphere_vm@vm=iperf-cpu-limited.json", "vCenter VM inventory"),
    ("esxi-esx0/vsish_rxsummary.s1.txt", "vsish rxSummary, reading 2"),  # hand-made: no params
    ("host\\notes\\my capture.txt", "my capture.txt"),
])
def test_source_words(path, words):
    assert source_words(path) == words


def test_every_spec_has_words():
    from esxdiag.reports.words import SPEC_WORDS
    from esxdiag.specs import SPECS

    assert set(SPECS) - set(SPEC_WORDS) <= {"esxcli_vm_list", "esxcli_vm_ports"}


def test_utc_time_names_the_zone():
    assert utc_time("2026-11-21T06:01:24.102Z") == "2026-11-21 06:01:24 UTC"
    assert utc_time("2026-11-21T08:01:24+02:00") == "2026-11-21 06:01:24 UTC"
    assert utc_time("2026-11-21T06:01:24") == "2026-11-21 06:01:24 UTC"
    assert utc_time("yesterday") == "yesterday" and utc_time(None) == "n/a"


def test_threshold_met_and_split():
    full = Evidence("1st ring full", 1468, "events", 0, ">")
    quiet = Evidence("2nd ring full", 0, "events", 0, ">")
    limit = Evidence("CPU limit configured", 800, "MHz")
    odd = Evidence("adapter type", "e1000", None, "vmxnet3", "!=")
    assert [threshold_met(e) for e in (full, quiet, limit, odd)] == [True, False, None, True]
    assert split_evidence((quiet, full, limit)) == ([full, limit], [quiet])
    # nothing crossed a threshold ("no ring change needed"): the quiet counters are the reason
    assert split_evidence((quiet,)) == ([quiet], [])
    assert threshold_met(Evidence("x", "abc", None, 3, ">")) is None


def test_vcpu_words_and_counts():
    assert vcpu_words("vmx-vcpu-0:iperf-test1") == "vCPU 0" and vcpu_words("vCPU 3") == "vCPU 3"
    assert count(1, "vCPU") == "1 vCPU" and count(2, "vCPU") == "2 vCPUs"
    assert count(1024, "entry", "entries") == "1,024 entries" and count(None, "vCPU") == "n/a vCPUs"
