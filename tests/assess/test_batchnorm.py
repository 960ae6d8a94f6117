"""What the report says of stale batch-norm statistics (harness.assess.batchnorm): the split of a large batch's val_acc
drop, the verdict that names the cause instead of under-training, the finding and figure of +study=batchnorm."""
import pandas as pd
import pytest

from harness.assess import analysis, batchnorm
from harness.assess.assessment import assess
from harness.report import html as report
from tests.helpers.sweeps import make_run


def _rows(batch: int, val: list[float], precise: list[float], step: int, weight: float, shuffle=True):
    return pd.DataFrame({"global_batch_size": batch, "val_acc": val, "val_acc_precise_bn": precise,
                         "train_eval_acc": [v + 0.02 for v in val], "train_eval_acc_precise_bn": [p + 0.05 for p in precise],
                         "step": step, "bn_initial_weight": weight, "shuffle": shuffle})


def test_the_split_adds_up_to_the_drop_and_names_the_cause_only_when_it_is_a_third_and_not_zero():
    small = _rows(8, [0.90, 0.91, 0.92], [0.92, 0.93, 0.94], 1000, 0.99 ** 1000)
    large = _rows(64, [0.10, 0.14, 0.12], [0.75, 0.77, 0.76], 126, 0.99 ** 126)
    s = batchnorm.split(small, large)
    assert s.drop == pytest.approx(0.79) and s.remaining == pytest.approx(0.17)  # 0.93 - 0.76 recomputed
    assert s.stale == pytest.approx(0.79 - 0.17) and s.small_staleness == pytest.approx(0.02)
    assert s.stale_interval[0] > 0 and s.named and s.momentum == pytest.approx(0.99)
    text = batchnorm.sentence(s, ", epoch 2")
    assert text.startswith("Batch 64, epoch 2: stale batch-norm statistics explain 78% of the val_acc drop from "
                           "batch 8, +0.620 [")
    assert "after 126 steps at momentum 0.99 the moving averages still carry 0.28 of their initial values" in text
    assert "0.120 with the moving statistics and 0.760 with statistics recomputed" in text
    # a small part (a fifteenth of the drop), or one whose interval spans 0, is not a cause
    little = batchnorm.split(small, _rows(64, [0.60, 0.62, 0.64], [0.64, 0.66, 0.68], 126, 0.28))
    assert little.stale == pytest.approx(0.02, abs=1e-9) and not little.named
    noisy = batchnorm.split(small, _rows(64, [0.30, 0.62, 0.10], [0.80, 0.40, 0.60], 126, 0.28))
    assert noisy.stale_interval[0] < 0 < noisy.stale_interval[1] and not noisy.named
    assert "explain little" in batchnorm.sentence(noisy)
    one = batchnorm.split(small.iloc[:1], large.iloc[:1])  # one seed: no interval, indicative only
    assert one.stale_interval is None and one.named and "n = 1 seed" in batchnorm.sentence(one)


def test_no_split_without_recomputed_statistics_or_for_unshuffled_data():
    small = _rows(8, [0.9, 0.91], [0.92, 0.93], 1000, 0.0)
    large = _rows(64, [0.1, 0.12], [0.75, 0.77], 126, 0.28)
    assert batchnorm.split(small.drop(columns=["val_acc_precise_bn"]), large.drop(columns=["val_acc_precise_bn"])) is None
    assert batchnorm.split(small, large.assign(shuffle=False)) is None


def _stale_sweep(sweep, epochs_val=(0.55, 0.85), batches=(8, 256), seeds=(0, 1, 2), **config):
    """Batch norm's moving statistics lagging the weights (tests.helpers.sweeps metric_rows `stale_bn`): the weights reach
    `epochs_val` at every batch size, the averages carry momentum^step of their start."""
    job, config = 0, {"model.batch_norm": True, "epochs": len(epochs_val), **config}
    for batch in batches:
        for seed in seeds:
            make_run(sweep, job, batch_size=batch, seed=seed, val=tuple(v + 0.01 * seed for v in epochs_val),
                     stale_bn=config["model.batch_norm"], **config)
            job += 1
    return sweep


