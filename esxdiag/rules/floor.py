"""The per-VM noise floor (docs/diagnosis.md "A floor for one VM"): a handful of drops among many frames is
not exhaustion worth guest memory. One function for every NIC; each caller says which frames it counts."""

from __future__ import annotations

PER_MILLION = 1_000_000  # a unit, not a threshold


def floor_words(drops: int, seconds: float | None, received: int | None, t: dict[str, float]) -> str | None:
    """Words with the numbers when ``drops`` in ``seconds`` are under both floors (per second, per million of
    the ``received`` frames; an unknown frame count leaves the rate alone to judge), else None."""
    if not drops or not seconds:
        return None
    per_s = drops / seconds
    per_million = drops * PER_MILLION / received if received else None
    if per_s >= t["ring.drops_per_s_floor"] or (per_million is not None
                                                 and per_million >= t["ring.drops_per_million_floor"]):
        return None
    million = f", {per_million:.3g} per million of the {received:,} frames received" if per_million is not None else ""
    return (f"{drops:,} dropped in {seconds:,.0f} s ({per_s:.3g}/s{million}): under the noise floor "
            f"({t['ring.drops_per_s_floor']:g}/s and {t['ring.drops_per_million_floor']:g} per million frames "
            "received)")
