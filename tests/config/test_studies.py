"""What each study preset runs, read from its planned jobs and their composed, validated configs (no training),
and one shrunken study end to end for the path every study shares (slow)."""
import itertools
import json
import re
from pathlib import Path

import pandas as pd
import pytest

from harness.assess import analysis
from harness.config import batching
from harness.fields import ConfigError
from tests.helpers.sweeps import planned

# study -> (the keys it sweeps and their values, the values every job holds); each plan is their product
SWEPT = {
    "batch_size": ({"batch_size": [8, 32, 64, 128], "seed": [0, 1, 2]}, {"epochs": 15}),
    "shuffle": ({"shuffle": [True, False], "batch_size": [8, 32, 128], "seed": [0, 1, 2]}, {"epochs": 3}),
    "imbalance": ({"imbalance": [0.0, 0.5, 0.9, 0.95], "seed": [0, 1, 2]}, {"batch_size": 32}),
    "preprocess": ({"preprocess_mismatch": ["none", "unscaled", "shifted"], "seed": [0, 1, 2]}, {"batch_size": 32}),
    "capacity": ({"model.width": [0.25, 1.0, 4.0], "train_fraction": [0.1, 1.0], "seed": [0, 1]}, {}),
    "tuned": ({"lr_factor": [0.464, 1.0, 2.15, 4.64, 10.0, 21.5, 46.4], "batch_size": [128, 32, 8],
               "seed": [0, 1, 2]},
              {"epochs": 5, "budget": "steps", "base_batch_size": 8, "lr_scaling": "none", "warmup_epochs": 1.0,
               "tune_fraction": 0.1, "probes": False}),
    "batchnorm": ({"batch_size": [8, 64, 256], "model.bn_momentum": [0.99, 0.9], "seed": [0, 1, 2]},
                  {"model.batch_norm": True, "epochs": 10, "probes": False}),
    "smoke": ({"batch_size": [16, 64], "seed": [0]}, {"epochs": 2, "dataset.num_samples": 600}),
    "scaling": ({"batch_size": [2 ** k for k in range(3, 12)], "lr_factor": [0.125, 0.354, 1.0, 2.83, 8.0],
                 "seed": [0, 1, 2]},
                {"budget": "epochs", "epochs": 50, "tune_fraction": 0.1, "target_tune_acc": 0.8, "lr": 0.002,
                 "lr_scaling": "sqrt", "base_batch_size": 8, "warmup_epochs": 0.0, "probes": False}),
}


@pytest.mark.parametrize("study", sorted(SWEPT))
def test_each_study_plans_the_product_of_what_it_sweeps(study):
    swept, fixed = SWEPT[study]
    configs = [cfg.flat() for cfg in planned((f"+study={study}",))[1]]
    values = sorted(tuple(cfg[key] for key in swept) for cfg in configs)
    assert values == sorted(itertools.product(*swept.values()))
    assert all(cfg[key] == value for cfg in configs for key, value in fixed.items()), fixed


def _arms(study: str) -> dict[str, list]:
    arms: dict[str, list] = {}
    for job, cfg in zip(*planned((f"+study={study}",))):
        arms.setdefault(analysis.arm(" ".join(job)), []).append(cfg)
    return arms


def test_the_causes_study_changes_one_suspect_per_arm_from_the_batch_32_baseline():
    arms = _arms("causes")
    changed = {name: (cfgs[0].train.batch_size, cfgs[0].train.shuffle, cfgs[0].train.imbalance,
                      cfgs[0].train.preprocess_mismatch, cfgs[0].model.width, cfgs[0].train.train_fraction)
               for name, cfgs in arms.items()}
    assert changed == {
        "baseline": (32, True, 0.0, "none", 1.0, 1.0),
        "unshuffled": (8, False, 0.0, "none", 1.0, 1.0),
        "imbalance": (32, True, 0.95, "none", 1.0, 1.0),
        "preprocess": (32, True, 0.0, "unscaled", 1.0, 1.0),
        "capacity": (32, True, 0.0, "none", 4.0, 0.1),
        "large_batch": (512, True, 0.0, "none", 1.0, 1.0),
    }
    assert all(sorted(c.train.seed for c in cfgs) == [0, 1, 2] and all(c.train.epochs == 10 for c in cfgs)
               for cfgs in arms.values())


def test_the_controls_study_matches_epochs_then_steps_then_steps_with_a_scaled_warmed_up_lr():
    arms = _arms("controls")
    assert {name: {(c.train.budget, c.train.lr_scaling, c.train.warmup_epochs, c.train.base_batch_size)
                   for c in cfgs} for name, cfgs in arms.items()} == {
        "epochs": {("epochs", "none", 0.0, 8)}, "steps": {("steps", "none", 0.0, 8)},
        "steps_lr": {("steps", "linear", 2.0, 8)}}
    assert all(sorted((c.train.batch_size, c.train.seed) for c in cfgs) == [(b, s) for b in (8, 32, 128)
                                                                           for s in (0, 1)]
               for cfgs in arms.values())
    steps = arms["steps"][0].train  # every batch size gets batch 8's updates in `epochs` epochs
    plan = batching.plan_batches(128, False, 1, 4000)
    assert batching.plan_schedule(plan, steps).total_steps == steps.epochs * 4000 // 8