def test_the_verdict_names_batch_norm_statistics_instead_of_under_training(tmp_path):
    """Batch 256 takes 16 steps an epoch: its averages still carry 0.99^32 = 0.72 of their start after 2 epochs."""
    a = assess(_stale_sweep(tmp_path / "s"))
    [verdict] = a.batch_verdicts
    assert verdict.outcome == "reproduced"
    assert "Batch-norm statistics that lag the weights explain 100% of the drop (below)." in verdict.headline
    [stale, rest] = [d for d in verdict.details if ("batch-norm" in d and not d.startswith("To split"))
                     or d.startswith("With the statistics")]
    assert stale.startswith("Batch 256: stale batch-norm statistics explain 100% of the val_acc drop from batch 8")
    assert "bn_initial_weight" in stale and "momentum 0.99" in stale
    assert rest.startswith("With the statistics recomputed: ") and "Validation accuracy did not fall" in rest
    assert not any("most of the validation drop is under-training" in d for d in verdict.details)
    plain = assess(_stale_sweep(tmp_path / "plain", **{"model.batch_norm": False}))  # no columns: as before
    assert not any("batch-norm" in d for d in plain.batch_verdicts[0].details)


def test_the_finding_reads_epoch_2_and_the_last_and_tables_every_batch_size(tmp_path):
    a = assess(_stale_sweep(tmp_path / "s", epochs_val=(0.5, 0.7, 0.8), batches=(8, 64, 256)))
    [finding] = [f for f in a.findings if f.subject == "Batch-norm statistics"]
    assert finding.outcome == "reproduced" and "Read at epochs 2 and 3" in finding.headline
    assert [d.split(":")[0] for d in finding.details] == ["Batch 64, epoch 2", "Batch 256, epoch 2", "Batch 64, epoch 3",
                                                          "Batch 256, epoch 3"]
    header, rows = finding.table
    assert header[:5] == ["runs", "batch", "epoch", "steps", "bn_initial_weight"] and len(rows) == 6
    batch_256_epoch_2 = rows[2]
    assert batch_256_epoch_2[1:5] == ["256", "2", "32", "0.72"]
    assert batch_256_epoch_2[-1].startswith("0.710 ± ")  # the weights' own val_acc, mean ± its 95% half-width
    assert [c.title for c in finding.comparisons] == ["batch 64, epoch 2", "batch 256, epoch 2"]
    unshuffled = assess(_stale_sweep(tmp_path / "u", shuffle=False))
    assert not [f for f in unshuffled.findings if f.subject == "Batch-norm statistics"]


def test_the_study_as_planned_reports_the_finding_its_table_and_figure(tmp_path):
    """+study=batchnorm planned for real (18 jobs: batch 8/64/256 x momentum 0.99/0.9 x 3 seeds, 10 epochs),
    with made-up accuracies whose moving statistics lag by momentum^step."""
    from harness.render.figures import figures
    from tests.helpers import layout
    from tests.helpers.sweeps import study_sweep

    sweep = study_sweep(tmp_path / "bn", "+study=batchnorm")
    a = assess(sweep)
    runs = a.df.drop_duplicates("run_id")
    assert len(runs) == 18 and (runs["epochs"] == 10).all() and runs["model.batch_norm"].all()
    assert sorted(runs.groupby(["global_batch_size", "model.bn_momentum"]).size().items()) == [
        ((b, m), 3) for b in (8, 64, 256) for m in (0.9, 0.99)]
    assert [f for f in a.findings if f.subject == "Batch-norm statistics"][0].outcome == "reproduced"
    drawn = {title: fig for title, fig, _ in figures(a)}
    fig = drawn["Batch-norm statistics: val_acc with moving vs recomputed statistics"]
    assert [ax.get_title() for ax in fig.axes if ax.get_visible()] == ["model.bn_momentum=0.9", "model.bn_momentum=0.99"]
    assert layout.problems(fig) == []
    html = report.build_report(sweep)
    assert '<table class="numbers">' in html and "train_acc (running)" in html
    assert "Batch 64, epoch 2 (model.bn_momentum=0.99): stale batch-norm statistics explain" in html
    assert analysis.facet_keys(a.df, a.keys) == ["model.bn_momentum"]
    # the README's opening block, written from the same sweep: the seed's symptom, its cause, what to do
    from scripts.findings import seed_case

    case = seed_case(sweep)
    assert case.startswith("**The seed note's numbers, reproduced** (`+study=batchnorm`, batch 64, epoch 2")
    assert "stale batch-norm statistics, not the large batch's generalization" in case
    assert "`model.bn_momentum=0.9` gives val_acc" in case and "`val_acc_precise_bn`" in case
    assert ".\n\n- **What caused it**" in case  # a paragraph, then a list (without the blank line, one paragraph)


