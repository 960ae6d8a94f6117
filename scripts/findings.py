"""Write the findings (docs/studies.md), the main job's blocks and the README's studies table from sweep folders.

    for s in batchnorm batch_size shuffle imbalance preprocess capacity causes controls tuned; do
      python -m harness +study=$s hydra.sweep.dir=sweeps/study-$s -m
    done
    python -m scripts.findings sweeps/study-*            # print the section
    python -m scripts.findings sweeps/study-* --update-docs
    python -m scripts.findings sweeps/study-batchnorm --update-docs   # one study's block, the others kept
    python -m harness batch_size=8,32,64,128 hydra.sweep.dir=sweeps/main -m
    python -m scripts.findings --main-job sweeps/main --update-docs      # the main job's blocks

For each sweep: its study, runs, seeds and wall time, then every verdict and finding the report computes. The
batchnorm study's sweep also writes the short block that opens the findings: the seed note's numbers, what
caused them and what a user can do (`seed_case`). The main job's sweep writes its verdict, its probes per batch
size and what the report measured beside the drop (`main_job`, docs/studies.md) and the README's headline of it
(`headline`). With --update-docs the README's table of the studies (`studies_table`, each study with the day its
sweep ran) is rewritten from the findings block too.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd

from harness.assess import why
from harness.assess.assessment import Assessment
from harness.assess.sweep import read
from harness.studies import registry


def _wall_minutes(sweep_dir: Path) -> float:
    """From the first run's start to the last run's end."""
    records = [json.loads(p.read_text()) for p in sweep_dir.glob("*/run.json")]
    starts = [datetime.fromisoformat(r["started_at"]) for r in records if r.get("started_at")]
    ends = [datetime.fromisoformat(r["finished_at"]) for r in records if r.get("finished_at")]
    return (max(ends) - min(starts)).total_seconds() / 60 if starts and ends else float("nan")


def _run_on(sweep_dir: Path) -> str:
    """The day the sweep's first run started (YYYY-MM-DD)."""
    starts = [json.loads(p.read_text()).get("started_at") for p in sweep_dir.glob("*/run.json")]
    return min(s for s in starts if s)[:10] if any(starts) else "–"


def _task_overrides(sweep_dir: Path) -> list[str]:
    """The command's overrides, from Hydra's record of them (multirun.yaml, read as plain YAML)."""
    import yaml

    path = sweep_dir / "multirun.yaml"
    recorded = yaml.safe_load(path.read_text()) if path.exists() else {}
    return ((recorded or {}).get("hydra") or {}).get("overrides", {}).get("task", [])


def _study_name(sweep_dir: Path) -> str:
    """The `+study=` of the command."""
    return next((o.split("=", 1)[1] for o in _task_overrides(sweep_dir) if o.startswith("+study=")), sweep_dir.name)


def summarize(sweep_dir: Path) -> str:
    sweep = read(sweep_dir)
    study = registry.of_sweep(sweep)
    a = registry.assess(sweep)
    runs = a.df.drop_duplicates("run_id")
    seeds = runs["seed"].nunique()
    statuses = ", ".join(f"{n} {s}" for s, n in runs["status"].value_counts().items())
    lines = [f"**`+study={_study_name(sweep_dir)}`**: {len(runs)} runs ({statuses}), {seeds} seed(s), "
             f"{_wall_minutes(sweep_dir):.1f} min wall time on {os.cpu_count()} CPU cores, run on "
             f"{_run_on(sweep_dir)}.", ""]
    if study is not None:  # a study's own lines open the block, as its section opens the report
        lines += study.findings(a, " ".join(o for o in _task_overrides(sweep_dir) if not o.startswith("hydra.")))
    for verdict in a.batch_verdicts:
        prefix = f"[{verdict.subject}] " if a.facets else ""
        lines.append(f"- {prefix}{verdict.headline}")
        lines += [f"  - {detail}" for detail in verdict.details]
    lines += study.findings_after(a) if study is not None else []  # the tuned grids, the scaling curves
    for finding in a.findings:
        lines.append(f"- {finding.subject}: {finding.headline}")
        lines += [f"  - {detail}" for detail in finding.details]
    return "\n".join(lines)


SEED_BATCH, SEED_EPOCH, SEED_MOMENTUM = 64, 2, 0.99  # the seed note: batch 64, "second epoch"; Keras's momentum


