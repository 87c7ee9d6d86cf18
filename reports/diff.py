"""The comparison as text (terminal, control characters made visible), JSON, or one offline HTML file."""

from __future__ import annotations

import json
from typing import Any

from esxdiag.reports.words import vnic_prefix
from esxdiag.terminal import safe_text
from esxdiag.vocabulary import DIFF_RATES as RATES, DIFF_SIZES as SIZES, DIFF_TOTALS as TOTALS

_CPU = (("ready_pct_max", "worst-vCPU %RDY (max)"), ("max_limited_pct_max", "%MLMTD (max)"),
        ("costop_pct_max", "%CSTP (max)"))
_TCP = (("retransmits_per_1000_sent", "TCP retransmits per 1,000 segments sent"),
        ("retransmitted_segments", "TCP segments retransmitted in the window"),
        ("retransmitted_segments_total", "TCP segments retransmitted, total"))


def _num(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:,.3f}".rstrip("0").rstrip(".") if value % 1 else f"{value:,.0f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def _size_change(before: Any, after: Any) -> str:
    """A setting's change in words (ring 1 256 -> 4,096: "raised"); nothing when a side is unknown."""
    if not isinstance(before, (int, float)) or not isinstance(after, (int, float)):
        return ""
    return "raised" if after > before else "lowered" if after < before else "unchanged"


def rows(vm: dict[str, Any]) -> list[tuple[str, list[tuple[str, str, str, str]]]]:
    """Sections of (what, before, after, change) rows: the shape both text and HTML print."""
    sections = [("CPU", [(label, _num(vm["cpu"][k]["before"]), _num(vm["cpu"][k]["after"]),
                          vm["cpu"][k]["change"] or "") for k, label in _CPU]),
                ("Guest TCP", [(label, _num(vm["tcp"][k]["before"]), _num(vm["tcp"][k]["after"]),
                                vm["tcp"][k]["change"] or "") for k, label in _TCP])]
    for nic in vm["vnics"]:
        title = f"{vnic_prefix(nic['label'])}{nic['label'] or ''} {nic['mac'] or ''} {nic['guest_interface'] or ''}".split()
        verdict_before, verdict_after = nic["verdict"]
        lines = [("ring verdict", verdict_before or "absent", verdict_after or "absent",
                  "changed" if verdict_before != verdict_after else "unchanged")]
        lines += [(label, _num(nic["sizes"][k][0]), _num(nic["sizes"][k][1]), _size_change(*nic["sizes"][k]))
                  for k, label in SIZES]
        lines += [(label, _num(nic["rates"][k]["before"]), _num(nic["rates"][k]["after"]),
                   nic["rates"][k]["change"] or "") for k, label in RATES]
        lines += [(label, _num(nic["totals"][k]["before"]), _num(nic["totals"][k]["after"]),
                   nic["totals"][k]["change"] or "") for k, label in TOTALS]
        sections.append((" ".join(title), lines))
    return sections


def render_diff_text(diff: dict[str, Any]) -> str:
    out = [f"esxdiag diff: BEFORE {safe_text(diff['before']['source'])} ({_window(diff['before']['window_s'])})"
           f" -> AFTER {safe_text(diff['after']['source'])} ({_window(diff['after']['window_s'])})", ""]
    for vm in diff["vms"]:
        out.append(f"VM {safe_text(vm['name'])}")
        for title, lines in rows(vm):
            out.append(f"  {safe_text(title)}")
            out.append(f"    {'':44} {'before':>14} {'after':>14}  change")
            out += [f"    {what:44} {safe_text(b):>14} {safe_text(a):>14}  {change}" for what, b, a, change in lines]
        out.append("")
    for side in ("only_before", "only_after"):
        if diff[side]:
            out.append(f"only in {side[5:].upper()}: {safe_text(', '.join(diff[side]))}")
    out += [f"note: {safe_text(n)}" for n in diff["notes"]]
    return "\n".join(out).rstrip() + "\n"


def render_diff_json(diff: dict[str, Any]) -> str:
    return json.dumps(diff, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def render_diff_html(diff: dict[str, Any]) -> str:
    from jinja2 import Environment, PackageLoader, StrictUndefined

    env = Environment(loader=PackageLoader("esxdiag.templates", "."), autoescape=True, undefined=StrictUndefined,
                      trim_blocks=True, lstrip_blocks=True)
    return env.get_template("diff.html.j2").render(diff=diff, vms=[(vm, rows(vm)) for vm in diff["vms"]],
                                                   num=_num)


def _window(seconds: float | None) -> str:
    return "window unknown" if seconds is None else f"window {_num(seconds)} s"
