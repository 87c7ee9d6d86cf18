"""Fixtures for the live-collection tests: `esxdiag collect/report/rings --vm` run as a user would
(a subprocess with an explicit environment) against both labs at once: the lab's vCenter
(tests/lab/vcsim_lab.py: vcsim behind the perf proxy, whose QueryPerf answers for the scenario VMs
and hosts come from the emulator's model, with the SSH lab's time origin) and the lab sshd
(tests/lab/ssh_lab.py) for the ESXi hosts (esx0.lab.local 127.0.0.2, esx1.lab.local 127.0.0.3) and
the guests. A run's --host-ssh is the address of the host its VM runs on.

Each lab starts once per session; the lab modules are loaded by path (importlib mode). HOME and
XDG_CONFIG_HOME point at a per-test directory so nothing reads or writes ~/.ssh or ~/.config.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace

import pytest

from esxdiag.bundle import Bundle
from esxdiag.specs import SPECS

LAB_DIR = Path(__file__).resolve().parents[1] / "lab"
RUN_TIMEOUT_S = 90.0  # one esxdiag run; the slowest (a hung esxtop) ends by itself in ~35 s
WINDOW = ("--window", "3", "--esxtop-delay", "1")


def load_lab_module(name: str):
    key = f"esxdiag_live_{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, LAB_DIR / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        spec.loader.exec_module(module)
    return sys.modules[key]


@pytest.fixture(scope="session")
def scenarios() -> dict:
    return json.loads((LAB_DIR / "scenarios.json").read_text())


@pytest.fixture(scope="session")
def vcsim(tmp_path_factory, sshd):
    """The lab's vCenter; its model counts from the SSH lab's start, so vCenter's samples are the
    differences of what the emulated hosts print."""
    module = load_lab_module("vcsim_lab")
    try:
        lab = module.start_lab(tmp_path_factory.mktemp("live-vcsim"), started=sshd.started)
    except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
        pytest.skip(f"vcsim lab unavailable: {exc}")
    yield lab
    lab.stop()


@pytest.fixture(scope="session")
def sshd(tmp_path_factory):
    module = load_lab_module("ssh_lab")
    try:
        lab = module.start_ssh_lab(tmp_path_factory.mktemp("live-sshd"))
    except module.LabUnavailable as exc:
        pytest.skip(str(exc))
    yield lab
    lab.stop()


@pytest.fixture
def ssh_lab(sshd):
    """The session sshd with no fault left over from another test (and none left behind)."""
    sshd.clear_faults()
    yield sshd
    sshd.clear_faults()


@dataclass
class Run:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    elapsed_s: float
    bundle: Path
    cwd: Path

    def bundle_loaded(self) -> Bundle:
        return Bundle.load(self.bundle)

    def captures(self, spec: str, sample: int | None = None, target_kind: str | None = None) -> list:
        bundle = self.bundle_loaded()
        kinds = {t.id: t.kind for t in bundle.targets}
        return [c for c in bundle.captures if c.spec == spec and (sample is None or c.sample == sample)
                and (target_kind is None or kinds.get(c.target) == target_kind)]

    def lines_naming(self, *words: str) -> list[str]:
        """stderr lines that contain every one of ``words``."""
        return [line for line in self.stderr.splitlines() if all(w in line for w in words)]

    def explain(self) -> str:
        return f"exit {self.returncode} after {self.elapsed_s:.1f} s\n--- stdout\n{self.stdout}\n--- stderr\n{self.stderr}"


@dataclass
class Esxdiag:
    """Runs the esxdiag CLI against the labs; every run gets its own bundle directory."""

    vcsim: object
    sshd: object
    home: Path
    workdir: Path
    runs: int = field(default=0)

    def env(self, **overrides: str | None) -> dict[str, str]:
        """os.environ without any ESXDIAG_/GOVC_ variable, plus the lab's vCenter; an override of
        None removes that variable."""
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("ESXDIAG_", "GOVC_")) and k not in ("SSH_AUTH_SOCK",)}
        env.update(HOME=str(self.home), XDG_CONFIG_HOME=str(self.home / ".config"),
                   ESXDIAG_VCENTER=self.vcsim.url, ESXDIAG_USERNAME=self.vcsim.username,
                   ESXDIAG_PASSWORD=self.vcsim.password, ESXDIAG_THUMBPRINT=self.vcsim.thumbprint)
        for key, value in overrides.items():
            if value is None:
                env.pop(key, None)
            else:
                env[key] = value
        return env

    def ssh_args(self, key: Path | None = None, known_hosts: Path | None = None, vm: str | None = None) -> list[str]:
        """--host-ssh at the lab host the scenario VM ``vm`` runs on (the first host for another
        name, a MOID or a UUID), the guest address left to VMware Tools (USER@:PORT)."""
        lab = self.sshd
        names = {v["name"] for v in lab.scenario["vms"]}
        host = lab.host_address_of(vm) if vm in names else lab.host_address
        args = ["--host-ssh", f"{lab.user}@{host}:{lab.port}", "--guest-ssh", f"{lab.user}@:{lab.port}",
                "--known-hosts", str(known_hosts or lab.known_hosts)]
        if key is not None:
            args += ["--ssh-key", str(key)]
        return args

    def argv(self, command: str, vm: str, *extra: str, ssh: list[str] | None = None,
             bundle: Path | None = None, window: tuple[str, ...] = WINDOW) -> tuple[list[str], Path]:
        self.runs += 1
        bundle = bundle or self.workdir / f"bundle{self.runs}"
        out = ["--bundle", str(bundle)] if command != "collect" else ["-o", str(bundle)]
        ssh = self.ssh_args(key=self.sshd.key_file, vm=vm) if ssh is None else ssh
        return [sys.executable, "-m", "esxdiag", command, "--vm", vm, *ssh, *window, *out, *extra], bundle

    def start(self, command: str, vm: str, *extra: str, env: dict[str, str] | None = None,
              **kwargs) -> tuple[subprocess.Popen, list[str], Path]:
        argv, bundle = self.argv(command, vm, *extra, **kwargs)
        process = subprocess.Popen(argv, env=env or self.env(), cwd=self.workdir, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        return process, argv, bundle

    def finish(self, started: tuple[subprocess.Popen, list[str], Path], t0: float,
               timeout_s: float = RUN_TIMEOUT_S) -> Run:
        process, argv, bundle = started
        try:
            out, err = process.communicate(timeout=max(1.0, timeout_s - (time.monotonic() - t0)))
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate(timeout=10)
            pytest.fail(f"esxdiag did not finish within {timeout_s:g} s: {argv}\n{err}")
        return Run(argv, process.returncode, out, err, time.monotonic() - t0, bundle, self.workdir)

    def run(self, command: str, vm: str, *extra: str, timeout_s: float = RUN_TIMEOUT_S, **kwargs) -> Run:
        t0 = time.monotonic()
        return self.finish(self.start(command, vm, *extra, **kwargs), t0, timeout_s)

    def run_many(self, jobs: list[tuple[str, str, tuple[str, ...]]], **kwargs) -> list[Run]:
        """Several runs at once (command, vm, extra args); the labs serve them concurrently."""
        t0 = time.monotonic()
        started = [self.start(command, vm, *extra, **kwargs) for command, vm, extra in jobs]
        return [self.finish(s, t0) for s in started]

    def interrupt_during(self, command: str, vm: str, marker: str, *extra: str, wait_s: float = 30.0,
                         presses: int = 1, after_s: float = 0.5, **kwargs) -> Run:
        """Start a run and send it SIGINT (Ctrl-C) once a stderr line contains ``marker``; with
        ``presses=2`` a second one after the first was acknowledged on stderr; ``after_s`` after the marker."""
        t0 = time.monotonic()
        process, argv, bundle = self.start(command, vm, *extra, **kwargs)
        err_lines: list[str] = []
        out_text: list[str] = []
        seen, acknowledged = threading.Event(), threading.Event()

        def read_stderr():
            for line in process.stderr:
                err_lines.append(line)
                if marker in line:
                    seen.set()
                if "Ctrl-C again aborts" in line:
                    acknowledged.set()

        readers = [threading.Thread(target=read_stderr, daemon=True),
                   threading.Thread(target=lambda: out_text.append(process.stdout.read()), daemon=True)]
        for reader in readers:
            reader.start()
        if not seen.wait(wait_s):
            process.kill()
            process.wait(timeout=10)
            pytest.fail(f"never saw {marker!r} on stderr within {wait_s:g} s: {''.join(err_lines)}")
        time.sleep(after_s)  # well inside the command that printed the marker
        process.send_signal(signal.SIGINT)
        if presses > 1:
            if not acknowledged.wait(wait_s):
                process.kill()
                process.wait(timeout=10)
                pytest.fail(f"the first Ctrl-C was never acknowledged: {''.join(err_lines)}")
            process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
            pytest.fail(f"esxdiag ignored SIGINT for {RUN_TIMEOUT_S:g} s: {''.join(err_lines)}")
        for reader in readers:
            reader.join(timeout=10)
        return Run(argv, process.returncode, "".join(out_text), "".join(err_lines), time.monotonic() - t0,
                   bundle, self.workdir)


@pytest.fixture
def esxdiag(make_esxdiag, ssh_lab, tmp_path) -> Esxdiag:
    home = tmp_path / "home"
    home.mkdir()
    return make_esxdiag(home, tmp_path)


def known_hosts_without(lab, address: str, path: Path, extra: str = "") -> Path:
    """The lab's known_hosts minus ``address``'s line, plus ``extra``."""
    keep = [line + "\n" for line in lab.known_hosts.read_text().splitlines()
            if not line.startswith(f"[{address}]:")]
    path.write_text("".join(keep) + extra)
    return path


def closed_port() -> int:
    """A 127.0.0.1 port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def files_containing(root: Path, secret: str) -> list[Path]:
    needle = secret.encode()
    return [p for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]


