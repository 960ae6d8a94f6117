"""+study=choose: which batch size reaches the user's accuracy soonest on their machine, each batch size with its own
recipe (the command as it is, the published rules, a short learning-rate grid), every run stopped at a target on the
tuning slice.

    settings.py    choose.*, validated at planning and read back from sweep.json by the later rounds and the reading
    plan.py        round 1 from the command (the baseline, or the candidates when choose.target is given) and the
                   jobs of every later round (config)
    rounds.py      which later round comes next, from the rounds before (harness.launch.rounds runs it)
    reading.py     the sweep read: the target, every candidate's steps to it, each batch size's best (assess)
    timed_runs.py  the timed runs read: each judging seed's own run of the printed command, alone, is its time;
                   the printed command; the check's reruns against their prediction
    timing.py      an older sweep's time to the target, off the line T = C + r x S of two timed runs
    answer.py      the answer on the seeds that judge: each batch size's best timed, the fastest, its speed-ups
                   (over b as it is and b at its best), every batch size left out and why, the rule of thumb's cost
    section.py     the report's part, in the verdict's place: section.html.j2, figures.py; words.py its sentences
                   (check_words.py the check's)
    files.py       choice.json
"""
from __future__ import annotations

from harness.studies.choose import files
from harness.studies.study import Study


class Choose(Study):
    name = "choose"
    question = "which batch size reaches my accuracy soonest on this machine?"
    priority = 2.5  # before scaling's (whose runs are stopped at a target too): a sweep holding a choice's plan
    reading_file = (files.CHOICE_FILE, files.write)

    def settings(self, node):
        from harness.studies.choose import settings

        return settings.from_dict(node or {})

    def plan(self, jobs, run_configs, settings, given):
        from harness.studies.choose import plan

        return plan.plan(jobs, run_configs, settings, given)

    def next_round(self, sweep_dir, content, round_):
        from harness.studies.choose import rounds

        return rounds.next_round(sweep_dir, content, round_)

    def added_jobs(self, sweep_dir, content, seeds):
        from harness.studies.choose import rounds

        return rounds.added_jobs(sweep_dir, content, seeds)

    def detects(self, sweep) -> bool:
        from harness.studies.choose.reading import read_plan

        return read_plan(sweep) is not None

    def assess(self, sweep):
        from harness.assess.assessment import common
        from harness.studies.choose import reading

        c = common(sweep)  # runs stopped at a target: their steps and times are the measure, not a final val_acc
        return c.assessment([], reading.choose(c.sweep))

    def next_step(self, verdict):
        import shlex

        sizes = "batch_size=" + ",".join(str(size) for size in verdict.batch_sizes)
        return (f"To find which batch size reaches batch {verdict.batch_sizes[0]}'s accuracy soonest on this machine, "
                "each with its own recipe (the published rules and a learning-rate grid, timed alone)",
                shlex.join(["python", "-m", "harness", f"+study={self.name}", sizes, *(verdict.setting or []), "-m"]))

    def findings(self, a, command):
        from harness.studies.choose import words

        found = a.reading
        if found is None:
            return []
        lines = [f"- **`{command}`: {words.headline(found)}**"]
        if found.command:
            lines.append(f"- The answer as a command line: `{found.command}`")
        return lines + [f"- {line}" for line in words.answer_lines(found)]

    def sections(self, a):
        from harness.studies.choose.section import sections

        return sections(a) if a.reading is not None else []

    def results_columns(self, sweep):
        from harness.studies.choose import reading

        rounds = {job["job"]: job.get("round", 1) for job in (sweep.plan or {}).get("jobs", [])}
        return {"arm": reading.arms(sweep), "round": rounds}

    def results_lines(self, sweep):
        from harness.studies.choose import reading, words

        return words.results_lines(reading.choose(sweep))


STUDY = Choose()
