"""Team-uplink discovery (collectors/esxi.py, issue 22) on a scripted ESXi host: the cases the lab's
VM names do not have. A VM name with spaces, one that is a prefix of another VM's name, a second vNIC
on another uplink, a port of someone else on the same world list, a void uplink, a host-supplied uplink
name that fails validation, and a host without esxcli. The connection is the real SshConnection (spec
rendering, validation, run_capture and the bundle) with only its transport replaced by canned outputs
in the formats of tests/fixtures/host/esxcli_* (docs/raw-formats.md §3.3-3.5); the lab runs the same code end to
end in test_uplinks.py."""

from __future__ import annotations

from esxdiag.bundle import Bundle, BundleWriter, utcnow
from esxdiag.collectors import esxi
from esxdiag.collectors.ssh import CommandResult, SshConnection, SshTarget

VM_LIST = """\
World ID  Name            Num Ports  Networks
--------  --------------  ---------  ----------------------
 2203241  web 01                  2  VM Network, Backup Net
 2203242  web 01 clone            1  VM Network
 2099871  db01                    1  VM Network
"""


def port(port_id: int, mac: str, uplink: str) -> str:
    return (f"   Port ID: {port_id}\n   vSwitch: vSwitch0\n   Portgroup: VM Network\n   DVPort ID:\n"
            f"   MAC Address: {mac}\n   IP Address: 0.0.0.0\n   Team Uplink: {uplink}\n"
            f"   Uplink Port ID: 33554434\n   Active Filters:\n")


NIC_STATS = "NIC statistics for {name}\n   Packets received: 10\n   Receive missed errors: 3\n"


class ScriptedHost(SshConnection):
    """An SshConnection whose commands are answered from ``answers`` (command -> (stdout, rc))."""

    def __init__(self, answers: dict[str, tuple[str, int]]):
        super().__init__(SshTarget("root", "esx-test.lab", 22), "esxi")
        self.answers, self.sent = answers, []

    def _exec(self, command, timeout_s, on_wait, ok_rc=(0,), sink=None):
        self.sent.append(command)
        out, rc = self.answers.get(command, ("", 127))
        sink.write(out.encode())
        kind, error = (None, None) if rc == 0 else ("not-found", f"{self.target}: exit status {rc}: sh: not found")
        return CommandResult(command, b"", b"", rc, utcnow(), utcnow(), kind, error, sink.size)


def host_port(client: str, mac: str) -> esxi.HostPort:
    return esxi.HostPort("vSwitch0", 33554500, mac, client, ["0"], vmxnet3=True)


def test_a_name_with_spaces_finds_only_its_own_world_and_its_vnics_uplinks(tmp_path):
    ports = port(1, "00:50:56:00:00:01", "vmnic10") + "\n" + port(2, "00:50:56:00:00:02", "vmnic2") + "\n" + \
        port(3, "00:50:56:00:00:99", "vmnic5")  # a MAC the VM does not have (not its vNIC): not its uplink
    host = ScriptedHost({"esxcli network vm list": (VM_LIST, 0),
                         "esxcli network vm port list -w 2203241": (ports, 0)})
    writer = BundleWriter(tmp_path / "b", 60, ["web 01"])
    said = []
    subject = esxi.uplink_subject("web 01", "web 01", ["00-50-56-00-00-01", "00:50:56:00:00:02"],
                                  [host_port("web 01", "00:50:56:00:00:01"), host_port("web 01.eth1", "00:50:56:00:00:02")])
    assert subject.names == {"web 01"}
    assert esxi.discover_uplinks(host, writer, "esxi-h", [subject], said.append) == ["vmnic2", "vmnic10"]
    assert host.sent == ["esxcli network vm list", "esxcli network vm port list -w 2203241"]  # not the clone's
    assert said == []
    esxi.sample_ports(host, writer, "esxi-h", [], 0, uplinks=["vmnic2", "vmnic10"])
    assert host.sent[2:] == ["esxcli network nic stats get -n vmnic2", "esxcli network nic stats get -n vmnic10"]
    caps = Bundle.load(tmp_path / "b").captures
    assert [(c.spec, c.params, c.sample) for c in caps] == [
        ("esxcli_vm_list", {}, None), ("esxcli_vm_ports", {"world": "2203241"}, None),
        ("esxcli_nic_stats", {"vmnic": "vmnic2"}, 0), ("esxcli_nic_stats", {"vmnic": "vmnic10"}, 0)]


