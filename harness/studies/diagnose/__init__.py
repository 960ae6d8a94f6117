"""+study=diagnose: the observed drop from b to B split into its causes (stale statistics, fewer updates, the
learning rate, ghost batch norm, what remains) with paired-seed intervals, and the user's data checked for the
other suspects.

    settings.py    diagnose.*, validated at planning and read back from sweep.json by the reading
    plan.py        the arms, computed from the command (config)
    hooks.py       the first job's data checks (data_checks.py: label shift, order, feature shift, capacity), in
                   its run process (data_checks.json)
    reading.py     the sweep read: the parts (parts.py), the levels, the checks (checks.py), in words
                   (words.py) (assess)
    section.py     the report's diagnosis section: its tables, figures.py and section.html.j2
    files.py       diagnosis.json
"""
from __future__ import annotations

from harness.studies.diagnose import files
from harness.studies.study import Study


class Diagnose(Study):
    name = "diagnose"
    priority = 1  # a sweep without a study's name holding a diagnosis's plan
    one_change = True  # b against B on the verdict's setting
    reading_file = (files.DIAGNOSIS_FILE, files.write)

    def settings(self, node):
        from harness.studies.diagnose.settings import settings_from_dict

        return settings_from_dict(node or {})

    def plan(self, jobs, run_configs, settings, given):
        from harness.studies.diagnose import plan

        return plan.plan(jobs, run_configs, settings, given)

    def run_hooks(self, settings):
        if settings is None or not settings.check_data:
            return []

        def check_data(cfg, data_in, run_dir):
            from harness.studies.diagnose import hooks

            hooks.check_once(cfg, data_in, run_dir, settings)

        return [check_data]

    def detects(self, sweep) -> bool:
        from harness.studies.diagnose.reading import read_plan

        return read_plan(sweep) is not None

    def assess(self, sweep):
        from harness.assess.assessment import of_arms
        from harness.studies.diagnose import reading

        diagnosed = reading.diagnose(sweep)
        return of_arms(sweep, reading.read_plan(sweep)["arms"], diagnosed)

    def next_step(self, verdict):
        from harness.assess.assessment import study_command

        return ("To split this drop into its causes on this setting (fewer updates, the learning rate, batch-norm "
                "statistics and what remains)", study_command(self.name, verdict))

    def results_columns(self, sweep):
        from harness.studies.diagnose.reading import read_plan

        plan = read_plan(sweep)
        return {} if plan is None else {"arm": plan["arms"]}

    def results_lines(self, sweep):
        """The sweep's parts of the drop, one line each, under a line naming the sweep."""
        from harness.studies.diagnose.reading import diagnose

        found = diagnose(sweep)
        if found is None or found.drop is None:
            return []
        lines = [f"{sweep.folder.name} diagnosis: {found.headline}"]
        for part in found.parts:
            e = part.estimate
            value = "not measured" if e.value is None else f"{e.value:+.4f}"
            interval = "" if e.low is None else f" [{e.low:+.4f}, {e.high:+.4f}]"
            lines.append(f"  {part.name:<17} {value}{interval}  {e.reading}")
        return lines

    def findings(self, a, command):
        d = a.reading
        if d is None:
            return []
        flagged = [c["name"] for c in d.checks if c.get("flagged")]
        return [f"- **`{command}`: {d.headline}**", f"- Data checks flagged: {', '.join(flagged) or 'none'} (of "
                f"{', '.join(c['name'] for c in d.checks)}).", *[f"- {line}" for line in d.evidence]]

    def sections(self, a):
        from harness.studies.diagnose.section import section

        return [section(a)] if a.reading is not None else []


STUDY = Diagnose()