def seed_case(sweep_dir: Path) -> str | None:
    """The seed note's case from a +study=batchnorm sweep: its symptom at batch 64, epoch 2 (momentum 0.99), what
    the harness says caused it and what the lower momentum did; None for another sweep."""
    from harness.assess import batchnorm

    a = registry.assess(sweep_dir)
    finding = next((f for f in a.findings if f.subject == "Batch-norm statistics"), None)
    if finding is None or "model.bn_momentum" not in a.df.columns:
        return None
    at = a.df[(a.df["epoch"] == SEED_EPOCH) & (a.df["status"] == "completed")]
    cell = lambda batch, momentum: at[(at["global_batch_size"] == batch) & (at["model.bn_momentum"] == momentum)]  # noqa: E731
    small = int(at["global_batch_size"].min())
    seed, lower = cell(SEED_BATCH, SEED_MOMENTUM), cell(SEED_BATCH, at["model.bn_momentum"].min())
    stale = batchnorm.split(cell(small, SEED_MOMENTUM), seed)
    if seed.empty or stale is None:
        return None
    pm = batchnorm.mean_interval
    lower_momentum = lower["model.bn_momentum"].iloc[0]
    return "\n".join([  # a blank line after the opening paragraph: Markdown starts the list there
        f"**The seed note's numbers, reproduced** (`+study=batchnorm`, batch {SEED_BATCH}, epoch {SEED_EPOCH}, "
        f"momentum {SEED_MOMENTUM}, n = {len(seed)} seeds, mean ± 95% CI): running train_acc "
        f"{pm(seed['train_acc'])}, val_acc {pm(seed['val_acc'])}; at batch {small}, val_acc "
        f"{pm(cell(small, SEED_MOMENTUM)['val_acc'])}.",
        "",
        "- **What caused it**: "
        + ("stale batch-norm statistics, not the large batch's generalization. " if stale.named else
           "not (mainly) stale batch-norm statistics. ") + batchnorm.sentence(stale),
        f"- **What a user can do**: more steps; a lower momentum (`model.bn_momentum={lower_momentum:g}` "
        f"gives val_acc {pm(lower['val_acc'])} at the same point); or recompute the statistics before evaluating "
        f"(val_acc {pm(seed['val_acc_precise_bn'])}, the harness's `val_acc_precise_bn`).",
    ])


STUDY_BLOCK = re.compile(r"^\*\*`\+study=([\w-]+)`\*\*", flags=re.MULTILINE)


def merged(existing: str, blocks: dict[str, str]) -> str:
    """The findings section with each study's block replaced by its new one (new studies first, in the order
    given), every other study's block kept as it was."""
    starts = [m.start() for m in STUDY_BLOCK.finditer(existing)] + [len(existing)]
    kept = [existing[a:b].strip() for a, b in zip(starts, starts[1:])]
    old = {STUDY_BLOCK.match(block).group(1): block for block in kept}
    order = [name for name in blocks if name not in old] + list(old)
    return "\n\n".join(blocks.get(name, old.get(name)) for name in order)


def _mean_sd(values: pd.Series, digits: int = 3) -> str:
    values = values.dropna()
    if values.empty:
        return "–"
    mean = f"{values.mean():.{digits}f}" if digits else why.number(values.mean())
    if len(values) < 2:
        return mean
    return mean + " ± " + (f"{values.std(ddof=1):.{digits}f}" if digits else why.number(values.std(ddof=1)))


def _interpolation_sentence(line: pd.DataFrame) -> str | None:
    """The training loss at the two solutions and one step beyond each, over the pairs (one per seed)."""
    if line is None or line.empty:
        return None
    ends = {a: line[np.isclose(line["alpha"], a)]["train_loss"] for a in (-1.0, 0.0, 1.0, 2.0)}
    if any(v.empty for v in ends.values()):
        return None
    span = lambda v: f"{v.min():.2g}" if np.isclose(v.min(), v.max(), rtol=0.05) else f"{v.min():.2g}-{v.max():.2g}"  # noqa: E731
    small, large = int(line["small_batch"].iloc[0]), int(line["large_batch"].iloc[0])
    steeper = "large" if ends[2.0].mean() - ends[1.0].mean() > ends[-1.0].mean() - ends[0.0].mean() else "small"
    return (f"Along the line between the batch-{small} and batch-{large} solutions ({line['pair'].nunique()} "
            f"pair(s), one per seed) the training loss is {span(ends[0.0])} at batch {small}'s end and "
            f"{span(ends[1.0])} at batch {large}'s; one length beyond them it is {span(ends[-1.0])} (α = −1) on "
            f"the batch-{small} side and {span(ends[2.0])} (α = 2) on the batch-{large} side: the loss rises "
            f"faster beyond the {'batch-' + str(large if steeper == 'large' else small)} solution.")


