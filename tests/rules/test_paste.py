"""Shown commands are pasted into a real bash by an admin: hostile VM, interface and portgroup names
must reach each tool as one argument, unchanged (govc -vm: with its pattern characters escaped,
since govc matches -vm as a path pattern), and never run anything else.

Each command is fed on stdin to `bash --noprofile --norc` as an unprivileged user (`nobody` when the
suite runs as root), with fake govc / ethtool / nmcli first in PATH that record their argv as JSON.
A name that broke out of its quoting would create the file F in the working directory."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from esxdiag.rules import remediation as fix

HOSTILE = [
    "x'; touch F; echo ",
    "$(touch F)",
    "`touch F`",
    'a"b; touch F; "',
    "web;touch F",
    "sq[1]vm*?",
    "back\\slash'\\''",
    "new\nline; touch F",
    "tab\tand space",
    "-rf --help",
    "caf\u00e9 \u2019quote\u2018",
    "!!; touch F",
]
FAKE_TOOL = """#!/usr/bin/python3
import json, os, sys
with open(os.environ["ARGV_LOG"], "a") as log:
    log.write(json.dumps([os.path.basename(sys.argv[0])] + sys.argv[1:]) + "\\n")
"""
BASH = shutil.which("bash")


@pytest.fixture(scope="module")
def sandbox():
    """A world-writable directory with the fake tools, so the unprivileged shell could create F there."""
    root = Path(tempfile.mkdtemp(prefix="esxdiag-paste-"))
    tools = root / "bin"
    tools.mkdir()
    for name in ("govc", "ethtool", "nmcli"):
        (tools / name).write_text(FAKE_TOOL)
        (tools / name).chmod(0o755)
    os.chmod(root, 0o777)
    yield root
    shutil.rmtree(root)


def paste(sandbox: Path, command: str) -> list[list[str]]:
    """Run one shown command line as pasted; return the argv every fake tool received."""
    work = Path(tempfile.mkdtemp(dir=sandbox))
    os.chmod(work, 0o777)
    log = work / "argv.jsonl"
    env = {"PATH": f"{sandbox / 'bin'}:/usr/bin:/bin", "ARGV_LOG": str(log), "HOME": str(work), "LC_ALL": "C.UTF-8"}
    prefix = ["runuser", "-u", "nobody", "--"] if os.geteuid() == 0 else []
    proc = subprocess.run(prefix + ["env", "-i", *(f"{k}={v}" for k, v in env.items()), BASH, "--noprofile", "--norc"],
                          input=command + "\n", capture_output=True, text=True, cwd=work, timeout=30)
    assert not (work / "F").exists(), f"pasting ran an injected command: {command!r}\n{proc.stderr}"
    assert proc.returncode == 0, (command, proc.stderr)
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def govc_pattern(name: str) -> str:
    return re.sub(r"([*?\[\]\\])", r"\\\1", name)


pytestmark = pytest.mark.skipif(BASH is None or (os.geteuid() == 0 and shutil.which("runuser") is None),
                                reason="needs bash (and runuser when running as root)")


@pytest.mark.parametrize("name", HOSTILE)
def test_vsphere_commands_give_govc_the_vm_name_as_one_escaped_argument(sandbox, name):
    remedies = [fix.vsphere_remove_limit(name, 800), fix.vsphere_relieve_contention(name, True),
                fix.vsphere_add_vcpus(name, 2, "eth0"), fix.replace_emulated_nic(name, "Network adapter 1",
                                                                                   "00:50:56:00:00:01", "e1000",
                                                                                   name, "linux")]
    seen = 0
    for remedy in remedies:
        for command in remedy.commands:
            if command.startswith("Get-VM "):
                continue  # PowerCLI: see test_powershell_lines_quote_and_escape_wildcards
            (argv,) = paste(sandbox, command)  # every other shown line is a bash command that runs as shown
            assert argv[0] == "govc" and argv[argv.index("-vm") + 1] == govc_pattern(name), (command, argv)
            if "-net" in argv:
                assert argv[argv.index("-net") + 1] == name
            seen += 1
    assert seen >= 6


@pytest.mark.parametrize("name", HOSTILE)
def test_linux_commands_give_ethtool_the_interface_as_one_argument(sandbox, name):
    remedies = [fix.linux_raise_ring(name, "00:50:56:00:00:01", 1, 256, 4096, 2, 2.4, 1500),
                fix.linux_raise_ring(name, None, 2, 256, 4096, 2, 4.0, 9000), fix.linux_more_queues(name, 4)]
    for remedy in remedies:
        for command in remedy.commands:
            (argv,) = paste(sandbox, command)
            assert argv[0] == "ethtool" and argv[2] == name, (command, argv)


def test_the_network_manager_persistence_line_passes_the_interface_through(sandbox):
    name = "x'; touch F; echo "
    line = next(p for p in fix.linux_raise_ring(name, None, 1, 256, 4096, 2, 2.4, 1500).persistence
                if p.startswith("NetworkManager: "))
    calls = paste(sandbox, line.removeprefix("NetworkManager: "))
    assert calls[0] == ["nmcli", "-g", "GENERAL.CONNECTION", "device", "show", name]
    assert calls[1][:3] == ["nmcli", "connection", "modify"] and calls[1][4:] == ["ethtool.ring-rx", "4096"]


def test_placeholders_are_harmless_words_not_redirections(sandbox):
    for command in (fix.linux_more_queues(None, None).commands + fix.vsphere_relieve_contention("vm1", True).commands
                    + fix.vsphere_add_vcpus("vm1", None, None).commands):
        (argv,) = paste(sandbox, command)
        assert any(a.startswith("<") and a.endswith(">") for a in argv), argv


@pytest.mark.parametrize("name", HOSTILE)
def test_powershell_lines_quote_and_escape_wildcards(name):
    """No PowerShell here to paste into: check the literal against PowerShell's rules instead. Inside
    '...' only the quote characters are special (each doubled); -Name is a wildcard pattern, so
    * ? [ ] and ` carry a backtick escape."""
    lines = [c for r in (fix.vsphere_remove_limit(name, 800), fix.windows_enable_rss(name, 4),
                         fix.windows_raise_ring(name, 1, 512, 4096, 1, 2.4),
                         fix.replace_emulated_nic(name, "a", "00:50:56:00:00:01", "e1000", None, "windows"))
             for c in r.commands if not c.startswith(("govc ", "netsh "))]
    escaped = re.sub(r"([*?\[\]`])", r"`\1", name)
    literal = "'" + re.sub("(['\u2018\u2019\u201a\u201b])", r"\1\1", escaped) + "'"
    for line in lines:
        assert f"-Name {literal}" in line, line
        rest = line.replace(literal, "")
        assert not re.search("['\u2018\u2019\u201a\u201b]", rest.split("$_.MacAddress -eq")[0]), line
