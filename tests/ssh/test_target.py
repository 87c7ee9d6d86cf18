"""USER@HOST[:PORT] parsing and the options' repr (no lab needed)."""

from __future__ import annotations

import pytest

from esxdiag.collectors.ssh import SshOptions, SshTarget


@pytest.mark.parametrize("text, expected", [
    ("root@esx01.lab", SshTarget("root", "esx01.lab", 22)),
    ("root@10.0.0.5:2222", SshTarget("root", "10.0.0.5", 2222)),
    ("admin@corp.local@vm01", SshTarget("admin@corp.local", "vm01", 22)),
    ("root@[fe80::1]", SshTarget("root", "fe80::1", 22)),
    ("root@[2001:db8::5]:2200", SshTarget("root", "2001:db8::5", 2200)),
])
def test_parse(text, expected):
    assert SshTarget.parse(text) == expected


@pytest.mark.parametrize("text", ["esx01", "@esx01", "root@", "root@fe80::1", "root@h:0", "root@h:99999",
                                  "root@h:ssh", "root@[fe80::1", "root@[fe80::1]x"])
def test_parse_rejects(text):
    with pytest.raises(ValueError):
        SshTarget.parse(text)


def test_str_round_trips_and_brackets_ipv6():
    assert str(SshTarget("root", "fe80::1", 22)) == "root@[fe80::1]:22"
    assert SshTarget.parse(str(SshTarget("root", "fe80::1", 2222))) == SshTarget("root", "fe80::1", 2222)


def test_options_repr_hides_the_password():
    text = repr(SshOptions(password="s3cret-pass"))
    assert "s3cret-pass" not in text and "password=***" in text
