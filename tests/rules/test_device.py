"""vmxnet3 device versions and their ring rules (docs/raw-formats.md §4.2, docs/diagnosis.md §5)."""

from __future__ import annotations

import pytest

from esxdiag.join.device import device_version, ring1_max, ring2_max, runs_as


@pytest.mark.parametrize("request_, ring, version, mtu, runs", [
    (4032, 1, "v7", 9000, 2048),  # the trap: a pre-v7 habit on a v7 device
    (4096, 1, "v7", 9000, 4096),
    (4096, 1, "pre-v7", 9000, 4032),
    (4096, 1, "pre-v7", 1500, 4096),
    (100, 1, "v7", 1500, 128),  # up to 32, then down to a power of two
    (1000, 1, "pre-v7", 1500, 1024),
    (3000, 2, "v7", 9000, 2048),
])
def test_runs_as(request_, ring, version, mtu, runs):
    assert runs_as(request_, ring, version, mtu) == runs


def test_version_from_configuration_and_from_sizes():
    assert device_version("vmx-20", "8.0.2", 1500, (256, 512))[0] == "v7"
    assert device_version("vmx-19", "8.0.2", 1500, (256, 512))[0] == "pre-v7"
    assert device_version("vmx-21", "VMware ESXi 7.0.3 build-1", 1500, (256, 512))[0] == "pre-v7"
    assert device_version(None, None, 9000, (2048, 2048))[0] == "v7"  # 2048 at MTU 9000: not a multiple of 96
    assert device_version("vmx-20", "8.0.2", 9000, (4032, 4096))[0] == "pre-v7"  # what the device runs wins
    version, why = device_version(None, None, 1500, (256, 512))
    assert version is None and "not collected" in why


def test_maxima():
    assert ring1_max("v7", 9000) == 4096
    assert ring1_max("pre-v7", 9000) == 4032 and ring1_max(None, 9000) == 4032
    assert ring1_max(None, 1500) == 4096
    assert ring2_max("vmxnet3", (1, 4, 5, 0)) == 2048 and ring2_max("vmxnet3", (1, 4, 6, 0)) == 4096
    assert ring2_max("e1000", (1, 0)) == 4096
