"""+study=recover: at the user's large batch B and epochs, a recipe searched on the tuning slice, confirmed at every
seed against b, and the budget B needs when nothing recovers it.

    settings.py    recover.*, validated at planning and read back from sweep.json by the later rounds
    plan.py        round 1 from the command (config): the reference, the Sobol search over space.py's keys and
                   the published rules (harness.config.rules), with the model's batch norm (batch_norm.py); later rounds' jobs
    rounds.py      which later round comes next, from the rounds before (harness.launch.rounds runs it): the
                   guided round (guided.py, Optuna's TPE), the confirmation, the judging on fresh seeds, the budget
    reading.py     the sweep read round by round (assess), with choice.py, verdict.py, budget.py, words.py (the
                   headline), notes.py, importance.py and commands.py (the command lines it offers)
    section.py     the report's Recovery section: its tables, figures.py and section.html.j2
    files.py       recovery.json
"""
from __future__ import annotations

from harness.studies.recover import files
from harness.studies.study import Study


class Recover(Study):
    name = "recover"
    priority = 2  # after diagnose: a sweep without a study's name holding a recovery plan
    one_change = True  # b against B on the verdict's setting
    reading_file = (files.RECOVERY_FILE, files.write)

    def settings(self, node):
        from harness.studies.recover import settings

        return settings.from_dict(node or {})

    def plan(self, jobs, run_configs, settings, given):
        from harness.studies.recover import plan

        return plan.plan(jobs, run_configs, settings, given)

    def next_round(self, sweep_dir, content, round_):
        from harness.studies.recover import rounds

        return rounds.next_round(sweep_dir, content, round_)

    def added_jobs(self, sweep_dir, content, seeds):
        from harness.studies.recover import rounds

        return rounds.added_jobs(sweep_dir, content, seeds)

    def detects(self, sweep) -> bool:
        from harness.studies.recover.reading import read_plan

        return read_plan(sweep) is not None

    def assess(self, sweep):
        from harness.assess.assessment import of_arms
        from harness.studies.recover import reading

        return of_arms(sweep, reading.arms(sweep), reading.with_importance(reading.recover(sweep)))

    def next_step(self, verdict):
        from harness.assess.assessment import study_command

        b, big = verdict.batch_sizes[0], verdict.batch_sizes[-1]
        return (f"To keep batch {b}'s accuracy at batch {big} (a recipe searched on a tuning slice, then confirmed on "
                "every seed)", study_command(self.name, verdict))

    def results_columns(self, sweep):
        from harness.studies.recover import reading

        arms = reading.arms(sweep)
        rounds = {job["job"]: job.get("round", 1) for job in (sweep.plan or {}).get("jobs", [])}
        return {"arm": arms, "round": rounds}

    def findings(self, a, command):
        r = a.reading
        if r is None:
            return []
        which = "The recipe" if r.verdict is not None else "The best recipe of the search"
        lines = [f"- **`{command}`: {r.headline}**", f"- {which}: `{r.command}`",
                 *[f"- {note}" for note in r.notes[:1]]]
        if r.importance is not None:
            lines.append(f"- {r.importance.sentence()}")
        return lines

    def sections(self, a):
        from harness.studies.recover.section import section

        return [section(a)] if a.reading is not None else []


STUDY = Recover()
