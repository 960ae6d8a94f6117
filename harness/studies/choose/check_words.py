"""+study=choose's check in words: each rerun of the printed command on a seed of its own against its prediction, and
what the headline adds where a check failed or did not rerun the answer."""
from __future__ import annotations

import math

from harness.assess import intervals


def seconds(value: float) -> str:
    """A time in words: "1.2 s", "1,234 s", "never"."""
    if not math.isfinite(value):
        return "never"
    return f"{value:.3g} s" if value < 100 else f"{value:,.0f} s"


def uncertain_text(found) -> str:
    """" The rerun of the printed command took 49% longer than predicted: ..." where a check of the answer or of b
    failed (it missed the target, diverged or failed, or fell outside choose.check_tolerance or its prediction
    interval), else ""."""
    off = [c for c in found.checks if c.fails]
    if not off:
        return ""
    lost = [c for c in off if c.measured is None]
    if lost:
        worst = lost[0]
        how = {"missed": "missed the target", "diverged": "diverged", "failed": "failed"}.get(worst.outcome,
                                                                                              worst.outcome)
        return (f" The rerun of the printed command at batch {worst.size} on seed {worst.seed} {how}: the time is "
                "uncertain on this machine.")
    worst = max(off, key=lambda c: abs(c.measured / c.predicted - 1))
    change = worst.measured / worst.predicted - 1
    how = f"{abs(change):.0%} {'longer' if change > 0 else 'less'} than predicted"
    why = (f"more than the {found.check_tolerance:.0%} the check allows" if worst.within is False else
           f"outside its {worst.interval.label.replace('interval', 'prediction interval')}")
    return (f" The rerun of the printed command at batch {worst.size} took {how} ({why}): the time is uncertain on "
            "this machine.")


def unchecked_text(found) -> str:
    """" The answer changed once seeds were added ...: it was not checked." where the check round reran another
    candidate than the answer, else ""."""
    a = found.answer
    if a is None or not found.checks or any(c.size == a.size and c.name == a.name for c in found.checks):
        return ""
    return (" The answer changed once seeds were added after the check, which reran "
            f"batch {found.checks[0].size} ({found.checks[0].name.replace('_', ' ')}): this answer was not checked.")


def check_text(check, tolerance: float) -> str:
    """One check in words: the printed command rerun alone, measured beside predicted, within the tolerance or not,
    inside its prediction interval or not."""
    what = f"batch {check.size} ({check.name.replace('_', ' ')})"
    if check.measured is None:
        how = {"diverged": "diverged", "failed": "failed"}.get(check.outcome, "missed the target")
        return (f"Rerun alone on seed {check.seed} as printed, {what} {how}: no time to compare, so the time is "
                "uncertain.")
    said = (f"Rerun alone on seed {check.seed} as printed, {what} took {seconds(check.measured)} to the target, "
            f"predicted {seconds(check.predicted)}")
    if not math.isfinite(check.predicted) or check.within is None:
        return said + "."
    change = round(check.measured / check.predicted - 1, 2) + 0.0  # never "-0%"
    band = "" if check.inside is None else (
        f"; {'inside' if check.inside else 'outside'} its "
        f"{check.interval.label.replace('interval', 'prediction interval')} [{seconds(check.interval.low)}, "
        f"{seconds(check.interval.high)}] from the "
        + ("judging seeds' own runs" if check.interval.method == intervals.NEW_RUN else "timed runs' spread"))
    allowed = f"{'within' if check.within else 'outside'} the {tolerance:.0%} the check allows"
    return said + f" ({change:+.0%}: {allowed}{band})."




def box_text(found) -> str | None:
    """The verdict box's line on the check: the answer's rerun against its prediction, or why there is none (None
    before the answer)."""
    a = found.answer
    if a is None:
        return None
    own = next((c for c in found.checks if c.size == a.size and c.name == a.name), None)
    if own is not None:
        return check_text(own, found.check_tolerance)
    if found.checks:
        return unchecked_text(found).strip()
    if not found.check:
        return "Not rerun on a new seed (choose.check=false): the time is not checked."
    return "The check (the printed command rerun alone on a seed of its own) has not run yet."
