"""net-dvs -l on real published captures (tests/fixtures/host/README.md) and its quirks: properties
whose propType sits on the same line, on the next line or is missing, blocks of items, DVPort IDs
that are names or UUIDs, free ports, indentation lost in publishing, and damage."""

from __future__ import annotations

from pathlib import Path

import pytest

from esxdiag.errors import NoData, ParseError
from esxdiag.parsers import parse_file, parse_text
from esxdiag.parsers.netdvs import parse_net_dvs

HOST = Path(__file__).resolve().parents[1] / "fixtures" / "host"
SNEAKU = (HOST / "net_dvs_l_sneaku_l2vpn_sink_no_elision.txt").read_text()


def test_nsx_lab_dvs_with_its_sink_port_statistics():
    (dvs,) = parse_text("net-dvs", SNEAKU).switches
    assert (dvs.name, dvs.switch_type, dvs.max_ports, dvs.mtu) == ("Compute_VDS", "etherswitch", 1536, 1500)
    assert dvs.switch_id == "b7 00 16 50 a9 8d 8d b8-5c 4a 54 c2 0e a7 91 9a"
    assert (dvs.uplink_names, dvs.uplink_ports) == (("Uplink 1",), ("32",))
    (port,) = dvs.ports
    assert (port.port_id, port.portgroup, port.in_use, port.link_up, port.port_num) == (
        "41", "dvportgroup-42", True, True, 33554441)
    assert port.statistics["pktsInUnicast"] == 893 and port.statistics["pktsInException"] == 17
    assert (port.statistics["pktsInDropped"], port.statistics["pktsOutDropped"]) == (0, 0)
    assert len(port.statistics) == 16


def test_opaque_nsx_dvs_with_named_and_uuid_ports_and_no_mtu():
    (dvs,) = parse_text("net-dvs", (HOST / "net_dvs_l_nsx_opaque_uuid_ports.txt").read_text()).switches
    assert (dvs.name, dvs.mtu, dvs.uplink_names, dvs.uplink_ports) == ("xxx", None, ("uplink.1",), ("uplink1",))
    uplink, vnic = dvs.ports
    assert (uplink.port_id, uplink.status, uplink.in_use, uplink.link_up, uplink.port_num, uplink.statistics) == (
        "uplink1", "free", False, None, None, {})
    assert uplink.portgroup is None  # `portgroupid =  ,` is empty
    assert vnic.port_id == "00931351-392d-905d-2ae4-56c5c6fbe604" and vnic.port_num == 50331653
    assert vnic.statistics["pktsInMulticast"] == 6 and vnic.statistics["bytesOutBroadcast"] == 60


def test_the_published_capture_with_the_authors_elision_is_read_around_it_with_a_warning():
    """The author's ``//output hidden//`` (line 41) used to fail the whole file (issue 19 point 1)."""
    record = parse_file("net-dvs", HOST / "net_dvs_l_sneaku_l2vpn_sink.txt")
    assert record.warnings == ("line 41: cut mark '//output hidden//' skipped: what it hides is not in the "
                               "capture (the lines around it are read)",)
    (dvs,) = record.switches
    assert (dvs.name, dvs.mtu, dvs.uplink_names, dvs.uplink_ports) == ("Compute_VDS", 1500, ("Uplink 1",), ("32",))
    (port,) = dvs.ports
    assert (port.port_id, port.port_num, len(port.statistics)) == ("41", 33554441, 16)


def test_a_sed_slice_that_starts_at_a_port_is_not_a_net_dvs_listing():
    with pytest.raises(ParseError, match="expected a 'switch ID \\(type\\)' line, got 'port 431:'"):
        parse_file("net-dvs", HOST / "net_dvs_l_elatov_nlb_port431_sed_slice.txt")


def test_the_slice_under_a_switch_line_parses_with_indentation_lost():
    """The elatov capture had its indentation collapsed by the blog; the structure is read from the text."""
    text = "switch 57 9b 3e 50 29 db d8 56-40 28 67 2d b4 1c 1b 2e (etherswitch)\n" + \
        (HOST / "net_dvs_l_elatov_nlb_port431_sed_slice.txt").read_text()
    (dvs,) = parse_net_dvs(text).switches
    port431, port430 = dvs.ports
    assert (port431.port_id, port431.portgroup, port431.port_num) == ("431", "dvportgroup-1628", 50331701)
    assert port431.statistics["pktsOutBroadcast"] == 2145701 and port431.statistics["bytesOutBroadcast"] == 2170216215
    assert (port430.port_id, port430.status, port430.statistics) == ("430", None, {})


