"""+study=diagnose's assessment (harness.studies.diagnose.reading) on constructed sweeps: the jobs and configs the real
command plans, its sweep.json, the real data checks of its first job, made-up accuracies."""
import json

import pandas as pd
import pytest

from harness.assess import sweep as sweep_files
from harness.report import html as report
from harness.studies.diagnose import reading as diagnosis
from harness.studies.diagnose import words
from harness.studies.registry import assess
from tests.helpers import page
from tests.helpers.sweeps import study_sweep

CASE = ("+study=diagnose", "batch_size=8,64", "model.batch_norm=true", "epochs=2")
LADDER = (*CASE, "diagnose.attribution=ladder")  # the arms in Hoffer's order, on request
NAMES = {"stale_statistics", "fewer_updates", "learning_rate", "ghost_batch_norm", "remains"}


def _diagnosis(sweep):
    return diagnosis.diagnose(sweep_files.read(sweep))


def _finals(sweep, d):
    """Per seed, v and v' of each arm's run, read back from the files."""
    df = sweep_files.read(sweep).epochs
    plan = json.loads((sweep / "sweep.json").read_text())["diagnose"]
    last = df.sort_values("epoch").groupby("run_id").tail(1)
    last = last.assign(arm=last["job"].map(plan["arms"]))
    return last


def test_the_parts_add_up_to_the_observed_drop_seed_by_seed(tmp_path):
    sweep = study_sweep(tmp_path / "s", *LADDER)
    d = _diagnosis(sweep)
    assert [p.name for p in d.parts] == ["stale_statistics", "fewer_updates", "learning_rate", "ghost_batch_norm",
                                         "remains"]
    assert d.seeds == [0, 1, 2] and d.small_batch == 8 and d.large_batch == 64
    last = _finals(sweep, d)
    as_is = last[last["arm"] == "as_is"].set_index(["seed", "global_batch_size"])["val_acc"]
    for i, seed in enumerate(d.seeds):
        drop = as_is[(seed, 8)] - as_is[(seed, 64)]
        assert sum(p.estimate.per_seed[i] for p in d.parts) == pytest.approx(drop, abs=1e-9)
    assert d.drop.value == pytest.approx(sum(p.estimate.value for p in d.parts), abs=1e-9)
    stale = d.parts[0].estimate
    assert stale.value > 0.1 and stale.reading == "shown"  # batch 64's moving statistics lag after 114 steps
    fewer = d.parts[1]
    assert fewer.arm == "steps" and fewer.estimate.value > 0  # matched steps recover most of the drop (made up so)
    assert "Of the drop of" in d.headline and "stale batch-norm statistics account for" in d.headline


def test_diagnosis_json_holds_the_parts_in_ladder_order_and_the_four_checks(tmp_path):
    sweep = study_sweep(tmp_path / "s", *LADDER)
    report.write_report(sweep, tmp_path / "reports")
    written = json.loads((sweep / "diagnosis.json").read_text())
    assert [p["name"] for p in written["parts"]] == ["stale_statistics", "fewer_updates", "learning_rate",
                                                      "ghost_batch_norm", "remains"]
    assert written["ladder"] == ["steps", "steps_lr", "steps_lr_ghost"] and written["attribution"] == "ladder"
    assert written["seeds"] == [0, 1, 2]
    assert set(written["drop"]) == {"value", "low", "high"}
    assert sum(p["value"] for p in written["parts"]) == pytest.approx(written["drop"]["value"], abs=1e-9)
    assert [c["name"] for c in written["checks"]] == ["label_shift", "order", "feature_shift", "capacity"]
    for check in written["checks"]:
        assert {"statistic", "threshold", "flagged", "detail"} <= set(check)
    flagged = {c["name"] for c in written["checks"] if c["flagged"]}
    assert flagged == set(), written["checks"]  # MNIST-1D as it comes: nothing injected, nothing flagged


