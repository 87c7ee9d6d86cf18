"""The SSH lab: a real OpenSSH sshd on loopback whose ForceCommand emulates the ESXi hosts and
the guests of tests/lab/scenarios.json (tests/lab/emulator/).

    python tests/lab/ssh_lab.py up [--workdir DIR]     # runs until Ctrl-C, prints how to connect

sshd listens on every host address (esx0.lab.local 127.0.0.2, esx1.lab.local 127.0.0.3) and every
guest NIC address (127.0.0.11, ...) on one free port, with its own host key (one key, every address
in known_hosts), a dedicated user (created if missing; needs root), key auth and password auth.
The emulator answers each host address as that host. Importable by path:
``start_ssh_lab(workdir) -> SshLab``.
"""


import json
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCENARIOS = HERE / "scenarios.json"
EMULATOR = HERE / "emulator"
LAB_USER = "esxdiaglab"
SSHD = "/usr/sbin/sshd"
START_TIMEOUT_S = 10.0


class LabUnavailable(RuntimeError):
    """The machine lacks something the lab needs; the message says what and how to get it."""


def missing_prerequisites() -> list[str]:
    problems = []
    if not os.path.exists(SSHD):
        problems.append(f"{SSHD} not found: install OpenSSH server (apt-get install -y openssh-server)")
    if not shutil.which("ssh-keygen"):
        problems.append("ssh-keygen not found: install openssh-client")
    if os.geteuid() != 0:
        problems.append("the SSH lab needs root (to run sshd and create the test user)")
    for tool in ("useradd", "chpasswd"):
        if not shutil.which(tool):
            problems.append(f"{tool} not found (package passwd)")
    if not _system_python():
        problems.append("no system python3 (/usr/bin/python3) the lab user can run")
    return problems


def _system_python() -> str | None:
    return next((p for p in ("/usr/bin/python3", "/usr/local/bin/python3") if os.access(p, os.X_OK)), None)


@dataclass
class SshLab:
    workdir: Path
    runtime: Path  # readable by the lab user: emulator, state, faults, command log, authorized_keys
    port: int
    user: str
    key_file: Path
    wrong_key_file: Path
    password: str = field(repr=False)
    known_hosts: Path
    host_address: str  # the first scenario host's (esx0.lab.local); host_addresses has them all
    guest_addresses: dict[str, str]  # VM name -> address
    scenario: dict = field(repr=False)
    process: subprocess.Popen | None = field(repr=False)
    config: Path = field(repr=False)
    spare_host_key_pub: str = field(repr=False)
    host_addresses: dict[str, str] = field(default_factory=dict)  # host name -> SSH address, scenario order
    started: float = 0.0  # the model's time origin (epoch): counters are start + rate x seconds since then

    @property
    def command_log(self) -> Path:
        return self.runtime / "commands.jsonl"

    def commands(self) -> list[dict]:
        if not self.command_log.exists():
            return []
        return [json.loads(line) for line in self.command_log.read_text().splitlines() if line.strip()]

    def address_of(self, vm_name: str) -> str:
        return self.guest_addresses[vm_name]

    def host_of(self, vm_name: str) -> str:
        """The name of the ESXi host the scenario VM runs on."""
        return next(vm["host"] for vm in self.scenario["vms"] if vm["name"] == vm_name)

    def host_address_of(self, vm_name: str) -> str:
        """The SSH address of the ESXi host the scenario VM runs on."""
        return self.host_addresses[self.host_of(vm_name)]

    def changed_host_key_line(self, address: str) -> str:
        """A known_hosts line that pins a different ed25519 key for ``address``."""
        return f"[{address}]:{self.port} {self.spare_host_key_pub}\n"

    def set_fault(self, kind: str, address: str | None = None, program: str | None = None,
                  seconds: float | None = None, name: str | None = None, command: str | None = None,
                  then_drop: bool = False) -> None:
        """kind "hang" (command prints nothing for ``seconds``), "missing" (program not found,
        exit 127), "flood" (prints without end for ``seconds``; ``then_drop``: the server ends the
        whole connection when the client stops the command), "drop" (the SSH connection is
        killed while the command runs), "ifname" (the guest's first NIC is called ``name``) or
        "refuse" (sshd stops listening on ``address``)."""
        if kind not in ("hang", "missing", "flood", "drop", "ifname", "refuse"):
            raise ValueError(f"unknown fault {kind!r}")
        faults = self._faults()
        entry = {"address": address, "program": program}
        if seconds is not None:
            entry["seconds"] = seconds
        if name is not None:
            entry["name"] = name
        if then_drop:
            entry["then_drop"] = True
        if command is not None:  # only this exact command line (e.g. the window's esxtop, not the preflight's)
            entry["command"] = command
        faults.setdefault(kind, []).append(entry)
        self._write_faults(faults)
        if kind == "refuse":
            self._reload()

    def clear_faults(self) -> None:
        refused = bool(self._faults().get("refuse"))
        self._write_faults({})
        if refused:
            self._reload()

    def refused_addresses(self) -> set[str]:
        return {f["address"] for f in self._faults().get("refuse", [])}

    def _faults(self) -> dict:
        path = self.runtime / "faults.json"
        return json.loads(path.read_text()) if path.exists() else {}

    def _write_faults(self, faults: dict) -> None:
        tmp = self.runtime / "faults.json.tmp"
        tmp.write_text(json.dumps(faults))
        tmp.chmod(0o644)
        os.replace(tmp, self.runtime / "faults.json")

    def _reload(self) -> None:
        """Rewrite the listen addresses and SIGHUP sshd (-D re-execs itself with the new config)."""
        refused = self.refused_addresses()
        _write_config(self, [a for a in self.all_addresses() if a not in refused])
        self.process.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if all(_accepts(a, self.port) != (a in refused) for a in self.all_addresses()):
                return
            time.sleep(0.05)
        raise LabUnavailable(f"sshd did not apply the listen addresses within {START_TIMEOUT_S:g} s: "
                             + _tail(self.workdir / "sshd.log"))

    def all_addresses(self) -> list[str]:
        return list(self.host_addresses.values()) + list(dict.fromkeys(self.guest_addresses.values()))

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
        shutil.rmtree(self.runtime, ignore_errors=True)


