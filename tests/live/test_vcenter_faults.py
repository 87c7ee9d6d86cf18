"""vCenter-side failures of `esxdiag report/collect --vm` fail fast: exit 3 with one stderr line
naming vCenter (host:port) or the VM, the failure in the partial bundle's manifest, and no report
(one would read like a VM with nothing wrong; the last good report is never replaced). Ctrl-C
during the window ends it early and the run still analyzes; a second Ctrl-C aborts (exit 130)."""

from __future__ import annotations

import json
import time
import uuid

import pytest

from esxdiag.errors import EXIT_COLLECTION, EXIT_INTERRUPTED

pytestmark = pytest.mark.lab

VM = "iperf-test1"
HOST = "esx0.lab.local"


def vcenter_gap(run, kind: str):
    """The failed vsphere_vm capture; no report was written and nothing on stdout reads like one."""
    (inventory,) = run.captures("vsphere_vm")
    assert (inventory.error_kind, inventory.file) == (kind, None), inventory
    assert run.bundle_loaded().manifest["notes"][-1] == inventory.error
    assert not (run.cwd / f"{run.bundle.name}.html").exists(), run.explain()
    assert not (run.bundle / "report.html").exists()
    assert run.stdout == f"bundle: {run.bundle}\n", run.explain()
    for healthy in ("NO FINDINGS", "Findings:", "unlimited", "report:"):
        assert healthy not in run.stdout + run.stderr, run.explain()
    assert len(run.lines_naming(inventory.error)) == 1, run.explain()  # said once
    assert run.lines_naming("no report written"), run.explain()
    assert run.elapsed_s < 20, run.explain()  # nothing waited: no SSH, no window
    return inventory


@pytest.fixture(scope="module")
def vcenter_runs(make_esxdiag, sshd, tmp_path_factory, live):
    """One `report` per vCenter fault, all at once: unreachable, wrong password, untrusted TLS, no such VM."""
    sshd.clear_faults()
    esxdiag = make_esxdiag(tmp_path_factory.mktemp("vc-home"), tmp_path_factory.mktemp("vc"))
    port = live.closed_port()
    cases = {
        "unreachable": (VM, esxdiag.env(ESXDIAG_VCENTER=f"https://127.0.0.1:{port}/sdk")),
        "auth": (VM, esxdiag.env(ESXDIAG_PASSWORD="wrong-" + esxdiag.vcsim.password)),
        "tls": (VM, esxdiag.env(ESXDIAG_THUMBPRINT=None)),
        "not-found": ("iperf-test9", esxdiag.env()),
    }
    t0 = time.monotonic()
    started = {}
    for kind, (vm, env) in cases.items():
        bundle = esxdiag.workdir / kind
        started[kind] = esxdiag.start("report", vm, "-o", str(esxdiag.workdir / f"{kind}.html"), env=env,
                                      bundle=bundle)
    return {"port": port, **{kind: esxdiag.finish(s, t0) for kind, s in started.items()}}


def test_vcenter_unreachable(vcenter_runs):
    run, where = vcenter_runs["unreachable"], f"127.0.0.1:{vcenter_runs['port']}"
    assert run.returncode == EXIT_COLLECTION, run.explain()
    assert len(run.lines_naming(where, "unreachable")) == 1, run.explain()
    assert where in vcenter_gap(run, "unreachable").error


def test_wrong_vcenter_password(vcenter_runs, vcsim):
    run = vcenter_runs["auth"]
    assert run.returncode == EXIT_COLLECTION, run.explain()
    assert len(run.lines_naming(f"127.0.0.1:{vcsim.port}", "login failed", repr(vcsim.username))) == 1, run.explain()
    vcenter_gap(run, "auth")
    assert vcsim.password not in run.stderr + run.stdout


def test_untrusted_vcenter_certificate(vcenter_runs, vcsim):
    run = vcenter_runs["tls"]
    assert run.returncode == EXIT_COLLECTION, run.explain()
    assert len(run.lines_naming(f"127.0.0.1:{vcsim.port}", "TLS certificate not trusted", "--insecure")) == 1
    vcenter_gap(run, "tls")


def test_vm_not_found_names_it_and_close_names(vcenter_runs):
    run = vcenter_runs["not-found"]
    assert run.returncode == EXIT_COLLECTION, run.explain()
    (line,) = run.lines_naming("no VM 'iperf-test9'")
    assert "close names: " in line and "iperf-test1" in line.split("close names: ")[1].split(", ")
    vcenter_gap(run, "not-found")


@pytest.fixture
def twin_vms(vcsim):
    """Two new VMs with one (unique) name in two new folders (the second is created under another
    name, then renamed: both live on one datastore); destroyed afterwards."""
    name = f"esxdiag-twin-{uuid.uuid4().hex[:8]}"
    created: list[str] = []  # inventory paths, VMs before their folders
    try:
        for side in ("a", "b"):
            folder = f"/DC0/vm/{name}-{side}"
            vcsim.govc("folder.create", folder)
            created.append(folder)
            first = f"{name}-{side}"
            vcsim.govc("vm.create", "-on=false", "-folder", folder, "-host", HOST, "-ds", "LocalDS_0",
                       "-net", "VM Network", first)
            created.insert(0, f"{folder}/{first}")
            vcsim.govc("object.rename", f"{folder}/{first}", name)
            created[0] = f"{folder}/{name}"
        yield name, [vcsim.govc("ls", "-i", f"/DC0/vm/{name}-{side}/{name}").strip().split(":")[-1]
                     for side in ("a", "b")]
    finally:
        for path in created:
            vcsim.govc("vm.destroy" if path.count("/") == 4 else "object.destroy", path)