def test_stale_statistics_at_both_sizes_are_said_first_and_the_parts_still_add_up(tmp_path):
    """MobileNetV2's case, constructed: momentum 0.999 and few steps, so at both batch sizes the moving statistics
    are mostly their start and val_acc is at chance while the weights (v', recomputed) are far above it. The
    headline says so first, with both recomputed accuracies and what to do; the split of the difference follows,
    its parts adding up to it; diagnosis.json holds each arm's levels."""
    sweep = study_sweep(tmp_path / "s", "+study=diagnose", "batch_size=8,64", "epochs=1", "model.batch_norm=true",
                        "model.bn_momentum=0.999", "dataset.num_samples=600")
    d = _diagnosis(sweep)
    (v_b, p_b), (v_big, p_big) = d.arm_values["b"], d.arm_values["B"]
    assert max(v_b, v_big) < 0.2 < min(p_b, p_big)  # at chance with the moving statistics, not recomputed
    assert d.headline.startswith(f"Neither batch size learned to validate: val_acc {v_b:.2f} at batch 8 and "
                                 f"{v_big:.2f} at batch 64, chance 0.10.")
    assert "the batch-norm statistics are mostly their initial values (bn_initial_weight 0.95 at batch 8, 0.99" in \
        d.headline
    assert f"recomputed for the final weights, batch 8 reaches {p_b:.2f} and batch 64 {p_big:.2f}" in d.headline
    assert "a lower model.bn_momentum (these runs' averages move at 0.999 a step; at 0.9" in d.headline
    assert "The difference between them: of the drop of" in d.headline
    assert d.headline.endswith("Parts as Shapley values over every combination of the arms (no order); the "
                               "learning-rate arms take batch 8's learning rate x sqrt(64/8).")
    assert words.title(d) == "Diagnosis: batch 64 against batch 8"  # not "why batch 64 lost": neither learned
    assert d.drop.value == pytest.approx(sum(p.estimate.value for p in d.parts), abs=1e-9)
    report.write_report(sweep, tmp_path / "reports")
    written = json.loads((sweep / "diagnosis.json").read_text())
    assert written["level"] == d.level and written["headline"] == d.headline
    levels = {row["arm"]: row for row in written["arm_values"]}
    assert set(levels) == {"b", "B", "steps", "lr", "ghost", "steps_lr", "steps_ghost", "lr_ghost", "steps_lr_ghost"}
    assert levels["b"]["batch"] == 8 and levels["B"]["batch"] == 64 and levels["steps"]["batch"] == 64
    assert levels["B"]["val_acc"] == pytest.approx(v_big) and levels["B"]["val_acc_precise_bn"] == pytest.approx(p_big)
    df = sweep_files.read(sweep).epochs
    step_b = df.loc[(df["global_batch_size"] == 8), "step"].max()  # one epoch of batch 8
    assert levels["b"]["bn_initial_weight"] == pytest.approx(0.999 ** step_b, rel=1e-6)


def test_a_model_that_learned_gets_no_level_reading(tmp_path):
    d = _diagnosis(study_sweep(tmp_path / "s", *CASE))
    assert d.level is None and d.headline.startswith("Of the drop of")
    assert words.title(d) == "Diagnosis: why batch 64 lost to batch 8"


def test_the_headline_names_the_ladder_and_a_linear_rule_when_asked_for(tmp_path):
    d = _diagnosis(study_sweep(tmp_path / "s", *LADDER, "diagnose.lr_scaling=linear", "diagnose.warmup_epochs=1"))
    assert d.attribution == "ladder"
    assert d.headline.endswith("Parts along the ladder (steps, then steps_lr, then steps_lr_ghost: each credited in "
                               "that order); the learning-rate arms take batch 8's learning rate x 64/8, warmed up "
                               "over 1 of batch 8's epochs.")


@pytest.mark.parametrize("extra,left", [
    ((), "the model has no batch norm"),
    (("shuffle=false",), "with shuffle=false every batch is one class"),
])
def test_stale_statistics_are_split_off_only_for_shuffled_data_with_batch_norm(tmp_path, extra, left):
    batch_norm = ("model.batch_norm=true",) if extra else ()
    sweep = study_sweep(tmp_path / "s", "+study=diagnose", "batch_size=8,64", "epochs=2", *batch_norm, *extra)
    d = _diagnosis(sweep)
    assert "stale_statistics" not in [p.name for p in d.parts] and any(left in note for note in d.notes)
    assert d.drop.value == pytest.approx(sum(p.estimate.value for p in d.parts), abs=1e-9)
    assert set(p.name for p in d.parts) <= NAMES


def test_a_diverged_arm_leaves_its_parts_not_measured(tmp_path):
    sweep = study_sweep(tmp_path / "s", *LADDER)
    plan = json.loads((sweep / "sweep.json").read_text())["diagnose"]
    job = next(num for num, arm in plan["arms"].items() if arm == "steps_lr")
    record = json.loads((sweep / job / "run.json").read_text())
    (sweep / job / "run.json").write_text(json.dumps({**record, "status": "diverged"}))
    d = _diagnosis(sweep)
    readings = {p.name: p.estimate.reading for p in d.parts}
    assert readings["learning_rate"] == readings["ghost_batch_norm"] == "not measured"
    assert readings["fewer_updates"] != "not measured" and d.drop.value is not None
    assert any("Not measured: learning_rate, ghost_batch_norm" in note for note in d.notes)


def test_seeds_missing_an_arm_are_left_out_and_one_seed_is_indicative(tmp_path):
    sweep = study_sweep(tmp_path / "s", *CASE)
    plan = json.loads((sweep / "sweep.json").read_text())["diagnose"]
    for num, arm in plan["arms"].items():  # seeds 1 and 2 lose their steps arm (still running, or failed)
        record = json.loads((sweep / num / "run.json").read_text())
        if arm == "steps" and record["config"]["seed"] > 0:
            (sweep / num / "run.json").write_text(json.dumps({**record, "status": "failed"}))
    d = _diagnosis(sweep)
    assert d.seeds == [0] and all(p.estimate.low is None for p in d.parts)
    assert any("Seed(s) 1, 2" in note for note in d.notes) and "(one seed: indicative)" in d.headline


