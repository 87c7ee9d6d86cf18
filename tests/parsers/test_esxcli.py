"""esxcli parsers on real output (provenance: tests/fixtures/host/README.md): two
`esxcli network vm list` tables (one padded with trailing spaces), their `vm port list -w`
blocks, the intel/mfd `nic stats get -n vmnic9` fixture; docs/raw-formats.md §7 item 5 and bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from esxdiag.errors import NoData, ParseError
from esxdiag.parsers import parse_file, to_jsonable
from esxdiag.parsers.esxcli import parse_nic_stats, parse_vm_list, parse_vm_ports

HOST = Path(__file__).resolve().parent.parent / "fixtures" / "host"

# Row shape from a public Go parser's test (index id 57538907905): a name with a space and a comma
NAME_WITH_COMMA = """World ID  Name                            Num Ports  Networks
--------  ------------------------------  ---------  --------
 2100697  fnOS                                     1  VM Network
 2100710  Windows Server 2022, with GPU            2  VM Network, Internal
"""


def read(name: str) -> str:
    return (HOST / name).read_text()


def test_vm_list_with_trailing_spaces():
    text = read("esxcli_vm_list_wzh_trailing_spaces.txt")
    lines = text.splitlines()
    assert all(lines[i].endswith(" ") for i in (0, 2, 3, 4))  # the quirk is in the bytes
    vms = parse_vm_list(text).vms
    assert [(v.world_id, v.name, v.num_ports) for v in vms] == [
        (193286, "wzh-centos-25.155", 1), (221168, "wzh-DPMP-3.0-25.157", 1),
        (184549, "windows-25.158", 1), (127634, "DPMP3.0", 2)]
    assert vms[0].networks == ("VM Network",)
    assert vms[3].networks == ("VM Network", "VM Network")  # repeats kept


def test_vm_list_long_ruler_and_many_networks():
    vms = parse_vm_list(read("esxcli_vm_list_rayd62.txt")).vms
    assert len(vms) == 11
    ftd = next(v for v in vms if v.name == "FTD_Lab")
    assert ftd.world_id == 2119833 and ftd.num_ports == 6
    assert ftd.networks == ("Security_Lab_Site1_VPN", "Security_Lab_Site1_DMZ", "Security_Lab_Site1_Inside",
                            "Security_Lab_Site1_Outside", "Security_Lab_Site1_Inside", "VM Network")
    site1 = next(v for v in vms if v.world_id == 2178744)
    assert site1.name == "Site1_GW" and site1.networks == ("Security_Lab_Site1_Outside", "Site1_to_CPE")


def test_vm_names_with_spaces_and_commas_are_sliced_by_ruler():
    vms = parse_vm_list(NAME_WITH_COMMA).vms
    assert vms[1].name == "Windows Server 2022, with GPU"
    assert (vms[1].world_id, vms[1].num_ports, vms[1].networks) == (2100710, 2, ("VM Network", "Internal"))


def test_vm_port_block_with_empty_values_and_trailing_space():
    (port,) = parse_vm_ports(read("esxcli_vm_port_list_wzh_221168.txt")).ports
    assert (port.port_id, port.vswitch, port.portgroup) == (33554458, "vSwitch0", "VM Network")
    assert port.dvport_id is None and port.ip is None and port.active_filters == ()
    assert (port.mac, port.team_uplink, port.uplink_port_id) == ("00:50:56:ac:e2:16", "vmnic0", 33554436)
    assert port.fields["DVPort ID"] == "" and port.fields["IP Address"] == "0.0.0.0"
    assert len(port.fields) == 9


def test_vm_port_list_two_records():
    ports = parse_vm_ports(read("esxcli_vm_port_list_rayd62_2178744.txt")).ports
    assert [(p.port_id, p.portgroup, p.mac) for p in ports] == [
        (33554578, "Security_Lab_Site1_Outside", "00:0c:29:47:03:dc"),
        (33554579, "Site1_to_CPE", "00:0c:29:47:03:d2")]


def test_new_port_id_starts_a_record_without_blank_line_and_void_uplink():
    # layout of a public test double (index id 66931170733): "Team Uplink: void", "Uplink Port ID: 0"
    text = ("   Port ID: 33554430\n   vSwitch: vSwitch1\n   Portgroup: PG-CS\n   DVPort ID: 17\n"
            "   MAC Address: 00:50:56:AA:00:01\n   IP Address: 10.0.0.11\n   Team Uplink: void\n"
            "   Uplink Port ID: 0\n   Active Filters: dvfilter-a, dvfilter-b\n"
            "   Port ID: 33554431\n   vSwitch: vSwitch1\n   Portgroup: MGMT\n   DVPort ID:\n"
            "   MAC Address: 00:50:56:aa:00:02\n   IP Address: 0.0.0.0\n   Team Uplink:\n"
            "   Uplink Port ID:\n   Active Filters:\n")
    first, second = parse_vm_ports(text).ports
    assert (first.dvport_id, first.ip, first.team_uplink, first.uplink_port_id) == ("17", "10.0.0.11", None, 0)
    assert first.mac == "00:50:56:aa:00:01" and first.active_filters == ("dvfilter-a", "dvfilter-b")
    assert (second.port_id, second.team_uplink, second.uplink_port_id) == (33554431, None, None)


def test_nic_stats_fixture():
    stats = parse_nic_stats(read("esxcli_network_nic_stats_get_vmnic9_intel_mfd_fixture.txt"))
    assert stats.name == "vmnic9" and len(stats.counters) == 23
    assert stats.counters["Bytes received"] == 5271156 and stats.counters["Broadcast packets sent"] == 98241
    assert stats.counters["Receive missed errors"] == 0
    assert list(stats.counters)[:2] == ["Packets received", "Packets sent"]


def test_nic_stats_without_title():
    body = read("esxcli_network_nic_stats_get_vmnic9_intel_mfd_fixture.txt").split("\n", 1)[1]
    stats = parse_nic_stats(body)
    assert stats.name is None and stats.counters["Multicast packets sent"] == 60588


@pytest.mark.parametrize("func, text, line, why", [
    (parse_vm_list, "World ID  Name\nnot a ruler\n", 1, "no dash ruler"),
    (parse_vm_list, "--------  ----\n", 1, "without a header"),
    (parse_vm_list, "Name    PCI Device\n------  ----------\nvmnic0  0000:02:00.0\n", 1, "not esxcli network vm list"),
    (parse_vm_list, NAME_WITH_COMMA.replace(" 2100697  fnOS", "2100697 fnOS 1 VM Network\n"), 3, "line up"),
    (parse_vm_list, "\x1b[2J\x07\x05garbage\n", 1, "no dash ruler"),
    (parse_vm_ports, read("esxcli_vm_list_rayd62.txt"), 1, "expected 'Key: value'"),
    (parse_vm_ports, "Error: Unknown world 42\n", 1, "numeric 'Port ID'"),
    (parse_vm_ports, "   Port ID: 1\n   MAC Address: 00:50:56\n", 1, "MAC Address"),
    (parse_vm_ports, "   Port ID: 1\n   vSwitch: a\n   vSwitch: b\n", 3, "repeated"),
    (parse_vm_ports, "   Port ID: 1\nno colon here\nnor here\n", 2, "expected 'Key: value'"),  # kept 1 < skipped 2
    (parse_nic_stats, "NIC statistics:\n     rx_packets: 3\n", 1, "Counter name"),
    (parse_nic_stats, "NIC statistics for vmnic9\n   Packets received: n/a\n", 2, "Counter name"),
    (parse_nic_stats, "NIC statistics for vmnic9\n   Packets sent: 1\n   Packets sent: 2\n", 3, "repeated"),
])
def test_bad_input_is_parse_error_with_line(func, text, line, why):
    with pytest.raises(ParseError, match=why) as error:
        func(text)
    assert error.value.line == line


def test_empty_or_rowless_output_is_nodata():
    for func in (parse_vm_list, parse_vm_ports, parse_nic_stats):
        with pytest.raises(NoData):
            func(" \n")
    with pytest.raises(NoData, match="no powered-on VMs"):
        parse_vm_list("World ID  Name    Num Ports  Networks\n--------  ------  ---------  --------\n")
    with pytest.raises(NoData, match="no NIC counters for vmnic9"):
        parse_nic_stats("NIC statistics for vmnic9\n")


@pytest.mark.parametrize("kind, name, check", [
    ("esxcli-vm-list", "esxcli_vm_list_rayd62.txt", lambda r: r.vms[-1].name == "ros"),
    ("esxcli-vm-ports", "esxcli_vm_port_list_rayd62_2178744.txt", lambda r: r.ports[1].port_id == 33554579),
    ("esxcli-nic-stats", "esxcli_network_nic_stats_get_vmnic9_intel_mfd_fixture.txt",
     lambda r: r.counters["Bytes sent"] == 39259722),
])
def test_parse_file_end_to_end(kind, name, check):
    record = parse_file(kind, HOST / name)
    assert check(record)
    assert to_jsonable(record)


def test_parse_file_errors_name_the_file(tmp_path):
    wrong = tmp_path / "nic_stats.txt"
    wrong.write_text("NIC statistics:\n     rx_packets: 3\n")
    with pytest.raises(ParseError) as error:
        parse_file("esxcli-nic-stats", wrong)
    assert str(error.value).startswith(f"{wrong}:1:")
