"""esxdiag.api: the results it returns are the command line's, read back or judged again; its
errors are EsxdiagErrors naming the file; pandas stays out of the command line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from esxdiag import api
from esxdiag.cli import main
from esxdiag.parsers import to_jsonable

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
REPORTS = sorted(EXAMPLES.rglob("report.json"))
FLEET = sorted((EXAMPLES / "fleet").glob("esxdiag-scan-*.json"))


def comparable(doc: dict) -> dict:
    doc = json.loads(json.dumps(doc))
    doc["bundle"].pop("path", None)
    return doc


@pytest.mark.parametrize("report", REPORTS, ids=lambda p: str(p.parent.relative_to(EXAMPLES)))
def test_analyze_returns_what_the_command_line_renders(report):
    result = api.analyze(report.parent)
    assert isinstance(result, api.AnalysisResult)
    assert comparable(to_jsonable(result)) == comparable(json.loads(report.read_text(encoding="utf-8")))


@pytest.mark.parametrize("report", REPORTS, ids=lambda p: str(p.parent.relative_to(EXAMPLES)))
def test_a_report_json_reads_back_as_the_result_it_renders(report):
    assert to_jsonable(api.load_report(report)) == json.loads(report.read_text(encoding="utf-8"))


def test_json_output_of_the_command_line_is_what_load_report_reads(tmp_path):
    out = tmp_path / "r.json"
    assert main(["analyze", str(EXAMPLES / "healthy-vm"), "--format", "json", "-o", str(out)]) == 0
    assert to_jsonable(api.load_report(out)) == to_jsonable(api.analyze(EXAMPLES / "healthy-vm")) | {
        "bundle": json.loads(out.read_text())["bundle"]}


@pytest.mark.parametrize("text, words", [
    ("{", "not a report JSON"), ('{"schema_version": 2, "vms": []}', "not an esxdiag report JSON"),
    ('[1]', "not an esxdiag report JSON"), ('{"schema_version": 1, "vms": [], "x": NaN}', "NaN"),
])
def test_a_bad_report_json_is_a_bundle_error_naming_the_file(tmp_path, text, words):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(api.BundleError, match=words) as caught:
        api.load_report(path)
    assert str(path) in str(caught.value)


def test_a_report_field_of_the_wrong_type_is_a_parse_error_naming_field_and_file(tmp_path):
    doc = json.loads((EXAMPLES / "healthy-vm" / "report.json").read_text())
    doc["vms"][0]["vnics"][0]["port"] = -4
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(api.ParseError, match=r"vms\[0\]\.vnics\[0\]\.port") as caught:
        api.load_report(path)
    assert caught.value.file == str(path)


@pytest.mark.parametrize("text", ["[" * 100_000, '{"n": 1' + "0" * 5000 + "}", "{", '{"schema": "x"}'])
def test_a_damaged_snapshot_is_a_parse_error_naming_the_file(tmp_path, text):
    path = tmp_path / "snap.json"
    path.write_text(text)
    for call in (api.load_snapshot, api.fleet_report):
        with pytest.raises(api.ParseError) as caught:
            call(path)
        assert caught.value.file == str(path)


def test_thresholds_move_the_verdicts_and_refuse_unknown_keys(tmp_path):
    assert api.thresholds()["cpu.ready_pct_critical"] == 10.0
    assert api.thresholds(overrides={"cpu.ready_pct_critical": 8})["cpu.ready_pct_critical"] == 8.0
    config = tmp_path / "t.ini"
    config.write_text("[thresholds]\ncpu.costop_pct = 4\n")
    assert api.thresholds(config)["cpu.costop_pct"] == 4.0
    result = api.analyze(EXAMPLES / "iperf-cpu-limited", {"cpu.max_limited_pct": 99})
    assert result.thresholds["cpu.max_limited_pct"] == 99.0
    for bad in ({"cpu.nope": 1}, {"cpu.ready_pct_critical": 400}):
        with pytest.raises(api.ConfigError):
            api.analyze(EXAMPLES / "healthy-vm", bad)


def test_a_case_analyses_once_parsed_under_several_thresholds_and_cleans_up():
    with api.open_case(EXAMPLES / "iperf-cpu-limited") as case:
        first = case.analyze()
        facts = case.facts()
        looser = case.analyze({"cpu.max_limited_pct": 99, "cpu.ready_pct_critical": 99, "cpu.ready_pct_warning": 99})
        assert case.facts() is facts
    assert case.closed
    assert {f.rule for f in first.all_findings()} != {f.rule for f in looser.all_findings()}
    assert case.analyze().vms == first.vms  # judged again from what was gathered
    with pytest.raises(api.EsxdiagError, match="closed"):
        case.capture_path("esxtop_batch")


def test_missing_inputs_are_esxdiag_errors_naming_the_path(tmp_path):
    missing = tmp_path / "nothing-here"
    for call in (lambda: api.analyze(missing), lambda: api.load_report(missing),
                 lambda: api.load_snapshot(missing), lambda: api.read_esxtop(missing),
                 lambda: api.fleet_report(missing), lambda: api.history_frame(missing)):
        with pytest.raises(api.EsxdiagError) as caught:
            call()
        assert str(missing) in str(caught.value)
    with api.open_case(EXAMPLES / "healthy-vm") as case, pytest.raises(api.EsxdiagError, match="esxtop_batch"):
        case.capture_path("esxtop_batch", target="no-such-host")


def test_vnic_and_ring_frames_carry_the_result_with_the_schema_types():
    result = api.load_report(EXAMPLES / "iperf-test1-ring-exhaustion" / "report.json")
    vnics, rings = api.vnic_frame(result), api.ring_frame(result)
    nic = result.vms[0].vnics[0]
    assert vnics.loc[0, "ring_verdict"] == "raise-ring1" and vnics.loc[0, "ring1_size"] == nic.metrics["ring1_size"]
    assert str(vnics.dtypes["port"]) == "Int64" and str(vnics.dtypes["rss_enabled"]) == "boolean"
    by_counter = rings.set_index("counter")
    for counter in ("ring1_full", "ring2_full", "host_out_of_buffers", "dropped_rx", "guest_oob"):
        expected = nic.metrics[counter]
        assert by_counter.loc[counter, "delta"] == expected["delta"]
        assert by_counter.loc[counter, "per_s"] == expected["per_s"]
        assert not by_counter.loc[counter, "reset"]
    assert by_counter.loc["vcenter_dropped_rx", "samples"] == nic.metrics["vcenter_dropped_rx"]["samples"]
    assert {str(rings.dtypes[c]) for c in ("delta", "total", "samples")} == {"Int64"}


def test_ring_samples_are_per_reading_and_rx_queue_and_add_up_to_the_window():
    with api.open_case(EXAMPLES / "iperf-test1-ring-exhaustion") as case:
        samples, rings = api.ring_samples(case), api.ring_frame(case.analyze())
    assert str(samples.dtypes["time"]) .endswith("UTC]") and str(samples.dtypes["queue"]) == "Int64"
    steps = samples.dropna(subset=["delta"]).groupby("counter")["delta"].sum()
    window = rings.set_index("counter")["delta"]
    for counter in ("ring1_full", "ring2_full", "host_out_of_buffers", "guest_oob"):
        assert steps[counter] == window[counter], counter
    guest = samples[samples.counter == "guest_oob"]
    assert sorted(guest["queue"].unique()) == [0, 1] and guest["per_s"].dropna().gt(0).all()


def test_a_counter_that_goes_back_is_a_reset_not_a_negative_rate():
    from esxdiag.api.frames import _steps

    rows = list(_steps("vm", "mac", "guest_oob", 0, ["2026-01-01T00:00:00Z", "2026-01-01T00:00:10Z",
                                                      "2026-01-01T00:00:20Z", None], [100, 40, 70, 90], "f"))
    assert [r["delta"] for r in rows] == [None, 40, 30, 20]
    assert [r["reset"] for r in rows] == [None, True, False, False]
    assert [r["per_s"] for r in rows] == [None, 4.0, 3.0, None]  # no time: no rate


def test_cpu_samples_are_the_series_the_rules_judged():
    with api.open_case(EXAMPLES / "iperf-cpu-limited") as case:
        cpu, result = api.cpu_samples(case), case.analyze()
    judged = result.vms[0].cpu
    peaks = cpu.groupby("counter")["value"].max()
    assert round(peaks["ready_pct"], 2) == judged["ready_pct_max"]
    assert round(peaks["max_limited_pct"], 2) == judged["max_limited_pct_max"]
    assert set(cpu["source"]) == {judged["source"]} and str(cpu.dtypes["value"]) == "float64"


def test_fleet_frames_and_the_history_across_scans(tmp_path):
    before, after = (api.fleet_report(path) for path in FLEET)
    frame = api.fleet_frame(after)
    assert list(frame["name"]) == [row["name"] for row in after["vms"]]
    assert list(frame["rank"]) == list(range(1, len(frame) + 1))
    assert str(frame.dtypes["collected_at"]) .endswith("UTC]") and str(frame.dtypes["drops"]) == "Int64"
    assert frame.set_index("name").loc["app01", "class"] == "ring-suspect"
    db = tmp_path / "h.sqlite"
    assert api.record_scan(before, db) is None
    assert [c["name"] for c in api.record_scan(after, db)["new"]] == ["app01"]
    one = api.history_frame(db, vm="vm-11")
    assert list(one["class"]) == ["healthy", "ring-suspect"] and one["collected_at"].is_monotonic_decreasing
    everyone = api.history_frame(db)
    assert len(everyone) == len(before["vms"]) + len(after["vms"])
    assert len(api.history_frame(db, limit=1)) == len(after["vms"])
    assert api.scan_history(db, limit=1)[0]["collected_at"] == after["snapshot"]["collected_at"]


def test_a_snapshot_object_and_thresholds_judge_like_the_command_line(tmp_path, capsys):
    snapshot = api.load_snapshot(FLEET[0])
    strict = api.fleet_report(snapshot, {"cpu.ready_pct_critical": 12})
    assert main(["scan", "--snapshot", str(FLEET[0]), "--set", "cpu.ready_pct_critical=12", "--format", "json",
                 "-o", str(tmp_path / "f.json")]) == 0
    written = json.loads((tmp_path / "f.json").read_text())
    assert [(r["name"], r["class"], r["severity"]) for r in written["vms"]] == [
        (r["name"], r["class"], r["severity"]) for r in strict["vms"]]


def test_without_pandas_the_dataframes_name_the_extra_and_the_rest_works():
    code = ("import sys; sys.modules['pandas'] = None\n"
            "from esxdiag import api\n"
            "result = api.analyze('examples/healthy-vm')\n"
            "try:\n    api.vnic_frame(result)\nexcept api.PandasMissing as exc:\n"
            "    assert isinstance(exc, ImportError) and \"esxdiag[pandas]\" in str(exc), exc\n    print('ok')\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


def test_esxdiag_analyze_and_importing_the_api_do_not_import_pandas(tmp_path):
    """The CLI pays nothing for the DataFrames: not on the csv path of a small capture, not on the
    pyarrow path of a big one (forced here), not when esxdiag.api is imported without a frame."""
    code = (
        "import sys\n"
        "import esxdiag.parsers.esxtop_arrow as arrow\n"
        "arrow.FAST_PATH_MIN_BYTES = 0\n"
        "from esxdiag.cli import main\n"
        f"for example in ('iperf-test1-ring-exhaustion', 'iperf-cpu-limited'):\n"
        f"    assert main(['analyze', {str(EXAMPLES)!r} + '/' + example, '--format', 'json', '-o', "
        f"{str(tmp_path / 'r.json')!r}]) == 0\n"
        "assert 'pyarrow.csv' in sys.modules\n"
        "import esxdiag.api\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'pandas'))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
