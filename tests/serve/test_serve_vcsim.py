"""`esxdiag serve` as an admin runs it, against vcsim: two vCenters with their own logins from
[vcenter HOST:PORT] sections and one that is down; a real Prometheus (Debian's package, run here
on its own port and data dir) scrapes it and has one class series per VM; a VM destroyed in
vCenter leaves /metrics; a vCenter that goes down keeps its series, marked stale; SIGTERM ends
serve within seconds. Every wait is bounded."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.lab
ROOT = Path(__file__).resolve().parents[2]
LAB_FILE = ROOT / "tests" / "lab" / "vcsim_lab.py"
PROMETHEUS = shutil.which("prometheus")
SMALL = ("-cluster", "1", "-host", "2", "-vm", "3", "-standalone-host", "0")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what: str, check, timeout_s: float = 60, every_s: float = 0.5):
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")
        time.sleep(every_s)


def fetch(url: str, timeout_s: float = 20) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout_s) as response:
        return response.read()


@pytest.fixture(scope="module")
def vcenters(tmp_path_factory):
    spec = importlib.util.spec_from_file_location("esxdiag_serve_vcsim_lab", LAB_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    base = tmp_path_factory.mktemp("serve-vcsim")
    labs = [module.start_vcsim(base / "vc1", SMALL), module.start_vcsim(base / "vc2", SMALL)]
    yield labs
    for lab in labs:
        lab.stop()


class Serve:
    """esxdiag serve in a subprocess; its URL read from its first line."""

    def __init__(self, argv: list[str], env: dict, cwd: Path):
        self.log = open(cwd / "serve.log", "w+")
        self.process = subprocess.Popen([sys.executable, "-m", "esxdiag", "serve", *argv], env=env, cwd=cwd,
                                        stdout=self.log, stderr=subprocess.STDOUT, text=True)
        line = wait_for("serve to listen", lambda: self.process.poll() is not None or "listening on" in self.text(),
                        timeout_s=60, every_s=0.1)
        assert self.process.poll() is None, self.text()
        self.url = self.text().split("listening on ", 1)[1].split()[0]
        assert line

    def text(self) -> str:
        if not self.log.closed:
            self.log.flush()
        return Path(self.log.name).read_text()

    def get(self, path: str) -> bytes:
        return fetch(self.url + path)

    def metrics(self) -> str:
        return self.get("metrics").decode()

    def stop(self, timeout_s: float = 10) -> tuple[int, float]:
        started = time.monotonic()
        self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout_s)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait(10)
            self.log.close()
        return code, time.monotonic() - started


def serve_argv(vcenters, tmp_path: Path, down_port: int) -> tuple[list[str], dict]:
    config = tmp_path / "esxdiag.ini"
    config.write_text("".join(f"[vcenter 127.0.0.1:{lab.port}]\nusername = {lab.username}\npassword = {lab.password}\n"
                              f"insecure = yes\n" for lab in vcenters))
    config.chmod(0o600)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ESXDIAG_", "GOVC_"))}
    env.update(HOME=str(tmp_path), XDG_DATA_HOME=str(tmp_path / "data"), XDG_CONFIG_HOME=str(tmp_path / "cfg"),
               ESXDIAG_PASSWORD="for-the-down-one", ESXDIAG_USERNAME="nobody")
    argv = ["--config", str(config), "--listen", "127.0.0.1:0", "--interval", "2", "--jitter", "0.2",
            "--window", "60", "--timeout", "5", "--shutdown-grace", "3"]
    for url in [lab.url for lab in vcenters] + [f"https://127.0.0.1:{down_port}/sdk"]:
        argv += ["--vcenter", url]
    return argv, env


def class_series(text: str) -> dict[tuple[str, str], list[str]]:
    out: dict[tuple[str, str], list[str]] = {}
    for line in text.splitlines():
        if line.startswith("esxdiag_fleet_vm_class{"):
            labels = dict(part.split("=", 1) for part in line[line.index("{") + 1:line.index("}")].split(","))
            out.setdefault((labels["vcenter"].strip('"'), labels["moid"].strip('"')), []).append(labels["class"])
    return out


@pytest.mark.skipif(PROMETHEUS is None, reason="prometheus is not installed (apt-get install prometheus)")
def test_a_real_prometheus_scrapes_serve_and_has_one_class_series_per_vm(vcenters, tmp_path):
    down = free_port()
    serve = Serve(*serve_argv(vcenters, tmp_path, down), cwd=tmp_path)
    prometheus = None
    try:
        report = wait_for("a cycle of both vCenters", lambda: (lambda d: d if len(d["vms"]) == 6 else None)(
            json.loads(serve.get("fleet.json"))))
        target = urllib.parse.urlsplit(serve.url).netloc
        rules = tmp_path / "esxdiag-rules.yml"
        shutil.copy(ROOT / "contrib" / "prometheus" / "esxdiag-rules.yml", rules)
        (tmp_path / "prometheus.yml").write_text(
            "global: {scrape_interval: 1s, evaluation_interval: 1s}\nrule_files: [esxdiag-rules.yml]\n"
            f"scrape_configs:\n  - job_name: esxdiag\n    static_configs: [{{targets: ['{target}']}}]\n")
        port = free_port()
        prometheus = subprocess.Popen(
            [PROMETHEUS, f"--config.file={tmp_path / 'prometheus.yml'}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{port}"], cwd=tmp_path, stdout=subprocess.DEVNULL,
            stderr=open(tmp_path / "prometheus.log", "w"))
        api = f"http://127.0.0.1:{port}/api/v1/"

        def query(expr: str) -> list:
            try:
                body = json.loads(fetch(api + "query?" + urllib.parse.urlencode({"query": expr})))
            except OSError:
                return []  # not up yet
            return body["data"]["result"]

        per_vm = wait_for("Prometheus to hold every VM's class", lambda: (lambda r: r if len(r) == 6 else None)(
            query("count by (vcenter, moid) (esxdiag_fleet_vm_class)")), timeout_s=90)
        assert {r["metric"]["moid"] for r in per_vm} == {r["moid"] for r in report["vms"]}
        assert all(r["value"][1] == "1" for r in per_vm)  # one class series per VM
        up = {r["metric"]["vcenter"]: r["value"][1] for r in query("esxdiag_vcenter_last_scan_success")}
        assert up == {f"127.0.0.1:{vcenters[0].port}": "1", f"127.0.0.1:{vcenters[1].port}": "1",
                      f"127.0.0.1:{down}": "0"}
        groups = json.loads(fetch(api + "rules"))["data"]["groups"]
        assert {r["health"] for g in groups for r in g["rules"]} == {"ok"}  # the contrib rules load and evaluate
    finally:
        if prometheus is not None:
            prometheus.terminate()
            prometheus.wait(20)
        code, seconds = serve.stop()
    assert code == 0 and seconds < 8, serve.text()[-2000:]


def test_several_vcenters_gone_vms_leave_a_stale_vcenter_stays_and_sigterm_is_quick(vcenters, tmp_path):
    down = free_port()
    argv, env = serve_argv(vcenters, tmp_path, down)
    serve = Serve(argv, env, cwd=tmp_path)
    try:
        first = wait_for("both vCenters scanned", lambda: (lambda s: s if len(s) == 6 else None)(
            class_series(serve.metrics())))
        assert all(len(classes) == 1 for classes in first.values())
        health = json.loads(serve.get("healthz"))
        down_entry = next(v for v in health["vcenters"] if v["vcenter"] == f"127.0.0.1:{down}")
        assert down_entry["last_ok"] is False and "unreachable" in down_entry["error"]
        assert "for-the-down-one" not in serve.text() and vcenters[0].password not in serve.text()
        gone = vcenters[0].govc("find", "/DC0/vm", "-type", "m").split()[0]
        vcenters[0].govc("vm.destroy", gone)
        wait_for("the destroyed VM to leave /metrics", lambda: len(class_series(serve.metrics())) == 5)
        vcenters[1].stop()
        stale = f'esxdiag_vcenter_stale{{vcenter="127.0.0.1:{vcenters[1].port}"}} 1.0'
        text = wait_for("the stopped vCenter to be stale", lambda: (lambda t: t if stale in t else None)(
            serve.metrics()))
        assert sum(k[0] == f"127.0.0.1:{vcenters[1].port}" for k in class_series(text)) == 3  # its series stay
        assert "Its VMs below are from its last good scan" in serve.get("").decode()
        history = subprocess.run([sys.executable, "-m", "esxdiag", "history", "DC0_C0_RP0_VM1"], env=env,
                                 capture_output=True, text=True, timeout=60, check=False)
        assert history.returncode == 0 and history.stdout.count("DC0_C0_RP0_VM1") >= 2
    finally:
        code, seconds = serve.stop()
    assert code == 0 and seconds < 8, serve.text()[-2000:]
    assert "stopping" in serve.text()
