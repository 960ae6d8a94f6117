"""+study=scaling in words: the headline, the lines under the section's table and the numbers' format."""
from __future__ import annotations

import math

from harness.studies.scaling.mccandlish import BOOTSTRAP, FIT_TOLERANCE, NO_GAIN, PERFECT, RESOLUTION, Fit


def headline(s) -> str:
    """The section in one sentence, for the report's verdict."""
    measured, fit, noise = s.measured, s.fit, s.noise
    if len(measured) < 3 or fit is None:
        return (f"Too few batch sizes reached tune_acc {s.target:g} ({len(measured)} of {len(s.points)}) "
                "to fit a critical batch size.")
    perfect = [p.batch for p in measured if p.regime == "perfect scaling"]
    none = [p.batch for p in measured if p.regime == "no gain"]
    where = (f"perfect scaling up to batch {perfect[-1]}" if perfect else "no perfect scaling") + (
        f", no gain from a larger batch at batch {', '.join(map(str, none))}" if none else "")
    if not fit.follows:
        return (f"Steps to tune_acc {s.target:g} went from {fmt(measured[0].steps)} at batch "
                f"{measured[0].batch} to {fmt(measured[-1].steps)} at batch {measured[-1].batch} ({where}); "
                f"the curve does not follow McCandlish's model within {FIT_TOLERANCE:.0%} ({why_not(fit)}), "
                "so no critical batch size is claimed.")
    predicted = ""
    if noise.value is not None:
        factor = max(noise.value / fit.b_crit, fit.b_crit / noise.value)
        predicted = f"; the noise scale at the target, B_simple = {fmt(noise.value)}, is within {factor:.2g}x of it"
    found = fit.b_crit_interval
    named = "" if found is None else f" ({100 * found.level:.0f}% bootstrap interval)" if found.level is not None \
        else f" (the bootstrap range over {found.n} seeds, too few for a stated level)"
    return (f"Critical batch size B_crit = {fmt(fit.b_crit)} {interval(fit.b_crit_interval)}{named} for tune_acc "
            f"{s.target:g} ({where}){predicted}.")



def fmt(value: float | None, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if math.isinf(value):
        return "∞"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.{digits}g}"


def interval(found) -> str:
    """"[40, 90]", its level said where the fit's sentence does not say it ("[no interval]" without one)."""
    if found is None or math.isnan(found.low) or math.isnan(found.high):
        return "[no interval]"
    return f"[{fmt(found.low)}, {fmt(found.high)}]"


def bootstrap_label(found) -> str:
    """"95% bootstrap interval", or at fewer seeds than a bootstrap's level holds at, "bootstrap range (3 seeds a
    cell: no stated level)"."""
    if found.level is not None:
        return f"{100 * found.level:.0f}% bootstrap interval"
    return f"bootstrap range ({found.n} seeds: too few for a stated level)"


def lines(s) -> list[str]:
    measured, missing = s.measured, [p for p in s.points if p.steps is None]
    size = f"{s.tune_size} held-out training samples" if s.tune_size else "the held-out tuning slice"
    lines = [f"Steps to target: the first check at which the tuning slice ({size}) reached accuracy {s.target:g}; "
             "each batch size at the learning rate whose seeds all got there in the fewest mean steps (chosen on "
             "the tuning slice, never on validation)."]
    if missing:
        lines.append(f"Batch {', '.join(str(p.batch) for p in missing)}: no learning rate tried got every seed to "
                     "the target within the run's budget, so it has no point on the curve.")
    if not measured:
        return lines
    coarse = [p for p in measured if p.resolution is not None and p.resolution > RESOLUTION]
    worst = max((p.resolution for p in measured if p.resolution is not None), default=None)
    where = (f" (coarser than {RESOLUTION:.0%} at batch {', '.join(str(p.batch) for p in coarse)}, where one compiled "
             "call of the epoch is a large share of the steps to target)." if coarse
             else f", within {RESOLUTION:.0%} at every batch size.")
    lines.append(f"Resolution: consecutive checks at most {fmt(100 * worst, 2)}% of the steps apart at the crossing"
                 f"{where}")
    edges = [p for p in measured if p.edge]
    if edges:
        lines.append("The chosen learning rate is at an edge of the grid at batch "
                     f"{', '.join(f'{p.batch} ({p.edge})' for p in edges)}: a learning rate beyond it may reach the "
                     "target in fewer steps, so there S(B) is an upper bound.")
    regimes = {}
    for p in measured[1:]:
        regimes.setdefault(p.regime, []).append(p.batch)
    if regimes:
        lines.append("Against the batch size before it: " + "; ".join(
            f"{regime} at batch {', '.join(map(str, batches))}" for regime, batches in regimes.items()) +
            f" (perfect scaling: S fell in proportion to the batch, within {PERFECT:.0%}, i.e. halved when the batch "
            f"doubled; no gain: S fell by less than {NO_GAIN:.0%}).")
    first, last = measured[0], measured[-1]
    lines.append(f"From batch {first.batch} to {last.batch} the steps to target went from {fmt(first.steps)} to "
                 f"{fmt(last.steps)} ({first.steps / last.steps:.3g}x fewer for {last.batch / first.batch:g}x the "
                 f"batch) and the samples from {fmt(first.samples)} to {fmt(last.samples)}.")
    lines += _fit_lines(s)
    return lines


