"""Issue 33: captures as users paste them (forum posts, tickets, terminals), read whole or in
part, never all-or-nothing. The fixtures are in tests/fixtures/pastes (README there: where each
shape comes from)."""

from __future__ import annotations

from pathlib import Path

import pytest

from esxdiag.errors import ParseError
from esxdiag.intake.sniff import sniff_text
from esxdiag.parsers import PARSERS, parse_file, parse_text, to_jsonable

PASTES = Path(__file__).resolve().parents[1] / "fixtures" / "pastes"
SEED_RX = Path(__file__).resolve().parents[1] / "fixtures" / "host" / "seed002_rxsummary_before.txt"


# ---------------------------------------------------------------- 1. Format-List records without blank lines

def test_statistics_of_three_adapters_pasted_without_blank_lines_are_three_records():
    record = parse_file("win-stats", PASTES / "win_stats_fl_three_adapters_no_blank_lines.txt")
    assert {n: a.received_discarded_packets for n, a in record.adapters.items()} == \
        {"Ethernet0": 10370, "Ethernet1": 4410, "Ethernet2": 0}
    assert record.adapters["Ethernet1"].counters["ifAlias"] == "Ethernet1"
    assert not [w for w in record.warnings if "printed twice" in w]


def test_six_x710_ports_of_get_netadapterrss_with_and_without_blank_lines_between_them():
    record = parse_file("win-rss", PASTES / "win_rss_x710_six_ports_no_blank_lines.txt")
    assert sorted(record.adapters) == [f"SLOT 3 Port {n}" for n in range(1, 7)]
    port = record.adapters["SLOT 3 Port 4"]
    assert (port.enabled, port.number_of_receive_queues, port.max_processors, port.profile) == \
        (True, 8, 8, "NUMAStatic")
    assert port.fields["MaxProcessor: [Group:Number]"] == "0:30"
    assert record.warnings == ()


def test_a_name_printed_twice_in_a_row_is_one_property_not_two_records():
    record = parse_text("win-rss", "Name : Ethernet0\nName : Ethernet0\nEnabled : True\nNumberOfReceiveQueues : 4\n")
    assert list(record.adapters) == ["Ethernet0"] and record.adapters["Ethernet0"].number_of_receive_queues == 4


def test_records_cut_in_two_lose_only_the_part_without_a_name():
    text = ("Name : Ethernet0\nEnabled : True\nNumberOfReceiveQueues : 4\n\n[snip]\n"
            "NumberOfReceiveQueues : 2\nEnabled : False\n\nName : Ethernet1\nEnabled : True\nNumberOfReceiveQueues : 1\n")
    record = parse_text("win-rss", text)
    assert sorted(record.adapters) == ["Ethernet0", "Ethernet1"]
    assert any(w.startswith("line 6: a record with no Name skipped") for w in record.warnings), record.warnings


def test_records_without_any_name_are_still_refused():
    with pytest.raises(ParseError, match="no Name"):
        parse_text("win-rss", "Enabled : True\nNumberOfReceiveQueues : 4\n")


# ---------------------------------------------------------------- 2. multi-line values

def test_the_default_rss_view_with_its_processor_and_indirection_tables_keeps_its_record():
    """The Hyper-V book's paste: blank lines inside the record, the tables' rows not indented."""
    record = parse_file("win-rss", PASTES / "win_rss_default_view_hyperv_book.txt")
    (nic,) = record.adapters.values()
    assert (nic.enabled, nic.number_of_receive_queues, nic.max_processors, nic.profile) == (True, 4, 16, "NUMAStatic")
    assert nic.fields["RssProcessorArray: [Group:Number/NUMA Distance]"].endswith("0 : 30 / 0")
    assert record.warnings[0].startswith("line 1: terminal output skipped")  # PS C:\> Get-NetAdapterRss
    assert record.warnings[1] == ("line 6: skipped, not a Format-List 'Property : value' line: "
                                  "'(NDIS VBD Client) # 131'")
    # the paste stops right after the table (the book goes on in prose): its rows may be cut, so it is said, not read
    assert "IndirectionTable: [Group:Number]" not in nic.fields
    assert record.warnings[2].startswith("line 34: the capture ends inside the value of 'IndirectionTable")
    closed = parse_text("win-rss", (PASTES / "win_rss_default_view_hyperv_book.txt").read_text() + "\n\n")
    (nic,) = closed.adapters.values()
    assert nic.fields["IndirectionTable: [Group:Number]"].startswith("0 : 4 0 : 20 0 : 6 0 : 22")
    assert nic.fields["IndirectionTable: [Group:Number]"].count("0 : 22") == 32


