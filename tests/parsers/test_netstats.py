"""net-stats -l and net-stats -A parsers on real listings (provenance: tests/fixtures/host/README.md):
the seed's collapsed-space listing, an NSX host with "NSX Manager.eth0", an esxcli netstats
listing with uplinks > 2^31, a listing whose first vNICs lack .ethN; warlock's pretty -A
JSON and a raw ENS excerpt; plus docs/raw-formats.md §7 items 3-4 and bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from esxdiag.errors import NoData, ParseError
from esxdiag.parsers import parse_file, to_jsonable
from esxdiag.parsers.netstats import normalize_mac, parse_net_stats_json, parse_net_stats_list

HOST = Path(__file__).resolve().parent.parent / "fixtures" / "host"
UBUNTU_VM = "6-vm-ubuntu-18.04-server-amd64-local-1196-01964aa9-e913-47f9-8439-80a4f5a59458"


def read(name: str) -> str:
    return (HOST / name).read_text()


def test_seed_listing_with_collapsed_spaces():
    listing = parse_net_stats_list(read("seed002_net_stats_l_collapsed.txt"))
    first, second = listing.ports
    assert (first.port, first.type, first.subtype, first.switch) == (33554464, 5, 9, "vSwitch0")
    assert (first.mac, first.client, first.kind) == ("00:50:56:a6:55:f4", "iperf-test1", "vnic")
    # no .ethN suffix: the VM's first vNIC
    assert (first.vm, first.vnic_index) == ("iperf-test1", 0)
    assert second.port == 33554465 and second.vm == "iperf-test2"
    assert listing.warnings == ()


def test_space_in_client_name_and_subtype_7():
    listing = parse_net_stats_list(read("net_stats_l_nsx_space_in_clientname.txt"))
    assert len(listing.ports) == 14
    manager = listing.by_port(100663359)
    assert (manager.client, manager.vm, manager.vnic_index) == ("NSX Manager.eth0", "NSX Manager", 0)
    controller = listing.by_port(100663356)
    assert controller.subtype == 7 and controller.vm == "NSX_Controller_4e6a2ed1-f438-4791-a8ae-07bc782b3735"
    assert listing.by_port(100663353).vnic_index == 1
    kinds = [p.kind for p in listing.ports]
    assert kinds.count("uplink") == 4 and kinds.count("vmknic") == 6 and kinds.count("vnic") == 4


def test_uplinks_above_2_to_31_and_internal_port():
    listing = parse_net_stats_list(read("net_stats_l_esxcli_netstats_ports_vedge.txt"))
    vmnic0 = listing.by_port(2214592518)
    assert vmnic0.kind == "uplink" and vmnic0.port > 2**31 and vmnic0.vm is None and vmnic0.vnic_index is None
    vdr = listing.by_port(67108879)
    assert (vdr.kind, vdr.client, vdr.vm) == ("internal", "vdr-vdrPort", None)
    assert [p.vnic_index for p in listing.ports if p.vm == "vedge3"] == [4, 3, 2, 1, 0]
    # uplink and vmknic share a MAC: both are returned
    assert [p.client for p in listing.by_mac("00:50:56:01:10:01")] == ["vmnic0", "vmk0"]


def test_first_vnic_without_suffix_and_second_with_eth1():
    listing = parse_net_stats_list(read("net_stats_l_no_eth_suffix_big_uplinks.txt"))
    ports = [p for p in listing.ports if p.vm == UBUNTU_VM]
    assert [(p.port, p.vnic_index, p.switch) for p in ports] == [
        (100663335, 0, "vSwitch0"), (167772198, 1, "DvsPortset-0")]
    assert listing.by_port(2315255836).client == "vmnic5"
    assert listing.by_port(2281701400).client == "vusb0" and listing.by_port(2281701400).kind == "uplink"


def test_vm_name_with_dots_keeps_them():
    text = ("PortNum Type SubType SwitchName MACAddress ClientName\n"
            "33554470 5 9 vSwitch0 00:50:56:ac:e2:16 wzh-centos-25.155\n"
            "33554471 5 9 vSwitch0 00:50:56:ac:e2:17 wzh-centos-25.155.eth1\n"
            "33554472 5 7 vSwitch0 00:50:56:ac:e2:18 app.eth-test\n")
    ports = parse_net_stats_list(text).ports
    assert [(p.vm, p.vnic_index) for p in ports] == [("wzh-centos-25.155", 0), ("wzh-centos-25.155", 1),
                                                     ("app.eth-test", 0)]


def test_by_mac_normalizes_case_and_dashes():
    listing = parse_net_stats_list(read("seed002_net_stats_l_collapsed.txt"))
    assert listing.by_mac("00-50-56-A6-44-72")[0].client == "iperf-test2"
    assert listing.by_mac("00:50:56:00:00:00") == ()
    with pytest.raises(ValueError):
        normalize_mac("00:50:56")


def test_headerless_listing_is_accepted_with_warning():
    body = read("seed002_net_stats_l_collapsed.txt").split("\n", 1)[1]
    listing = parse_net_stats_list(body)
    assert len(listing.ports) == 2 and "no header" in listing.warnings[0]


@pytest.mark.parametrize("text, line, why", [
    ("PortNum Type SubType SwitchName MACAddress ClientName\n33554464 5 9 vSwitch0\n", 2, "expected 6 columns"),
    ("PortNum Type SubType SwitchName MACAddress ClientName\n3355x464 5 9 vSwitch0 00:50:56:a6:55:f4 a\n", 2,
     "must be integers"),
    ("PortNum Type SubType SwitchName MACAddress ClientName\n33554464 5 9 vSwitch0 00:50:56:a6:55 a\n", 2,
     "not a MAC"),
    ("PortNum Type SubType SwitchName MACAddress ClientName\n1 5 9 s 00:50:56:a6:55:f4 a\n\n1 5 9 s "
     "00:50:56:a6:55:f5 b\n", 4, "listed twice"),
    ("NIC statistics:\n     pkts rx OOB: 7129\n", 1, "expected the net-stats -l header"),
    ("\x1b[2J\x07\x05garbage\n", 1, "expected the net-stats -l header"),
])
def test_bad_listing_is_parse_error_with_line(text, line, why):
    with pytest.raises(ParseError, match=why) as error:
        parse_net_stats_list(text)
    assert error.value.line == line


def test_empty_or_header_only_listing_is_nodata():
    with pytest.raises(NoData, match="empty"):
        parse_net_stats_list("\n")
    with pytest.raises(NoData, match="header only"):
        parse_net_stats_list("PortNum          Type SubType SwitchName       MACAddress         ClientName\n")


def test_pretty_json_with_string_booleans():
    sample = parse_net_stats_json(read("net_stats_A_pretty_warlock_first_port.json"))
    assert sample.sysinfo == {"hostname": "localhost.default.test.wdc"}
    assert len(sample.stats) == 1 and sample.stats[0]["interval"] == 10
    (port,) = sample.ports
    assert port["name"] == "vf-test-np1-h5mtj-9cf8fdcf6xcfln5-k9jcm.eth0" and port["id"] == 67108902
    assert port["uplink"] is False and port["sink"] is False and port["upt"] is False
    assert port["vnic"]["ring1sz"] == 4096 and port["vnic"]["r1full"] == 0.0
    assert len(port["vcpu"]) == 32 and port["vcpu"][0] == "2105234"
    assert sample.warnings == ()


def test_raw_one_port_per_line_layout():
    sample = parse_net_stats_json(read("net_stats_A_raw_fgvm_ens.json"))
    eth2, eth1 = sample.ports
    assert eth2["ens"] is True and eth2["sink"] is False and "vnic" not in eth2
    assert eth1["vnic"]["type"] == "vmxnet3" and eth1["vnic"]["ring2sz"] == 4096
    assert eth1["lcore"] == [{"in": ["4", "4"], "out": ["12", "12"]}]


def test_duplicate_keys_are_all_kept():
    text = read("net_stats_A_pretty_warlock_first_port.json").replace(
        '"qstop": 0.0,', '"qstop": 0.0,\n "qstop": 3.5,\n "qstop": 7.0,')
    vnic = parse_net_stats_json(text).ports[0]["vnic"]
    assert (vnic["qstop#1"], vnic["qstop#2"], vnic["qstop"]) == (0.0, 3.5, 7.0)
    assert "qstop" in parse_net_stats_json(text).warnings[0]


def test_name_that_reads_true_stays_a_string():
    text = read("net_stats_A_raw_fgvm_ens.json").replace('"FGVM-TIGER-15-31.eth2"', '"true"')
    assert parse_net_stats_json(text).ports[0]["name"] == "true"


def test_truncated_json_is_parse_error_with_line():
    with pytest.raises(ParseError, match="truncated") as error:
        parse_net_stats_json(read("net_stats_A_pretty_warlock_truncated.json"))
    assert error.value.line == 130


@pytest.mark.parametrize("text, why", [
    ('{"sysinfo": {}}', "no top-level 'stats'"),
    ("[1, 2]", "no top-level 'stats'"),
    ('{"stats": [{"time": 1}]}', "no 'ports' list"),
    (read("seed002_net_stats_l_collapsed.txt"), "not valid net-stats JSON"),
    ("\x00\x01binary", "not valid net-stats JSON"),
])
def test_bad_json_is_parse_error(text, why):
    with pytest.raises(ParseError, match=why):
        parse_net_stats_json(text)


def test_json_without_samples_or_ports_is_nodata():
    for text in ("", '{"sysinfo": {}, "stats": []}', '{"stats": [{"ports": []}]}'):
        with pytest.raises(NoData):
            parse_net_stats_json(text)


def test_parse_file_end_to_end(tmp_path):
    listing = parse_file("net-stats", HOST / "net_stats_l_nsx_space_in_clientname.txt")
    assert listing.by_port(100663359).vm == "NSX Manager"
    assert to_jsonable(listing)["ports"][0]["client"] == "vmnic3"
    sample = parse_file("net-stats-json", HOST / "net_stats_A_raw_fgvm_ens.json")
    assert sample.ports[1]["id"] == 67108889
    with pytest.raises(ParseError) as error:
        parse_file("net-stats-json", HOST / "net_stats_A_pretty_warlock_truncated.json")
    assert error.value.file.endswith("net_stats_A_pretty_warlock_truncated.json") and error.value.line == 130
    header_only = tmp_path / "net-stats.txt"
    header_only.write_text("PortNum Type SubType SwitchName MACAddress ClientName\n")
    with pytest.raises(NoData) as nodata:
        parse_file("net-stats", header_only)
    assert nodata.value.file == str(header_only)