def _fit_lines(s) -> list[str]:
    fit, noise = s.fit, s.noise
    if fit is None:
        return ["Fewer than three batch sizes reached the target: no curve fitted."]
    batch, deviation = fit.worst
    shape = f"S = S_min(1 + B_crit/B) with S_min = {fmt(fit.s_min)} {interval(fit.s_min_interval)} steps"
    if not fit.follows:
        lines = [f"The measured curve does not follow McCandlish's model within {FIT_TOLERANCE:.0%} "
                 f"({why_not(fit)}), so no critical batch size is claimed from it. Its best fit, for reference: "
                 f"{shape} and B_crit = {fmt(fit.b_crit)} {interval(fit.b_crit_interval)}."]
    else:
        how = (f"{bootstrap_label(fit.b_crit_interval)} over seeds and the learning-rate choice, {fit.replicates} "
               "replicates"
               if fit.replicates else "no interval: one seed per learning rate, nothing to resample")
        lines = [f"Fit ({how}): {shape} and B_crit = {fmt(fit.b_crit)} {interval(fit.b_crit_interval)}; every "
                 f"batch size within {abs(deviation):.1%} of the curve, the largest at batch {batch} (the model is "
                 f"said to follow within {FIT_TOLERANCE:.0%})."]
    if noise.value is None:
        lines.append(f"The gradient noise scale at the target is inconclusive: its |G|² estimate, pooled over "
                     f"{noise.runs} run(s), was not positive." if noise.runs else
                     "No run recorded the gradient noise scale at the target.")
        return lines
    unbounded = f" ({noise.non_positive} of {BOOTSTRAP} replicates had |G|² ≤ 0)" if noise.non_positive else ""
    measured = (f"The gradient noise scale measured where the runs reached the target, pooled over {noise.runs} "
                f"runs: B_simple = {fmt(noise.value)} {interval(noise.interval)}"
                f"{'' if noise.interval is None else ' (' + bootstrap_label(noise.interval) + ' over runs)'}{unbounded}")
    if fit.follows:
        factor = max(noise.value / fit.b_crit, fit.b_crit / noise.value)
        lines.append(f"{measured} predicts B_crit = {fmt(fit.b_crit)} {interval(fit.b_crit_interval)} within "
                     f"{factor:.2g}x ({'below' if noise.value < fit.b_crit else 'above'} it; McCandlish et al. "
                     "found B_simple within a small factor of B_crit, usually below it).")
    elif math.isfinite(fit.b_crit) and fit.b_crit > 0:
        factor = max(noise.value / fit.b_crit, fit.b_crit / noise.value)
        lines.append(f"{measured}; against the best fit's B_crit = {fmt(fit.b_crit)} (not claimed: the curve does "
                     f"not follow the model) it is within {factor:.2g}x.")
    else:
        lines.append(f"{measured}; with no B_crit fitted there is nothing to check it against.")
    return lines


def why_not(fit: Fit) -> str:
    batch, deviation = fit.worst
    if abs(deviation) > FIT_TOLERANCE:
        return f"the largest deviation is {deviation:+.1%}, at batch {batch}"
    return "the fit has no finite B_crit: S fell as 1/B throughout" if math.isinf(fit.b_crit) else \
        "the fit has no 1/B term: S did not fall with the batch"
