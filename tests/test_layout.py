"""The design card's layout: one esxdiag import namespace, analysis that never needs the network
libraries, and imports that point down the pipeline (README "Layout").

Module names are the installed ones: collectors/ is esxdiag.collectors, reports/ is
esxdiag.reports, templates/ is esxdiag.templates. Every import counts, the ones inside functions
too: a lazy import is still a dependency."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOP_LEVEL_IMPORT = re.compile(r"^\s*(from|import)\s+(collectors|reports|templates)\b", re.M)
FOLDERS = {"esxdiag": "esxdiag", "collectors": "esxdiag.collectors", "reports": "esxdiag.reports",
           "templates": "esxdiag.templates"}

# Stages, lowest first; a module may import the stages MAY_IMPORT lists for its own. The longest
# matching prefix decides (esxdiag.fleet.rules is a rule module, the rest of esxdiag.fleet analysis).
STAGES = (
    ("base", ("esxdiag", "esxdiag.errors", "esxdiag.textio", "esxdiag.terminal", "esxdiag.config",
              "esxdiag.vocabulary", "esxdiag.result")),
    ("parse", ("esxdiag.parsers",)),
    ("bundle", ("esxdiag.specs", "esxdiag.manifest", "esxdiag.bundle", "esxdiag.fleet.snapshot",
                "esxdiag.fleet.salvage", "esxdiag.fleet.model")),  # fleet.model: the fleet report's types, as result
    ("collect", ("esxdiag.collectors",)),
    ("intake", ("esxdiag.intake",)),
    ("join", ("esxdiag.join",)),
    ("rules", ("esxdiag.rules", "esxdiag.fleet.rules", "esxdiag.fleet.figures", "esxdiag.fleet.confirm",
               "esxdiag.fleet.uplink", "esxdiag.fleet.moves")),
    ("analysis", ("esxdiag.engine", "esxdiag.compare", "esxdiag.fleet")),
    ("api", ("esxdiag.api",)),
    ("report", ("esxdiag.reports", "esxdiag.templates")),
    ("scanning", ("esxdiag.scanning",)),
    ("cli", ("esxdiag.cli", "esxdiag.__main__")),
    ("serve", ("esxdiag.serve",)),
)
_ANALYSIS_ORDER = ("base", "parse", "bundle", "intake", "join", "rules", "analysis")
MAY_IMPORT = {
    **{stage: set(_ANALYSIS_ORDER[: i + 1]) for i, stage in enumerate(_ANALYSIS_ORDER)},
    # collection writes bundles and snapshots (and reads a few captures to find ports); it never
    # analyses, and nothing but the command line starts it
    "collect": {"base", "parse", "bundle", "collect"},
    # rendering reads results and the vocabulary; it never decides (no rules, no analysis)
    "report": {"base", "parse", "bundle", "report"},
    # the Python API is a facade over analysis: no collection, no rendering, no command line
    "api": {*_ANALYSIS_ORDER, "api"},
    # what a fleet scan does (the vCenters, the API pass, the rules, the deep check and its reports,
    # the proofs, the history: esxdiag.scanning.run.run_scan), below the commands: `scan` and `serve` call it
    "scanning": {*_ANALYSIS_ORDER, "collect", "report", "scanning"},
    "cli": {stage for stage, _ in STAGES},
    # the watcher: scan's own collection, analysis and deep check (esxdiag.scanning), with /metrics
    # and the web pages; `esxdiag serve` starts it. Nothing imports a command module
    "serve": {stage for stage, _ in STAGES} - {"cli"},
}


def installed_modules() -> dict[str, Path]:
    modules = {}
    for folder, package in FOLDERS.items():
        for path in (ROOT / folder).rglob("*.py"):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join([package, *parts])] = path
    return modules


def stage_of(module: str) -> str | None:
    best = None
    for stage, prefixes in STAGES:
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and (best is None or len(prefix) > len(best[1])):
                best = (stage, prefix)
    return best[0] if best else None


def imports_of(module: str, path: Path, modules: dict[str, Path]) -> list[tuple[str, int]]:
    """(imported esxdiag module, line) for every import statement, at any depth."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            for alias in node.names:  # `from pkg import submodule` depends on the submodule
                sub = f"{base}.{alias.name}"
                found.append((sub if sub in modules else base, node.lineno))
    return [(name, line) for name, line in found if name.split(".")[0] == "esxdiag"]


