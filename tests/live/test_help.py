"""--help answers questions: every live option shows its default and the variables it reads."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize("command", ["report", "rings", "collect"])
def test_help_shows_defaults_and_environment(command):
    done = subprocess.run([sys.executable, "-m", "esxdiag", command, "--help"], capture_output=True, text=True,
                          timeout=60, env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    for expected in ("--window SECONDS observation window", "(default: 60)", "esxtop sample interval (default: 5)",
                     "after this long (default: 60;", "--vcenter-timeout", "(default: ~/.config/esxdiag/config.ini)",
                     "(default: ~/.ssh/known_hosts)", "~/.config/esxdiag/known_hosts", "$ESXDIAG_KNOWN_HOSTS",
                     "$ESXDIAG_VCENTER", "$GOVC_URL", "$GOVC_USERNAME", "$ESXDIAG_PASSWORD", "$ESXDIAG_HOST_PASSWORD",
                     "$ESXDIAG_GUEST_PASSWORD", "$ESXDIAG_INSECURE=1", "$ESXDIAG_THUMBPRINT", "$SSH_AUTH_SOCK",
                     "--output-cap MIB"):
        assert expected in text, (expected, done.stdout)


def _options(parser, path=()):
    """(command path, action) for every option of every (sub)command."""
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _options(sub, (*path, name))
        elif action.option_strings and not isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
            yield " ".join(path), action


def test_every_option_with_a_default_shows_it_in_help():
    from esxdiag.cli import build_parser

    missing = []
    for command, action in _options(build_parser()):
        default = action.default
        if default is None or default is False or default == [] or default == "==SUPPRESS==":
            continue  # nothing to show (0 is a default: --deep 0)
        shown = (action.help or "") % {"default": default} if "%(default)" in (action.help or "") else action.help or ""
        values = {str(default), f"{default:g}" if isinstance(default, float) else str(default)}
        if "default" not in shown or not any(v in shown for v in values):
            missing.append(f"{command} {action.option_strings[-1]} (default {default!r}): {action.help!r}")
    assert not missing, "\n".join(missing)


@pytest.mark.parametrize("command, expected", [
    ("scan", ("--in-flight N QueryPerf requests in flight per vCenter (default: 4)",
              "--page-size N objects per inventory page (default: 1000)",
              "each SOAP call's whole answer, read and decoded, within this (default: 60)",
              "(default: html)", "$ESXDIAG_INSECURE=1", "$GOVC_INSECURE=1", "$ESXDIAG_THUMBPRINT",
              "(default: ~/.config/esxdiag/config.ini)", "fleet-report.html in the scan's own new folder",
              "snapshot.json in the scan's own new folder", "$ESXDIAG_HOST_PASSWORD", "$ESXDIAG_GUEST_PASSWORD",
              "$ESXDIAG_KNOWN_HOSTS", "$SSH_AUTH_SOCK", "history.sqlite", "(default: 300, max 3600)")),
    ("report", ("report.html inside the bundle folder", "(default: html)", "esxdiag-VM-TIMESTAMP[-N]")),
    ("collect", ("default: a new ./esxdiag-VM-TIMESTAMP",)),
    ("history", ("--limit N the newest N results (default: 20)", "(default: text)", "history.sqlite")),
    ("analyze", ("./report.html", "(default: html)")),
    ("diff", ("(default: text)",)),
])
def test_help_names_the_defaults_issue_15_found_missing(command, expected):
    done = subprocess.run([sys.executable, "-m", "esxdiag", command, "--help"], capture_output=True, text=True,
                          timeout=60, env={"COLUMNS": "200", "PATH": "/usr/bin:/bin", "HOME": "/home/someone"})
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    for phrase in expected:
        assert phrase in text, (phrase, done.stdout)
