"""The ramps that convert a decaying schedule, on MNIST-1D: the step-decay run against Smith's rule's growing batch
(harness.config.smith), and the cosine run against Seesaw's (harness.config.seesaw), seed by seed: final val_acc,
with its 95% t-interval over seeds and the paired difference's, and the updates each took (median, and its range
over the seeds).

    python -m benchmarks.ramp_rules                    # four sweeps of 5 seeds, run as a user runs them
    python -m benchmarks.ramp_rules --update-docs      # also rewrite docs/configuration.md's block
    python -m benchmarks.ramp_rules --smoke            # tiny sweeps, to check the script works

The decaying commands are `python -m harness lr_schedule=step epochs=16 seed=0,1,2,3,4 probes=false -m` (batch 32,
Adam at 0.001, /10 at epochs 8 and 12) and the same with `lr_schedule=cosine`; each conversion is the same command
with the rule's recipe in place, printed in the table. Two runs at once; nothing here is a time. Nothing is
asserted: the table says what it finds.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

COMMAND = ["epochs=16", "seed=0,1,2,3,4", "probes=false"]
SMOKE = ["epochs=4", "seed=0,1", "probes=false", "dataset.num_samples=600"]
# each rule: (the decay it converts, the decaying run's name, the ramp's name)
RULES = {"smith": ("step", "step decay", "Smith's ramp"), "seesaw": ("cosine", "cosine decay", "Seesaw's ramp")}


def converted(command: list[str], name: str) -> list[str]:
    """The command with rule `name`'s recipe in place of its decay (from its first seed's config)."""
    from hydra import compose, initialize_config_dir

    from harness.config import seesaw, smith
    from harness.config.compose import CONF_DIR, to_run_config
    from harness.config.overrides import with_recipe
    from harness.data.registry import expected_train_size

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = to_run_config(compose("config", overrides=[o for o in command if not o.startswith("seed=")]))
    size = expected_train_size(cfg.data, cfg.train.imbalance, cfg.train.train_fraction, cfg.train.tune_fraction)
    found, why = {"smith": smith, "seesaw": seesaw}[name].recipe(cfg, size)
    if found is None:
        raise SystemExit(f"{name} does not apply: it needs {why}")
    return with_recipe(command, found)


def run_sweep(folder: Path, name: str, command: list[str]) -> Path:
    sweep = folder / name
    proc = subprocess.run([sys.executable, "-m", "harness", *command, f"hydra.sweep.dir={sweep}", "-m"], cwd=folder,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"exit {proc.returncode}: {proc.stderr[-2000:]}")
    return sweep


def finals(sweep: Path) -> pd.DataFrame:
    """Seed -> final val_acc and steps of each completed run."""
    from harness.assess import analysis
    from harness.assess.sweep import read

    final = analysis.final_results(read(sweep).epochs)
    return pd.DataFrame({"val_acc": final["val_acc"].astype(float).values, "step": final["step"].astype(int).values},
                        index=final["seed"].astype(int).values).sort_index()


def table(decaying: pd.DataFrame, ramp: pd.DataFrame, command: list[str], recipe_command: list[str],
          names: tuple[str, str] = ("step decay", "Smith's ramp")) -> str:
    """The two runs' val_acc (mean and 95% t-interval over seeds), steps (median and range), and the paired
    difference; `names`: the decaying run's and the ramp's."""
    from harness.assess.intervals import t_interval

    seeds = sorted(set(decaying.index) & set(ramp.index))
    a, b = decaying.loc[seeds, "val_acc"].to_numpy(), ramp.loc[seeds, "val_acc"].to_numpy()
    rows = []
    for name, values, steps in ((names[0], a, decaying.loc[seeds, "step"]), (names[1], b, ramp.loc[seeds, "step"])):
        low, high = t_interval(values)
        rows.append(f"| {name} | {values.mean():.3f} [{low:.3f}, {high:.3f}] | {int(np.median(steps))} "
                    f"[{int(steps.min())}, {int(steps.max())}] |")
    low, high = t_interval(b - a)
    diff = float((b - a).mean())
    if low > 0:
        said = f"{names[1]} reached a higher val_acc: the paired interval lies above 0."
    elif high < 0:
        said = f"{names[1]} reached a lower val_acc: the paired interval lies below 0."
    else:
        said = "Neither is shown better: the paired interval holds 0."
    return "\n".join([
        f"`python -m harness {' '.join(command)} -m` against `python -m harness {' '.join(recipe_command)} -m`, "
        f"MNIST-1D, {len(seeds)} seeds paired by seed; val_acc at the last epoch, mean [95% t-interval over seeds]; "
        "steps: the median run's updates [the seeds' least, most].",
        "",
        "| run | val_acc | steps |",
        "| --- | ---: | ---: |",
        *rows,
        f"| ramp − decay, paired | {diff:+.3f} [{low:+.3f}, {high:+.3f}] | |",
        "",
        said,
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="2 seeds, 4 epochs, 600 samples")
    parser.add_argument("--update-docs", dest="update_docs", action="store_true",
                        help="rewrite its generated block in docs/configuration.md")
    args = parser.parse_args(argv)
    base = SMOKE if args.smoke else COMMAND
    blocks = []
    with tempfile.TemporaryDirectory() as tmp:
        for rule, (shape, *names) in RULES.items():
            command = [f"lr_schedule={shape}", *base]
            recipe_command = converted(command, rule)
            decaying = finals(run_sweep(Path(tmp), f"{shape}", command))
            ramp = finals(run_sweep(Path(tmp), rule, recipe_command))
            blocks.append(table(decaying, ramp, command, recipe_command, tuple(names)))
    text = "\n\n".join(blocks)
    print(text)
    if args.update_docs:
        from benchmarks.doc_blocks import replace_section

        replace_section("ramp-rules-mnist1d", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