def import_graph() -> dict[str, list[tuple[str, int]]]:
    modules = installed_modules()
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def back_pointing(graph: dict[str, list[tuple[str, int]]]) -> list[str]:
    return [f"{module}:{line} imports {target} ({stage_of(module)} -> {stage_of(target)})"
            for module, targets in graph.items() for target, line in targets
            if stage_of(target) not in MAY_IMPORT[stage_of(module)]]


def cycles(graph: dict[str, list[tuple[str, int]]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    edges = {m: sorted({t for t, _ in targets if t != m and t in graph}) for m, targets in graph.items()}
    found, index, low, stack, on_stack = [], {}, {}, [], set()

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in edges[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while not component or component[-1] != node:
                component.append(stack.pop())
                on_stack.discard(component[-1])
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_every_module_has_a_stage():
    """Only the package itself falls back to "base"; a new top-level module must be placed."""
    assert [m for m in installed_modules() if m.count(".") == 1 and not any(
        m == p or m.startswith(p + ".") for _, prefixes in STAGES for p in prefixes if p != "esxdiag")] == []


def test_imports_point_down_the_pipeline():
    assert back_pointing(import_graph()) == []


def command_module_importers(graph: dict[str, list[tuple[str, int]]]) -> list[str]:
    """Imports of a command module (esxdiag.cli.*) by anything but the command line itself: what a
    command does lives below it (esxdiag.scanning for a fleet scan), whatever MAY_IMPORT says."""
    return [f"{module}:{line} imports {target}" for module, targets in graph.items() for target, line in targets
            if (target == "esxdiag.cli" or target.startswith("esxdiag.cli.")) and stage_of(module) != "cli"]


def test_nothing_but_the_command_line_imports_a_command_module():
    assert command_module_importers(import_graph()) == []
    assert all("cli" not in allowed for stage, allowed in MAY_IMPORT.items() if stage != "cli")


def test_no_import_cycles():
    assert cycles(import_graph()) == []


def test_the_checks_catch_what_the_layout_forbids():
    """Each check fails on the imports this layout replaced: the fleet pages importing the fleet
    rules for their class names, the deep-check fold importing the HTML report, collection
    importing the engine, and two command-line modules importing each other."""
    graph = {
        "esxdiag.reports.fleet_html": [("esxdiag.fleet.rules", 12)],
        "esxdiag.fleet.deep": [("esxdiag.reports.html", 22)],
        "esxdiag.collectors.fleet.deep": [("esxdiag.engine", 3)],
        "esxdiag.engine": [("esxdiag.collectors.live", 5)],
        "esxdiag.fleet.rules": [], "esxdiag.reports.html": [], "esxdiag.collectors.live": [],
    }
    assert len(back_pointing(graph)) == 4
    assert back_pointing({"esxdiag.reports.fleet_html": [("esxdiag.vocabulary", 12)], "esxdiag.vocabulary": []}) == []
    assert back_pointing({"esxdiag.serve.cycle": [("esxdiag.cli.scan", 22)], "esxdiag.cli.scan": []}) == [
        "esxdiag.serve.cycle:22 imports esxdiag.cli.scan (serve -> cli)"]  # nothing imports a command module
    imports_commands = {"esxdiag.serve.cycle": [("esxdiag.cli.scan", 22)], "esxdiag.scanning.run": [("esxdiag.cli", 3)],
                        "esxdiag.api.results": [("esxdiag.cli.deep", 9)], "esxdiag.cli.serve": [("esxdiag.cli.scan", 5)],
                        "esxdiag.__main__": [("esxdiag.cli", 1)], "esxdiag.cli": [], "esxdiag.cli.scan": [],
                        "esxdiag.cli.deep": []}
    assert command_module_importers(imports_commands) == [
        "esxdiag.serve.cycle:22 imports esxdiag.cli.scan", "esxdiag.scanning.run:3 imports esxdiag.cli",
        "esxdiag.api.results:9 imports esxdiag.cli.deep"]
    circle = {"esxdiag.cli.live": [("esxdiag.cli", 1)], "esxdiag.cli": [("esxdiag.cli.live", 9)]}
    assert cycles(circle) == [["esxdiag.cli", "esxdiag.cli.live"]]


def test_no_module_imports_the_folders_as_top_level_packages():
    offenders = [str(p.relative_to(ROOT)) for folder in ("esxdiag", "collectors", "reports", "templates", "tests",
                                                         "bench")
                 for p in (ROOT / folder).rglob("*.py") if TOP_LEVEL_IMPORT.search(p.read_text(encoding="utf-8"))]
    assert offenders == []


def test_installed_namespace_maps_the_folders():
    import esxdiag.collectors
    import esxdiag.reports
    import esxdiag.templates

    assert Path(esxdiag.collectors.__file__).parent == ROOT / "collectors"
    assert Path(esxdiag.reports.__file__).parent == ROOT / "reports"
    assert Path(esxdiag.templates.__file__).parent == ROOT / "templates"


def _modules_after(argv: list[str], exit_codes: tuple[int, ...] = (0,), first: str = "") -> set[str]:
    """The modules a new interpreter holds once ``esxdiag ARGV`` ran there (its exit code one of ``exit_codes``),
    after importing ``first`` (import statements) itself."""
    code = (f"import json, sys\n{first}from esxdiag.cli import main\n"
            f"rc = main({argv!r})\nassert rc in {exit_codes!r}, rc\nprint(json.dumps(sorted(sys.modules)))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return set(json.loads(proc.stdout.strip().splitlines()[-1]))


def test_analyze_does_not_import_pyvmomi_or_paramiko(tmp_path):
    loaded = _modules_after(["analyze", str(ROOT / "examples" / "iperf-test1-ring-exhaustion"), "--format", "json",
                             "-o", str(tmp_path / "r.json")])
    assert not sorted(m for m in loaded if m.split(".")[0] in ("pyVmomi", "paramiko"))


def test_every_package_folder_is_installed():
    """Each folder holding an __init__.py is in setup.cfg's `packages`: one left out imports from the
    checkout (editable install, the tests) and is missing from the wheel (the air-gapped install)."""
    import configparser

    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    listed = set(config["options"]["packages"].split())
    found = set()
    for line in config["options"]["package_dir"].strip().splitlines():
        installed, folder = (part.strip() for part in line.split("="))
        for init in (ROOT / folder).rglob("__init__.py"):
            relative = init.parent.relative_to(ROOT / folder).parts
            if not any(part == "__pycache__" or part.startswith(".") for part in relative):
                found.add(".".join((installed, *relative)))
    assert found - listed == set(), f"packages missing from setup.cfg: {sorted(found - listed)}"


def test_a_fleet_scan_does_not_import_the_per_vm_engine_its_rules_or_the_capture_parsers(tmp_path):
    """A fleet scan judges by vCenter's counters (esxdiag.fleet.rules) and reads esxdiag.rules.cpustats alone:
    the per-VM engine, its rules, the joiner and the bundle's capture parsers load only for a deep check."""
    snapshot = ROOT / "examples" / "fleet" / "esxdiag-scan-20261123T034500Z.json"
    loaded = _modules_after(["scan", "--snapshot", str(snapshot), "--format", "json", "-o", str(tmp_path / "r.json"),
                             "--no-history", "--quiet"], exit_codes=(0, 1),
                            first="import esxdiag.serve.cycle, esxdiag.scanning.run, esxdiag.collectors.fleet\n")
    heavy = {"esxdiag.engine", "esxdiag.join.readings", "esxdiag.join.causes", "esxdiag.rules.causes",
             "esxdiag.parsers.esxtop", "esxdiag.collectors.sampler"}
    assert not sorted(heavy & loaded)