def test_the_hoffer_study_is_batch_8_against_every_mix_of_steps_sqrt_lr_and_ghost_batch_norm_at_batch_128():
    arms = {name: cfgs[0] for name, cfgs in _arms("hoffer").items()}
    assert {name: (cfg.train.batch_size, cfg.train.budget, cfg.train.lr_scaling, cfg.model.ghost_batch_size)
            for name, cfg in arms.items()} == {
        "small": (8, "epochs", "none", None),
        "large": (128, "epochs", "none", None),
        "large_steps": (128, "steps", "none", None),
        "large_sqrt": (128, "epochs", "sqrt", None),
        "large_ghost": (128, "epochs", "none", 32),
        "large_steps_sqrt": (128, "steps", "sqrt", None),
        "large_steps_ghost": (128, "steps", "none", 32),
        "large_sqrt_ghost": (128, "epochs", "sqrt", 32),
        "large_steps_sqrt_ghost": (128, "steps", "sqrt", 32),
    }
    assert all(cfg.model.batch_norm and cfg.train.base_batch_size == 8 and cfg.train.epochs == 5
               and not cfg.train.probes for cfg in arms.values())
    recipe = arms["large_steps_sqrt_ghost"].train  # as many updates as batch 8, at sqrt(128 / 8) = 4 x the lr
    schedule = batching.plan_schedule(batching.plan_batches(128, False, 1, 4000), recipe)
    assert schedule.total_steps == 5 * 4000 // 8 and schedule.peak_lr == pytest.approx(4 * recipe.lr)


@pytest.mark.slow
def test_a_study_runs_end_to_end_shrunken(tmp_path):
    """+study=causes, the study with the most paths (arms, class order, imbalance, a validation mismatch, a wider
    model on a fraction of the data, a batch of 512), trains and reports for real: one epoch, 1,000 samples."""
    from tests.conftest import run_harness
    from tests.helpers import page

    sweep = tmp_path / "sweep"
    proc = run_harness("+study=causes", "dataset.num_samples=1000", "epochs=1", "seed=0", "probes=false",
                       "hydra.launcher.n_jobs=1", f"hydra.sweep.dir={sweep}", "-m", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = [json.loads(p.read_text()) for p in sorted(sweep.glob("*/run.json"))]
    assert len(records) == 6 and {r["status"] for r in records} <= {"completed", "diverged"}
    sizes = {r["config"]["batch_size"]: pd.read_parquet(sweep / p.parent.name / "metrics.parquet")["train_size"].iloc[0]
             for r, p in zip(records, sorted(sweep.glob("*/run.json")))}
    assert sizes[512] == 800 and sizes[8] == 800  # 1,000 samples, 80% for training
    findings = page.facets(page.parse((tmp_path / proc.stdout.strip().splitlines()[-1]).read_text()))
    for section in ("Unshuffled data", "Class imbalance", "Preprocessing mismatch", "Model capacity and data size"):
        assert section in findings, section


COMMANDS = [[f"+study={p.stem}"] for p in sorted((Path(__file__).parents[2] / "harness/conf/study").glob("*.yaml"))] + [
    ["dataset=digits", "dataset.train_split=0.5", "batch_size=8,64", "model=mlp", "model.width=2"],
    ["dataset.num_samples=600,1000", "lr=1e-3", "devices=[0,3]", "gpus=2", "target_train_loss=null"],
    ["+cause=imbalance", "imbalance=0.5", "seed=0,1"],
    ["dataset=images", "dataset.path=/data", "dataset.image_size=[32,32]", "dataset.color_mode=grayscale",
     "batch_size=8,16"],  # keys only the group has, one of them a list (a user's image folder)
    ["+study=diagnose", "batch_size=8,64", "diagnose.tune_fraction=0.2,0.3"],  # a value others interpolate
]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_composing_a_sweeps_jobs_once_per_structure_gives_hydras_own_configs(command):
    """compose.job_composer (Hydra once per set of group overrides, plain key=value set in a copy) against Hydra
    composing each job whole, on the first and the last job of every study and of commands that mix group, list
    and plain overrides, and a value others interpolate."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from harness.config.compose import CONF_DIR, expand_jobs, job_composer, to_run_config

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3", job_name="harness"):
        jobs, _, _ = expand_jobs(command, True, "config")
        composer = job_composer("config", [])
        for job in {0: jobs[0], 1: jobs[-1]}.values():
            fast, whole = composer(job), compose("config", overrides=job)
            assert fast == OmegaConf.to_container(whole, resolve=True), job
            try:
                expected = to_run_config(whole)
            except ConfigError as err:  # /data is no folder here: the same error both ways
                with pytest.raises(ConfigError, match=re.escape(str(err))):
                    to_run_config(fast)
            else:
                assert to_run_config(fast) == expected, job


def test_the_help_lists_every_study_preset_found_the_user_s_too(tmp_path):
    """`python -m harness --help` names each file in conf/study/ and in the user's --config-dir (generated from the
    files found: diagnose was once missing from a list typed by hand), every line within the help's width."""
    import subprocess
    import sys

    from harness.config.compose import CONF_DIR, HELP_WIDTH

    (tmp_path / "study").mkdir()
    (tmp_path / "study" / "mystudy.yaml").write_text("# @package _global_\nepochs: 1\n")
    proc = subprocess.run([sys.executable, "-m", "harness", "--config-dir", str(tmp_path), "--help"],
                          capture_output=True, text=True, timeout=120)  # Hydra's help sets up its logging, exits
    assert proc.returncode == 0, proc.stderr[-2000:]
    shown = proc.stdout
    listed = re.search(r"a named study \(conf/study/: ([^)]*)\)", shown).group(1)
    names = {name.strip() for name in re.split(r",\s*", " ".join(listed.split()))}
    assert names == {path.stem for path in (Path(CONF_DIR) / "study").glob("*.yaml")} | {"mystudy"}
    assert max(len(line) for line in shown.splitlines()[:20]) <= HELP_WIDTH
