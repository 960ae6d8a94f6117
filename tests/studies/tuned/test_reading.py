"""+study=tuned: the tuning slice held out of the training split, the learning rate chosen on it per batch size
(never on validation), the edge-of-grid warning, and the tuned and untuned verdicts in the report."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from harness.assess import analysis
from harness.assess.analysis import BATCH
from harness.data import transforms
from harness.studies.tuned import reading as tuning
from tests.conftest import TINY


def _rows(tune: dict, val: dict | None = None, seeds=(0, 1, 2)) -> pd.DataFrame:
    """Last-epoch rows of completed runs: tune[batch][lr] is the tuning slice's accuracy, val[batch][lr] the
    validation accuracy (by default the same)."""
    rows = []
    for batch, by_lr in tune.items():
        for lr, acc in by_lr.items():
            for seed in seeds:
                v = (val or tune)[batch][lr]
                rows.append({"run_id": f"s/{batch}-{lr}-{seed}", BATCH: batch, "peak_lr": lr, "seed": seed,
                             "status": "completed", "epoch": 5, "tune_acc": acc + 0.001 * seed,
                             "tune_loss": 1 - acc, "val_acc": v + 0.001 * seed, "val_loss": 1 - v,
                             "train_eval_acc": v + 0.02, "lr_factor": lr / 1e-3})
    return pd.DataFrame(rows)


GRID = [1e-4, 1e-3, 1e-2, 1e-1]


def test_the_tuning_slice_is_stratified_seeded_and_never_overlaps_training_or_validation(compose):
    """On the real MNIST-1D arrays a run trains on: every sample held out is in neither the training rows the
    run fits nor the validation rows, and training + slice is exactly the training split (nothing lost)."""
    from harness.data import registry as data
    from harness.run.inputs import prepare_data

    cfg = compose(*TINY, "tune_fraction=0.1")
    full = data.load(cfg.data)
    prepared = prepare_data(cfg)
    rows = lambda x: {row.tobytes() for row in np.asarray(x, dtype=np.float32)}  # noqa: E731
    tune, train, val = rows(prepared.x_tune), rows(prepared.x_train), rows(full.x_val)
    assert len(tune) == len(prepared.x_tune) > 0  # distinct samples
    assert not tune & train and not tune & val
    assert rows(full.x_train) == tune | train and len(full.y_train) == len(prepared.y_train) + len(prepared.y_tune)
    counts = np.bincount(full.y_train, minlength=full.num_classes)
    assert np.array_equal(np.bincount(prepared.y_tune, minlength=full.num_classes), np.round(counts * 0.1))
    # the same slice in every run of the study, whatever its seed; and the run's size arithmetic agrees
    other = prepare_data(compose(*TINY, "tune_fraction=0.1", "seed=3", "batch_size=8"))
    assert rows(other.x_tune) == tune
    assert len(prepared.y_train) == data.expected_train_size(cfg.data, tune_fraction=0.1)


def test_hold_out_partitions_by_sample_identity():
    x = np.arange(1000).reshape(-1, 1)
    y = np.repeat(np.arange(4), [400, 300, 200, 100])
    x_train, y_train, x_tune, y_tune = transforms.hold_out(x, y, 0.25)
    assert not set(x_tune.ravel()) & set(x_train.ravel())
    assert sorted([*x_tune.ravel(), *x_train.ravel()]) == list(range(1000))
    assert np.bincount(y_tune).tolist() == [100, 75, 50, 25] and (y[x_tune.ravel()] == y_tune).all()


def test_the_choice_never_reads_validation_rows():
    """Validation peaks at another learning rate than the tuning slice: the choice follows the slice, and it is
    the same with every validation column removed or scrambled."""
    tune = {8: dict(zip(GRID, [0.70, 0.90, 0.80, 0.30])), 128: dict(zip(GRID, [0.50, 0.70, 0.88, 0.40]))}
    val = {8: dict(zip(GRID, [0.95, 0.60, 0.60, 0.60])), 128: dict(zip(GRID, [0.60, 0.60, 0.60, 0.95]))}
    df = _rows(tune, val)
    assert list(tuning.last_rows(df).columns) == analysis.SELECTION_COLUMNS
    assert not any(c.startswith("val") for c in analysis.SELECTION_COLUMNS)
    chosen = lambda frame: {c.batch: c.lr for c in tuning.choose(tuning.score_grid(tuning.last_rows(frame)))}  # noqa
    assert chosen(df) == {8: 1e-3, 128: 1e-2}
    without = df.drop(columns=[c for c in df.columns if c.startswith("val")])
    scrambled = df.assign(val_acc=np.random.default_rng(0).permutation(df["val_acc"].to_numpy()), val_loss=np.nan)
    assert chosen(without) == chosen(scrambled) == chosen(df)


def test_a_diverged_learning_rate_scores_zero_and_ties_go_to_the_lower_tuning_loss():
    df = _rows({8: dict(zip(GRID, [0.8, 0.8, 0.9, 0.1]))})
    df.loc[df["peak_lr"] == 1e-2, "status"] = "diverged"  # the best-looking one diverged in every seed
    df.loc[df["peak_lr"] == 1e-4, "tune_loss"] = 0.1      # ties with 1e-3 on accuracy, lower loss
    df.loc[df["peak_lr"].isin([1e-4, 1e-3]), "tune_acc"] = 0.8
    scores = tuning.score_grid(tuning.last_rows(df))
    assert scores.loc[scores["peak_lr"] == 1e-2, ["tune_acc", "diverged"]].values.tolist() == [[0.0, 3]]
    [choice] = tuning.choose(scores)
    assert choice.lr == 1e-4 and choice.edge == "smallest"


@pytest.mark.parametrize("tune_8, edge", [([0.7, 0.9, 0.8, 0.3], None), ([0.7, 0.8, 0.85, 0.9], "largest")])
def test_edge_of_grid_is_flagged(tune_8, edge):
    [choice] = tuning.choose(tuning.score_grid(tuning.last_rows(_rows({8: dict(zip(GRID, tune_8))}))))
    assert choice.edge == edge and choice.grid == GRID


def test_the_scaling_exponent_tells_linear_from_square_root():
    def choices(k):
        return [tuning.Choice(b, 1e-3 * (b / 8) ** k, 0.9, 3, GRID, None) for b in (8, 32, 128)]

    assert tuning.scaling_exponent(choices(1.0)) == pytest.approx(1.0)
    assert tuning.scaling_exponent(choices(0.5)) == pytest.approx(0.5)
    assert tuning.scaling_exponent(choices(0.5)[:1]) is None
    assert tuning.scaling_exponent(choices(0.0)) == pytest.approx(0.0, abs=1e-9)


def test_the_study_as_planned_reports_choices_rules_and_both_verdicts(tmp_path):
    """`+study=tuned` planned for real (2 of its 3 seeds: 42 jobs), with made-up accuracies best at lr x
    sqrt(batch / 8): the report names each batch size's winner, the √ rule, the tuned verdict beside the untuned
    one, and both figures."""
    from harness.report import html as report
    from harness.studies.registry import assess
    from tests.helpers.sweeps import study_sweep

    sweep = study_sweep(tmp_path / "tuned", "+study=tuned", "seed=0,1")
    a = assess(sweep)
    [tuned_grid] = a.reading
    # the tuning slice's optima (validation's would give batch 128 10x, not 4.64x)
    assert {c.batch: round(c.lr / 1e-3, 3) for c in tuned_grid.choices} == {8: 1.0, 32: 2.15, 128: 4.64}
    assert all(c.edge is None and c.seeds == 2 for c in tuned_grid.choices)
    assert [v.subject.split(":")[0] for v in a.batch_verdicts] == ["tuned", "untuned"]
    tuned, untuned = a.batch_verdicts
    assert tuned.effect < untuned.effect and tuned.n_seeds == 2
    assert tuned_grid.exponent == pytest.approx(0.55, abs=0.05) and tuned_grid.tune_size == 399
    from harness.render import figures
    from harness.studies.tuned import figures as tuning_plots
    from tests.helpers import layout

    for title, fig, _ in [*figures.figures(a), *tuning_plots.figures(a)]:
        assert layout.problems(fig) == [], title  # every text inside its figure, none overlapping
    text = report.build_report(sweep)
    for words in ("Learning rate tuned per batch size", "never the validation set", "nearest √ rule (k = 0.5)",
                  "Selection: tune_acc over learning rate x batch size", "Chosen learning rate vs batch size",
                  "untuned: every batch size at lr 0.001"):
        assert words in text, words


def test_a_winner_at_the_edge_makes_the_tuned_verdict_inconclusive(tmp_path):
    """Narrow the grid so batch 128's best learning rate lies beyond it: the verdict refuses to claim a result."""
    from harness.studies.registry import assess
    from tests.helpers.sweeps import study_sweep

    sweep = study_sweep(tmp_path / "narrow", "+study=tuned", "lr_factor=0.3,1,3", "seed=0,1")
    a = assess(sweep)
    assert {c.batch: c.edge for c in a.reading[0].choices} == {8: None, 32: "largest", 128: "largest"}
    tuned = a.batch_verdicts[0]
    assert tuned.outcome == "inconclusive" and "The grid was too narrow (batch 32 chose" in tuned.headline
    assert any("the grid was too narrow there" in line for line in a.reading[0].lines)


