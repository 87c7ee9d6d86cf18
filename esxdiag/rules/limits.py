"""Where the CPU limit that throttles a VM lives (%MLMTD > 0): the VM's own limit, a resource pool or vApp
above it, or not known. Each gets the command for the object that holds the limit; a VM command when the VM
has no limit of its own would change nothing."""

from __future__ import annotations

from dataclasses import dataclass

from esxdiag.join.facts import PoolFacts, VmFacts
from esxdiag.result import Evidence, Remediation
from esxdiag.rules import remediation as fix


@dataclass(frozen=True)
class LimitPlace:
    words: str  # where the limit is, for a verdict or finding summary
    evidence: tuple[Evidence, ...]
    remediation: tuple[Remediation, ...]


def limiting_pools(vm: VmFacts) -> tuple[PoolFacts, ...]:
    """The pools above the VM with a CPU limit set, nearest first; a root pool's limit is its capacity."""
    return tuple(p for p in vm.resource_pools or () if not p.root and p.cpu_limit_mhz is not None)


def effective_limit_mhz(vm: VmFacts) -> int | None:
    """The CPU limit that can throttle the VM: its own, else the nearest limited pool's (a limit CPU figures
    would have to rule out when they were not measured)."""
    if vm.cpu_limit_mhz is not None:
        return vm.cpu_limit_mhz
    pools = limiting_pools(vm)
    return pools[0].cpu_limit_mhz if pools else None


def pool_words(pool: PoolFacts) -> str:
    kind = "vApp" if pool.kind == "vapp" else "resource pool"
    return f"{kind} {pool.name}" + (f" ({pool.path})" if pool.path else "") + (
        f" limits CPU to {pool.cpu_limit_mhz:,} MHz" if pool.cpu_limit_mhz is not None else "")


def limit_place(vm: VmFacts) -> LimitPlace:
    """Which object's limit to remove, from what the bundle read: the VM's own limit (vCenter inventory),
    then its resource pool chain (the VM's pool up to the cluster's root pool)."""
    pools = limiting_pools(vm)
    pool_ev = tuple(Evidence(f"CPU limit on the {'vApp' if p.kind == 'vapp' else 'resource pool'} {p.name}",
                             p.cpu_limit_mhz, "MHz", None, None, vm.inventory_file, "resource_pools[].cpu_limit_mhz")
                    for p in pools)
    pool_fixes = tuple(fix.vsphere_remove_pool_limit(p.name, p.moid, p.path, p.cpu_limit_mhz, p.kind == "vapp")
                       for p in pools)
    if vm.cpu_limit_mhz is not None:
        words = f"the VM's own limit of {vm.cpu_limit_mhz:,} MHz"
        if pools:
            words += "; above it " + "; ".join(pool_words(p) for p in pools)
        return LimitPlace(words, pool_ev, (fix.vsphere_remove_limit(vm.name, vm.cpu_limit_mhz),) + pool_fixes)
    if vm.inventory_file is None:
        return LimitPlace("the VM's own limit or a resource pool's (no vCenter inventory was read, so which is "
                          "not known)", (), (fix.vsphere_find_cpu_limit(vm.name, vm_limit_known=False),))
    if pools:
        return LimitPlace("the VM has no limit of its own; " + "; ".join(pool_words(p) for p in pools), pool_ev,
                          pool_fixes)
    if vm.resource_pools is not None:
        chain = " > ".join(p.name for p in reversed(vm.resource_pools)) or "none"
        return LimitPlace(f"the VM has no limit of its own and no resource pool on its path ({chain}) has one as "
                          "read: the limit was set after the read, or sits on an object the read could not see",
                          (), (fix.vsphere_find_cpu_limit(vm.name, vm_limit_known=True),))
    return LimitPlace("a resource pool (or vApp) above this VM limits it; the VM has no limit of its own (its "
                      "resource pools were not read: see the steps to find which)", (),
                      (fix.vsphere_find_cpu_limit(vm.name, vm_limit_known=True),))