def test_the_net_stats_client_name_finds_a_vm_renamed_in_vcenter(tmp_path):
    host = ScriptedHost({"esxcli network vm list": (VM_LIST, 0),
                         "esxcli network vm port list -w 2099871": (port(7, "00:50:56:00:00:07", "vmnic1"), 0)})
    writer = BundleWriter(tmp_path / "b", 60, ["db01-new"])
    subject = esxi.uplink_subject("db01-new", "db01-new", ["00:50:56:00:00:07"], [host_port("db01", "00:50:56:00:00:07")])
    assert esxi.discover_uplinks(host, writer, "esxi-h", [subject], lambda s: None) == ["vmnic1"]


def test_void_uplinks_unknown_vms_and_a_bad_uplink_name_are_noted_and_never_sent(tmp_path):
    ports = port(1, "00:50:56:00:00:01", "void") + "\n" + port(2, "00:50:56:00:00:02", "vmnic0;reboot")
    host = ScriptedHost({"esxcli network vm list": (VM_LIST, 0),
                         "esxcli network vm port list -w 2203241": (ports, 0)})
    writer = BundleWriter(tmp_path / "b", 60, ["web 01", "ghost"])
    said = []
    subjects = [esxi.uplink_subject("web 01", "web 01", ["00:50:56:00:00:01", "00:50:56:00:00:02"], []),
                esxi.uplink_subject("ghost", "ghost", ["00:50:56:00:00:03"], [])]
    uplinks = esxi.discover_uplinks(host, writer, "esxi-h", subjects, said.append)
    assert uplinks == ["vmnic0;reboot"]  # as the host printed it: validated when rendered, below
    assert len(said) == 1 and "'ghost' is not in esxcli network vm list" in said[0]
    esxi.sample_ports(host, writer, "esxi-h", [], 0, uplinks=uplinks)
    assert not [c for c in host.sent if "nic stats" in c]
    bundle = Bundle.load(tmp_path / "b")
    (stats,) = bundle.find("esxcli_nic_stats")
    assert stats.error_kind == "skipped" and "not sent" in stats.error and "refusing vmnic" in stats.error
    notes = bundle.manifest["notes"]
    assert any("port 1 (00:50:56:00:00:01)" in n and "no team uplink" in n for n in notes), notes
    assert any("'ghost' is not in esxcli network vm list" in n for n in notes), notes


def test_a_host_without_esxcli_is_marked_once_and_asked_nothing_more(tmp_path):
    host = ScriptedHost({})  # every command: exit 127
    writer = BundleWriter(tmp_path / "b", 60, ["web 01"])
    said = []
    subject = esxi.uplink_subject("web 01", "web 01", ["00:50:56:00:00:01"], [])
    assert esxi.discover_uplinks(host, writer, "esxi-h", [subject], said.append) == []
    assert host.sent == ["esxcli network vm list"]
    assert "esxcli" in host.unavailable and said == [host.unavailable["esxcli"]]
    assert said[0].startswith("esxcli not found on root@esx-test.lab:22 (esxcli network vm list): no physical uplink")
    assert Bundle.load(tmp_path / "b").manifest["notes"] == said
    # anything esxcli later asked on this connection is recorded as skipped with that reason, not sent
    esxi.sample_ports(host, writer, "esxi-h", [], 1, uplinks=["vmnic0"])
    assert host.sent == ["esxcli network vm list"]
    (stats,) = Bundle.load(tmp_path / "b").find("esxcli_nic_stats")
    assert stats.error_kind == "skipped" and stats.error == said[0]
