"""ip link and ring-persistence parsers. ip link fixtures were captured on the development VM
(iproute2 6.1.0); see tests/fixtures/guest/README.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from esxdiag.errors import NoData, ParseError
from esxdiag.parsers import parse_file
from esxdiag.parsers.linux import parse_ip_link, parse_ring_persistence

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "guest"


def test_local_ip_o_link_show():
    links = parse_file("ip-link", FIX / "local_ip_o_link_show.txt").links
    lines = [l for l in (FIX / "local_ip_o_link_show.txt").read_text().splitlines() if l.strip()]
    assert len(links) == len(lines)
    lo = links[0]
    assert (lo.index, lo.name, lo.mac, lo.link_type, lo.mtu) == (1, "lo", None, "loopback", 65536)
    assert "LOOPBACK" in lo.flags
    ether = [l for l in links if l.link_type == "ether"]
    assert ether and all(l.mac and l.mac == l.mac.lower() and l.mac in line for l, line in
                         zip(ether, [x for x in lines if "link/ether" in x]))


def test_multi_line_form_equals_one_line_form():
    one = parse_file("ip-link", FIX / "local_ip_o_link_show.txt")
    multi = parse_file("ip-link", FIX / "local_ip_link_show.txt")
    assert one == multi


def test_peer_name_altname_and_permaddr():
    text = ("7: veth1@if6: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc noqueue state UP mode DEFAULT "
            "group default qlen 1000\\    link/ether 3A:1B:2C:3D:4E:5F brd ff:ff:ff:ff:ff:ff link-netnsid 0\n"
            "3: ens192: <BROADCAST,MULTICAST,SLAVE,UP,LOWER_UP> mtu 9000 qdisc mq master bond0 state UP mode "
            "DEFAULT group default qlen 1000\\    link/ether 00:50:56:a6:55:f4 brd ff:ff:ff:ff:ff:ff permaddr "
            "00:50:56:A6:55:F5\\    altname enp11s0\n"
            "9: tun0: <POINTOPOINT,MULTICAST,NOARP,UP,LOWER_UP> mtu 1500 qdisc fq_codel state UNKNOWN mode "
            "DEFAULT group default qlen 500\\    link/none \n")
    veth, ens, tun = parse_ip_link(text).links
    assert (veth.name, veth.peer, veth.mac) == ("veth1", "if6", "3a:1b:2c:3d:4e:5f")
    assert (ens.mtu, ens.permaddr, ens.altnames, ens.attributes["master"]) == \
        (9000, "00:50:56:a6:55:f5", ("enp11s0",), "bond0")
    assert (tun.link_type, tun.mac, tun.state) == ("none", None, "UNKNOWN")


@pytest.mark.parametrize("text,error", [("", NoData), ("garbage\n", ParseError),
                                        ("driver: vmxnet3\n", ParseError)])
def test_ip_link_bad_input(text, error):
    with pytest.raises(error):
        parse_ip_link(text)


GREP = """\
/etc/rc.local:14:/sbin/ethtool -G eth0 rx 4096 rx-jumbo 4096
/etc/udev/rules.d/60-ring.rules:1:ACTION=="add", SUBSYSTEM=="net", KERNEL=="eth0", RUN+="/sbin/ethtool -G $name rx 4096"
/etc/NetworkManager/system-connections/Wired connection 1.nmconnection:12:ring-rx=4096
/etc/NetworkManager/system-connections/Wired connection 1.nmconnection:13:ring-rx-jumbo=2048
/etc/sysconfig/network-scripts/ifcfg-eth0:9:ETHTOOL_OPTS="-G eth0 rx 4096"
/etc/systemd/system/ring.service:7:#ExecStart=/usr/sbin/ethtool -G ens192 rx 2048
/etc/network/interfaces:8:    post-up /sbin/ethtool --set-ring eth1 rx 1024 tx 1024
/etc/network/interfaces:9:    post-up ethtool -K eth0 tso off
/etc/netplan/01-netcfg.yaml:3:# ethtool settings are not supported here
"""


def test_ring_persistence_mechanisms():
    hits = parse_ring_persistence(GREP).hits
    got = [(h.mechanism, h.iface, h.rx, h.rx_jumbo, h.sets_ring) for h in hits]
    assert got == [
        ("rc.local", "eth0", 4096, 4096, True),
        ("udev", "eth0", 4096, None, True),
        ("networkmanager", None, 4096, None, True),
        ("networkmanager", None, None, 2048, True),
        ("network-scripts", "eth0", 4096, None, True),
        ("systemd", "ens192", 2048, None, False),  # commented out
        ("ifupdown", "eth1", 1024, None, True),
        ("ifupdown", None, None, None, False),
        ("netplan", None, None, None, False),
    ]
    assert hits[2].file.endswith("Wired connection 1.nmconnection") and hits[2].line == 12
    assert hits[6].tx == 1024


def test_empty_grep_means_nothing_is_persistent():
    record = parse_ring_persistence("")
    assert record.hits == () and record.persistent is False
    assert parse_ring_persistence(GREP).persistent is True


def test_ring_persistence_rejects_other_output():
    with pytest.raises(ParseError):
        parse_ring_persistence((FIX / "seed002_ethtool_g_before.txt").read_text())


def test_ring_persistence_via_parse_file_empty_capture(tmp_path):
    capture = tmp_path / "ring_persistence.txt"
    capture.write_bytes(b"")
    assert parse_file("ring-persistence", capture).hits == ()


# ---------------------------------------------------------------- ip -s link (issue 19 point 2)

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "realworld"


def test_ip_s_link_counters_per_interface_and_no_invented_pairs():
    links = parse_file("ip-link", REAL / "ip_s_link.txt")
    lo, ens = links.links
    assert (ens.name, ens.mac, ens.mtu, ens.altnames) == ("ens192", "00:50:56:a6:55:f4", 1500, ("enp11s0",))
    assert ens.stats["rx"] == {"bytes": 1349559832608, "packets": 40960296, "errors": 0, "dropped": 8373,
                               "missed": 0, "mcast": 618448437}
    assert ens.stats["tx"]["packets"] == 9050399 and ens.stats["tx"]["collisions"] == 0
    assert lo.stats["rx"]["bytes"] == 48213312 and ens.rx_missed == 0
    for link in links.links:  # the counters never become "key value" pairs of the header
        assert not {"RX:", "TX:", "bytes", "mcast", "collsns"} & set(link.attributes)
        assert not any(value.isdigit() and key not in ("mtu", "qlen") for key, value in link.attributes.items())
    assert links.warnings == ()


def test_ip_s_s_link_of_an_older_iproute2_with_error_details():
    (lo, eth0) = parse_file("ip-link", REAL / "ip_s_s_link_old_iproute2.txt").links
    assert eth0.stats["rx"] == {"bytes": 9271002113, "packets": 6112301, "errors": 0, "dropped": 10370,
                                "overrun": 0, "mcast": 3037}
    assert eth0.stats["rx_errors"]["missed"] == 1656 and eth0.rx_missed == 1656
    assert eth0.stats["tx_errors"] == {"aborted": 0, "fifo": 0, "window": 0, "heartbeat": 0, "transns": 2}


def test_ip_o_s_link_and_a_header_cut_from_its_counters():
    one_line = ("2: eth0: <BROADCAST,UP> mtu 1500 qdisc mq state UP\\    link/ether 00:50:56:a6:44:72 brd "
                "ff:ff:ff:ff:ff:ff\\    RX: bytes  packets  errors  dropped overrun mcast   \\    10 2 0 1 0 0\n")
    (link,) = parse_ip_link(one_line).links
    assert link.stats["rx"]["dropped"] == 1 and link.mac == "00:50:56:a6:44:72"
    cut = (REAL / "ip_s_link.txt").read_text().splitlines(keepends=True)[:-4]  # ends after ens192's RX: header
    record = parse_ip_link("".join(cut))
    assert "rx" not in record.links[1].stats and "RX: header without its counter line" in record.warnings[0]


def test_ip_address_gives_addresses_not_pairs():
    text = ("2: ens192: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc mq state UP group default qlen 1000\n"
            "    link/ether 00:50:56:a6:55:f4 brd ff:ff:ff:ff:ff:ff\n"
            "    inet 10.20.0.15/24 brd 10.20.0.255 scope global ens192\n"
            "       valid_lft forever preferred_lft forever\n"
            "    inet6 fe80::250:56ff:fea6:55f4/64 scope link\n"
            "       valid_lft forever preferred_lft forever\n")
    (link,) = parse_ip_link(text).links
    assert link.addresses == ("10.20.0.15", "fe80::250:56ff:fea6:55f4") and "inet" not in link.attributes


@pytest.mark.parametrize("text, named", [
    ("eth0: flags=4163<UP,BROADCAST,RUNNING,MULTICAST>  mtu 1500\n        inet 10.0.0.5\n", "ifconfig"),
    ("eth0      Link encap:Ethernet  HWaddr 00:50:56:a6:55:f4\n", "ifconfig"),
    ("lo               UNKNOWN        00:00:00:00:00:00 <LOOPBACK,UP,LOWER_UP>\n", "ip -br link"),
    ('[{"ifindex":1,"ifname":"lo"}]\n', "ip -j JSON"),
    ("Kernel Interface table\nIface      MTU    RX-OK RX-ERR\n", "netstat -i"),
])
def test_another_format_is_an_error_naming_it(text, named):
    with pytest.raises(ParseError, match=named) as error:
        parse_ip_link(text)
    assert error.value.line == 1
