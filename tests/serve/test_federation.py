"""Past one machine (docs/serve.md "Beyond one machine"), run: two serve instances, each on its own
vcsim vCenter with its own history; one Prometheus scrapes both, a second federates the first
(honor_labels, the match[] of docs/serve.md). Both hold every VM of both vCenters, the shipped rules
load and evaluate on both, and every dashboard query gives the global Prometheus the vCenters it
gives the site's one (each per-VM query: both vCenters' VMs). Every wait is bounded."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import urllib.parse
from pathlib import Path

import pytest

from . import test_serve_vcsim as lab_serve
from .test_contrib import dashboard_exprs

pytestmark = [pytest.mark.lab,
              pytest.mark.skipif(lab_serve.PROMETHEUS is None, reason="prometheus is not installed")]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def two_vcenters(tmp_path_factory):
    spec = importlib.util.spec_from_file_location("esxdiag_federation_vcsim_lab", lab_serve.LAB_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    base = tmp_path_factory.mktemp("federation")
    labs = [module.start_vcsim(base / "vc1", lab_serve.SMALL), module.start_vcsim(base / "vc2", lab_serve.SMALL)]
    yield labs
    for lab in labs:
        lab.stop()


def instance(lab, folder: Path) -> lab_serve.Serve:
    """One serve instance watching one vCenter, with its own history and data directory."""
    folder.mkdir()
    config = folder / "esxdiag.ini"
    config.write_text(f"[vcenter 127.0.0.1:{lab.port}]\nusername = {lab.username}\npassword = {lab.password}\n"
                      "insecure = yes\n")
    config.chmod(0o600)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ESXDIAG_", "GOVC_"))}
    env.update(HOME=str(folder), XDG_DATA_HOME=str(folder / "data"), XDG_CONFIG_HOME=str(folder / "cfg"))
    argv = ["--config", str(config), "--vcenter", lab.url, "--listen", "127.0.0.1:0", "--interval", "2",
            "--jitter", "0.2", "--window", "60", "--timeout", "5", "--history", str(folder / "history.sqlite"),
            "--data-dir", str(folder / "serve")]
    return lab_serve.Serve(argv, env, cwd=folder)


def prometheus(folder: Path, scrape: str) -> tuple[subprocess.Popen, str]:
    folder.mkdir()
    shutil.copy(ROOT / "contrib" / "prometheus" / "esxdiag-rules.yml", folder / "esxdiag-rules.yml")
    (folder / "prometheus.yml").write_text("global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
                                           f"rule_files: [esxdiag-rules.yml]\nscrape_configs:\n{scrape}")
    port = lab_serve.free_port()
    process = subprocess.Popen(
        [lab_serve.PROMETHEUS, f"--config.file={folder / 'prometheus.yml'}", f"--storage.tsdb.path={folder / 'tsdb'}",
         f"--web.listen-address=127.0.0.1:{port}"], cwd=folder, stdout=subprocess.DEVNULL,
        stderr=open(folder / "prometheus.log", "w"))
    return process, f"http://127.0.0.1:{port}/api/v1/"


def query(api: str, expr: str) -> list:
    try:
        body = json.loads(lab_serve.fetch(api + "query?" + urllib.parse.urlencode({"query": expr})))
    except OSError:
        return []  # not up yet
    return body["data"]["result"]


def test_two_instances_one_prometheus_and_a_federating_one_see_both_vcenters(two_vcenters, tmp_path):
    names = {f"127.0.0.1:{lab.port}" for lab in two_vcenters}
    serves, proms = [], []
    try:
        serves = [instance(lab, tmp_path / f"serve{i}") for i, lab in enumerate(two_vcenters)]
        targets = ", ".join(f"'{urllib.parse.urlsplit(s.url).netloc}'" for s in serves)
        site, site_api = prometheus(tmp_path / "site", f"  - job_name: esxdiag\n    static_configs: [{{targets: [{targets}]}}]\n")
        proms.append(site)
        site_port = urllib.parse.urlsplit(site_api).port
        federate = ("  - job_name: esxdiag-federate\n    honor_labels: true\n    metrics_path: /federate\n"
                    "    params: {'match[]': ['{__name__=~\"esxdiag_.*\"}']}\n"
                    f"    static_configs: [{{targets: ['127.0.0.1:{site_port}']}}]\n")
        world, world_api = prometheus(tmp_path / "global", federate)
        proms.append(world)
        for api in (site_api, world_api):
            per_vm = lab_serve.wait_for("every VM of both vCenters", lambda: (lambda r: r if len(r) == 6 else None)(
                query(api, "count by (vcenter, moid) (esxdiag_fleet_vm_class == 1)")), timeout_s=120)
            assert {r["metric"]["vcenter"] for r in per_vm} == names
            assert {r["metric"]["job"] for r in query(api, "esxdiag_vcenter_last_scan_success")} == {"esxdiag"}
            groups = lab_serve.wait_for("the rules evaluated", lambda: (lambda g: g if g and all(
                r["health"] == "ok" and r.get("lastEvaluation", "").startswith("2") for x in g for r in x["rules"])
                else None)(json.loads(lab_serve.fetch(api + "rules"))["data"]["groups"]), timeout_s=60)
            assert sum(len(g["rules"]) for g in groups) >= 9
        for expr in dashboard_exprs():
            if '"$vm"' in expr:
                continue  # one VM by name: a variable's own query
            filled = re.sub(r"\$\{?(\w+)(:\w+)?\}?", ".*", expr)
            per_vcenter = expr.startswith(("esxdiag_fleet_vm_", "esxdiag_vcenter_"))  # both vCenters' series

            def agree(filled=filled, per_vcenter=per_vcenter):  # a range needs a second federated sample
                site_vcenters = {r["metric"].get("vcenter") for r in query(site_api, filled)}
                world_vcenters = {r["metric"].get("vcenter") for r in query(world_api, filled)}
                return world_vcenters == site_vcenters and (site_vcenters == names or not per_vcenter)

            lab_serve.wait_for(f"both Prometheus servers to agree on {expr}", agree, timeout_s=30)
    finally:
        for process in proms:
            process.terminate()
            process.wait(20)
        for serve in serves:
            serve.stop()
