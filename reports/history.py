"""A VM's past fleet-scan classes and rates (`esxdiag history VM`) as a terminal table."""

from __future__ import annotations

from esxdiag.terminal import safe_text


def render_history_text(history: dict) -> str:
    """history: {"vm": what was asked for, "rows": esxdiag.fleet.history.vm_history rows}."""
    if not history["rows"]:
        return f"no scan in the history saw a VM named {safe_text(history['vm'])}\n"
    lines = [f"{'scan':<21} {'class':<15} {'drops/s':>9} {'/1k pkts':>9} {'%RDY max':>9}  vm (vcenter)"]
    for r in history["rows"]:
        nums = [("-" if r[k] is None else f"{r[k]:.2f}") for k in ("drops_per_s", "drops_per_1000", "ready_worst_pct")]
        proven = f"  proven {r['proven_at']}" if r.get("proven_at") else ""
        lines.append(f"{r['collected_at']:<21} {r['class']:<15} {nums[0]:>9} {nums[1]:>9} {nums[2]:>9}  "
                     f"{safe_text(r['name'])} {safe_text(r['moid'])} ({safe_text(r['vcenter'])}){proven}")
    return "\n".join(lines) + "\n"