def test_shapley_parts_add_up_to_the_drop_and_need_no_order(tmp_path):
    sweep = study_sweep(tmp_path / "s", *CASE, "diagnose.attribution=shapley", "seed=0,1")
    d = _diagnosis(sweep)
    assert d.attribution == "shapley" and len(set(json.loads((sweep / "sweep.json").read_text())["diagnose"]
                                                  ["arms"].values())) == 8  # as_is + 7 subsets of 3 pieces
    assert d.drop.value == pytest.approx(sum(p.estimate.value for p in d.parts), abs=1e-9)
    assert any("no piece is taken first" in note for note in d.notes)
    # beside the shared parts, what each piece recovers alone (the verdict's reading of the statistics)
    finals = diagnosis._finals(sweep_files.read(sweep).epochs, json.loads((sweep / "sweep.json").read_text())[
        "diagnose"]).set_index(["key", "seed"])
    steps_alone = (finals.loc["steps", "v"] - finals.loc["B", "v"]).mean()
    stale_alone = ((finals.loc["B", "v_precise"] - finals.loc["B", "v"])
                   - (finals.loc["b", "v_precise"] - finals.loc["b", "v"])).mean()
    [alone] = [note for note in d.notes if note.startswith("Each piece alone")]
    assert alone.startswith(f"Each piece alone, against batch 64 as it is: recomputed statistics {stale_alone:+.2f}, "
                            f"as many updates as batch 8 {steps_alone:+.2f}, the learning rate scaled from batch 8 ")


def test_other_sweeps_have_no_diagnosis(tmp_path):
    sweep = study_sweep(tmp_path / "s", "+study=smoke")
    assert _diagnosis(sweep) is None and assess(sweep).reading is None


def test_the_report_opens_with_the_diagnosis_under_the_verdict(tmp_path):
    sweep = study_sweep(tmp_path / "s", *CASE)
    parsed = page.parse(report.build_report(sweep))
    assert [h2.get("id") for h2 in parsed.find_all("h2")][:2] == ["verdict", "diagnosis"]
    assert "suspects" not in [h2.get("id") for h2 in parsed.find_all("h2")]
    rest = page.section(parsed, "diagnosis")
    assert rest.index("Of the drop of") < rest.index("The drop, part by part") < rest.index("label_shift")
    parts = page.records(parsed.find("h2", id="diagnosis").find_next("table"))
    assert {row["part"] for row in parts} == NAMES


def test_the_results_table_shows_each_runs_arm_and_the_parts(tmp_path, capsys):
    from harness.report import results

    sweep = study_sweep(tmp_path / "s", *LADDER)
    table = results.sweep_results(sweep)
    assert table["arm"].tolist()[:5] == ["as_is", "as_is", "steps", "steps_lr", "steps_lr_ghost"]
    assert results.main([str(sweep)]) == 0
    out = capsys.readouterr().out
    parts = out.split("diagnosis:", 1)[1]
    for name in NAMES:
        assert name in parts
    assert pd.notna(table["val_acc"]).all()


def test_beside_remains_the_probes_compare_the_small_batch_with_the_steps_arm(tmp_path):
    """The same learning rate and as many updates: the top eigenvalue and sharpness of b's runs and the steps arm's,
    read as the sharp-minima account of a positive remains where the large batch's minimum is the sharper."""
    from tests.helpers.sweeps import add_probes

    sweep = add_probes(study_sweep(tmp_path / "s", *CASE), interpolation=False)
    d = _diagnosis(sweep)
    assert d.parts[-1].name == "remains" and d.parts[-1].estimate.value > 0
    assert len(d.evidence) == 1 and "at batch 8 and" in d.evidence[0]
    assert "in the steps arm at batch 64" in d.evidence[0]
    assert "the sharp-minima reading of the gap" in d.evidence[0]
    assert _diagnosis(study_sweep(tmp_path / "none", *CASE)).evidence == []  # no probes, nothing said


def test_a_flagged_label_shift_is_said_to_act_on_both_sizes(tmp_path):
    """imbalance=0.9 (the harness's own injection) flags label_shift in the first job's real data checks: the
    diagnosis says that it acts on both batch sizes and is in none of the parts; a sweep without it says nothing."""
    d = _diagnosis(study_sweep(tmp_path / "s", "+study=diagnose", "batch_size=8,64", "epochs=2", "imbalance=0.9",
                               "seed=0,1"))
    assert [c["name"] for c in d.checks if c["flagged"]] == ["label_shift"]
    [said] = [note for note in d.notes if "acts on both batch sizes" in note]
    assert said.startswith("A label shift between training and validation is flagged (label_shift)")
    plain = _diagnosis(study_sweep(tmp_path / "plain", *CASE, "seed=0,1"))
    assert not any("acts on both batch sizes" in note for note in plain.notes)