def test_indented_table_rows_belong_to_their_value():
    record = parse_file("win-rss", PASTES / "win_rss_x710_six_ports_no_blank_lines.txt")
    table = record.adapters["SLOT 3 Port 2"].fields["IndirectionTable: [Group:Number]"]
    assert table.split().count("0:16") == 16 and "Name" not in table


# ---------------------------------------------------------------- 3. ethtool -g names its interface

@pytest.mark.parametrize("title, iface", [("Ring parameters for ens4:", "ens4"), ("Ring parameters for eth0:", "eth0"),
                                          ("", None)])
def test_ethtool_g_keeps_the_interface_it_prints(title, iface):
    body = "Pre-set maximums:\nRX:\t\t4096\nRX Mini:\t0\nRX Jumbo:\t0\nTX:\t\t4096\n" \
           "Current hardware settings:\nRX:\t\t512\nRX Mini:\t0\nRX Jumbo:\t0\nTX:\t\t512\n"
    record = parse_text("ethtool-rings", (title + "\n" if title else "") + body)
    assert record.interface == iface and record.current.rx == 512


def test_two_ethtool_g_outputs_of_two_interfaces_in_one_file_are_refused():
    one = PARSERS["ethtool-rings"].sample
    with pytest.raises(ParseError, match="a second 'Ring parameters for eth1:'"):
        parse_text("ethtool-rings", one + one.replace("eth0", "eth1"))


# ---------------------------------------------------------------- 5. the esxtop network screen

def test_the_network_screen_with_every_column():
    record = parse_file("esxtop-net-panel", PASTES / "esxtop_net_panel_vmnic_binding_blog.txt")
    assert record.columns == ("PKTTX/s", "MbTX/s", "PKTRX/s", "MbRX/s", "%DRPTX", "%DRPRX")
    vm = next(p for p in record.ports if p.world)
    assert (vm.port_id, vm.world, vm.client, vm.team_pnic, vm.dname, vm.dropped_rx_pct) == \
        (33554436, 21153, "Test", "vmnic3", "vSwitch1", 0.0)
    assert [p.used_by for p in record.ports][:3] == ["Management", "vmnic0", "vmk0"]


def test_a_network_screen_cut_by_the_console_width_is_read_without_its_last_column():
    record = parse_file("esxtop-net-panel", PASTES / "esxtop_net_panel_pktcap_blog_cut_header.txt")
    assert record.columns == ("PKTTX/s", "MbTX/s", "PSZTX", "PKTRX/s")  # MbRX/ and the cut 17.2 left out
    shadow = next(p for p in record.ports if p.used_by == "Shadow of vmnic0")
    assert shadow.port_id == 33554437 and shadow.team_pnic == "n/a"
    vm = next(p for p in record.ports if p.world == 4534232)
    assert (vm.client, vm.team_pnic, vm.columns["PKTRX/s"], vm.dropped_rx_pct) == ("testvm1.eth0", "TST_LAG*", 306.45,
                                                                                    None)
    assert "line 5: the header ends in 'MbRX/'" in record.warnings[1] and "no %DRPRX" in record.warnings[1]
    assert len(record.ports) == 11


def test_a_port_shown_by_two_pasted_screens_with_different_values_is_left_out():
    sample = PARSERS["esxtop-net-panel"].sample
    second = sample.replace("33554436 21153:Test vmnic3 vSwitch1 0.00", "33554436 21153:Test vmnic3 vSwitch1 9.00")
    record = parse_text("esxtop-net-panel", sample + second.split("\n", 2)[2])
    assert 33554436 not in [p.port_id for p in record.ports] and len(record.ports) == 6
    assert any("port 33554436 printed twice with different values" in w for w in record.warnings)


# ---------------------------------------------------------------- 6. vCenter events as text

@pytest.mark.parametrize("fixture", ["govc_events_vcsim_vm_migrate.txt", "govc_events_l_vcsim_vm_migrate.txt"])
def test_govc_events_with_and_without_types(fixture):
    record = parse_file("vcenter-events-text", PASTES / fixture)
    (move,) = record.migrations
    assert (move.type, move.vm, move.source_host, move.host, move.time) == \
        ("VmMigratedEvent", "DC0_C0_RP0_VM0", "DC0_C0_H1", "DC0_C0_H1", "2026-11-28T13:30:16")
    assert len(record.events) == 7 and "times are govc's local time (no zone is printed)" in record.warnings


