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