def test_a_partly_run_grid_gives_no_tuned_claim_and_the_untuned_arm_keeps_its_diverged_runs(tmp_path):
    """Batch 128 finished one learning rate, another run of the grid failed and one has not started: the tuned
    verdict says the choice may change; the untuned arm is lr_factor=1 even where it diverged."""
    import json

    from harness.studies.registry import assess
    from tests.helpers.sweeps import make_run

    sweep, job, jobs = tmp_path / "partial", 0, []
    for batch, factors in {8: (0.3, 1.0, 3.0), 128: (1.0,)}.items():
        for factor in factors:
            for seed in (0, 1):
                best = 0.9 - 0.05 * abs(factor - 1.0) - 0.01 * seed
                status = "diverged" if (batch, factor) == (8, 1.0) and seed == 1 else "completed"
                make_run(sweep, job, status=status, val=(0.5, best - 0.1 * (batch == 128)), tune_fraction=0.1,
                         lr_factor=factor, batch_size=batch, seed=seed,
                         overrides=[f"lr_factor={factor}", f"batch_size={batch}", f"seed={seed}"])
                jobs.append({"job": str(job), "overrides": [f"lr_factor={factor}", f"batch_size={batch}",
                                                            f"seed={seed}"]})
                job += 1
    make_run(sweep, job, status="failed", val=(), error="out of memory", tune_fraction=0.1, lr_factor=3.0,
             batch_size=128, seed=0, overrides=["lr_factor=3.0", "batch_size=128", "seed=0"])
    jobs += [{"job": str(job), "overrides": ["lr_factor=3.0", "batch_size=128", "seed=0"]},
             {"job": str(job + 1), "overrides": ["lr_factor=3.0", "batch_size=128", "seed=1"]}]
    (sweep / "sweep.json").write_text(json.dumps({"jobs": jobs}))
    a = assess(sweep)
    tuned, untuned = a.batch_verdicts
    assert tuned.outcome == "inconclusive"
    assert "Batch 128 has a result at one learning rate only" in tuned.headline
    assert "2 run(s) of the grid have no result" in tuned.headline  # the failed one and the one not started
    assert untuned.subject == "untuned: every batch size at lr 0.001" and "Batch 8 diverged in 1 of 2 runs" in (
        untuned.headline)