class _CoverageTable(HTMLParser):
    """Rows (lists of cell text) of the report's coverage table."""

    def __init__(self):
        super().__init__()
        self.rows: list[list[str]] = []
        self._in_table = self._in_cell = False

    def handle_starttag(self, tag, attrs):
        if tag == "table" and ("class", "coverage") in attrs:
            self._in_table = True
        elif self._in_table and tag == "tr":
            self.rows.append([])
        elif self._in_table and tag in ("td", "th"):
            self._in_cell = True
            self.rows[-1].append("")

    def handle_endtag(self, tag):
        if tag == "table":
            self._in_table = False
        elif tag in ("td", "th"):
            self._in_cell = False

    def handle_data(self, data):
        if self._in_table and self._in_cell:
            self.rows[-1][-1] += data


def coverage_gaps(html: str) -> list[list[str]]:
    """The "Not collected" rows of an HTML report (header row dropped)."""
    table = _CoverageTable()
    table.feed(html)
    return [row for row in table.rows[1:] if row]


def rendered_by_specs(captures) -> set[str]:
    """The command line each capture's spec renders for the capture's params."""
    return {SPECS[c.spec].render(**c.params) for c in captures if SPECS[c.spec].argv}


@pytest.fixture(scope="session")
def make_esxdiag(vcsim, sshd):
    """make_esxdiag(home, workdir) -> Esxdiag, for module-scoped fixtures that share one run."""
    def make(home: Path, workdir: Path) -> Esxdiag:
        return Esxdiag(vcsim, sshd, home, workdir)

    return make


@pytest.fixture(scope="session")
def live():
    """The helpers above (importlib mode: test files cannot import this conftest)."""
    return SimpleNamespace(known_hosts_without=known_hosts_without, closed_port=closed_port,
                           files_containing=files_containing, coverage_gaps=coverage_gaps,
                           rendered_by_specs=rendered_by_specs, WINDOW=WINDOW)
