"""The vmxnet3 device version and what it does to ring sizes (docs/diagnosis.md §5, docs/raw-formats.md §4.2).

Pre-v7 devices round ring 1 up to a multiple of 32 x buffers per packet: with MTU above 3050 that is
96, so the largest ring 1 is 4032. Version 7 (ESXi 8, VM hardware 20 and later) then rounds every
ring down to a power of two and puts only head buffers on ring 1: the largest ring 1 is 4096 at any
MTU, and ``ethtool -G rx 4032`` runs as 2048. The version is read from the VM's hardware version and
the host's ESXi version, or from a size only one kind of device can have."""

from __future__ import annotations

import re

JUMBO_MTU = 3050  # above it, pre-v7 ring 1 needs 3 buffers per packet (docs/raw-formats.md §4.2)
PRE_V7_JUMBO_STEP = 96
RING_MAX = 4096
RING_MIN = 32
# Linux vmxnet3 drivers before 1.4.6.0-k cap ring 2 at 2048 (docs/raw-formats.md §4.2)
RING2_CAP_BEFORE = (1, 4, 6, 0)
RING2_OLD_MAX = 2048

_HW = re.compile(r"vmx-(\d{1,3})$")
_ESXI = re.compile(r"(?:ESXi\s+)?(\d{1,2})\.(\d{1,2})")


def hardware_number(version: str | None) -> int | None:
    found = _HW.match((version or "").strip())
    return int(found[1]) if found else None


def esxi_major(version: str | None) -> int | None:
    found = _ESXI.search(version or "")
    return int(found[1]) if found else None


def _power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def device_version(hardware: str | None, esxi: str | None, mtu: int | None,
                   sizes: tuple[int | None, ...]) -> tuple[str | None, str]:
    """("v7" | "pre-v7" | None, the evidence in words). A size only one kind of device can have wins
    over the configuration (it is what the device runs)."""
    seen = [s for s in sizes if s]
    odd = next((s for s in seen if not _power_of_two(s)), None)
    if odd is not None:
        return "pre-v7", f"ring size {odd:,} is not a power of two: only a pre-v7 device runs it"
    if mtu and mtu > JUMBO_MTU and sizes and sizes[0] and sizes[0] % PRE_V7_JUMBO_STEP:
        return "v7", (f"ring 1 {sizes[0]:,} at MTU {mtu:,} is not a multiple of {PRE_V7_JUMBO_STEP}: only a v7 "
                      "device runs it")
    hw, major = hardware_number(hardware), esxi_major(esxi)
    if hw is not None and major is not None:
        if hw >= 20 and major >= 8:
            return "v7", f"VM hardware {hardware} on ESXi {esxi}"
        return "pre-v7", f"VM hardware {hardware} on ESXi {esxi}: vmxnet3 v7 needs hardware 20 on ESXi 8"
    if hw is not None and hw < 20:
        return "pre-v7", f"VM hardware {hardware}: vmxnet3 v7 needs hardware 20 or later"
    if major is not None and major < 8:
        return "pre-v7", f"ESXi {esxi}: vmxnet3 v7 needs ESXi 8"
    known = "; ".join(w for w, v in (("VM hardware version", hardware), ("ESXi version", esxi)) if v is None)
    return None, f"unknown ({known} not collected)" if known else "unknown"


def ring1_max(version: str | None, mtu: int | None, reported: int | None = None) -> int:
    """Ring 1's largest size on this device; with the version unknown and jumbo frames, the pre-v7 one
    (4032: valid on both devices' rounding of a 4096 request)."""
    largest = min(reported or RING_MAX, RING_MAX)
    if mtu and mtu > JUMBO_MTU and version != "v7":
        return min(largest, RING_MAX // PRE_V7_JUMBO_STEP * PRE_V7_JUMBO_STEP)
    return largest


def ring2_max(driver: str | None, version_tuple: tuple[int, ...] | None, reported: int | None = None) -> int:
    largest = min(reported or RING_MAX, RING_MAX)
    if driver == "vmxnet3" and version_tuple is not None and tuple(version_tuple) < RING2_CAP_BEFORE:
        return min(largest, RING2_OLD_MAX)
    return largest


def runs_as(request: int, ring: int, version: str | None, mtu: int | None) -> int:
    """The size the device runs for an ``ethtool -G`` request (vmxnet3_set_ringparam's rounding)."""
    if version == "v7":  # head buffers only on ring 1: multiples of 32, then down to a power of two
        up = min(-(-request // RING_MIN) * RING_MIN, RING_MAX)
        return 1 << (up.bit_length() - 1)
    step = PRE_V7_JUMBO_STEP if ring == 1 and mtu and mtu > JUMBO_MTU else RING_MIN
    return min(-(-request // step) * step, RING_MAX // step * step)