def main_job(sweep_dir: Path, a: Assessment) -> str:
    """The main job's verdict, its probes per batch size (mean ± sd over seeds) and what the report measured beside
    the drop, from its sweep and that sweep's assessment."""
    runs = a.df.drop_duplicates("run_id")
    lines = [f"`python -m harness batch_size=8,32,64,128 -m`: {len(runs)} runs, {runs['seed'].nunique()} seed(s) "
             f"per batch size, {int(runs['epochs'].iloc[0])} epochs, {_wall_minutes(sweep_dir):.1f} min wall time "
             f"on {os.cpu_count()} CPU cores.", ""]
    for verdict in a.batch_verdicts:
        lines.append(f"- {verdict.headline}")
        lines += [f"  - {detail}" for detail in verdict.details]
    probes = a.why.probes
    if not probes.empty:
        lines += ["", "Mean ± sd over the seeds:", "",
                  "| batch | val_acc | top Hessian eigenvalue | Hessian trace | sharpness ε=1e-3 / 5e-4 "
                  "| ‖w_T − w_0‖ (steps) |", "| ---: | ---: | ---: | ---: | ---: | ---: |"]
        for batch, rows in probes.groupby("global_batch_size"):
            lines.append(f"| {batch} | {_mean_sd(rows['val_acc'])} | {_mean_sd(rows['hessian_top_eigenvalue'], 0)} "
                         f"| {_mean_sd(rows['hessian_trace'], 0)} | {_mean_sd(rows['sharpness'], 0)} / "
                         f"{_mean_sd(rows['sharpness_5e-4'], 0)} | {_mean_sd(rows['weight_distance'], 0)} "
                         f"({int(rows['step'].median()):,}) |")
    lines += ["", "Measured beside the drop (the report's section of that name: these go with the drop, they do not "
              "show its cause):", ""]
    lines += [f"- {line}" for reading in a.why.readings for line in reading.lines]
    interpolation = _interpolation_sentence(a.why.interpolation)
    if interpolation:
        lines.append(f"- {interpolation}")
    lines += [f"- {note}" for note in a.why.notes]
    return "\n".join(lines)


def headline(a: Assessment) -> str:
    """The main job in a few lines, for the README: the verdict with its condition, what train accuracy did, the
    commands that split the drop into causes and search the recipe that keeps b's accuracy, and the first probe
    measured beside it (a correlate, not a cause)."""
    verdict = a.batch_verdicts[0]
    train = next((d for d in verdict.details if d.startswith("Train accuracy after the final epoch")), None)
    steps = [line.replace(command, f"`{command}`") for line in verdict.details for _, command in verdict.next_steps
             if line.endswith(command)]  # the commands the verdict names for this setting: diagnose, recover
    beside = [f"Measured beside the drop (it goes with the drop; it does not show a cause): {line}"
              for reading in a.why.readings for line in reading.lines][:1]
    first = f"**{verdict.headline.split('. ')[0]}.** " + verdict.headline.split('. ', 1)[1]
    return first + "\n\n" + "\n".join(f"- {line}" for line in [train, *steps, *beside] if line)


OUTCOME = re.compile(r"^- (?P<subject>[A-Z][^:\[]*): (?P<headline>.*?: (?:not reproduced|reproduced|inconclusive))")
VERDICT = re.compile(r"^- (?:\[(?P<facet>[^\]]+)\] )?(?P<headline>Larger batches[^:]*: (?:not reproduced|reproduced|"
                     r"inconclusive))\.(?P<rest>.*)")


def _tests(preset: Path) -> str:
    """What a study preset tests: the first sentence of its opening comment."""
    comment = []
    for line in preset.read_text().splitlines():
        if not line.startswith("#") or line.startswith("#   "):
            break
        if "@package" not in line:
            comment.append(line.lstrip("# ").strip())
    return re.split(r"(?<!al)(?<=[.?])\s+(?=[A-Z(])", " ".join(comment))[0]


