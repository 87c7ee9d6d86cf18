"""Regenerate examples/ from real collection: start the vcsim and SSH labs, run
`esxdiag collect` for every seed case (in parallel, one window each), then store the report
each bundle produces. Needs root (the SSH lab) and vcsim/govc (scripts/test installs them).

    python tests/lab/make_examples.py [--window 60] [--only NAME ...]
"""

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
EXAMPLES = REPO / "examples"
CASES = {  # example directory -> scenario VM
    "iperf-test1-ring-exhaustion": "iperf-test1",
    "iperf-test2-sender": "iperf-test2",
    "iperf-cpu-limited": "iperf-cpu-limited",
    "iperf-test1-ring4096": "iperf-test1-ring4096",
    "healthy-vm": "app-healthy01",
    "windows-single-queue": "win2012r2-file01",
    "e1000-adapter": "legacy-e1000",
    "uplink-loss": "iperf-uplink-loss",  # issue 22: on esx1, drops on its physical uplink vmnic1, vNIC counters flat
    "v7-jumbo-ring": "iperf-v7-jumbo",  # issue 22: vmxnet3 v7 (vmx-20) ran rx 4032 as 2048 at MTU 9000
}


def load(name: str):
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def esxdiag(*args: str, env: dict, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "esxdiag", *args], env=env, capture_output=True, text=True,
                          timeout=timeout, cwd=REPO)


def collect_one(directory: str, vm: str, env: dict, ssh, window: float) -> str:
    out = EXAMPLES / directory
    shutil.rmtree(out, ignore_errors=True)
    proc = esxdiag("collect", "--vm", vm, "-o", str(out), "--window", str(window), "--esxtop-delay", "5",
                   "--host-ssh", f"{ssh.user}@{ssh.host_address_of(vm)}:{ssh.port}", "--guest-ssh", f"{ssh.user}@:{ssh.port}",
                   "--ssh-key", str(ssh.key_file), "--known-hosts", str(ssh.known_hosts),
                   env=env, timeout=window + 120)
    if proc.returncode != 0:
        raise RuntimeError(f"collect {vm} failed ({proc.returncode}): {proc.stderr.strip()}")
    render_reports(directory, env)
    doc = json.loads((out / "report.json").read_text())
    return f"{directory}: {', '.join(n['ring_verdict'] for v in doc['vms'] for n in v['vnics'])}"


def render_reports(directory: str, env: dict | None = None) -> None:
    """report.json (golden, without the machine-specific bundle path) and report.html, with the
    bundle named relative to the repository so the stored HTML says examples/<dir>."""
    out = EXAMPLES / directory
    rel = out.relative_to(REPO)
    for fmt, name in (("json", "report.json"), ("html", "report.html")):
        proc = esxdiag("analyze", str(rel), "--format", fmt, "-o", str(rel / name), env=env or dict(os.environ),
                       timeout=120)
        if proc.returncode != 0:
            raise RuntimeError(f"analyze {directory} failed: {proc.stderr.strip()}")
    doc = json.loads((out / "report.json").read_text())
    doc["bundle"].pop("path")  # machine-specific; the golden test compares without it
    (out / "report.json").write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--window", type=float, default=60.0)
    parser.add_argument("--only", nargs="*", choices=sorted(CASES))
    parser.add_argument("--reports-only", action="store_true",
                        help="re-render every example's report.json/report.html from its bundle, no lab")
    args = parser.parse_args(argv)
    if args.reports_only:
        for manifest in sorted(EXAMPLES.rglob("manifest.json")):
            render_reports(str(manifest.parent.relative_to(EXAMPLES)))
        return 0
    work = Path(tempfile.mkdtemp(prefix="esxdiag-examples-"))
    ssh = vcsim = None
    try:
        ssh = load("ssh_lab").start_ssh_lab(work / "ssh")
        vcsim = load("vcsim_lab").start_lab(work / "vcsim", started=ssh.started)  # one time origin for both
        env = {**os.environ, "ESXDIAG_VCENTER": vcsim.url, "ESXDIAG_USERNAME": vcsim.username,
               "ESXDIAG_PASSWORD": vcsim.password, "ESXDIAG_THUMBPRINT": vcsim.thumbprint,
               "HOME": str(work), "XDG_CONFIG_HOME": str(work / "config")}
        chosen = {d: vm for d, vm in CASES.items() if not args.only or d in args.only}
        with ThreadPoolExecutor(max_workers=len(chosen)) as pool:
            for line in pool.map(lambda item: collect_one(*item, env, ssh, args.window), chosen.items()):
                print(line)
    finally:
        if ssh is not None:
            ssh.stop()
        if vcsim is not None:
            vcsim.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
