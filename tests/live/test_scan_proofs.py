"""`esxdiag scan --deep` over consecutive runs against the lab: a ring exhaustion the deep check
proved is kept by the scans after it (no --deep, or --deep on another VM) while it is younger than
--proof-max-age and vCenter still counts the VM's drops, each saying when it was proven; a scan
whose vCenter counters show the drops gone retires it with a note. The report of each run and the
history agree (issue 23 point 1).

Own lab: the scenario inventory in one vcsim with two lab vCenter proxies in front of it, one
answering QueryPerf from the scenario, the other from a copy in which iperf-test1's receive drops
stopped. The scans reach them through one TCP relay, so both are the same vCenter (127.0.0.1:PORT)
to esxdiag; moving the relay from the first to the second is the drops stopping.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

pytestmark = pytest.mark.lab
LAB_DIR = Path(__file__).resolve().parents[1] / "lab"
VM = "iperf-test1"


class Relay:
    """127.0.0.1:port relaying each new TCP connection to ``backend`` (changeable between runs)."""

    def __init__(self, backend: int):
        self.backend = backend
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return  # closed
            try:
                upstream = socket.create_connection(("127.0.0.1", self.backend), timeout=30)
            except OSError:
                client.close()
                continue
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        self.listener.close()


@pytest.fixture(scope="module")
def two_proxy_lab(tmp_path_factory, sshd):
    spec = importlib.util.spec_from_file_location("esxdiag_proofs_vcsim_lab", LAB_DIR / "vcsim_lab.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    root = tmp_path_factory.mktemp("proofs-vcsim")
    vcsim = module.start_lab(root / "vcsim", perf_proxy=False)
    quiet = json.loads(module.SCENARIOS.read_text())
    (nic,) = next(vm for vm in quiet["vms"] if vm["name"] == VM)["nics"]
    nic["rates_per_s"]["running out of buffers"] = 0  # vCenter's net.droppedRx for the vNIC
    (root / "quiet").mkdir()
    (root / "quiet" / "scenarios.json").write_text(json.dumps(quiet))
    proxies = []
    try:
        proxies.append(module.start_proxy(vcsim, module.SCENARIOS, started=sshd.started))
        proxies.append(module.start_proxy(dataclasses.replace(vcsim, workdir=root / "quiet"),
                                          root / "quiet" / "scenarios.json", started=sshd.started))
        relay = Relay(proxies[0].port)
    except BaseException:
        for lab in proxies:
            lab.proxy.terminate()
        vcsim.stop()
        raise
    yield vcsim, proxies, relay
    relay.close()
    for lab in proxies:
        lab.proxy.terminate()
        lab.proxy.wait(10)
    vcsim.stop()


def test_consecutive_scans_keep_a_proof_until_the_drops_stop_and_the_history_agrees(two_proxy_lab, ssh_lab, tmp_path):
    vcsim, (dropping, stopped), relay = two_proxy_lab
    history = tmp_path / "history.sqlite"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ESXDIAG_", "GOVC_"))}
    env.update(HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "cfg"), ESXDIAG_PASSWORD=vcsim.password)
    host_login = f"esx0.lab.local={ssh_lab.user}@{ssh_lab.host_address}:{ssh_lab.port}"
    deep = ["--deep-window", "3", "--esxtop-delay", "1", "--deep-host-ssh", host_login,
            "--ssh-key", str(ssh_lab.key_file), "--known-hosts", str(ssh_lab.known_hosts)]

    def scan(run: int, proxy, *extra: str) -> dict:
        relay.backend = proxy.port
        argv = [sys.executable, "-m", "esxdiag", "scan", "--vcenter", f"https://127.0.0.1:{relay.port}/sdk",
                "--user", vcsim.username, "--thumbprint", proxy.thumbprint, "--history", str(history),
                "--format", "json", "-o", f"fleet{run}.json", *extra]
        done = subprocess.run(argv, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=180, check=False)
        assert done.returncode == 0, done.stderr
        report = json.loads((tmp_path / f"fleet{run}.json").read_text())
        return next(r for r in report["vms"] if r["name"] == VM) | {"changes": report["changes"]}

    first = scan(1, dropping, "--deep-vm", VM, *deep)
    assert (first["class"], first["confirmed"], first["deep"]["verdicts"]) == ("ring-exhaustion", True, ["raise-ring1"])
    proven_at = first["deep"].get("checked_at")

    for run, extra in ((2, ()), (3, ("--deep-vm", "app-healthy01", *deep))):  # not checked again
        row = scan(run, dropping, *extra)
        assert (row["class"], row["confirmed"]) == ("ring-exhaustion", True)
        assert proven_at and row["deep"]["checked_at"] == proven_at
        assert [n for n in row["notes"] if n.startswith(f"ring exhaustion proven {proven_at} by the deep check, "
                                                        "kept while younger than 7200 s")]
        assert not [c for c in row["changes"]["changed"] + row["changes"]["recovered"] if c["name"] == VM]

    fourth = scan(4, stopped)  # vCenter counts no drops for it now
    assert fourth["class"] != "ring-exhaustion" and not fourth["confirmed"] and fourth["deep"] is None
    assert [n for n in fourth["notes"] if n == f"ring exhaustion proven {proven_at} retired: vCenter counters show "
                                                "no receive drops over the noise floor in this window"]
    fifth = scan(5, dropping)  # the drops are back, the retired proof is not: a suspicion again
    assert fifth["class"] == "ring-suspect" and not [n for n in fifth["notes"] if "proven" in n]

    past = subprocess.run([sys.executable, "-m", "esxdiag", "history", VM, "--history", str(history), "--format",
                           "json"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60, check=True)
    rows = json.loads(past.stdout)[::-1]  # oldest first
    assert [r["class"] for r in rows] == ["ring-exhaustion"] * 3 + [fourth["class"], "ring-suspect"]
    assert [r["proven_at"] for r in rows] == [proven_at] * 3 + [None, None]