def test_link_down_and_a_value_with_nothing_after_the_equals_sign():
    text = ("switch 01 02 (etherswitch)\n max ports: 8\n global properties:\n  com.vmware.common.alias =\n"
            " port 7:\n  com.vmware.common.port.volatile.status = inUse linkDown portID=67108870 ,  propType = RUNTIME\n")
    (dvs,) = parse_net_dvs(text).switches
    assert dvs.name == "" and dvs.ports[0].link_up is False and dvs.ports[0].port_num == 67108870


@pytest.mark.parametrize("damage, why", [
    (lambda t: t.replace("pktsInDropped = 0", "pktsInDropped = -1"), "pktsInDropped '-1' is not a non-negative"),
    (lambda t: t.replace("pktsOutDropped = 0", "pktsOutDropped = 1e3"), "pktsOutDropped '1e3'"),
    (lambda t: t.replace("portID=33554441", "portID=0x10"), "portID '0x10'"),
    (lambda t: t.replace("mtu = 1500", "mtu = jumbo"), "MTU 'jumbo'"),
    (lambda t: t.replace("max ports: 1536", "max ports: \u00b2"), "max ports"),
    (lambda t: t[:t.index("pktsInException")], "cut short inside com.vmware.common.port.statistics"),
    (lambda t: "Switch Name      Num Ports\n" + t, "expected a 'switch ID (type)' line"),
])
def test_damage_is_a_parse_error_naming_what_was_wrong(damage, why):
    with pytest.raises(ParseError) as info:
        parse_net_dvs(damage(SNEAKU))
    assert why in str(info.value)


@pytest.mark.parametrize("damage, line, why", [
    (lambda t: t.replace("pktsOutDropped = 0", "pktsOutDropped 0"), 86, "not a 'counter = N' line"),
    (lambda t: t.replace("        port 41:\n", "        port 41:\n garbage\n"), 43, "not a net-dvs property"),
])
def test_an_unknown_line_is_skipped_with_a_warning_naming_it(damage, line, why):
    record = parse_net_dvs(damage(SNEAKU))
    (warning,) = record.warnings
    assert warning.startswith(f"line {line}: skipped, {why}") and record.switches[0].ports[0].port_num == 33554441


def test_a_listing_mostly_unreadable_is_a_parse_error_naming_the_first_unknown_line():
    text = "switch 01 02 (etherswitch)\n max ports: 8\n" + "".join(f" junk {i}\n" for i in range(3))
    with pytest.raises(ParseError, match="not a net-dvs property, port or switch line: 'junk 0' \\(2 more") as info:
        parse_net_dvs(text)
    assert info.value.line == 3


def test_nothing_listed_is_no_data():
    with pytest.raises(NoData):
        parse_net_dvs("\n  \n")


def test_crafted_long_lines_are_read_without_backtracking():
    """Lines a regex would backtrack on (many `` (`` or spaces): string operations read them once
    (the fuzz suite, tests/fuzz, bounds the time per input)."""
    with pytest.raises(ParseError, match="expected a 'switch ID"):
        parse_net_dvs("switch " + " (a" * 200_000 + "\n")
    (dvs,) = parse_net_dvs("switch x (etherswitch)\n global properties:\n  com.vmware.common.alias = "
                           + " " * 400_000 + "x\n").switches
    assert dvs.name == "x"
    (dvs,) = parse_net_dvs("switch x (etherswitch)\n global properties:\n  com.vmware.common.alias = "
                           + ", propType = " * 50_000 + "\n").switches
    assert dvs.name.startswith(", propType =")


# ---------------------------------------------------------------- N-VDS (issue 19 point 2)

def test_an_nvds_mtu_under_portset_mtu_and_uplinks_on_one_line():
    record = parse_file("net-dvs", HOST.parent / "realworld" / "net_dvs_l_nvds_output_hidden.txt")
    (nvds,) = record.switches
    assert (nvds.name, nvds.switch_type, nvds.mtu) == ("nvds-overlay", "cswitch", 1600)
    assert nvds.uplink_names == ("uplink1", "uplink2") and nvds.uplink_ports == ("uplink1", "uplink2")
    uplink, vnic = nvds.ports
    assert (uplink.port_num, vnic.port_num, vnic.statistics["pktsOutDropped"]) == (67108866, 67108873, 8381)
    assert record.warnings[0].startswith("line 22: cut mark '//output hidden//'")


def test_uplink_names_with_spaces_one_per_line_stay_whole():
    (dvs,) = parse_text("net-dvs", SNEAKU).switches
    assert dvs.uplink_names == ("Uplink 1",)
