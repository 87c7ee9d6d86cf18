"""Benchmark: esxdiag scan and one serve cycle against Telegraf's vsphere input, the OpenTelemetry
Collector's vcenterreceiver and vmware_exporter.

    python bench/peers_bench.py --vms 1000                  # builds a vcsim (~40 s), 3 rounds of the four
    python bench/fleet_bench.py --vms 10000 --serve &       # a 10,000-VM vcsim kept up (~14 min to build)
    python bench/peers_bench.py --vms 1000,2000,10000 --rounds 5   # the kept-up vcsims, else built here

One vcsim per size (the one `fleet_bench.py --vms N --serve` keeps up when it is running, else one
built here as fleet_bench.py builds it: -cluster N -host 10 -vm V -delay 20), the tools run one
after the other in each round, the order turning each round. Per run: wall time, client CPU (user +
system of the process tree, from wait4 or /proc), vcsim's CPU (/proc), peak RSS, and what was read.
SOAP requests: esxdiag's from its own count (snapshot, serve's gauge); the peers' are counted once per tool in a round of their own through a TLS-terminating
counting proxy in this process (not timed: the proxy costs CPU on the same cores). Telegraf 1.37.2
is built when missing, so is the collector (bench/otelcol/build.sh: contrib v0.130.0, the receiver and
the debug exporter; its run is from start to the debug exporter's first batch, startup included, and
"VMs with values" is the number of resources in that batch: VMs, hosts, clusters, datastores,
resource pools); vmware_exporter 0.18.4 gets its own venv when missing. Not a test:
bench/peers_README.md has the method and the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import re
import shutil
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TELEGRAF_VERSION = "v1.37.2"
TELEGRAF_BUILD = ["go", "install", "-tags", "custom,inputs.vsphere,outputs.file,serializers.influx",
                  f"github.com/influxdata/telegraf/cmd/telegraf@{TELEGRAF_VERSION}"]
EXPORTER_REQUIREMENTS = ["vmware_exporter==0.18.4", "requests", "Twisted==22.10.0"]
OTELCOL = REPO / "bench" / "otelcol"
STEADY_CYCLES = 3  # serve cycles after the first, as run_telegraf_steady counts 3 intervals after its first
TOOLS = ("esxdiag scan", "esxdiag serve cycle", "telegraf", "otelcol vcenterreceiver", "vmware_exporter")
PEERS = ("telegraf", "otelcol vcenterreceiver", "vmware_exporter")
# vmware_exporter has no port option: this shim, run by the exporter's own python, gives pyVim's
# SmartConnect the vcsim port and then starts the exporter as its console script would.
EXPORTER_SHIM = """\
import os, sys
from pyVim import connect
_smart_connect = connect.SmartConnect
def _with_port(*args, **kwargs):
    kwargs.setdefault("port", int(os.environ["PEERS_BENCH_VCSIM_PORT"]))
    return _smart_connect(*args, **kwargs)
connect.SmartConnect = _with_port
from vmware_exporter.vmware_exporter import main
sys.exit(main(sys.argv[1:]))
"""


def stop(proc: subprocess.Popen) -> None:
    """SIGTERM, then SIGKILL if it is still running after 30 s."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


fleet_bench = _load("esxdiag_peers_fleet_bench", REPO / "bench" / "fleet_bench.py")
serve_bench = _load("esxdiag_peers_serve_bench", REPO / "bench" / "serve_bench.py")


def telegraf_binary() -> Path:
    """Telegraf's custom build, built here with TELEGRAF_BUILD when it is not there yet."""
    gobin = Path(os.environ.get("GOBIN") or Path.home() / "go" / "bin")
    binary = gobin / "telegraf"
    if not binary.exists():
        print("building Telegraf:", " ".join(TELEGRAF_BUILD), flush=True)
        subprocess.run(TELEGRAF_BUILD, check=True, env={**os.environ, "GOBIN": str(gobin)})
    return binary


