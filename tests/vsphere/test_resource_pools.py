"""collect_inventory reads the VM's resource pool chain (each pool's CPU limit and inventory path) in the
same RetrievePropertiesEx: a VM without a limit of its own in a limited pool gets the pool's command."""

from __future__ import annotations

import json

import pytest

from esxdiag.collectors.vsphere import collect_inventory, connect, find_vm
from esxdiag.parsers.vsphere import parse_vm

pytestmark = pytest.mark.lab
POOLS = "/DC0/host/DC0_C0/Resources"


@pytest.fixture(scope="module")
def pooled(lab_module, lab_creds, tmp_path_factory):
    """vcsim with one cluster; VM DC0_C0_RP0_VM0 moved into tenant/inner, tenant limited to 1,000 MHz."""
    lab = lab_module.start_vcsim(tmp_path_factory.mktemp("pools"),
                                 ("-cluster", "1", "-host", "1", "-standalone-host", "0", "-vm", "1"))
    try:
        lab.govc("pool.create", f"{POOLS}/tenant")
        lab.govc("pool.change", "-cpu.limit", "1000", f"{POOLS}/tenant")
        lab.govc("pool.create", f"{POOLS}/tenant/inner")
        lab.govc("vm.migrate", "-pool", f"{POOLS}/tenant/inner", "DC0_C0_RP0_VM0")
        live = connect(lab_creds(lab, insecure=True), timeout_s=10)
        yield lab, live
        live.close()
    finally:
        lab.stop()


def test_pool_chain_with_limits_and_paths_in_one_request(pooled):
    lab, session = pooled
    ref = find_vm(session, "DC0_C0_RP0_VM0")
    before = session.request_count
    record = collect_inventory(session, ref)
    assert session.request_count - before == 1  # the pools come with the VM: no per-pool round trip
    chain = record["resource_pools"]
    assert [(p["name"], p["path"], p["cpu_limit_mhz"], p["root"]) for p in chain] == [
        ("inner", f"{POOLS}/tenant/inner", None, False),
        ("tenant", f"{POOLS}/tenant", 1000, False),
        ("Resources", POOLS, chain[-1]["cpu_limit_mhz"], True)]  # the root's "limit" is the capacity
    assert all(p["kind"] == "pool" and p["moid"].startswith("resgroup-") for p in chain)
    assert record["cpu_allocation"]["limit_mhz"] is None
    parsed = parse_vm(json.dumps(record))
    assert parsed.resource_pools[1].cpu_limit_mhz == 1000
