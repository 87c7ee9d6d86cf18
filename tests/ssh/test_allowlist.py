"""Only esxdiag.specs commands can leave esxdiag, and params cannot inject shell syntax."""

from __future__ import annotations

import inspect
import shlex

import pytest

from esxdiag import specs
from esxdiag.collectors.ssh import SshConnection

INJECTIONS = ["vSwitch0; reboot", "vSwitch0 && id", "$(id)", "`id`", "a b", "x'y", 'x"y', "a\nb",
              "vSwitch0|cat", "../../etc", "*", "vSwitch0\\", "", "-rf", "--help"]
# values that pass validation but contain characters a shell could treat specially
ODD_BUT_VALID = {"portset": ["DvsPortset-0", "a.b:c_d-e"], "port": ["2214592518"], "queue": ["31"],
                 "world": ["5572767"], "vmnic": ["vmnic0", "vusb0"], "iface": ["eth0.10@eth0", "ens_192-a"],
                 "delay": ["5"], "iterations": ["12"]}


def test_no_public_method_sends_a_raw_string():
    public = {name for name, _ in inspect.getmembers(SshConnection) if not name.startswith("_")}
    assert public == {"connect", "close", "run_spec", "connected"}
    params = list(inspect.signature(SshConnection.run_spec).parameters)
    assert params[:3] == ["self", "spec_name", "params"]


@pytest.mark.parametrize("spec_name", sorted(s.name for s in specs.allowed_commands() if s.params))
def test_every_valid_param_stays_one_word(spec_name):
    spec = specs.spec(spec_name)
    for i in range(2):
        params = {p: ODD_BUT_VALID[p][i % len(ODD_BUT_VALID[p])] for p in spec.params}
        words = shlex.split(spec.render(**params))
        assert words == [part.format(**params) for part in spec.argv]


@pytest.mark.parametrize("value", INJECTIONS)
@pytest.mark.parametrize("key", sorted(specs.PARAM_PATTERNS))
def test_injection_values_fail_validation(key, value):
    spec = next(s for s in specs.allowed_commands() if key in s.params)
    params = {p: ODD_BUT_VALID[p][0] for p in spec.params}
    params[key] = value
    with pytest.raises(ValueError):
        spec.render(**params)


@pytest.mark.lab
def test_refusals_happen_before_anything_is_sent(lab, open_conn):
    esxi = open_conn(lab.host_address, "esxi")
    before = len(lab.commands())
    with pytest.raises(ValueError, match="unknown capture spec"):
        esxi.run_spec("reboot", {})
    with pytest.raises(ValueError, match="for linux targets"):
        esxi.run_spec("nproc", {})
    with pytest.raises(ValueError, match="for vcenter targets"):
        esxi.run_spec("vsphere_vm", {})
    with pytest.raises(ValueError, match="for windows targets"):
        esxi.run_spec("win_stats", {})
    for value in INJECTIONS:
        with pytest.raises(ValueError):
            esxi.run_spec("vsish_rxsummary", {"portset": value, "port": "33554464"})
        with pytest.raises(ValueError):
            esxi.run_spec("vsish_rxsummary", {"portset": "vSwitch0", "port": value})
    with pytest.raises(ValueError):
        esxi.run_spec("vsish_rxsummary", {"portset": "vSwitch0", "port": "1", "extra": "x"})
    with pytest.raises(ValueError, match="looks like an option"):  # the specs' patterns allow it
        esxi.run_spec("vsish_rxsummary", {"portset": "-DvsPortset", "port": "1"})
    assert len(lab.commands()) == before
    # the connection is fine and the log does record what is sent
    assert esxi.run_spec("net_stats_list", {}).ok
    assert [c["command"] for c in lab.commands()[before:]] == ["net-stats -l"]


@pytest.mark.lab
def test_option_like_values_refused_by_the_transport(lab, open_conn):
    """A value starting with "-" would read as an option (`ethtool -S -rf`): the spec patterns
    refuse it, and run_spec refuses it again before sending anything."""
    with pytest.raises(ValueError, match="refusing"):
        specs.spec("ethtool_stats").render(iface="-rf")
    linux = open_conn(lab.address_of("iperf-test1"), "linux")
    before = len(lab.commands())
    with pytest.raises(ValueError, match="looks like an option|refusing"):
        linux.run_spec("ethtool_stats", {"iface": "-rf"})
    assert len(lab.commands()) == before


def test_a_host_supplied_name_that_fails_validation_is_recorded_not_sent(tmp_path):
    """Names come from host output (vsish ls, net-stats): one that fails validation is
    recorded as skipped and the collection goes on; nothing reaches the network."""
    from esxdiag.bundle import Bundle, BundleWriter
    from esxdiag.collectors import esxi
    from esxdiag.collectors.ssh import SshTarget

    writer = BundleWriter(tmp_path / "b", 60, ["vm1"])
    never_connected = SshConnection(SshTarget("root", "127.0.0.1", 9), "esxi")
    port = esxi.HostPort("Prod vSwitch", 33554464, "00:50:56:00:00:01", "vm1", ["0"], vmxnet3=True)
    esxi.sample_ports(never_connected, writer, "esxi-h", [port], 0)
    caps = Bundle.load(tmp_path / "b").captures
    assert caps and {(c.error_kind, c.file) for c in caps} == {("skipped", None)}
    assert all("not sent" in c.error for c in caps)