def otelcol_binary() -> Path:
    """The minimal collector of bench/otelcol, built there by its build.sh when it is not there yet."""
    binary = OTELCOL / "otelcol-vcenter"
    if not binary.exists():
        print("building the collector: bench/otelcol/build.sh", flush=True)
        subprocess.run([str(OTELCOL / "build.sh")], check=True)
    return binary


def exporter_python(venv: Path) -> Path:
    """vmware_exporter's own venv (never esxdiag's: it pins an old Twisted), created when missing."""
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *EXPORTER_REQUIREMENTS], check=True)
    return python


class CountingProxy(threading.Thread):
    """127.0.0.1:port -> vcsim, TLS on both sides (asyncio, one loop in its own thread), counting the
    HTTP requests clients send."""

    REQUEST_LINE = re.compile(rb"(?:GET|POST|PUT|DELETE) /\S* HTTP/1\.[01]\r\n")

    def __init__(self, upstream_port: int, workdir: Path):
        super().__init__(daemon=True)
        cert, key = workdir / "proxy-cert.pem", workdir / "proxy-key.pem"
        if not cert.exists():
            subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
                            "-out", str(cert), "-days", "2", "-subj", "/CN=127.0.0.1"],
                           check=True, capture_output=True)
        self.server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.server_context.load_cert_chain(cert, key)
        self.client_context = ssl._create_unverified_context()
        self.upstream_port = upstream_port
        self.requests = 0
        self.loop = asyncio.new_event_loop()
        self.server = self.loop.run_until_complete(
            asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.server_context))
        self.port = self.server.sockets[0].getsockname()[1]

    def run(self) -> None:
        self.loop.run_forever()

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.server.close)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.join(10)

    async def _serve(self, client_reader, client_writer) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port,
                                                                 ssl=self.client_context)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(self._pump(client_reader, up_writer, True), self._pump(up_reader, client_writer, False))

    async def _pump(self, reader, writer, count: bool) -> None:
        tail = b""
        try:
            while data := await reader.read(65536):
                if count:
                    window = tail + data
                    self.requests += len(self.REQUEST_LINE.findall(window)) - len(self.REQUEST_LINE.findall(tail))
                    tail = window[-64:]
                writer.write(data)
                await writer.drain()
        except (OSError, ssl.SSLError):
            pass
        finally:
            writer.close()