def test_get_vievent_format_list_names_both_migrations():
    record = parse_file("vcenter-events-text", PASTES / "get_vievent_fl_vm_migrated.txt")
    assert [(m.type, m.vm, m.source_host, m.host, m.time) for m in record.migrations] == [
        ("VmMigratedEvent", "iperf-test1", "esx0.lab.local", "esx1.lab.local", "11/21/2026 6:01:56 AM"),
        ("DrsVmMigratedEvent", "iperf-test1", "esx1.lab.local", "esx0.lab.local", "11/21/2026 6:41:03 AM")]


@pytest.mark.parametrize("message, reading", [
    ("Migration of virtual machine web from x to y from esx01, ds to esx02, ds completed",
     ("web from x to y", "esx01", "esx02")),
    ("Migration of virtual machine web01 from esx01, my ds to old to esx02, ds 2 completed", ("web01", "esx01", "esx02")),
    ("DRS migrated a from b to c from esx01 to esx02 in cluster Prod in DC1", ("a from b to c", "esx01", "esx02")),
    ("Migration of virtual machine web01 from esx01, ds to esx02, ds to esx03, ds completed", None),  # two readings
])
def test_a_migration_message_is_read_only_when_it_reads_one_way(message, reading):
    record = parse_text("vcenter-events-text", f"[Sat Nov 28 13:30:16 2026] [info] {message}\n")
    (event,) = record.events
    assert ((event.vm, event.source_host, event.host) if event.vm else None) == reading
    assert event.type in ("VmMigratedEvent", "DrsVmMigratedEvent")
    if reading is None:
        assert any("can be read 2 ways" in w for w in record.warnings)


# ---------------------------------------------------------------- 7. prompts around the output, cut marks

def _wrapped(body: str, before: str, after: str) -> str:
    return f"{before}\n{body}{after}\n"


@pytest.mark.parametrize("before, after", [
    ("[root@esx01:~] vsish -e get /net/portsets/vSwitch0/ports/33554464/vmxnet3/rxSummary", "[root@esx01:~] "),
    ("~ # vsish -e get /net/portsets/vSwitch0/ports/33554464/vmxnet3/rxSummary", "~ # exit"),
    ("$ vsish -e get /net/portsets/vSwitch0/ports/33554464/vmxnet3/rxSummary", "$"),
    ("[root@esx01 ~]# vsish -e get /net/portsets/vSwitch0/ports/33554464/vmxnet3/rxSummary", "[root@esx01 ~]#"),
])
def test_vsish_between_two_prompts_is_read_with_a_note(before, after):
    body = PARSERS["vsish-rxsummary"].sample
    record = parse_text("vsish-rxsummary", _wrapped(body, before, after))
    whole = parse_text("vsish-rxsummary", body)
    assert record.counters == whole.counters and record.texts == whole.texts
    assert record.warnings[0].startswith("line 1: terminal output skipped")
    last = body.count("\n") + 2
    assert record.warnings[1].startswith(f"line {last}: a shell prompt (") and "ends the command's output" in \
        record.warnings[1]


@pytest.mark.parametrize("kind", sorted(PARSERS))
@pytest.mark.parametrize("before, after", [("user@guest:~$ the-command --with args", "user@guest:~$ "),
                                           ("PS C:\\Users\\admin> Get-Thing -Name *", "PS C:\\Users\\admin>"),
                                           ("PS /home/admin> Get-Thing", "PS /home/admin> exit")])
def test_every_kind_reads_its_sample_between_prompts_as_it_reads_it_alone(kind, before, after):
    if PARSERS[kind].streaming:
        pytest.skip("esxtop -b is streamed: its own reader skips terminal lines (test_esxtop.py)")
    sample = PARSERS[kind].sample
    text = _wrapped(sample if sample.endswith("\n") else sample + "\n", before, after)
    alone, pasted = to_jsonable(parse_text(kind, sample)), to_jsonable(parse_text(kind, text))
    alone.pop("warnings", None)
    notes = pasted.pop("warnings", [])
    assert pasted == alone
    if "warnings" in to_jsonable(parse_text(kind, sample)):
        assert any("ends the command's output" in n for n in notes)
    assert sniff_text(text).kinds == (kind,)


