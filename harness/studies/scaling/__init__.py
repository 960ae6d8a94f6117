"""+study=scaling: steps (and samples) to a target tuning accuracy against batch size, the critical batch B_crit
fitted (McCandlish et al. 2018) and B_simple measured beside it. Its jobs are the preset's (conf/study/scaling.yaml,
every run stopping at `target_tune_acc`): it plans nothing of its own. A sweep short of two batch sizes at its
target is read for its learning-rate grid, as +study=tuned reads one.

    reading.py     the runs read per curve (harness.assess.targets): the learning rate chosen, steps to target,
                   the regimes, the fit (mccandlish.py), in words (words.py)
    section.py     the report's verdict place and section: verdict.html.j2, section.html.j2, figures.py
"""
from __future__ import annotations

from harness.studies.study import Study


class Scaling(Study):
    name = "scaling"
    priority = 3  # runs stopped at a target

    def detects(self, sweep) -> bool:
        epochs = sweep.epochs
        return "target_tune_acc" in epochs.columns and bool(epochs["target_tune_acc"].notna().any())

    def assess(self, sweep):
        from harness.assess.assessment import common
        from harness.studies.scaling.reading import assess as scale

        c = common(sweep)
        scaled = scale(c.sweep, c.df, c.facets)
        if scaled:  # runs stopped at a target: steps to it are the measure, not the last epoch's val_acc
            return c.assessment([], scaled)
        return _tuned().assess(sweep)

    def _scaled(self, a) -> bool:
        from harness.studies.scaling.reading import Scaling as Curve

        return bool(a.reading) and isinstance(a.reading[0], Curve)

    def findings_after(self, a):
        from harness.studies.scaling.section import findings_lines

        if not self._scaled(a):
            return _tuned().findings_after(a)
        return [line for s in a.reading for line in findings_lines(s)]

    def sections(self, a):
        from harness.studies.scaling.section import sections

        return sections(a) if self._scaled(a) else _tuned().sections(a)


def _tuned() -> Study:
    """+study=tuned, found by its name as any study is (its interface, not its modules): a sweep short of two batch
    sizes at its target is read for its learning-rate grid as tuned reads one."""
    from harness.studies import registry

    return registry.find("tuned")


STUDY = Scaling()
