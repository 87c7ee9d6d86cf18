"""SSH logins the way admins expect, against the lab sshd: keys from ssh-agent, a password prompt
on a terminal when no key works, errors that name the flag or variable to set, and an unknown host
key shown by its SHA256 fingerprint with the option that accepts it."""

from __future__ import annotations

import os
import pty
import select
import shutil
import signal
import subprocess
import time

import pytest

pytestmark = pytest.mark.lab

VM = "iperf-test1"


@pytest.fixture
def agent(tmp_path, ssh_lab):
    """A real ssh-agent holding the lab's client key; killed (by its pid) afterwards."""
    if not shutil.which("ssh-agent"):
        pytest.skip("ssh-agent not installed (openssh-client)")
    sock = tmp_path / "agent.sock"
    out = subprocess.run(["ssh-agent", "-s", "-a", str(sock)], capture_output=True, text=True, timeout=10,
                         check=True).stdout
    pid = int(out.split("SSH_AGENT_PID=")[1].split(";")[0])
    try:
        subprocess.run(["ssh-add", str(ssh_lab.key_file)], env={**os.environ, "SSH_AUTH_SOCK": str(sock)},
                       capture_output=True, timeout=10, check=True)
        yield sock
    finally:
        os.kill(pid, signal.SIGTERM)


def test_keys_from_ssh_agent_log_in_to_host_and_guest(esxdiag, agent):
    run = esxdiag.run("rings", VM, ssh=esxdiag.ssh_args(key=None), env=esxdiag.env(SSH_AUTH_SOCK=str(agent)))
    assert run.returncode == 0, run.explain()
    assert "[raise-ring1]" in run.stdout
    assert all(c.ok for c in run.bundle_loaded().captures), run.explain()


def test_no_key_and_no_password_names_what_to_set(esxdiag):
    run = esxdiag.run("rings", VM, ssh=esxdiag.ssh_args(key=None))
    assert run.returncode == 3, run.explain()
    (host,) = run.lines_naming("127.0.0.2", "no SSH key or password to log in with")
    assert "--ssh-key" in host and "ssh-agent" in host and "ESXDIAG_HOST_PASSWORD" in host
    (guest,) = run.lines_naming("127.0.0.11", "no SSH key or password to log in with")
    assert "ESXDIAG_GUEST_PASSWORD" in guest
    assert "No authentication methods available" not in run.stderr


def test_password_prompt_on_a_terminal(esxdiag, ssh_lab):
    """No key works and no password is set: on a terminal esxdiag asks, as ssh does (once per target)."""
    argv, bundle = esxdiag.argv("rings", VM, ssh=esxdiag.ssh_args(key=None))
    env = esxdiag.env()
    pid, fd = pty.fork()
    if pid == 0:  # the child: esxdiag with the pty as its terminal
        os.chdir(esxdiag.workdir)
        os.execve(argv[0], argv, env)
    output, prompts, deadline = b"", 0, time.monotonic() + 90
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 1.0)
            if not ready:
                continue
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            output += chunk
            if output.count(b"Password for ") > prompts:
                prompts += 1
                os.write(fd, ssh_lab.password.encode() + b"\n")
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    text = output.decode("utf-8", "replace")
    assert os.waitstatus_to_exitcode(status) == 0, text
    assert prompts == 2 and f"Password for {ssh_lab.user}@127.0.0.2:{ssh_lab.port}: " in text, text
    assert "[raise-ring1]" in text
    assert ssh_lab.password not in text  # getpass does not echo


def test_unknown_host_key_shows_fingerprint_and_the_option(esxdiag, ssh_lab, live):
    missing = esxdiag.workdir / "nothing-here"
    run = esxdiag.run("rings", VM, ssh=esxdiag.ssh_args(ssh_lab.key_file, missing))
    (line,) = run.lines_naming("127.0.0.2", "unknown host key ssh-ed25519 SHA256:")
    assert "--accept-new-host-keys" in line and "no known_hosts file exists" in line
    assert "not in no known_hosts" not in run.stderr
