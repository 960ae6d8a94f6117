"""The one interface a study implements (`Study`), and what its report section is (`Section`).

Every method has a default that does nothing of its own, so a study writes only what it changes: a study that
plans no jobs of its own keeps the command's, one without a reading of its own is read as a batch-size study. The
generic wings call these methods on the study the command or the sweep names, never a study by its name:
`harness.config.compose` plans with `settings`, `check_command` and `plan`; `harness.launch.rounds` plans the
later rounds with `next_round`; `harness.launch.cli` gives a run the study's `run_hooks`; `harness.studies.registry`
reads a sweep with `assess` (or finds the study of an unnamed sweep with `detects`, in `priority` order);
`harness.report.html` lays out `sections` and writes `files`; `harness.report.results` adds `results_columns`;
`scripts/findings.py` writes `findings`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

NOT_ENDED = "not ended"  # next_round: a run of the last round has not ended (a resume runs it first)


@dataclass
class Round:
    """A later round's jobs as (overrides, arm), or (overrides, arm, job) for one that continues job's paused run
    (pause_epoch: its files are copied to the new job's folder before it runs, harness.store.fork), and whether
    each runs alone: with no other run of the sweep beside it on the machine (one at a time on a CPU, one per device
    on GPUs, one task at a time on SLURM), for a time measured on this machine that another run would slow."""

    jobs: list[tuple]
    alone: bool = False


@dataclass
class Section:
    """A study's part of the report: `template` (a Jinja template in `folder`, which may import the page's macros
    from "macros.html.j2") rendered with `context` where `place` says: "body", after the verdict, or "verdict", in
    the verdict's place when the sweep has no batch-size verdict. `figures` are (title, Figure, caption); the page
    renders them and hands them to the template as `figures` ({title, png, caption}), which the macro
    `section_figures(figures)` of "macros.html.j2" lays out. A section may bring its own styles in a <style> element
    (the page's own name no study)."""

    template: str
    folder: Path
    context: dict[str, Any] = field(default_factory=dict)
    figures: list = field(default_factory=list)
    place: str = "body"


class Study:
    """A study with behaviour of its own. `name` is its preset's name (+study=<name>) and the config node its
    settings live under (`<name>.*`), if it has any."""

    name: str = ""
    priority: float | None = None  # the order in which a sweep without a study's name is tried (detects); None: never
    # its next step runs one change at a time on the verdict's setting, b against B: the page names it among the
    # runs that can tell what caused a drop, which the probes measured beside it cannot
    one_change: bool = False
    question: str | None = None  # the page's title where its reading stands in the verdict's place (None: the main
    # job's, "does a larger batch give lower validation accuracy?")

    # planning, in harness.config (no backend, no Hydra)
    def settings(self, node: dict[str, Any] | None) -> Any:
        """The study's settings node of the composed config, validated (a ConfigError names `<name>.<key>`)."""
        return node

    def check_command(self, given: dict[str, str]) -> None:
        """Refuse what the command gives that the study decides itself (`given`: key -> override as typed)."""

    def plan(self, jobs: list[list[str]], run_configs: list, settings: Any,
             given: dict[str, str]) -> tuple[list[list[str]], dict[str, Any]] | None:
        """(the jobs the command runs, what sweep.json records of the study beside them), from the command's own
        expanded jobs and their RunConfigs; None keeps the command's jobs."""
        return None

    def next_round(self, sweep_dir: Path, content: dict[str, Any], round_: int) -> list[tuple[list[str], str]] | \
            Round | str | None:
        """Round `round_`'s jobs as (overrides, arm) (or a Round, to run them alone), planned from the files of the
        rounds before (`content`:
        sweep.json); [] for a round without jobs, None when the study has no round left, NOT_ENDED when a run of
        round `round_ - 1` has not ended."""
        return None

    def added_jobs(self, sweep_dir: Path, content: dict[str, Any], seeds: list[int]) -> \
            list[tuple[list[str], str]] | str:
        """`python -m harness.resume SWEEP --add-seeds N`: the jobs as (overrides, arm) that the study's reading needs
        on the new `seeds` (those after every seed of the sweep), planned from its files (`content`: sweep.json); or
        why it cannot add seeds (a line)."""
        return "which of its runs a new seed needs is not said by this study"

    # in a run's process
    def run_hooks(self, settings: Any) -> list[Callable]:
        """Callables `hook(cfg, data_in, run_dir)` a run calls once it holds its data, before it trains."""
        return []

    # reading, in harness.assess's terms
    def detects(self, sweep) -> bool:
        """Whether a sweep recorded without a study's name is this study's, from its files."""
        return False

    def assess(self, sweep):
        """The study's reading of a sweep (harness.assess.assessment.Assessment, its own reading in `reading`)."""
        from harness.assess.assessment import assess

        return assess(sweep)

    def next_step(self, verdict) -> tuple[str, str] | None:
        """(sentence, command): what the study offers a batch-size verdict that shows a drop, on its setting
        (verdict.setting; harness.assess.assessment.study_command), as the verdict's next step; None: nothing."""
        return None

    # (file name, write(sweep_dir, values)): the file the study's reading is written to in the sweep folder (its
    # `reading.as_json()`), its writer in the study's files module; None: no file of its own
    reading_file: tuple[str, Callable[[Path, dict[str, Any]], None]] | None = None

    def files(self, a) -> list[tuple[str, Callable[[Path], None]]]:
        """(file name, writer of it into the sweep folder) for what the study writes beside its report: by default
        its reading, as `reading_file` says, where the sweep has one."""
        if self.reading_file is None or a.reading is None:
            return []
        name, write = self.reading_file
        return [(name, lambda sweep_dir: write(sweep_dir, a.reading.as_json()))]

    def file_names(self) -> list[str]:
        """The names of the files `files` writes into the sweep folder (kept with the sweep in MLflow)."""
        return [] if self.reading_file is None else [self.reading_file[0]]

    def results_columns(self, sweep) -> dict[str, dict[str, Any]]:
        """Columns of its own in `python -m harness.results`, after `job`: column -> {job: value}."""
        return {}

    def results_lines(self, sweep) -> list[str]:
        """Lines `python -m harness.results` prints under its table for the sweep."""
        return []

    def findings(self, a, command: str) -> list[str]:
        """Markdown lines that open the sweep's findings block (`command`: the command's overrides)."""
        return []

    def findings_after(self, a) -> list[str]:
        """Markdown lines of the findings block after the batch-size verdicts (a tuned grid's choices)."""
        return []

    # the report
    def sections(self, a) -> list[Section]:
        return []
