"""Write the README's "What we found" section from the studies' sweep folders (never typed by hand).

    for s in batchnorm batch_size shuffle imbalance preprocess capacity causes controls tuned; do
      python -m harness +study=$s hydra.sweep.dir=sweeps/study-$s -m
    done
    python -m scripts.findings sweeps/study-*            # print the section
    python -m scripts.findings sweeps/study-* --update-readme
    python -m scripts.findings sweeps/study-batchnorm --update-readme   # one study's block, the others kept

For each sweep: its study, runs, seeds and wall time, then every verdict and finding the report computes. The
batchnorm study's sweep also writes the short block that opens the findings: the seed note's numbers, what
caused them and what a user can do (`seed_case`).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
from datetime import datetime
from pathlib import Path

from harness.assess.assessment import assess


def _wall_minutes(sweep_dir: Path) -> float:
    """From the first run's start to the last run's end."""
    records = [json.loads(p.read_text()) for p in sweep_dir.glob("*/run.json")]
    starts = [datetime.fromisoformat(r["started_at"]) for r in records if r.get("started_at")]
    ends = [datetime.fromisoformat(r["finished_at"]) for r in records if r.get("finished_at")]
    return (max(ends) - min(starts)).total_seconds() / 60 if starts and ends else float("nan")


def _study_name(sweep_dir: Path) -> str:
    """The `+study=` of the command, from Hydra's record of its overrides (multirun.yaml, read as plain YAML)."""
    import yaml

    path = sweep_dir / "multirun.yaml"
    recorded = yaml.safe_load(path.read_text()) if path.exists() else {}
    overrides = ((recorded or {}).get("hydra") or {}).get("overrides", {}).get("task", [])
    return next((o.split("=", 1)[1] for o in overrides if o.startswith("+study=")), sweep_dir.name)


def summarize(sweep_dir: Path) -> str:
    a = assess(sweep_dir)
    runs = a.df.drop_duplicates("run_id")
    seeds = runs["seed"].nunique()
    statuses = ", ".join(f"{n} {s}" for s, n in runs["status"].value_counts().items())
    lines = [f"**`+study={_study_name(sweep_dir)}`**: {len(runs)} runs ({statuses}), {seeds} seed(s), "
             f"{_wall_minutes(sweep_dir):.1f} min wall time on {os.cpu_count()} CPU cores.", ""]
    for verdict in a.batch_verdicts:
        prefix = f"[{verdict.subject}] " if a.facets else ""
        lines.append(f"- {prefix}{verdict.headline}")
        lines += [f"  - {detail}" for detail in verdict.details]
    lines += [f"- {line}" for t in a.tunings for line in t.lines]
    if a.scaling is not None:
        lines += _scaling(a.scaling)
    for finding in a.findings:
        lines.append(f"- {finding.subject}: {finding.headline}")
        lines += [f"  - {detail}" for detail in finding.details]
    return "\n".join(lines)


def _scaling(s) -> list[str]:
    """+study=scaling: its headline and reading, and its points as a table."""
    from harness.assess.scaling import fmt

    lines = [f"- **{s.headline}**", *[f"- {line}" for line in s.lines], "",
             "| batch | chosen lr | steps to target | samples to target | regime | val_acc at target |",
             "| ---: | ---: | ---: | ---: | --- | ---: |"]
    for p in s.points:
        val = "–" if p.val_acc is None else f"{p.val_acc:.3f}"
        lines.append(f"| {p.batch} | {'none reached' if p.lr is None else fmt(p.lr)} | {fmt(p.steps)} | "
                     f"{fmt(p.samples)} | {p.regime or '–'} | {val} |")
    return lines


SEED_BATCH, SEED_EPOCH, SEED_MOMENTUM = 64, 2, 0.99  # the seed note: batch 64, "second epoch"; Keras's momentum


def seed_case(sweep_dir: Path) -> str | None:
    """The seed note's case from a +study=batchnorm sweep: its symptom at batch 64, epoch 2 (momentum 0.99), what
    the harness says caused it and what the lower momentum did; None for another sweep."""
    from harness.assess import batchnorm

    a = assess(sweep_dir)
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
    return "\n".join([
        f"**The seed note's numbers, reproduced** (`+study=batchnorm`, batch {SEED_BATCH}, epoch {SEED_EPOCH}, "
        f"momentum {SEED_MOMENTUM}, n = {len(seed)} seeds, mean ± 95% interval): running train_acc "
        f"{pm(seed['train_acc'])}, val_acc {pm(seed['val_acc'])}; at batch {small}, val_acc "
        f"{pm(cell(small, SEED_MOMENTUM)['val_acc'])}.",
        "- **What caused it**: "
        + ("stale batch-norm statistics, not the large batch's generalization. " if stale.named else
           "not (mainly) stale batch-norm statistics. ") + batchnorm.sentence(stale),
        f"- **What a user can do**: more steps; a lower momentum (`model.bn_momentum={lower['model.bn_momentum'].iloc[0]:g}` "
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweeps", nargs="+", type=Path)
    parser.add_argument("--update-readme", action="store_true",
                        help="rewrite these studies' blocks of the README's findings (the others are kept)")
    args = parser.parse_args(argv)
    blocks = {_study_name(sweep): summarize(sweep) for sweep in args.sweeps}
    case = next((c for c in map(seed_case, args.sweeps) if c), None)
    print(*([case, ""] if case else []), "\n\n".join(blocks.values()), sep="\n")
    if args.update_readme:
        from benchmarks.readme_section import read_section, replace_section

        replace_section("findings", merged(read_section("findings"), blocks))
        if case:
            replace_section("seed-case", case)
    return 0


if __name__ == "__main__":
    sys.exit(main())
