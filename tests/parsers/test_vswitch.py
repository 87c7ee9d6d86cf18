"""esxcfg-vswitch -l on real published captures (tests/fixtures/host/README.md) and its quirks:
names with spaces, columns out of line, switches without uplinks, DVPorts without a client."""

from __future__ import annotations

from pathlib import Path

import pytest

from esxdiag.errors import NoData, ParseError
from esxdiag.parsers import parse_text
from esxdiag.parsers.vswitch import parse_vswitch_list

HOST = Path(__file__).resolve().parents[1] / "fixtures" / "host"


def test_standard_and_distributed_switch_from_an_nsx_lab_host():
    rec = parse_vswitch_list((HOST / "esxcfg_vswitch_l_sneaku_l2vpn.txt").read_text())
    vss, dvs = rec.switches
    assert (vss.name, vss.distributed, vss.mtu, vss.uplinks) == ("vSwitch0", False, 1500, ("vmnic1",))
    assert vss.portgroups[0].name == "Standard Switch - L2VPN - Trunk" and vss.portgroups[0].vlan == 4095
    assert (dvs.name, dvs.distributed, dvs.num_ports, dvs.used_ports, dvs.configured_ports) == (
        "Compute_VDS", True, 1536, 10, 512)
    assert len(dvs.dvports) == 8 and dvs.dvports[-1].client == "NSX l2vpn Edge.eth1"
    assert rec.by_client("web-sv-04a.eth0") is dvs and rec.by_name("vSwitch0") is vss


def test_jumbo_vswitch_with_misaligned_columns_and_two_uplinks():
    rec = parse_text("esxcfg-vswitch", (HOST / "esxcfg_vswitch_l_ucs_jumbo_misaligned.txt").read_text())
    (switch,) = rec.switches
    assert (switch.name, switch.num_ports, switch.mtu, switch.uplinks) == ("vSwitch1", 5632, 9000, ("vmnic2", "vmnic3"))
    assert switch.portgroups[0].name == "ipStorage-vmk" and switch.portgroups[0].vlan == 2244


def test_no_uplinks_a_free_dvport_and_a_name_ending_in_a_number():
    text = ("Switch Name      Num Ports   Used Ports  Configured Ports  MTU     Uplinks\n"
            "iso net 2        1536        1           128               1500\n\n"
            "  PortGroup Name        VLAN ID  Used Ports  Uplinks\n"
            "  Isolated 10           0        0\n\n"
            "DVS Name         Num Ports   Used Ports  Configured Ports  MTU     Uplinks\n"
            "dvs1             8192        3           512               9000    vmnic2\n\n"
            "  DVPort ID           In Use      Client\n"
            "  13                  0\n")
    iso, dvs = parse_vswitch_list(text).switches
    assert (iso.name, iso.mtu, iso.uplinks) == ("iso net 2", 1500, ())
    assert (iso.portgroups[0].name, iso.portgroups[0].vlan, iso.portgroups[0].uplinks) == ("Isolated 10", 0, ())
    assert dvs.dvports[0].client is None and dvs.dvports[0].in_use is False


@pytest.mark.parametrize("text, why", [
    ("", "no switch"),
    ("Switch Name      Num Ports   Used Ports  Configured Ports  MTU     Uplinks\n", "no switch"),
    ("vSwitch0 128 3 128 1500 vmnic0\n", "expected a 'Switch Name'"),
    ("Switch Name      Num Ports   Used Ports  Configured Ports  MTU     Uplinks\nvSwitch0 128 x 128 1500 vmnic0\n",
     "not a switch row"),
    ("Switch Name      Num Ports   Used Ports  Configured Ports  MTU     Uplinks\nvSwitch0 128 3 128 -1500 vmnic0\n",
     "not a switch row"),
    ("  DVPort ID           In Use      Client\n  1  1  vmnic0\n", "before any switch"),
])
def test_bad_input_is_parse_error_or_no_data(text, why):
    with pytest.raises((ParseError, NoData), match=why):
        parse_vswitch_list(text)


def test_a_huge_line_is_linear():
    header = "Switch Name      Num Ports   Used Ports  Configured Ports  MTU     Uplinks\n"
    with pytest.raises(ParseError):
        parse_vswitch_list(header + "a " * 500_000 + "\n")


# ---------------------------------------------------------------- N-VDS (issue 19 point 2)

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "realworld"


def test_an_nvds_section_under_its_four_column_header_and_the_vswitch_above_it():
    rec = parse_text("esxcfg-vswitch", (REAL / "esxcfg_vswitch_l_vss_and_nvds.txt").read_text())
    vss, nvds = rec.switches
    assert (vss.name, vss.mtu, vss.configured_ports, len(vss.portgroups)) == ("vSwitch0", 1500, 128, 2)
    assert (nvds.name, nvds.num_ports, nvds.used_ports, nvds.configured_ports, nvds.mtu, nvds.uplinks) == (
        "nvds-overlay", 8570, 9, None, None, ("vmnic2", "vmnic3"))
    assert [p.port_id for p in nvds.dvports][:3] == ["uplink1", "uplink2", "3a5f8d21-04c7-4b5e-9f60-6e1d2c8a7b10"]
    assert rec.by_client("web-01.eth0") is nvds and nvds.dvports[-1].client is None
    assert rec.warnings == ()
