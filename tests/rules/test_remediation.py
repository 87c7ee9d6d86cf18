"""Remediation commands are pasted into shells by admins: names from hosts and guests must not
be able to break out of their quoting."""

from __future__ import annotations

import shlex

import pytest

from esxdiag.rules import remediation as fix


def test_powershell_quote_doubles_every_single_quote_powershell_accepts():
    hostile = "iperf\u2019; Stop-Computer -Force; \u2019"
    quoted = fix.ps_quote(hostile)
    assert quoted == "'iperf\u2019\u2019; Stop-Computer -Force; \u2019\u2019'"
    for ch in "'\u2018\u2019\u201a\u201b":
        inner = fix.ps_quote(f"a{ch}b")[1:-1]
        assert inner == f"a{ch}{ch}b"


def test_limit_removal_commands_quote_the_vm_name():
    r = fix.vsphere_remove_limit("web01'; reboot; '", 800)
    assert "Get-VM -Name 'web01''; reboot; '''" in r.commands[0]
    assert shlex.split(r.commands[1])[3] == "web01'; reboot; '"


def test_persistence_lines_only_embed_valid_names():
    r = fix.linux_raise_ring('eth0"; id; "', "00:50:56:00:00:01' ; id ; '", 1, 256, 4096, 2, 2.4, 1500)
    text = "\n".join(r.persistence)
    assert "ifcfg-<iface>" in text and 'ETHTOOL_OPTS="-G <iface>' in text
    assert "ATTR{address}==\"<mac>\"" in text
    assert "ethtool -G 'eth0\"; id; \"' rx 4096" in r.commands


def test_mtu_9000_note():
    r = fix.linux_raise_ring("eth0", "00:50:56:00:00:01", 1, 256, 4096, 2, 2.4, 9000)
    assert any("4032" in n for n in r.notes)


@pytest.mark.parametrize("counters, changes", [
    (["Receive missed errors"], True), (["Receive FIFO errors"], True), (["Receive over errors"], True),
    (["Receive packets dropped"], True), (["Receive CRC errors", "Receive over errors"], True),
    (["Receive CRC errors"], False), (["Receive length errors", "Receive frame errors"], False), ([], False)])
def test_the_pnic_ring_is_changed_only_for_the_counters_a_bigger_ring_stops(counters, changes):
    """A pNIC ring raise stops an overflowing ring (dropped, missed, FIFO, over errors), never the wire's CRC,
    length or frame errors; with the counters unknown it is read, not changed."""
    r = fix.uplink_loss("vmnic1", counters)
    text = "\n".join(r.commands)
    assert ("ring current set" in text) is changes
    assert ("ring current get" in text) is (changes or not counters)
    assert text.startswith("esxcli network nic stats get -n vmnic1")
    assert r.disruption.startswith("Changing a pNIC ring size") is changes
    assert any("point at the wire" in n for n in r.notes) is any("CRC" in c or "length" in c or "frame" in c
                                                                   for c in counters)