def test_ambiguous_vm_name_lists_every_match(esxdiag, twin_vms):
    name, moids = twin_vms
    run = esxdiag.run("report", name, "-o", str(esxdiag.workdir / f"bundle{esxdiag.runs + 1}.html"))
    assert run.returncode == EXIT_COLLECTION, run.explain()
    (line,) = run.lines_naming(f"VM name {name!r} is ambiguous")
    for side, moid in zip("ab", moids):
        assert f"/DC0/vm/{name}-{side}/{name} ({moid} on {HOST})" in line  # each match's folder
    assert "use the inventory path, a MOID or the instance UUID" in line
    vcenter_gap(run, "ambiguous")


@pytest.fixture
def powered_off_vm(vcsim):
    """A new VM, powered on and then off with govc; powered back on and destroyed afterwards."""
    name = f"esxdiag-off-{uuid.uuid4().hex[:8]}"
    vcsim.govc("vm.create", "-on=true", "-host", HOST, "-ds", "LocalDS_0", "-net", "VM Network", name)
    vcsim.govc("vm.power", "-off", "-force", name)
    yield name
    vcsim.govc("vm.power", "-on", name)
    assert "poweredOn" in vcsim.govc("object.collect", "-s", f"/DC0/vm/{name}", "runtime.powerState")
    vcsim.govc("vm.destroy", name)


def test_powered_off_vm_exits_3_with_its_inventory(esxdiag, ssh_lab, powered_off_vm):
    before = len(ssh_lab.commands())
    run = esxdiag.run("report", powered_off_vm, "-o", str(esxdiag.workdir / "report.html"))
    assert run.returncode == EXIT_COLLECTION, run.explain()
    (line,) = run.lines_naming(f"esxdiag: VM {powered_off_vm!r} is poweredOff")
    assert "power it on and run again" in line
    (inventory,) = run.captures("vsphere_vm")
    assert inventory.ok, inventory
    record = json.loads(inventory.path.read_text())
    assert (record["name"], record["power_state"]) == (powered_off_vm, "poweredOff")
    assert any("is poweredOff" in note for note in run.bundle_loaded().manifest["notes"])
    assert not (esxdiag.workdir / "report.html").exists()
    assert "NO FINDINGS" not in run.stdout
    assert ssh_lab.commands()[before:] == []  # nothing to collect from a VM that is off


def test_first_ctrl_c_ends_the_window_early_and_the_run_still_reports(esxdiag):
    run = esxdiag.interrupt_during("report", VM, "esxtop batch", "--format", "json", after_s=5,
                                   window=("--window", "40", "--esxtop-delay", "1"))
    assert run.returncode == 0, run.explain()
    assert run.elapsed_s < 30, run.explain()
    assert run.lines_naming("Ctrl-C: ending the window now"), run.explain()
    bundle = run.bundle_loaded()
    assert any(n.startswith("window ended early by Ctrl-C after") for n in bundle.manifest["notes"])
    for spec, kind in (("vsish_rxsummary", "esxi"), ("ethtool_stats", "linux")):
        for sample in (0, 1):
            (capture,) = run.captures(spec, sample, kind)
            assert capture.ok and capture.path.stat().st_size > 0, capture
    (esxtop,) = run.captures("esxtop_batch")
    assert esxtop.ok and esxtop.rc is None and esxtop.path.stat().st_size > 0, esxtop  # stopped, rows kept
    assert run.captures("vsphere_perf")[0].ok
    document = json.loads(run.stdout[:run.stdout.rindex("\nbundle: ") + 1])
    (vm,) = document["vms"]
    assert vm["name"] == VM and vm["cpu"]["source"] == "esxtop", vm["cpu"]  # the shortened window's rows


def test_second_ctrl_c_aborts_with_a_valid_partial_bundle(esxdiag):
    run = esxdiag.interrupt_during("collect", VM, "esxtop batch", window=("--window", "30", "--esxtop-delay", "2"),
                                   presses=2)
    assert run.returncode == EXIT_INTERRUPTED, run.explain()
    assert run.elapsed_s < 20, run.explain()
    assert f"bundle: {run.bundle}" in run.stdout
    assert run.lines_naming("interrupted", str(run.bundle)), run.explain()
    bundle = run.bundle_loaded()
    assert any("interrupted" in note for note in bundle.manifest["notes"]), bundle.manifest["notes"]
    (first,) = run.captures("vsish_rxsummary", 0, "esxi")
    assert first.ok and first.path.stat().st_size > 0, first
    assert run.captures("vsphere_perf") == []