def test_the_output_after_the_next_prompt_is_not_read():
    body = PARSERS["vsish-clientstats"].sample
    text = _wrapped(body, "[root@esx01:~] vsish -e get /x/clientStats", "[root@esx01:~] vsish -e get /y/clientStats")
    text += body  # the next command's output
    record = parse_text("vsish-clientstats", text)
    assert record.dropped_rx == parse_text("vsish-clientstats", body).dropped_rx
    assert any(f"it and the {body.count(chr(10))} line(s) after it are not read" in w for w in record.warnings)


def test_a_paste_with_the_authors_cut_is_read_up_to_the_cut_and_says_so():
    lines = SEED_RX.read_text().splitlines()
    text = "[root@esx01:~] vsish -e get /net/portsets/vSwitch0/ports/33554445/vmxnet3/rxSummary\n" + \
        "\n".join(lines[:14]) + "\n...\n"
    record = parse_text("vsish-rxsummary", text)
    assert record.out_of_buffers == 10370 and record.ring1_full == 7086 and record.ring2_full is None
    assert "line 16: cut mark '...' skipped" in " ".join(record.warnings)
    assert not record.complete


def test_a_bracketed_powershell_value_is_not_a_prompt():
    record = parse_file("win-rss", PASTES / "win_rss_x710_six_ports_no_blank_lines.txt")
    assert len(record.adapters) == 6  # "[Group:Number]" lines are values, never "the next prompt"


def test_a_convertto_json_array_cut_by_its_author_is_read_up_to_the_cut():
    text = (Path(__file__).resolve().parents[1] / "fixtures" / "guest" / "win_advprops_vmxnet3.json").read_text(
        encoding="utf-8-sig")
    objects = text.split("    {")
    cut = "    {".join(objects[:3]) + "    {\n        \"Name\":  \"Ethernet0\",\n...\n"
    record = parse_text("win-advprops", cut)
    whole = parse_text("win-advprops", text)
    assert len(record.adapters["Ethernet0"]) == 2 and \
        record.adapters["Ethernet0"].items() <= whole.adapters["Ethernet0"].items()
    assert any("cut mark '...': the JSON array is read up to it (2 whole objects)" in w for w in record.warnings)


def test_a_csv_with_an_authors_cut_mark_reads_the_rows_around_it():
    sample = PARSERS["win-netadapter"].sample
    row = sample.splitlines()[1]
    text = sample + "...\r\n" + row.replace("Ethernet0", "Ethernet1").replace("0E", "0F") + "\r\n"
    record = parse_text("win-netadapter", text)
    assert [a.name for a in record.adapters] == ["Ethernet0", "Ethernet1"]
    assert record.warnings[0].startswith("line 3: cut mark '...' skipped")


def test_ethtool_p_with_a_cut_mark_after_it():
    record = parse_text("ethtool-permaddr", "Permanent address: 00:50:56:a6:55:f4\n[snip]\n")
    assert record.mac == "00:50:56:a6:55:f4" and record.warnings[0].startswith("line 2: cut mark '[snip]' skipped")


def test_records_without_blank_lines_whose_second_name_was_cut_keep_the_first_whole():
    text = (PASTES / "win_stats_fl_three_adapters_no_blank_lines.txt").read_text()
    lines = text.split("\n")
    second = [n for n, line in enumerate(lines) if line.startswith("ifAlias")][1]
    del lines[second]  # the second adapter's ifAlias lost: its Name comes again further down
    record = parse_text("win-stats", "\n".join(lines))
    assert record.adapters["Ethernet0"].received_discarded_packets == 10370
    assert sorted(record.adapters) == ["Ethernet0", "Ethernet1", "Ethernet2"]


def test_get_vievent_as_a_table_reads_whole_messages_and_says_the_cut_one():
    text = ("\nCreatedTime           FullFormattedMessage\n-----------           --------------------\n"
            "11/21/2026 6:01:56 AM Migration of virtual machine iperf-test1 from esx0.lab.local, datastore1 to "
            "esx1.lab.local, datastore1 completed\n"
            "11/21/2026 6:45:00 AM Migration of virtual machine iperf-test2 from esx0.lab.local, datastore1 to esx1...\n")
    record = parse_text("vcenter-events-text", text)
    assert [(e.vm, e.source_host, e.host) for e in record.events] == [("iperf-test1", "esx0.lab.local", "esx1.lab.local")]
    assert any("column FullFormattedMessage is cut to the console width" in w for w in record.warnings)
    assert sniff_text(text).kinds == ("vcenter-events-text",)