def test_unshuffled_data_keeps_its_own_finding_and_says_recomputed_statistics_do_not_rescue_it(tmp_path):
    sweep = tmp_path / "s"
    for job, shuffle in enumerate((True, False)):  # batch 8: 1,000 steps, the averages have forgotten their start
        make_run(sweep, job, batch_size=8, shuffle=shuffle, val=(0.5, 0.85) if shuffle else (0.1, 0.11),
                 train_eval=(0.55, 0.9) if shuffle else (0.67, 0.12), stale_bn=True, epochs=2,
                 **{"model.batch_norm": True})
    a = assess(sweep)
    assert [f.subject for f in a.findings] == ["Unshuffled data"]
    assert "val_acc is 0.10, so stale batch-norm statistics do not explain it." in a.findings[0].details[0]


def test_statistics_stale_at_both_sizes_are_said_in_the_verdict_and_the_finding(tmp_path):
    """MobileNetV2's momentum 0.999 for one epoch of 480 samples (made-up accuracies whose moving statistics lag
    by momentum^step): every run validates at chance with the moving statistics at batch 8 and at 64 alike. The
    verdict (inconclusive: nothing learned) and the batch-norm finding say what both sizes share: the statistics
    are mostly their start, what each size reaches with them recomputed, and a lower momentum to try."""
    from tests.helpers.sweeps import study_sweep

    sweep = study_sweep(tmp_path / "s", "batch_size=8,64", "model.batch_norm=true", "model.bn_momentum=0.999",
                        "epochs=1", "dataset.num_samples=600")
    a = assess(sweep)
    final = a.df.sort_values("epoch").groupby("run_id").tail(1)
    weight = {b: runs["bn_initial_weight"].mean() for b, runs in final.groupby("global_batch_size")}
    precise = {b: runs["val_acc_precise_bn"].mean() for b, runs in final.groupby("global_batch_size")}
    shared = (f"At both batch sizes, the batch-norm statistics are mostly their initial values (bn_initial_weight "
              f"{weight[8]:.2f} at batch 8, {weight[64]:.2f} at batch 64); recomputed for the final weights, batch 8 "
              f"reaches {precise[8]:.2f} and batch 64 {precise[64]:.2f}. What to do: a lower model.bn_momentum "
              "(these runs' averages move at 0.999 a step; at 0.9")
    [verdict] = a.batch_verdicts
    assert verdict.outcome == "inconclusive" and "did not learn above chance" in verdict.headline
    assert shared in verdict.headline
    [finding] = [f for f in a.findings if f.subject == "Batch-norm statistics"]
    assert any(shared in line for line in finding.details)


def test_a_model_whose_small_batch_statistics_caught_up_gets_no_shared_reading(tmp_path):
    from tests.helpers.sweeps import study_sweep

    a = assess(study_sweep(tmp_path / "s", "batch_size=8,64", "model.batch_norm=true", "epochs=2"))
    assert "At both batch sizes" not in a.batch_verdicts[0].headline