def _wait4(argv: list[str], env: dict, cwd: Path | None = None) -> tuple[float, float, float, str]:
    """(wall s, CPU s of the process and its reaped children, peak RSS MiB, stderr tail) of one run."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    tail = []
    reader = threading.Thread(target=lambda: tail.append(proc.stderr.read()), daemon=True)
    reader.start()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    reader.join(10)
    proc.stderr.close()
    text = (tail[0] if tail else b"").decode(errors="replace")
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise RuntimeError(f"{argv[0]} exited {code}: {text[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, text


def run_scan(lab, workdir: Path, extra: list[str]) -> dict:
    one = fleet_bench.run_scan(lab, workdir, extra)
    return {"wall_s": one["seconds"], "cpu_s": one["cpu_seconds"], "vcsim_cpu_s": one["vcsim_cpu_seconds"],
            "peak_rss_mib": max(one["peak_rss_mib"], one["tree_peak_rss_mib"]), "requests": one["requests"],
            "vms_with_values": one["with_perf"], "workers": one["workers"]}


def run_serve_cycle(lab, workdir: Path, extra: list[str], steady_interval: int | None = None) -> dict:
    """One `esxdiag serve` cycle: its wall time and requests are serve's own gauges; CPU is the process
    tree's from the moment serve listens (the cycle starts then) to the cycle's end. With
    ``steady_interval``: serve runs every that many seconds and the figures are its steady cycles', the
    STEADY_CYCLES after the first (whole) one, as Telegraf's are its intervals after the first gather: CPU
    from the first cycle's end to the last's (the idle waits included) per cycle, each cycle's beside it;
    wall time and requests of the last."""
    import psutil
    shutil.rmtree(workdir / "serve", ignore_errors=True)
    env = {**os.environ, "ESXDIAG_PASSWORD": lab.password, "XDG_DATA_HOME": str(workdir / "data")}
    argv = [str(Path(sys.executable).with_name("esxdiag")), "serve", "--vcenter", lab.url, "--user", lab.username,
            "--insecure", "--listen", "127.0.0.1:0", "--interval", str(steady_interval or 3600), "--jitter", "0",
            "--timeout", "300",
            "--history", str(workdir / "serve" / "history.sqlite"), "--data-dir", str(workdir / "serve"), *extra]
    (workdir / "serve").mkdir(parents=True)
    log_path = workdir / "serve" / "serve.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT)
    tree = psutil.Process(proc.pid)
    sampler = serve_bench.TreeSampler(proc.pid)
    sampler.start()
    try:
        while "listening on" not in log_path.read_text():
            if proc.poll() is not None:
                raise RuntimeError(f"esxdiag serve exited {proc.returncode}: {log_path.read_text()[-2000:]}")
            time.sleep(0.02)
        cpu, vcsim_cpu = serve_bench.cpu_of_tree(tree), fleet_bench.cpu_seconds_of(lab.process.pid)
        url = log_path.read_text().split("listening on ", 1)[1].split()[0]
        def last_cycle():
            return json.loads(serve_bench.fetch(url + "healthz")[0])["vcenters"][0]["last_cycle"]

        while (first := last_cycle()) is None:
            time.sleep(0.05)
        per_cycle: list[float] = []
        if steady_interval:  # the next cycles seen in serve's log: polling /healthz would cost serve CPU
            ended = cycles_logged(log_path)
            cpu, vcsim_cpu = serve_bench.cpu_of_tree(tree), fleet_bench.cpu_seconds_of(lab.process.pid)
            deadline = time.monotonic() + (STEADY_CYCLES + 10) * steady_interval + 600
            mark = cpu
            while len(per_cycle) < STEADY_CYCLES and time.monotonic() < deadline:
                time.sleep(0.2)
                if cycles_logged(log_path) > ended:
                    ended = cycles_logged(log_path)
                    now = serve_bench.cpu_of_tree(tree)
                    per_cycle.append(now - mark)
                    mark = now
        cpu, vcsim_cpu = serve_bench.cpu_of_tree(tree) - cpu, fleet_bench.cpu_seconds_of(lab.process.pid) - vcsim_cpu
        if per_cycle:
            cpu, vcsim_cpu = cpu / len(per_cycle), vcsim_cpu / len(per_cycle)
        text = serve_bench.fetch(url + "metrics")[0].decode()
        if serve_bench.gauge(text, "esxdiag_vcenter_last_scan_success") != 1:
            raise RuntimeError(f"esxdiag serve's cycle failed: {log_path.read_text()[-2000:]}")
        vms = len(re.findall(r"^esxdiag_fleet_vm_ready_worst_vcpu_percent\{", text, re.M))
        return {"wall_s": serve_bench.gauge(text, "esxdiag_vcenter_scan_duration_seconds"), "cpu_s": cpu,
                **({"cpu_per_cycle_s": [round(c, 3) for c in per_cycle]} if per_cycle else {}),
                "vcsim_cpu_s": vcsim_cpu, "requests": int(serve_bench.gauge(text, "esxdiag_vcenter_last_scan_requests")),
                "vms_with_values": vms, "sampled_peak_rss": sampler}
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(120)
        sampler.done.set()


def cycles_logged(log_path: Path) -> int:
    """The cycles serve's log says ended (each logs its VMs and time, or why it failed)."""
    return sum(" VMs in " in line or ": not scanned (" in line for line in log_path.read_text().splitlines())


