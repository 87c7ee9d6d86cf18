"""esxtop parser benchmark: our streaming parser vs ``pandas.read_csv`` and polars' lazy
``scan_csv(...).select(the VM's columns)``, as whole processes; and esxdiag.api's DataFrame of every
VM's Group Cpu % Ready (``read_esxtop(counters=["group_ready_pct"])``) vs ``pandas.read_csv(usecols=
the same columns)``, both indexed by UTC time.

Runs each command ``--repeat`` times alternately on the same (page-cached) file and reports the
best and median wall time, the ratio, and each process's peak RSS (``ru_maxrss`` from
``os.wait4`` on that very child, so one run cannot leak into another's figure).

    python bench/esxtop_gen.py                      # writes bench/out/esxtop_300mb.csv
    python bench/esxtop_bench.py [FILE] [--vm iperf-test1] [--repeat 3]
    python bench/esxtop_bench.py tests/fixtures/esxtop/esxtop_batch_full_*.csv --vm styx
    python bench/esxtop_bench.py --repeat 2 --only api pandas-usecols esxdiag

polars is optional (``pip install polars``): without it that row is left out.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

DEFAULT_FILE = Path(__file__).parent / "out" / "esxtop_300mb.csv"
PARSE_FILE_SNIPPET = ("import json, sys; from esxdiag.parsers import parse_file, to_jsonable; "
                      "json.dump(to_jsonable(parse_file('esxtop', sys.argv[1], vm=sys.argv[2])), sys.stdout)")


def our_command(path: Path, vm: str) -> list[str]:
    """The ``esxdiag parse`` CLI when it exists, else the same parser through parse_file. The
    console script next to this interpreter comes first: pandas runs on ``sys.executable`` too,
    and a launcher shim found on PATH (pyenv's costs ~0.1 s per start) would time the shim."""
    beside = Path(sys.executable).with_name("esxdiag")
    cli = str(beside) if os.access(beside, os.X_OK) else shutil.which("esxdiag")
    if cli:
        probe = subprocess.run([cli, "parse", "--help"], capture_output=True, text=True)
        if probe.returncode == 0 and "--vm" in probe.stdout:
            return [cli, "parse", "esxtop", "--vm", vm, str(path)]
    return [sys.executable, "-c", PARSE_FILE_SNIPPET, str(path), vm]


def pandas_command(path: Path) -> list[str]:
    return [sys.executable, "-c", "import pandas, sys; pandas.read_csv(sys.argv[1])", str(path)]


# The columns of one VM found from the header (as esxdiag does), then polars reads only those.
POLARS_SNIPPET = """
import csv, sys
import polars as pl
path, vm = sys.argv[1], sys.argv[2]
with open(path, newline="", encoding="utf-8", errors="replace") as handle:
    header = next(csv.reader(handle))
wanted = [h for h in header[1:] if f":{vm})" in h or f":{vm}:" in h]
frame = pl.scan_csv(path, infer_schema=False).select([header[0]] + wanted).collect()
print(frame.shape)
"""


# The DataFrame of one column per VM (every VM's Group Cpu % Ready, time as UTC timestamps):
# esxdiag.api.read_esxtop, and pandas.read_csv(usecols=...) of the very same columns.
API_SNIPPET = """
import sys
from esxdiag.api import read_esxtop
frame = read_esxtop(sys.argv[1], counters=["group_ready_pct"]).vms["group_ready_pct"]
print(frame.shape, frame.index.dtype, round(float(frame.to_numpy().sum()), 2))
"""
PANDAS_USECOLS_SNIPPET = """
import csv, sys
import pandas
path = sys.argv[1]
with open(path, newline="", encoding="utf-8", errors="replace") as handle:
    header = next(csv.reader(handle))
vm_groups = {h.split("\\Vcpu(", 1)[1].split(":", 1)[0] for h in header if "\\Vcpu(" in h and ":vmx-vcpu-" in h}
wanted = [h for h in header if "\\Group Cpu(" in h and h.endswith("\\% Ready")
          and h.split("\\Group Cpu(", 1)[1].split(":", 1)[0] in vm_groups]
frame = pandas.read_csv(path, usecols=[header[0]] + wanted, index_col=0)
frame.index = pandas.to_datetime(frame.index, format="%m/%d/%Y %H:%M:%S", utc=True)
print(frame.shape, frame.index.dtype, round(float(frame.to_numpy().sum()), 2))
"""


def api_commands(path: Path) -> dict[str, list[str]]:
    return {"api": [sys.executable, "-c", API_SNIPPET, str(path)],
            "pandas-usecols": [sys.executable, "-c", PANDAS_USECOLS_SNIPPET, str(path)]}


def polars_command(path: Path, vm: str) -> list[str] | None:
    try:
        metadata.version("polars")
    except metadata.PackageNotFoundError:
        return None
    return [sys.executable, "-c", POLARS_SNIPPET, str(path), vm]


def run_measured(command: list[str]) -> tuple[float, int, int, float]:
    """(wall s, peak RSS bytes, stdout bytes, user+sys CPU s) of one child: fork/exec + wait4 on
    that pid, because Popen reaps the child itself and its rusage would be lost."""
    read_fd, write_fd = os.pipe()
    started = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        os.dup2(write_fd, 1)
        os.close(read_fd)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        os.execvp(command[0], command)
    os.close(write_fd)
    size = 0
    with os.fdopen(read_fd, "rb") as output:
        while chunk := output.read(1 << 16):
            size += len(chunk)
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(command[:4])} ... exited {os.waitstatus_to_exitcode(status)}")
    return wall, usage.ru_maxrss * 1024, size, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path, nargs="?", default=DEFAULT_FILE)
    parser.add_argument("--vm", default="iperf-test1")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", nargs="+", metavar="NAME",
                        help="run only these: esxdiag pandas polars api pandas-usecols (default: all)")
    args = parser.parse_args()
    if not args.file.is_file():
        raise SystemExit(f"{args.file} missing: run python bench/esxtop_gen.py first")
    with open(args.file, "rb") as warm:
        while warm.read(1 << 24):
            pass
    commands = {"esxdiag": our_command(args.file, args.vm), "pandas": pandas_command(args.file),
                "polars": polars_command(args.file, args.vm)}
    commands.update(api_commands(args.file))
    commands = {name: command for name, command in commands.items()
                if command is not None and (not args.only or name in args.only)}
    results: dict[str, list[tuple[float, int, int, float]]] = {name: [] for name in commands}
    for _ in range(args.repeat):
        for name, command in commands.items():
            results[name].append(run_measured(command))
    size_mb = args.file.stat().st_size / 1e6
    with open(args.file, encoding="utf-8", errors="replace") as handle:
        columns = handle.readline().count('","') + 1
    print(f"file: {args.file} ({size_mb:.0f} MB, {columns} columns); machine: {platform.machine()}, "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}, Python {platform.python_version()}, "
          f"{', '.join(f'{d} {_version(d)}' for d in ('pyarrow', 'pandas', 'polars'))}")
    for name, command in commands.items():
        walls = [r[0] for r in results[name]]
        rss = max(r[1] for r in results[name])
        cpu = min(r[3] for r in results[name])
        print(f"{name:14s} best {min(walls):6.2f} s  median {statistics.median(walls):6.2f} s  "
              f"CPU {cpu:5.2f} s  peak RSS {rss / 2**20:7.1f} MiB  stdout {results[name][0][2]} B")
        snippet = {"polars": "<POLARS_SNIPPET>", "api": "<API_SNIPPET>", "pandas-usecols": "<PANDAS_USECOLS_SNIPPET>"}
        shown = [part if "\n" not in part else snippet[name] for part in command]
        print(f"         $ {' '.join(shown)}")
    for name, base in (("pandas", "esxdiag"), ("polars", "esxdiag"), ("pandas-usecols", "api")):
        if name in results and base in results:
            ratio = min(r[0] for r in results[name]) / min(r[0] for r in results[base])
            print(f"speed-up ({name} best / {base} best): {ratio:.2f}x")


def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "missing"


if __name__ == "__main__":
    main()
