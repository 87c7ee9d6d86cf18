"""AnalysisResult fixtures for the report renderers, built directly from esxdiag.result.

Figures come from the seed (the vswitchzero.com posts, docs/diagnosis.md §11) as replayed by tests/lab/scenarios.json:
iperf-test1 (ring 1 = 256 per queue, 34.6 out-of-buffer drops/s, CPU healthy) and
iperf-cpu-limited (800 MHz limit, %RDY 69.60 with %MLMTD 69.52). The Windows RSS VM and the
hostile names/strings are made up to exercise the enable-rss verdict and escaping.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from esxdiag.result import (
    AnalysisResult, CoverageItem, Evidence, Finding, Remediation, RuleCheck, RingVerdict, Series, VmResult,
    VnicResult,
)

HOSTILE_NAME = "<script>alert(1)</script>"
HOSTILE_EVIDENCE = 'ethtool -S "eth0" <b>pkts rx OOB</b> & \'queue 0\''
WINDOW_S, STEP_S = 180, 5
START = datetime(2024, 5, 1, 12, 0, 0, tzinfo=timezone.utc)
TIMES = tuple((START + timedelta(seconds=i * STEP_S)).strftime("%Y-%m-%dT%H:%M:%SZ")
              for i in range(WINDOW_S // STEP_S + 1))
HOST_DIR = "host/esx0.lab.local"


def wave(base: float, swing: float, phase: int = 0, gap_at: tuple[int, ...] = ()) -> tuple[float | None, ...]:
    """Deterministic per-sample values (a saw tooth), None where the sample is missing."""
    return tuple(None if i in gap_at else round(base + swing * ((i + phase) % 7) / 6, 2) for i in range(len(TIMES)))


def cpu_summary(ready: float, limited: float, costop: float = 0.0) -> dict:
    """VmResult.cpu as the engine writes it (CpuFacts.summary())."""
    return {"source": "esxtop", "normalisation": "esxtop Vcpu instances (per vCPU)", "samples": len(TIMES),
            "ready_pct_max": ready, "ready_pct_avg": round(ready * 0.7, 2), "costop_pct_max": costop,
            "costop_pct_avg": costop / 2, "max_limited_pct_max": limited,
            "max_limited_pct_avg": round(limited * 0.7, 2), "swap_wait_pct_max": None,
            "swap_wait_pct_avg": None, "vcpus_source": "vcenter"}


def counter(rate: float, total_before: int) -> dict:
    delta = round(rate * WINDOW_S)
    return {"delta": delta, "total": total_before + delta, "seconds": float(WINDOW_S), "per_s": rate, "reset": False}


def ring_metrics(ring1: int, ring2: int, queues: int, per_s: dict[str, float], source: str) -> dict:
    port = source.rsplit("/", 1)[-1]
    status = f"{HOST_DIR}/vsish_rxqueue_status@port={port},portset=vSwitch0,queue=0.txt"  # as a bundle names it
    metrics = {"ring1_size": ring1, "ring2_size": ring2, "ring_size_source": status,
               "ring1_max": 4096, "ring2_max": 4096, "rx_queues": queues, "mtu": 1500, "rss_enabled": None,
               "driver": "vmxnet3", "driver_version": "1.1.29.0-k-NAPI"}
    for key, rate in per_s.items():
        metrics[key] = counter(rate, 5000)
    return metrics


def counter_charts(per_s: dict[str, float], source: str) -> tuple[Series, ...]:
    """Cumulative counters per sample, as the engine charts them; a driver reload resets one counter."""
    labels = {"ring1_full": "1st ring full", "ring2_full": "2nd ring full",
              "host_out_of_buffers": "running out of buffers"}
    out = []
    for key, rate in per_s.items():
        if key not in labels:
            continue
        steps = wave(rate * STEP_S * 0.6, rate * STEP_S * 0.8)
        totals, running = [], 5000.0
        for i, step in enumerate(steps):
            running = step if (key == "ring2_full" and i == 20) else running + step
            totals.append(round(running))
        out.append(Series(labels[key], "count (cumulative)", TIMES, tuple(totals), source=f"{source}/rxSummary"))
    return tuple(out)


def ring_linux_vm() -> VmResult:
    port_dir = f"{HOST_DIR}/vsish/vSwitch0/33554464"
    rates = {"ring1_full": 23.6, "ring2_full": 10.9, "host_out_of_buffers": 34.6, "guest_oob": 34.6}
    remedy = Remediation(
        os="linux", title="Raise RX ring 1 to 4096 on eth0",
        commands=("ethtool -G eth0 rx 4096", "ethtool -g eth0"),
        persistence=("nmcli connection modify 'Wired connection 1' ethtool.ring-rx 4096",
                     "or a udev rule: ACTION==\"add\", SUBSYSTEM==\"net\", NAME==\"eth0\", "
                     "RUN+=\"/sbin/ethtool -G eth0 rx 4096\""),
        disruption="Resets the vNIC: a brief traffic blip while the rings are reallocated.",
        memory_cost="about 18 MB of guest memory (2 queues x 3,840 added entries x ~2.4 KB)")
    evidence = (
        Evidence("# of times the 1st ring is full (growth in window)", 4248, "events", 0, ">",
                 f"{port_dir}/rxSummary.end.txt", "# of times the 1st ring is full"),
        Evidence("running out of buffers (growth in window)", 6228, "frames", 0, ">",
                 f"{port_dir}/rxSummary.end.txt", "running out of buffers"),
        Evidence("ring #1 size, rx queue 0", 256, "entries", 4096, "<",
                 f"{port_dir}/rxqueues/0/status.txt", "ring #1 size"),
    )
    against = (Evidence("per-vCPU %RDY, window max", 1.9, "%", 10, "<", f"{HOST_DIR}/esxtop_batch.csv",
                        "\\\\esx0\\Vcpu(5572767:iperf-test1:0)\\% Ready"),)
    verdict = RingVerdict("raise-ring1", "Ring 1 filled 23.6 times/s at 256 entries while every vCPU was "
                          "ready less than 2 %.", evidence, against, (remedy,))
    vnic = VnicResult("00:50:56:a6:55:f4", "Network adapter 1", "vmxnet3", "vSwitch0", 33554464, "eth0",
                      "raise-ring1", verdict, ring_metrics(256, 256, 2, rates, port_dir), counter_charts(rates, port_dir))
    finding = Finding("vmxnet3-ring-exhaustion", "warning", "iperf-test1", vnic.mac,
                      "RX ring 1 exhausted on eth0", "The guest posts receive buffers too slowly for the load.",
                      evidence + (Evidence(HOSTILE_EVIDENCE, '<b>5703</b> & "2593"', "frames",
                                           source="guest/iperf-test1/ethtool_S_eth0.txt",
                                           locator="rx queue 0: pkts rx OOB"),), against, (remedy,))
    charts = tuple(Series(f"%RDY vCPU {i}", "%", TIMES, wave(0.4 - 0.2 * i, 1.5, i)) for i in range(2)) + \
        tuple(Series(f"%MLMTD vCPU {i}", "%", TIMES, (0.0,) * len(TIMES)) for i in range(2))
    checks = (RuleCheck("cpu-limit-throttling", "pass", "no CPU limit configured"),
              RuleCheck("guest-tcp-retransmits", "skip", "guest netstat -s was not collected"))
    return VmResult("iperf-test1", "esx0.lab.local", 2, None, "linux", "poweredOn", (vnic,), (finding,),
                    cpu_summary(1.9, 0.0), charts, checks, ("guest clock 2 s ahead of the host",))


def cpu_limited_vm() -> VmResult:
    port_dir = f"{HOST_DIR}/vsish/vSwitch0/33554470"
    rates = {"ring1_full": 42.1, "ring2_full": 0.0, "host_out_of_buffers": 58.3}
    remedy = Remediation(
        os="vsphere", title="Remove the 800 MHz CPU limit (or raise it)",
        commands=("govc vm.change -vm iperf-cpu-limited -cpu.limit -1",
                  "Get-VM iperf-cpu-limited | Get-VMResourceConfiguration | "
                  "Set-VMResourceConfiguration -CpuLimitMhz $null"),
        persistence=("The limit is VM configuration: the change persists across reboots.",),
        notes=("Raising ring 1 first would only delay the drops: the vCPU cannot drain the ring.",))
    evidence = (Evidence("%MLMTD, vCPU 0, window max", 69.52, "%", 0, ">", f"{HOST_DIR}/esxtop_batch.csv",
                         "\\\\esx0\\Vcpu(5572790:iperf-cpu-limited:0)\\% Max Limited"),
                Evidence("CPU limit", 800, "MHz", source="vcenter/vms.json", locator="config.cpuAllocation.limit"))
    verdict = RingVerdict("cpu-limit-first", "Drops rise while the 800 MHz limit holds the vCPU ready 69.6 % "
                          "of the time.", evidence, (), (remedy,))
    vnic = VnicResult("00:50:56:a6:55:f8", "Network adapter 1", "vmxnet3", "vSwitch0", 33554470, "eth0",
                      "cpu-limit-first", verdict, ring_metrics(256, 128, 1, rates, port_dir), counter_charts(rates, port_dir))
    finding = Finding("cpu-limit-throttling", "critical", "iperf-cpu-limited", None, "CPU limit throttles the VM",
                      "%MLMTD 69.52 on a 1-vCPU VM with an 800 MHz limit.", evidence, (), (remedy,))
    charts = (Series("%RDY vCPU 0", "%", TIMES, wave(60.0, 9.6)),
              Series("%MLMTD vCPU 0", "%", TIMES, wave(59.92, 9.6, gap_at=(10, 11))))
    return VmResult("iperf-cpu-limited", "esx0.lab.local", 1, 800, "linux", "poweredOn", (vnic,), (finding,),
                    cpu_summary(69.6, 69.52), charts)


def windows_rss_vm() -> VmResult:
    rates = {"ring1_full": 3.2, "host_out_of_buffers": 5.1}
    remedy = Remediation(
        os="windows", title="Enable RSS on the vmxnet3 adapter",
        commands=('Set-NetAdapterAdvancedProperty -Name "Ethernet0" -DisplayName "Receive Side Scaling" '
                  '-DisplayValue "Enabled"', "Get-NetAdapterRss -Name \"Ethernet0\""),
        persistence=("Advanced properties are stored in the registry and survive reboots.",),
        disruption="Windows disables and re-enables the adapter: connections on it drop for a few seconds.")
    verdict = RingVerdict("enable-rss", "One rx queue serves 4 vCPUs while ring 1 fills 3.2 times/s.",
                          (Evidence("rx queues", 1, None, 4, "<", f"{HOST_DIR}/vsish/vSwitch0/33554480/rxqueues.txt"),),
                          (), (remedy,))
    vnic = VnicResult("00:50:56:a6:10:01", "Network adapter 1", "vmxnet3", "vSwitch0", 33554480, "Ethernet0",
                      "enable-rss", verdict,
                      {**ring_metrics(512, 32, 1, rates, f"{HOST_DIR}/vsish/vSwitch0/33554480"), "rss_enabled": False},
                      ())
    finding = Finding("windows-rss-disabled", "warning", "win-sql01", vnic.mac, "RSS is off", "One rx queue.",
                      verdict.evidence, (), (remedy,))
    return VmResult("win-sql01", "esx0.lab.local", 4, None, "windows", "poweredOn", (vnic,), (finding,),
                    cpu_summary(2.1, 0.0), tuple(Series(f"%RDY vCPU {i}", "%", TIMES, wave(0.2, 1.9, i))
                                                 for i in range(4)))


def hostile_vm() -> VmResult:
    verdict = RingVerdict("insufficient-evidence", f"No ring counters for {HOSTILE_NAME}: SSH to the host failed.",
                          missing=("vsish rxSummary: ssh authentication failed on esx0.lab.local",
                                   "guest ethtool -S: guest credentials not given"))
    vnic = VnicResult("00:50:56:a6:66:66", "<i>Network adapter 1</i>", "vmxnet3", None, None, None,
                      "insufficient-evidence", verdict, {"note": "<b>no counters</b> & nothing \"else\""}, ())
    finding = Finding("coverage", "info", HOSTILE_NAME, None, "Not enough evidence", "Host counters missing.")
    return VmResult(HOSTILE_NAME, None, 2, None, None, "poweredOn", (vnic,), (finding,), {}, ())


def build_result() -> AnalysisResult:
    coverage = (
        CoverageItem("vsish rxSummary, port 33554464 (start)", "vsish_rxsummary", "esx0.lab.local", "read",
                     file=f"{HOST_DIR}/vsish/vSwitch0/33554464/rxSummary.start.txt"),
        CoverageItem(f"vsish rxSummary for {HOSTILE_NAME}", "vsish_rxsummary", "esx0.lab.local", "failed",
                     why="Authentication failed for user 'root' <esx0> & retried 0 times", error_kind="auth"),
        CoverageItem("esxtop batch", "esxtop_batch", "esx0.lab.local", "not-collected",
                     why="--no-esxtop was given"),
        CoverageItem("guest ethtool -S eth0", "ethtool_S", "win-sql01", "unparsed",
                     why="ParseError: line 3: expected 'NIC statistics:'", error_kind="parse",
                     file="guest/win-sql01/ethtool_S_eth0.txt"),
    )
    return AnalysisResult(
        schema_version=1, tool="esxdiag 0.1.0",
        bundle={"path": "/var/tmp/bundles/esx0-2024-05-01", "created": "2024-05-01T12:03:05Z",
                "window_s": WINDOW_S, "format_version": 1},
        thresholds={"cpu.ready_pct_warning": 5.0, "cpu.ready_pct_critical": 10.0, "cpu.costop_pct": 3.0,
                    "cpu.max_limited_pct": 0.0, "ring.full_events": 0.0, "ring.drops": 0.0},
        vms=(ring_linux_vm(), cpu_limited_vm(), windows_rss_vm(), hostile_vm()),
        coverage=coverage, notes=("Lab bundle replaying the seed's figures.",))


@pytest.fixture
def analysis_result() -> AnalysisResult:
    return build_result()


@pytest.fixture
def hostile_name() -> str:
    return HOSTILE_NAME


@pytest.fixture
def hostile_evidence() -> str:
    return HOSTILE_EVIDENCE