def telegraf_config(lab, port: int, output: Path) -> str:
    counters = ", ".join(f'"{c}"' for c in fleet_bench.COUNTERS)
    return f"""[agent]
  interval = "20s"
  omit_hostname = true
  quiet = true

[[outputs.file]]
  files = ["{output}"]
  data_format = "influx"

[[inputs.vsphere]]
  vcenters = ["https://127.0.0.1:{port}/sdk"]
  username = "{lab.username}"
  password = "{lab.password}"
  insecure_skip_verify = true
  vm_metric_include = [{counters}]
  host_metric_exclude = ["*"]
  cluster_metric_exclude = ["*"]
  datastore_metric_exclude = ["*"]
  datacenter_metric_exclude = ["*"]
  resource_pool_metric_exclude = ["*"]
  vsan_metric_exclude = ["*"]
  timeout = "300s"
"""


def run_telegraf_steady(lab, workdir: Path, intervals: int = 3) -> dict:
    """Telegraf running (not --once) with a 20 s interval: its start, discovery and first gather (to the
    first flush of its output) apart, then the CPU per interval over the next ``intervals`` flushes."""
    output = workdir / "telegraf-steady.out"
    output.unlink(missing_ok=True)
    config = workdir / "telegraf-steady.conf"
    config.write_text(telegraf_config(lab, lab.port, output).replace('quiet = true', 'quiet = true\n  flush_interval = "20s"'))
    config.chmod(0o600)
    proc = subprocess.Popen([str(telegraf_binary()), "--config", str(config)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        def size() -> int:
            return output.stat().st_size if output.exists() else 0

        def next_flush(after: int) -> int:
            deadline = time.monotonic() + 600
            while (now := size()) == after:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("Telegraf stopped flushing")
                time.sleep(0.05)
            time.sleep(0.5)  # the rest of the flush
            return size()

        seen = next_flush(0)
        first = fleet_bench.cpu_seconds_of(proc.pid)
        for _ in range(intervals):
            seen = next_flush(seen)
        steady = (fleet_bench.cpu_seconds_of(proc.pid) - first) / intervals
        return {"first_gather_cpu_s": first, "cpu_per_interval_s": steady}
    finally:
        stop(proc)


def run_telegraf(lab, workdir: Path, port: int | None = None) -> dict:
    output = workdir / "telegraf.out"
    output.unlink(missing_ok=True)
    config = workdir / "telegraf.conf"
    config.write_text(telegraf_config(lab, port or lab.port, output))
    config.chmod(0o600)
    vcsim_before = fleet_bench.cpu_seconds_of(lab.process.pid)
    wall, cpu, rss, _ = _wait4([str(telegraf_binary()), "--once", "--config", str(config)], dict(os.environ))
    lines = output.read_text().splitlines() if output.exists() else []
    vms = {m[1] for line in lines if (m := re.search(r"[, ]vmname=([^, ]+)", line))}
    return {"wall_s": wall, "cpu_s": cpu, "vcsim_cpu_s": fleet_bench.cpu_seconds_of(lab.process.pid) - vcsim_before,
            "peak_rss_mib": rss, "vms_with_values": len(vms), "lines": len(lines)}


def otelcol_config(lab, port: int) -> str:
    return f"""receivers:
  vcenter:
    endpoint: https://127.0.0.1:{port}
    username: "{lab.username}"
    password: "{lab.password}"
    collection_interval: 1h
    initial_delay: 0s
    tls:
      insecure_skip_verify: true
exporters:
  debug:
    verbosity: basic
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    metrics:
      receivers: [vcenter]
      exporters: [debug]
"""


def run_otelcol(lab, workdir: Path, port: int | None = None) -> dict:
    """The collector from its start to the debug exporter's first batch (one whole collection): wall,
    CPU (/proc, its one process), peak RSS (VmHWM), the batch's resources."""
    config = workdir / "otelcol.yaml"
    config.write_text(otelcol_config(lab, port or lab.port))
    config.chmod(0o600)
    log_path = workdir / "otelcol.log"
    vcsim_before = fleet_bench.cpu_seconds_of(lab.process.pid)
    started = time.perf_counter()
    with open(log_path, "w") as log:
        proc = subprocess.Popen([str(otelcol_binary()), "--config", str(config)], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 1800
        while not (found := re.search(r'"resource metrics": (\d+)', log_path.read_text())):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the collector exported nothing: {log_path.read_text()[-2000:]}")
            time.sleep(0.02)
        wall = time.perf_counter() - started
        cpu = fleet_bench.cpu_seconds_of(proc.pid)
        hwm = re.search(r"^VmHWM:\s+(\d+) kB", Path(f"/proc/{proc.pid}/status").read_text(), re.M)
        return {"wall_s": wall, "cpu_s": cpu, "vcsim_cpu_s": fleet_bench.cpu_seconds_of(lab.process.pid) - vcsim_before,
                "peak_rss_mib": int(hwm[1]) / 1024, "vms_with_values": int(found[1])}
    finally:
        stop(proc)


def run_exporter(lab, workdir: Path, python: Path, port: int | None = None) -> dict:
    """One scrape of a freshly started vmware_exporter: the scrape's wall time, the exporter's CPU over
    the scrape (from /proc: it collects on threads of its one process), its peak RSS (VmHWM)."""
    shim = workdir / "vmware_exporter_shim.py"
    shim.write_text(EXPORTER_SHIM)
    with socket.create_server(("127.0.0.1", 0)) as probe:
        listen = probe.getsockname()[1]
    env = {**os.environ, "VSPHERE_HOST": "127.0.0.1", "VSPHERE_USER": lab.username, "VSPHERE_PASSWORD": lab.password,
           "VSPHERE_IGNORE_SSL": "True", "VSPHERE_COLLECT_VMS": "True", "VSPHERE_COLLECT_VMGUESTS": "False",
           "VSPHERE_COLLECT_DATASTORES": "False", "VSPHERE_COLLECT_HOSTS": "False",
           "VSPHERE_COLLECT_SNAPSHOTS": "False", "PEERS_BENCH_VCSIM_PORT": str(port or lab.port)}
    with open(workdir / "vmware_exporter.log", "w") as log:
        proc = subprocess.Popen([str(python), str(shim), "-a", "127.0.0.1", "-p", str(listen), "-l", "WARNING"],
                                env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                socket.create_connection(("127.0.0.1", listen), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"vmware_exporter did not start: {(workdir / 'vmware_exporter.log').read_text()[-2000:]}")
                time.sleep(0.05)
        cpu, vcsim_cpu = fleet_bench.cpu_seconds_of(proc.pid), fleet_bench.cpu_seconds_of(lab.process.pid)
        started = time.perf_counter()
        with urllib.request.urlopen(f"http://127.0.0.1:{listen}/metrics", timeout=1800) as response:
            body = response.read().decode(errors="replace")
        wall = time.perf_counter() - started
        cpu = fleet_bench.cpu_seconds_of(proc.pid) - cpu
        vcsim_cpu = fleet_bench.cpu_seconds_of(lab.process.pid) - vcsim_cpu
        hwm = re.search(r"^VmHWM:\s+(\d+) kB", Path(f"/proc/{proc.pid}/status").read_text(), re.M)
        vms = {m[1] for m in re.finditer(r'^vmware_vm_cpu_ready_summation\{[^}]*vm_name="([^"]*)"', body, re.M)}
        return {"wall_s": wall, "cpu_s": cpu, "vcsim_cpu_s": vcsim_cpu, "peak_rss_mib": int(hwm[1]) / 1024,
                "vms_with_values": len(vms)}
    finally:
        stop(proc)


def run_tool(tool: str, lab, workdir: Path, ns, exporter: Path) -> dict:
    if tool == "esxdiag scan":
        return run_scan(lab, workdir, ns.esxdiag_args.split())
    if tool == "esxdiag serve cycle":
        one = run_serve_cycle(lab, workdir, ns.esxdiag_args.split())
        sampler = one.pop("sampled_peak_rss")
        return {**one, "peak_rss_mib": sampler.peak / 2**20}
    if tool == "telegraf":
        return run_telegraf(lab, workdir)
    if tool == "otelcol vcenterreceiver":
        return run_otelcol(lab, workdir)
    return run_exporter(lab, workdir, exporter)


def count_peer_requests(lab, workdir: Path, exporter: Path, tools: list[str]) -> dict:
    counts = {}
    for tool in tools:
        proxy = CountingProxy(lab.port, workdir)
        proxy.start()
        try:
            if tool == "telegraf":
                run_telegraf(lab, workdir, proxy.port)
            elif tool == "otelcol vcenterreceiver":
                run_otelcol(lab, workdir, proxy.port)
            else:
                run_exporter(lab, workdir, exporter, proxy.port)
            time.sleep(0.2)  # the last answer's pump
            counts[tool] = proxy.requests
        finally:
            proxy.close()
        print(json.dumps({"tool": tool, "requests (counted through the proxy)": counts[tool]}), flush=True)
    return counts


def summary(results: dict, vms: int) -> str:
    keys = (("wall_s", "wall s", 2), ("cpu_s", "client CPU s", 2), ("vcsim_cpu_s", "vcsim CPU s", 2),
            ("peak_rss_mib", "peak RSS MiB", 0))
    base = results.get("telegraf", [])
    lines = [f"{vms} VMs, {len(next(iter(results.values())))} rounds: min / median / max (median / Telegraf's)"]
    for tool, runs in results.items():
        parts = []
        for key, label, digits in keys:
            values = [r[key] for r in runs]
            median = statistics.median(values)
            ratio = ""
            if base and tool != "telegraf":
                ratio = f" ({median / statistics.median(r[key] for r in base):.2f}x)"
            parts.append(f"{label} {min(values):.{digits}f} / {median:.{digits}f} / {max(values):.{digits}f}{ratio}")
        requests = sorted({r.get("requests") for r in runs} - {None})
        parts.append(f"requests {'/'.join(map(str, requests)) or '?'}")
        parts.append(f"VMs with values {'/'.join(map(str, sorted({r['vms_with_values'] for r in runs})))}")
        lines.append(f"  {tool:<20} " + "; ".join(parts))
    return "\n".join(lines)


def served_vcsim(vms: int):
    """The vcsim `fleet_bench.py --vms N --serve` keeps up, if it is still running: (lab, build seconds)."""
    attach = REPO / ".lab" / f"bench-fleet-{vms}" / "attach.json"
    if not attach.exists():
        return None
    lab, built = fleet_bench._attached(attach)
    return (lab, built) if Path(f"/proc/{lab.process.pid}").exists() else None


def bench_one_size(vms: int, ns, tools: list[str], exporter: Path) -> str:
    served = served_vcsim(vms)
    if ns.attach and served is None:
        raise SystemExit(f"no vcsim for {vms} VMs is kept up: run bench/fleet_bench.py --vms {vms} --serve first")
    if served is not None:
        (lab, built), workdir = served, REPO / ".lab" / f"bench-fleet-{vms}"
        print(f"vcsim for {vms} VMs: the one fleet_bench.py --serve keeps up (port {lab.port})", flush=True)
    else:
        clusters = max(1, vms // 200 if vms <= 1000 else vms // 1000)
        flags = ("-cluster", str(clusters), "-host", "10", "-vm", str(vms // clusters), "-standalone-host", "0",
                 "-delay", str(ns.delay_ms))
        workdir = REPO / ".lab" / f"bench-peers-{vms}"
        shutil.rmtree(workdir, ignore_errors=True)
        workdir.mkdir(parents=True)
        started = time.monotonic()
        lab = fleet_bench._lab_module().start_vcsim(workdir / "vcsim", flags, timeout_s=7200)
        built = time.monotonic() - started
        print(f"vcsim for {vms} VMs built in {built:.0f} s", flush=True)
    results: dict[str, list[dict]] = {t: [] for t in tools}
    try:
        peers = [t for t in tools if t in PEERS]
        counted = {} if ns.no_count else count_peer_requests(lab, workdir, exporter, peers)
        for n in range(ns.rounds):
            order = tools[n % len(tools):] + tools[:n % len(tools)]
            for tool in order:
                one = run_tool(tool, lab, workdir, ns, exporter)
                one.setdefault("requests", counted.get(tool))
                one.update(round=n + 1, load_1m=round(os.getloadavg()[0], 2))
                results[tool].append(one)
                print(json.dumps({"tool": tool, **{k: round(v, 3) if isinstance(v, float) else v
                                                   for k, v in one.items()}}), flush=True)
        if ns.steady:
            serve_steady = run_serve_cycle(lab, workdir, ns.esxdiag_args.split(), steady_interval=ns.steady)
            serve_steady.pop("sampled_peak_rss").done.set()
            telegraf_steady = run_telegraf_steady(lab, workdir)
            steady = {"serve steady cycles": serve_steady, "telegraf running": telegraf_steady,
                      "load_1m": round(os.getloadavg()[0], 2)}
            print(json.dumps({"steady": steady}), flush=True)
            results["steady"] = [steady]
    finally:
        if served is None:
            lab.stop()
    (workdir / "peers-results.json").write_text(json.dumps({"vms": vms, "results": results}, indent=1))
    steady = results.pop("steady", None)
    text = summary(results, vms)
    if steady:
        serve, telegraf = steady[0]["serve steady cycles"], steady[0]["telegraf running"]
        each = " / ".join(f"{c:.2f}" for c in serve.get("cpu_per_cycle_s", []))
        text += (f"\n  steady: serve's cycles after the first {serve['cpu_s']:.2f} s CPU each ({each}), "
                 f"{serve['requests']} requests; "
                 f"Telegraf per 20 s interval {telegraf['cpu_per_interval_s']:.2f} s "
                 f"(its start, discovery and first gather {telegraf['first_gather_cpu_s']:.2f} s)")
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--vms", default="1000", help="VM counts, comma-separated, e.g. 1000,2000,10000")
    parser.add_argument("--delay-ms", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--attach", action="store_true",
                        help="require the vcsims `fleet_bench.py --vms N --serve` keeps up (else: used when up, "
                             "built here when not)")
    parser.add_argument("--tools", default=",".join(TOOLS), help=f"comma-separated, of: {', '.join(TOOLS)}")
    parser.add_argument("--esxdiag-args", default="", help="extra scan/serve arguments, e.g. '--workers 1'")
    parser.add_argument("--exporter-venv", type=Path, default=Path("/work/venv-vmware-exporter"))
    parser.add_argument("--no-count", action="store_true", help="skip the peers' request-counting round")
    parser.add_argument("--steady", type=int, default=0, metavar="S",
                        help="also: serve's steady cycles (the 3 after its first) at --interval S beside Telegraf's CPU per interval")
    ns = parser.parse_args(argv)
    tools = [t.strip() for t in ns.tools.split(",") if t.strip()]
    if unknown := set(tools) - set(TOOLS):
        parser.error(f"unknown tools {sorted(unknown)}")
    fleet_bench.compile_bytecode()  # esxdiag as installed: its modules' bytecode written once, before timing
    exporter = exporter_python(ns.exporter_venv) if "vmware_exporter" in tools else Path()
    if "telegraf" in tools:
        telegraf_binary()
    if "otelcol vcenterreceiver" in tools:
        otelcol_binary()
    summaries = [bench_one_size(int(vms), ns, tools, exporter) for vms in ns.vms.split(",")]
    print("\n" + "\n\n".join(summaries))
    return 0


if __name__ == "__main__":
    sys.exit(main())
