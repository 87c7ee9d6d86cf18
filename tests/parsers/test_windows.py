"""Windows PowerShell parsers. Fixtures: the real Intel E810 Format-List sample and vmxnet3
outputs constructed to the documented layouts (tests/fixtures/guest/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from esxdiag.errors import NoData, ParseError
from esxdiag.intake.sniff import sniff_file
from esxdiag.parsers import parse_file, parse_text
from esxdiag.parsers.windows import parse_advprops, parse_netadapter

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "guest"
VMXNET3 = {"MaxRxRing1Length": "512", "MaxRxRing2Length": "32", "NumRxBuffersSmall": "1024",
           "NumRxBuffersLarge": "768", "*RSS": "0", "*NumRssQueues": "4", "*JumboPacket": "1514",
           "MaxTxRingLength": "512"}


def test_e810_real_format_list_sample():
    rec = parse_file("win-advprops", FIX / "win_Get-NetAdapterAdvancedProperty_select_all_fl_intel_e810_mfd_fixture.txt")
    props = rec.adapters["Ethernet 4"]
    assert rec.source == "list" and set(props) == {"RdmaVfPreferredResourceProfile", "VlanId"}
    vlan = props["VlanId"]
    assert (vlan.display_name, vlan.display_value, vlan.registry_value) == ("VLAN ID", "0", ("0",))
    assert vlan.fields["NumericParameterMaxValue"] == "4094"
    assert vlan.fields["ValidDisplayValues"] is None  # empty 'Prop :' line
    assert props["RdmaVfPreferredResourceProfile"].fields["ValidRegistryValues"] == ("1", "0")
    assert props["RdmaVfPreferredResourceProfile"].fields["CimClass"] == \
        "ROOT/StandardCimv2:MSFT_NetAdapterAdvancedPropertySettingData"


@pytest.mark.parametrize("fixture,source", [("win_advprops_vmxnet3.json", "json"),
                                            ("win_advprops_vmxnet3_fl_utf16le.txt", "list")])
def test_vmxnet3_keywords_json_and_utf16_format_list(fixture, source):
    rec = parse_file("win-advprops", FIX / fixture)
    assert rec.source == source and rec.warnings == ()
    props = rec.adapters["Ethernet0"]
    assert {k: props[k].registry_scalar for k in VMXNET3} == VMXNET3
    assert props["MaxRxRing1Length"].registry_value == ("512",)
    assert props["MaxRxRing1Length"].display_name == "Rx Ring #1 Size"
    assert props["*JumboPacket"].display_value == "Standard 1500"


def test_utf16_fixture_really_is_utf16_with_crlf():
    raw = (FIX / "win_advprops_vmxnet3_fl_utf16le.txt").read_bytes()
    assert raw[:2] == b"\xff\xfe" and "\r\n".encode("utf-16-le") in raw


def test_json_array_with_two_adapters():
    rec = parse_file("win-advprops", FIX / "win_advprops_vmxnet3.json")
    assert sorted(rec.adapters) == ["Ethernet0", "Ethernet1"]


def test_json_single_object():
    rec = parse_advprops('{"Name": "Ethernet0", "DisplayName": "Rx Ring #1 Size", "DisplayValue": "4096",'
                         ' "RegistryKeyword": "MaxRxRing1Length", "RegistryValue": ["4096"]}')
    assert rec.adapters["Ethernet0"]["MaxRxRing1Length"].registry_scalar == "4096"


def test_csv_array_column_is_not_a_value():
    """Windows PowerShell ConvertTo-Csv writes 'System.String[]' for RegistryValue."""
    rec = parse_file("win-advprops", FIX / "win_advprops_vmxnet3.csv")
    props = rec.adapters["Ethernet0"]
    assert rec.source == "csv" and props["MaxRxRing1Length"].registry_value is None
    assert props["MaxRxRing1Length"].display_value == "512"
    assert len(rec.warnings) == len(props) and "System.String[]" in rec.warnings[0]


def test_csv_with_joined_registry_value_and_type_line():
    text = ('#TYPE Selected.Microsoft.Management.Infrastructure.CimInstance\r\n'
            '"Name","DisplayName","DisplayValue","RegistryKeyword","RegistryValue"\r\n'
            '"Ethernet0","Small Rx Buffers","8192","NumRxBuffersSmall","8192"\r\n'
            '"Ethernet0","Offload, with comma","","*Weird",""\r\n')
    props = parse_advprops(text).adapters["Ethernet0"]
    assert props["NumRxBuffersSmall"].registry_value == "8192"
    assert props["*Weird"].display_name == "Offload, with comma" and props["*Weird"].display_value is None


def test_localised_display_names_keyed_by_registry_keyword_and_optional_rows_absent():
    de = parse_file("win-advprops", FIX / "win_advprops_vmxnet3_fl_german_optional_absent.txt").adapters["Ethernet0"]
    en = parse_file("win-advprops", FIX / "win_advprops_vmxnet3_fl_utf16le.txt").adapters["Ethernet0"]
    assert de["*JumboPacket"].display_name == "Jumbo-Paket" and de["*RSS"].display_value == "Deaktiviert"
    assert "MaxRxRing2Length" not in de and "NumRxBuffersLarge" not in de
    assert {k: v.registry_value for k, v in de.items()} == {k: en[k].registry_value for k in de}


@pytest.mark.parametrize("fixture, cut_line", [("win_advprops_vmxnet3_table_ps51.txt", 4),
                                               ("win_advprops_vmxnet3_table_ps7.txt", 8)])
def test_default_table_with_only_registry_keyword_cut_is_read_with_a_warning(fixture, cut_line):
    """Issue 33 item 4: RegistryKeyword is the only cut column; the rows are keyed by DisplayName."""
    record = parse_file("win-advprops", FIX / fixture)
    props = record.adapters["Ethernet0"]
    assert props["*NumRssQueues"].registry_scalar == "4" and props["NumRxBuffersSmall"].display_value == "1024"
    assert props["EnableAdaptiveRing"].display_value == "Disabled"
    assert any(w.startswith(f"line {cut_line}: column RegistryKeyword is cut to the console width") and
               w.endswith("re-capture with 'Get-NetAdapterAdvancedProperty | Format-List *' for every value whole")
               for w in record.warnings)


def test_format_list_wrapped_value():
    text = ("Name            : Ethernet0\r\nDisplayName     : A very long display name that the console\r\n"
            "                  wrapped onto a second line\r\nDisplayValue    : 1\r\n"
            "RegistryKeyword : LongOne\r\nRegistryValue   : {1}\r\n")
    prop = parse_advprops(text).adapters["Ethernet0"]["LongOne"]
    assert prop.display_name == "A very long display name that the console wrapped onto a second line"


@pytest.mark.parametrize("text,error", [
    ("", NoData), ("\ufeff\r\n", NoData), ("garbage without structure", ParseError),
    ("Name : Ethernet0\r\nDisplayName : x\r\n", ParseError),  # no RegistryKeyword
    ("[1, 2]", ParseError), ("{broken", ParseError),
])
def test_advprops_bad_input(text, error):
    with pytest.raises(error):
        parse_advprops(text)


def test_advprops_rejects_other_cmdlet_output():
    with pytest.raises(ParseError, match="RegistryKeyword"):
        parse_file("win-advprops", FIX / "win_rss_vmxnet3_fl.txt")


def test_rss_format_list():
    rss = parse_file("win-rss", FIX / "win_rss_vmxnet3_fl.txt").adapters
    off, on = rss["Ethernet0"], rss["Ethernet1"]
    assert (off.enabled, off.number_of_receive_queues, off.max_processors, off.profile) == (False, 1, 4, "Closest")
    assert (on.enabled, on.number_of_receive_queues, on.profile) == (True, 4, "NUMAStatic")
    assert on.fields["RssProcessorArray"] == "{0:0/0, 0:1/0, 0:2/0, 0:3/0}"
    with pytest.raises(ParseError):
        parse_file("win-rss", FIX / "win_netadapter_vmxnet3.csv")


def test_stats_format_list():
    stats = parse_file("win-stats", FIX / "win_stats_vmxnet3_fl.txt").adapters["Ethernet0"]
    assert (stats.received_discarded_packets, stats.received_packet_errors, stats.outbound_discarded_packets,
            stats.outbound_packet_errors, stats.received_unicast_packets, stats.received_bytes) == \
        (10370, 0, 0, 0, 50714426, 1670920359206)
    assert stats.counters["SentUnicastPackets"] == "3126554" and stats.counters["RdmaStatistics"] == ""
    with pytest.raises(ParseError):
        parse_file("win-stats", FIX / "win_advprops_vmxnet3.json")


@pytest.mark.parametrize("fixture", ["win_netadapter_vmxnet3.csv", "win_netadapter_vmxnet3_typed.csv",
                                     "win_netadapter_vmxnet3_fl.txt"])
def test_netadapter_all_formats(fixture):
    adapters = parse_file("win-netadapter", FIX / fixture).adapters
    first = adapters[0]
    assert (first.name, first.mac, first.mtu, first.status, first.driver_version) == \
        ("Ethernet0", "00:50:56:a6:66:0e", 1500, "Up", "1.9.2.0")
    assert adapters[1].mtu == 9000 and adapters[1].description == "vmxnet3 Ethernet Adapter #2"


def test_netadapter_bad_mac_and_wrong_cmdlet():
    with pytest.raises(ParseError, match="MAC"):
        parse_netadapter('"Name","MacAddress"\r\n"Ethernet0","not-a-mac"\r\n')
    with pytest.raises(ParseError):
        parse_file("win-netadapter", FIX / "win_stats_vmxnet3_fl.txt")


# ---------------------------------------------------------------- issue 19 point 3: default tables, partial Format-List

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "realworld"


def test_default_get_netadapter_table_is_read_by_its_ruler():
    record = parse_file("win-netadapter", REAL / "win_netadapter_table_ps51.txt")
    assert [(a.name, a.description, a.mac, a.status, a.link_speed) for a in record.adapters] == [
        ("Ethernet0", "vmxnet3 Ethernet Adapter", "00:50:56:a6:66:0e", "Up", "10 Gbps"),
        ("Ethernet1", "vmxnet3 Ethernet Adapter #2", "00:50:56:a6:44:72", "Up", "10 Gbps")]
    assert record.warnings == ()


def test_default_statistics_table_right_aligned_numbers():
    stats = parse_file("win-stats", REAL / "win_stats_table_ps51.txt").adapters
    assert (stats["Ethernet0"].received_bytes, stats["Ethernet0"].received_unicast_packets) == (93115410282, 61502718)
    assert stats["Ethernet1"].counters["SentUnicastPackets"] == "7712"
    assert stats["Ethernet0"].received_discarded_packets is None  # not in the default view


def test_default_advanced_property_table_without_a_cut_value():
    props = parse_file("win-advprops", REAL / "win_advprops_table_ps7_whole.txt").adapters["Ethernet0"]
    assert props["MaxRxRing1Length"].registry_value == ("4096",) and props["MaxRxRing1Length"].display_value == "4096"
    assert props["NumRxBuffersSmall"].registry_scalar == "8192" and props["*RSS"].display_value == "Enabled"


def test_a_table_whose_every_row_has_a_needed_value_cut_is_refused_naming_the_column():
    text = (FIX / "win_advprops_vmxnet3_table_ps7.txt").read_text(encoding="utf-8")
    lines = text.splitlines()
    head, rows = lines[:3], [line for line in lines[3:] if line.strip()]
    cut = [line.replace("Ethernet0", "Etherne\u2026 ", 1) for line in rows]
    with pytest.raises(ParseError) as info:
        parse_text("win-advprops", "\n".join(head + cut) + "\n")
    assert "column Name is cut to the console width" in info.value.why
    assert info.value.why.endswith("re-capture with 'Get-NetAdapterAdvancedProperty | Format-List *'")


def test_format_list_without_mac_address_is_accepted_with_a_warning():
    record = parse_file("win-netadapter", REAL / "win_netadapter_fl_no_mac.txt")
    (adapter,) = record.adapters
    assert (adapter.name, adapter.mac, adapter.link_speed) == ("Ethernet0", None, "10 Gbps")
    assert "no MacAddress" in record.warnings[0]


def test_display_name_and_value_only_are_enough_for_the_ring_and_buffer_settings():
    record = parse_file("win-advprops", REAL / "win_advprops_fl_displayname_only.txt")
    props = record.adapters[""]
    assert props["MaxRxRing1Length"].display_value == "1024" and props["MaxRxRing2Length"].display_value == "64"
    assert props["NumRxBuffersSmall"].display_value == "4096" and props["*RSS"].display_value == "Enabled"
    assert props["Interrupt Moderation"].display_value == "Enabled"  # no known keyword: kept under its name
    assert any("keyed by their English DisplayName" in w for w in record.warnings)


@pytest.mark.parametrize("fixture, kind", [
    ("win_netadapter_table_ps51.txt", "win-netadapter"), ("win_stats_table_ps51.txt", "win-stats"),
    ("win_advprops_table_ps7_whole.txt", "win-advprops"), ("win_netadapter_fl_no_mac.txt", "win-netadapter"),
    ("win_advprops_fl_displayname_only.txt", "win-advprops"),
])
def test_the_new_shapes_are_recognised_in_a_folder(fixture, kind):
    assert sniff_file(REAL / fixture).kinds == (kind,)
