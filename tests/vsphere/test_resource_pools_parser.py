"""The vsphere_vm record's resource pool chain: read field for field, checked like every other field, and
joined into VmFacts (the VM's pool first)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from esxdiag.errors import ParseError
from esxdiag.join.joiner import _pools
from esxdiag.parsers.vsphere import parse_vm

FIXTURES = Path(__file__).resolve().parent / "fixtures"
CHAIN = [{"name": "tenant-a", "moid": "resgroup-74", "path": "/DC0/host/DC0_C0/Resources/tenant-a", "kind": "pool",
          "cpu_limit_mhz": 2000, "root": False},
         {"name": "Resources", "moid": "resgroup-8", "path": "/DC0/host/DC0_C0/Resources", "kind": "pool",
          "cpu_limit_mhz": 41210, "root": True}]


def _vm(**fields) -> str:
    data = json.loads((FIXTURES / "vsphere_vm_iperf-cpu-limited.json").read_text())
    return json.dumps({**data, **fields})


def test_pool_chain_is_read_and_joined_nearest_first():
    vm = parse_vm(_vm(resource_pools=CHAIN))
    assert [(p.name, p.cpu_limit_mhz, p.root) for p in vm.resource_pools] == [("tenant-a", 2000, False),
                                                                              ("Resources", 41210, True)]
    facts = _pools(vm)
    assert facts[0].path == "/DC0/host/DC0_C0/Resources/tenant-a" and facts[1].root


def test_pools_not_read_stay_unknown_not_empty():
    assert parse_vm(_vm(resource_pools=None)).resource_pools is None
    assert _pools(parse_vm(_vm())) is None  # a capture from before the field existed


@pytest.mark.parametrize("bad", [
    {"cpu_limit_mhz": -1},  # the collector writes -1 (unlimited) as null
    {"root": "no"},
    {"kind": None},
])
def test_damaged_pool_fields_are_parse_errors(bad):
    with pytest.raises(ParseError):
        parse_vm(_vm(resource_pools=[{**CHAIN[0], **bad}]))
