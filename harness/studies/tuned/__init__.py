"""+study=tuned: a learning rate tuned for each batch size on the tuning slice (Shallue et al. 2019), and the
batch-size verdict at the tuned learning rates beside the untuned one. Its jobs are the preset's grid
(conf/study/tuned.yaml): it plans nothing of its own.

    reading.py     the grid read per batch size: the choice, its edge, the scaling rule, the verdicts (assess)
    section.py     the report's section: figures.py and section.html.j2
"""
from __future__ import annotations

from harness.studies.study import Study


class Tuned(Study):
    name = "tuned"
    priority = 4  # after scaling: a learning-rate grid at some batch size, chosen on a held-out slice

    def detects(self, sweep) -> bool:
        from harness.studies.tuned.reading import tunes

        return tunes(sweep.epochs)

    def assess(self, sweep):
        from harness.assess.assessment import common

        return self._assess_common(common(sweep))

    def _assess_common(self, c):
        """The tuned reading of a sweep's Common reading: a verdict at the tuned learning rates and one untuned per
        grid, not one per point of it; a sweep without a grid is read as a batch-size study."""
        from harness.assess.assessment import assess
        from harness.studies.tuned.reading import assess as tune

        tunings = tune(c.df, c.final, c.facets, len(c.sweep.not_started))
        if not tunings:
            return assess(c)
        return c.assessment([v for t in tunings for v in t.verdicts], tunings)

    def findings_after(self, a):
        return [f"- {line}" for t in a.reading or [] for line in t.lines]

    def sections(self, a):
        from harness.studies.tuned.section import section

        return [section(a)] if a.reading else []


STUDY = Tuned()