def _accepts(address: str, port: int) -> bool:
    try:
        with socket.create_connection((address, port), timeout=1.0):
            return True
    except OSError:
        return False


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no sshd log)"


def _free_port(addresses: list[str]) -> int:
    for _ in range(50):
        with socket.socket() as probe:
            probe.bind((addresses[0], 0))
            port = probe.getsockname()[1]
        try:
            for address in addresses:
                with socket.socket() as other:
                    other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    other.bind((address, port))
            return port
        except OSError:
            continue
    raise LabUnavailable("no port free on every lab address after 50 tries")


def _sshd_version() -> tuple[int, int]:
    out = subprocess.run([SSHD, "-V"], capture_output=True, text=True, timeout=10)
    m = re.search(r"OpenSSH_(\d+)\.(\d+)", out.stderr + out.stdout)
    return (int(m[1]), int(m[2])) if m else (0, 0)


def _write_config(lab: SshLab, addresses: list[str]) -> None:
    python = _system_python()
    lines = [f"ListenAddress {a}:{lab.port}" for a in addresses] + [
        f"HostKey {lab.workdir / 'ssh_host_ed25519_key'}",
        f"PidFile {lab.workdir / 'sshd.pid'}",
        f"AuthorizedKeysFile {lab.runtime / 'authorized_keys'}",
        "StrictModes no", "PubkeyAuthentication yes", "PasswordAuthentication yes",
        "KbdInteractiveAuthentication no", "UsePAM no", "PermitRootLogin no", f"AllowUsers {lab.user}",
        "AllowTcpForwarding no", "X11Forwarding no", "PermitTTY no", "PrintMotd no", "UseDNS no",
        "MaxStartups 100:30:200", "MaxSessions 50", "MaxAuthTries 6", "LoginGraceTime 20",
        "LogLevel VERBOSE",
        f"ForceCommand {python} -S {lab.runtime / 'emulator' / 'emulator.py'} {lab.runtime}",
    ]
    if _sshd_version() >= (9, 8):  # repeated auth failures in the fault tests must not lock us out
        lines.append("PerSourcePenalties no")
    lab.config.write_text("\n".join(lines) + "\n")


PASSWORD_FILE = Path("/var/lib/esxdiag-lab/password")  # root-only; shared by every lab on this machine


def _lab_password() -> str:
    """One password per machine for the lab user: labs started side by side (two test runs at once)
    must not reset the password another lab's tests are using."""
    PASSWORD_FILE.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        fd = os.open(PASSWORD_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        for _ in range(50):  # another lab is writing it right now
            text = PASSWORD_FILE.read_text().strip()
            if text:
                return text
            time.sleep(0.1)
        raise LabUnavailable(f"SSH lab unavailable: {PASSWORD_FILE} is empty")
    password = secrets.token_urlsafe(18)
    with os.fdopen(fd, "w") as fh:
        fh.write(password + "\n")
    return password


def _ensure_user(password: str) -> None:
    try:
        pwd.getpwnam(LAB_USER)
    except KeyError:
        subprocess.run(["useradd", "--create-home", "--shell", "/bin/sh", LAB_USER], check=True,
                       capture_output=True, timeout=30)
    # chpasswd reads "user:password" on stdin: never in argv. It also unlocks the account,
    # which sshd (UsePAM no) requires even for key logins.
    subprocess.run(["chpasswd"], input=f"{LAB_USER}:{password}\n", text=True, check=True,
                   capture_output=True, timeout=30)


def _keygen(path: Path, comment: str) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
                   check=True, capture_output=True, timeout=30)


