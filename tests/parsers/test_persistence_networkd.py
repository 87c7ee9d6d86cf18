"""Ring sizes set at boot by a systemd-networkd .link file ([Link] RxBufferSize=...), and the typed setting
the join keeps for one interface (file, line, mechanism, values; commented lines and other interfaces out)."""

from __future__ import annotations

from esxdiag.join.guest import ring_settings
from esxdiag.parsers.linux import parse_ring_persistence

GREP = """\
/etc/systemd/network/10-vmxnet3.link:6:RxBufferSize=4096
/etc/systemd/network/10-vmxnet3.link:7:RxJumboBufferSize=2048
/etc/systemd/network/10-vmxnet3.link:8:TxBufferSize=1024
/etc/systemd/system/ethtool-rings.service:7:ExecStart=/usr/sbin/ethtool -G eth0 rx 4032
/etc/systemd/system/old.service:7:#ExecStart=/usr/sbin/ethtool -G eth0 rx 512
/etc/rc.local:13:ethtool -G eth1 rx 2048
"""


def test_networkd_link_buffer_sizes_are_ring_settings():
    hits = parse_ring_persistence(GREP).hits
    assert [(h.mechanism, h.rx, h.rx_jumbo, h.tx) for h in hits[:3]] == [
        ("networkd", 4096, None, None), ("networkd", None, 2048, None), ("networkd", None, None, 1024)]
    assert hits[3].mechanism == "systemd"


def test_the_join_keeps_this_interfaces_settings_typed():
    settings = ring_settings(parse_ring_persistence(GREP).hits, "eth0")
    assert [(s.file, s.line, s.mechanism, s.iface, s.rx) for s in settings] == [
        ("/etc/systemd/network/10-vmxnet3.link", 6, "networkd", None, 4096),
        ("/etc/systemd/network/10-vmxnet3.link", 7, "networkd", None, None),
        ("/etc/systemd/network/10-vmxnet3.link", 8, "networkd", None, None),
        ("/etc/systemd/system/ethtool-rings.service", 7, "systemd", "eth0", 4032)]  # eth1's and the '#' line out