def test_a_grid_is_tuned_within_each_other_varied_key_and_controls_are_not_a_grid(tmp_path):
    from harness.studies.registry import assess
    from tests.helpers.sweeps import study_sweep

    a = assess(study_sweep(tmp_path / "two", "+study=tuned", "lr_factor=0.464,1,2.15", "batch_size=8,32", "seed=0",
                           "optimizer=adam,sgd"))
    assert [t.group for t in a.reading] == ["optimizer=adam", "optimizer=sgd"]
    assert [v.subject.split(":")[0] for v in a.batch_verdicts] == [
        "tuned · optimizer=adam", "untuned · optimizer=adam", "tuned · optimizer=sgd", "untuned · optimizer=sgd"]
    controls = assess(study_sweep(tmp_path / "controls", "+study=controls", "tune_fraction=0.1", "seed=0"))
    assert not controls.reading and len(controls.batch_verdicts) == 3  # lr_scaling moves peak_lr: not a grid


def test_other_sweeps_have_no_tuning_section(tmp_path):
    from harness.studies.registry import assess
    from tests.helpers.sweeps import batch_sweep

    a = assess(batch_sweep(tmp_path / "s", {8: [0.9, 0.91], 128: [0.8, 0.81]}))
    assert not a.reading and len(a.batch_verdicts) == 1


@pytest.mark.parametrize("override, says", [
    ("tune_fraction=1.0", "tune_fraction=1.0 is not allowed: a number in [0, 1) (0: no tuning slice)"),
    ("lr_factor=0", "lr_factor=0 is not allowed: a number > 0"),
    ("tune_fraction=0.001", "tune_fraction=0.001 is not allowed: 0, or large enough to hold out at least one "
                            "sample of some class (the training split has 4000, 411 in its largest class)"),
])
def test_bad_tuning_keys_exit_2_with_one_line(override, says, tmp_path):
    from tests.conftest import run_harness

    proc = run_harness(override, f"hydra.run.dir={tmp_path / 'run'}", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.strip().endswith(says) and len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "run").exists()


def test_a_tuned_study_over_two_optimizers_tunes_each_apart(tmp_path):
    """`+study=tuned optimizer=adam,lamb lr_schedule=cosine` (docs/configuration.md): one tuning, and its verdicts,
    per optimizer."""
    from harness.studies.registry import assess
    from tests.helpers.sweeps import study_sweep

    a = assess(study_sweep(tmp_path / "t", "+study=tuned", "optimizer=adam,lamb", "lr_schedule=cosine", "seed=0,1"))
    assert [t.group for t in a.reading] == ["optimizer=adam", "optimizer=lamb"]
    subjects = [v.subject for v in a.batch_verdicts]
    assert len(subjects) == 4 and all(any(f"optimizer={o}" in s for s in subjects) for o in ("adam", "lamb"))