def _found(block: str) -> str:
    """What a study found, from its findings block: its headline, its suspects' outcomes, or its first verdict."""
    lines = block.splitlines()
    bold = next((line[4:].split("**")[0] for line in lines if line.startswith("- **")), None)
    if bold:
        return bold
    outcomes = [m for m in map(OUTCOME.match, lines) if m]
    if len(outcomes) == 1:  # its subject when the headline does not stand alone ("steps and learning rate: ...")
        headline = outcomes[0].group("headline")
        return headline if headline[0].isupper() else f"{outcomes[0].group('subject')}: {headline}"
    if outcomes:
        return "; ".join(f"{m.group('subject')}: {m.group('headline').rsplit(': ', 1)[1]}" for m in outcomes)
    verdict = next((m for m in map(VERDICT.match, lines) if m), None)
    if verdict is None:
        return "–"
    drop = re.search(r"\(drop ([+-][\d.]+)\)", verdict.group("rest"))
    facet = f" [{verdict.group('facet')}]" if verdict.group("facet") else ""
    return verdict.group("headline") + (f" (val_acc drop {drop.group(1)})" if drop else "") + facet


def studies_table(findings: str) -> str:
    """One line per study preset: its command, what it tests (its preset's opening comment) and what it found on
    MNIST-1D (from its block of the findings; a preset without one says so)."""
    from harness.config.compose import CONF_DIR

    starts = list(STUDY_BLOCK.finditer(findings))
    blocks = {m.group(1): findings[m.start():after.start() if after else len(findings)]
              for m, after in zip(starts, [*starts[1:], None])}
    rows = ["| command | what it tests | what it found on MNIST-1D | ran on |", "| --- | --- | --- | --- |"]
    for preset in sorted((CONF_DIR / "study").glob("*.yaml"), key=lambda p: (p.stem not in blocks, p.stem)):
        block = blocks.get(preset.stem)
        result = _found(block) if block else "not in the findings yet (`python -m scripts.findings` on its sweep)"
        day = re.search(r"run on (\d{4}-\d{2}-\d{2})\.", block.split("\n", 1)[0]) if block else None
        rows.append(f"| `+study={preset.stem}` | {_tests(preset)} | {result} | {day.group(1) if day else '–'} |")
    return "\n".join(rows)


def command_line(argv: list[str]) -> str:
    """This command as a user types it: every sweeps/study-* folder named is `sweeps/study-*`, as the shell
    expanded it."""
    folders = {str(path) for path in Path("sweeps").glob("study-*") if path.is_dir()}
    named = [arg for arg in argv if arg in folders]
    if folders and set(named) == folders:
        at = argv.index(named[0])
        argv = [*argv[:at], "sweeps/study-*", *[a for a in argv[at:] if a not in folders]]
    return " ".join(["python -m scripts.findings", *argv])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweeps", nargs="*", type=Path)
    parser.add_argument("--main-job", type=Path, help="the main job's sweep (its verdict, probes and Why)")
    parser.add_argument("--update-docs", dest="update_docs", action="store_true",
                        help="rewrite these sweeps' generated blocks in README.md and docs/ (the others are kept)")
    args = parser.parse_args(argv)
    blocks = {_study_name(sweep): summarize(sweep) for sweep in args.sweeps}
    case = next((c for c in map(seed_case, args.sweeps) if c), None)
    print(*([case, ""] if case else []), "\n\n".join(blocks.values()), sep="\n")
    main_assessed = registry.assess(args.main_job) if args.main_job else None
    main_text = main_job(args.main_job, main_assessed) if args.main_job else None
    if main_text:
        print("", main_text, sep="\n")
    if args.update_docs:
        from functools import partial

        from benchmarks.doc_blocks import read_section, replace_section

        replace_section = partial(replace_section, command=command_line(sys.argv[1:] if argv is None else argv))

        if blocks:  # the studies' table follows their findings, and only they change it
            replace_section("findings", merged(read_section("findings"), blocks))
            replace_section("studies-table", studies_table(read_section("findings")))
        if case:
            replace_section("seed-case", case)
        if main_text:
            replace_section("main-job", main_text)
            replace_section("main-job-headline", headline(main_assessed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