def _prepare_runtime(runtime: Path, scenario_text: str, user: pwd.struct_passwd) -> None:
    shutil.copytree(EMULATOR, runtime / "emulator", ignore=shutil.ignore_patterns("__pycache__"))
    (runtime / "scenarios.json").write_text(scenario_text)
    (runtime / "state.json").write_text(json.dumps({"started": time.time()}))
    (runtime / "faults.json").write_text("{}")
    log = runtime / "commands.jsonl"
    log.touch()
    os.chown(log, user.pw_uid, user.pw_gid)
    for path in [runtime, *runtime.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)


def start_ssh_lab(workdir: str | Path, scenarios: Path = SCENARIOS) -> SshLab:
    problems = missing_prerequisites()
    if problems:
        raise LabUnavailable("SSH lab unavailable: " + "; ".join(problems))
    workdir = Path(workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    scenario_text = scenarios.read_text()
    scenario = json.loads(scenario_text)
    guests = {vm["name"]: vm["nics"][0]["ip"] for vm in scenario["vms"]}
    hosts = {host["name"]: host["address"] for host in scenario["hosts"]}
    password = _lab_password()
    _ensure_user(password)
    user = pwd.getpwnam(LAB_USER)
    os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
    for name in ("ssh_host_ed25519_key", "spare_host_key", "client_key", "wrong_key"):
        for old in (workdir / name, workdir / f"{name}.pub"):
            old.unlink(missing_ok=True)
        _keygen(workdir / name, f"esxdiag-lab-{name}")
    runtime = Path(tempfile.mkdtemp(prefix="esxdiag-sshlab-"))  # /tmp: reachable by the lab user
    _prepare_runtime(runtime, scenario_text, user)
    (runtime / "authorized_keys").write_text((workdir / "client_key.pub").read_text())
    (runtime / "authorized_keys").chmod(0o644)
    fd = os.open(workdir / "password", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(password + "\n")
    addresses = list(hosts.values()) + list(dict.fromkeys(guests.values()))
    port = _free_port(addresses)
    host_pub = " ".join((workdir / "ssh_host_ed25519_key.pub").read_text().split()[:2])
    known_hosts = workdir / "known_hosts"
    known_hosts.write_text("".join(f"[{a}]:{port} {host_pub}\n" for a in addresses))
    spare_pub = " ".join((workdir / "spare_host_key.pub").read_text().split()[:2])
    log = open(workdir / "sshd.log", "ab")
    lab = SshLab(workdir, runtime, port, LAB_USER, workdir / "client_key", workdir / "wrong_key", password,
                 known_hosts, scenario["hosts"][0]["address"], guests, scenario, None, workdir / "sshd_config",
                 spare_pub, host_addresses=hosts,
                 started=json.loads((runtime / "state.json").read_text())["started"])
    _write_config(lab, addresses)
    check = subprocess.run([SSHD, "-t", "-f", str(lab.config)], capture_output=True, text=True, timeout=10)
    if check.returncode != 0:
        shutil.rmtree(runtime, ignore_errors=True)
        raise LabUnavailable(f"sshd rejected the lab config: {check.stderr.strip()}")
    lab.process = subprocess.Popen([SSHD, "-D", "-e", "-f", str(lab.config)], stdout=log, stderr=log,
                                   stdin=subprocess.DEVNULL)
    log.close()
    deadline = time.monotonic() + START_TIMEOUT_S
    while not all(_accepts(a, port) for a in addresses):
        if lab.process.poll() is not None or time.monotonic() > deadline:
            lab.stop()
            raise LabUnavailable(f"sshd did not start listening on port {port} within {START_TIMEOUT_S:g} s:\n"
                                 + _tail(workdir / "sshd.log"))
        time.sleep(0.05)
    return lab


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=["up"])
    parser.add_argument("--workdir", default=str(Path.cwd() / ".lab" / "ssh"))
    args = parser.parse_args(argv)
    try:
        lab = start_ssh_lab(args.workdir)
    except LabUnavailable as exc:
        print(exc, file=sys.stderr)
        return 1
    print(f"sshd pid {lab.process.pid} on port {lab.port}; user {lab.user}; key {lab.key_file}; "
          f"password in {lab.workdir / 'password'}")
    print(f"known_hosts: {lab.known_hosts}; command log: {lab.command_log}")
    print("ESXi hosts: " + ", ".join(f"{n}={a}" for n, a in lab.host_addresses.items()) + "; guests: "
          + ", ".join(f"{n}={a}" for n, a in lab.guest_addresses.items()))
    for address in lab.host_addresses.values():
        print(f"try: ssh -p {lab.port} -i {lab.key_file} -o UserKnownHostsFile={lab.known_hosts} "
              f"{lab.user}@{address} net-stats -l")
    print("Ctrl-C or SIGTERM stops the lab (tests/lab/lab.py up/down runs it with vcsim).")
    signal.signal(signal.SIGTERM, _exit_on_signal)
    try:
        while lab.process.poll() is None:
            time.sleep(1)
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        lab.stop()
    return 0


def _exit_on_signal(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
