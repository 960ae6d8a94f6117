"""Each finding (harness.assess.findings) from constructed sweeps, and every study end to end."""
import re

import pandas as pd
import pytest

from harness.assess import analysis, batch_controls, findings
from harness.assess import sweep as sweep_files
from tests.helpers.sweeps import make_run


def _final(sweep):
    df = sweep_files.read(sweep).epochs
    keys = sweep_files.read(sweep).keys
    return df, analysis.final_results(df), analysis.varied_keys(df, keys)


def test_shuffle_finding_sees_the_running_accuracy_illusion(tmp_path):
    sweep = tmp_path / "s"
    make_run(sweep, 0, shuffle=True, val=(0.5, 0.8), train_eval=(0.55, 0.85))
    make_run(sweep, 1, shuffle=False, val=(0.1, 0.12), train_eval=(0.67, 0.12))  # running train_acc = 0.65
    df, final, varied = _final(sweep)
    finding = findings.shuffle_finding(df, varied)
    assert finding.outcome == "reproduced" and "0.65" in finding.details[0]
    make_run(tmp_path / "t", 0, shuffle=True, val=(0.5, 0.8))
    make_run(tmp_path / "t", 1, shuffle=False, val=(0.4, 0.7))
    df, final, varied = _final(tmp_path / "t")
    assert findings.shuffle_finding(df, varied).outcome == "not reproduced"


def test_imbalance_finding_compares_with_matched_balanced_runs(tmp_path):
    sweep = tmp_path / "s"
    for seed in (0, 1):
        make_run(sweep, seed, imbalance=0.0, seed=seed, val=(0.9,), train_eval=(0.95,))
        make_run(sweep, 2 + seed, imbalance=0.95, seed=seed, val=(0.6,), train_eval=(0.97,))
    df, final, varied = _final(sweep)
    finding = findings.imbalance_finding(final, varied)
    assert finding.outcome == "reproduced" and "drop +0.300" in finding.details[0]


def test_imbalance_finding_never_averages_over_batch_size(tmp_path):
    sweep = tmp_path / "s"
    for job, (imbalance, batch, val) in enumerate([(0.0, 8, 0.60), (0.0, 128, 0.30), (0.9, 8, 0.10), (0.9, 128, 0.10)]):
        make_run(sweep, job, imbalance=imbalance, batch_size=batch, val=(val,), train_eval=(0.9,))
    df, final, varied = _final(sweep)
    details = findings.imbalance_finding(final, varied).details
    assert len(details) == 2
    assert "(batch_size=8)" in details[0] and "vs 0.600 balanced (drop +0.500)" in details[0]
    assert "(batch_size=128)" in details[1] and "vs 0.300 balanced (drop +0.200)" in details[1]
    assert "0.450" not in " ".join(details)  # the mean of both batch sizes is no reference


def test_shuffle_finding_splits_by_every_other_varied_key(tmp_path):
    sweep = tmp_path / "s"
    for job, (shuffle, imbalance, running) in enumerate([(True, 0.0, 0.6), (False, 0.0, 0.7), (True, 0.9, 0.6),
                                                          (False, 0.9, 0.1)]):
        make_run(sweep, job, shuffle=shuffle, imbalance=imbalance, val=(0.1,), train_eval=(running + 0.02,))
    df, final, varied = _final(sweep)
    details = findings.shuffle_finding(df, varied).details
    assert details[0].startswith("batch 32 (imbalance=0.0): at epoch 1 the running train_acc was 0.70")
    assert details[1].startswith("batch 32 (imbalance=0.9): at epoch 1 the running train_acc was 0.10")


def test_preprocess_finding_needs_val_down_with_train_unchanged(tmp_path):
    sweep = tmp_path / "s"
    make_run(sweep, 0, preprocess_mismatch="none", val=(0.9,), train_eval=(0.95,))
    make_run(sweep, 1, preprocess_mismatch="unscaled", val=(0.2,), train_eval=(0.95,))
    make_run(sweep, 2, preprocess_mismatch="shifted", val=(0.89,), train_eval=(0.95,))
    df, final, varied = _final(sweep)
    finding = findings.preprocess_finding(final, varied)
    assert finding.outcome == "reproduced" and len(finding.details) == 2


def test_capacity_finding_reads_the_gap_across_width_and_data(tmp_path):
    sweep = tmp_path / "s"
    job = 0
    for width in (0.25, 4.0):
        for fraction in (0.1, 1.0):
            gap = 0.3 if (width, fraction) == (4.0, 0.1) else 0.05
            make_run(sweep, job, **{"model.width": width}, train_fraction=fraction, val=(0.9 - gap,),
                     train_eval=(0.9,))
            job += 1
    df, final, varied = _final(sweep)
    finding = findings.capacity_finding(final, varied)
    assert finding.outcome == "reproduced" and "+0.250" in finding.headline and len(finding.details) == 4


def test_controls_finding_says_how_much_of_the_drop_remains(tmp_path):
    sweep = tmp_path / "s"
    arms = [({"budget": "epochs"}, 0.10), ({"budget": "steps", "budget_steps": 7500}, 0.04),
            ({"budget": "steps", "budget_steps": 7500, "lr_scaling": "linear", "warmup_epochs": 2.0}, 0.005)]
    job = 0
    for arm, drop in arms:
        for batch, val in ((8, 0.92), (128, 0.92 - drop)):
            make_run(sweep, job, batch_size=batch, val=(val,), **arm)  # other keys at their defaults
            job += 1
    df, final, varied = _final(sweep)
    finding = batch_controls.controls_finding(final, varied)
    assert finding.outcome == "not reproduced"  # half a point left: under one point
    assert "+0.100" in finding.headline and "(5% of it remains)" in finding.headline
    assert len(finding.details) == 3


def _hoffer_final(val: dict[str, float]) -> pd.DataFrame:
    """Final rows of a +study=hoffer sweep: two seeds per arm, the arm's val_acc ± 0.005."""
    from harness.assess.analysis import BATCH

    rows = []
    for arm, acc in val.items():
        for seed, jitter in ((0, -0.005), (1, 0.005)):
            rows.append({BATCH: 8 if arm == "small" else 128, "overrides": f"+study=hoffer +hoffer={arm} seed={seed}",
                         "val_acc": acc + jitter, "train_eval_acc": acc + 0.03, "step": 2500, "seed": seed})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("full, outcome", [(0.93, "reproduced"), (0.80, "not reproduced")])
def test_hoffer_finding_says_whether_the_whole_recipe_closes_the_gap(full, outcome):
    from harness.assess.batch_controls import hoffer_finding

    final = _hoffer_final({"small": 0.93, "large": 0.80, "large_steps": 0.90, "large_steps_sqrt_ghost": full})
    found = hoffer_finding(final, ["global_batch_size", "seed"])
    assert found.outcome == outcome
    assert "+0.130" in found.headline and f"{0.93 - full:+.3f}" in found.headline
    assert [c.treated for c in found.comparisons] == [
        "batch 128 + nothing", "batch 128 + steps matched", "batch 128 + steps matched + sqrt LR + ghost BN"]


def test_hoffer_finding_without_a_gap_to_close_is_inconclusive_and_other_sweeps_have_none():
    from harness.assess.batch_controls import hoffer_finding

    final = _hoffer_final({"small": 0.93, "large": 0.93, "large_steps_sqrt_ghost": 0.93})
    assert hoffer_finding(final, []).outcome == "inconclusive"
    assert hoffer_finding(final.assign(overrides="batch_size=8"), []) is None


def test_the_readme_s_findings_are_rewritten_study_by_study():
    """scripts.findings --update-docs with one study's sweep replaces that study's block and keeps the others."""
    from scripts.findings import merged

    existing = "**`+study=shuffle`**: old shuffle\n\n- a line\n\n**`+study=batchnorm`**: old batchnorm\n\n**`+study=tuned`**: t"
    text = merged(existing, {"batchnorm": "**`+study=batchnorm`**: new", "capacity": "**`+study=capacity`**: c"})
    assert text == ("**`+study=capacity`**: c\n\n**`+study=shuffle`**: old shuffle\n\n- a line\n\n"
                    "**`+study=batchnorm`**: new\n\n**`+study=tuned`**: t")


def test_the_main_job_s_blocks_come_from_its_sweep(tmp_path):
    """scripts.findings --main-job: the verdict, each batch size's probes (mean ± sd over seeds, from probes.json)
    and the report's Why, and the README's headline of the same verdict."""
    from harness.studies.registry import assess
    from scripts.findings import headline, main_job
    from tests.helpers.sweeps import add_probes, probe_values, study_sweep

    sweep = add_probes(study_sweep(tmp_path / "main", "batch_size=8,32,64,128"), alphas=25)
    assessed = assess(sweep)
    text = main_job(sweep, assessed)
    assert text.startswith("`python -m harness batch_size=8,32,64,128 -m`: 12 runs, 3 seed(s) per batch size")
    assert "\n- Larger batches gave lower validation accuracy at one learning rate (" in text
    rows = [line for line in text.splitlines() if re.match(r"\| \d+ \|", line)]
    assert [row.split(" | ")[0] for row in rows] == ["| 8", "| 32", "| 64", "| 128"]
    eigenvalues = [probe_values(128, seed)["hessian_top_eigenvalue"] for seed in (0, 1, 2)]
    assert f"| {sum(eigenvalues) / 3:.3g} ± 1 |" in rows[-1]  # seeds 0, 1, 2 add 0, 1, 2: sd 1
    assert "minimum is" in text and "sharper than batch-8's" in text  # the report's sharpness reading
    assert re.search(r"Along the line between the batch-8 and batch-128 solutions \(3 pair\(s\)", text)
    top = headline(assessed)
    assert top.startswith("**Larger batches gave lower validation accuracy at one learning rate (")
    assert "- Measured beside the drop (it goes with the drop; it does not show a cause): The batch-128" in top
    assert "- To split this drop into its causes on this setting" in top
    assert "`python -m harness +study=diagnose batch_size=8,128 -m`" in top
    assert "- To keep batch 8's accuracy at batch 128 (a recipe searched on a tuning slice, then confirmed on every " \
           "seed): `python -m harness +study=recover batch_size=8,128 -m`" in top
    assert "Why" not in top  # a correlate is not presented as the cause
    assert re.search(r"Final val_acc [^;]+", top).group(0) in text


def test_the_readme_s_studies_table_has_a_line_per_preset_from_the_findings():
    from scripts.findings import studies_table

    findings_text = ("**`+study=shuffle`**: 18 runs\n\n- [shuffle=False] Larger batches gave lower validation "
                     "accuracy: inconclusive. Final\n- Unshuffled data: Unshuffled, class-sorted data gave high "
                     "running train accuracy with validation near chance: reproduced. More\n\n"
                     "**`+study=batch_size`**: 12 runs, run on 2026-12-04.\n\n- Larger batches gave lower "
                     "validation accuracy: reproduced. Final val_acc 0.9 at batch 8 vs 0.8 at batch 128 "
                     "(drop +0.100); more")
    rows = studies_table(findings_text).splitlines()[2:]
    assert rows[0] == ("| `+study=batch_size` | The main finding with enough seeds for a claim: batch 8, 32, 64, 128 "
                       "x seeds 0, 1, 2 (12 runs). | Larger batches gave lower validation accuracy: reproduced "
                       "(val_acc drop +0.100) | 2026-12-04 |")  # each study's own date: blocks merge from many runs
    assert rows[1].startswith("| `+study=shuffle` | Unshuffled (class-sorted) training data") and rows[1].endswith(
        "| Unshuffled, class-sorted data gave high running train accuracy with validation near chance: reproduced "
        "| – |")
    from harness.config.compose import CONF_DIR

    assert len(rows) == len(list((CONF_DIR / "study").glob("*.yaml")))
    assert all("not in the findings yet" in row for row in rows[2:])


def test_the_machine_needs_count_the_runs_at_once_and_the_largest_memory(tmp_path):
    """scripts.needs: the wall time from the first start to the last end, the most runs whose spans overlap (a run
    that starts the moment another ends takes its slot), the largest peak memory."""
    import json

    from scripts import needs

    spans = [("10:00:00", "10:00:30", 800.0), ("10:00:00", "10:00:10", 900.5), ("10:00:10", "10:00:40", 700.0),
             ("10:00:30", "10:01:00", 650.0)]
    for job, (start, end, memory) in enumerate(spans):
        (tmp_path / str(job)).mkdir()
        (tmp_path / str(job) / "run.json").write_text(json.dumps({
            "started_at": f"2026-01-05T{start}+00:00", "finished_at": f"2026-01-05T{end}+00:00",
            "peak_memory_mb": memory, "epochs_completed": 15}))
    sweep = needs.read_sweep(tmp_path)
    assert (sweep.runs, sweep.epochs, sweep.wall_minutes, sweep.at_once, sweep.peak_memory_mb) == (4, 15, 1.0, 2, 900.5)
    said = needs.text(sweep, (3 * 1024 ** 3, 2 * 1024 ** 3, ["test"]))
    assert "take 3.0 GB, TensorFlow 2.0 GB of them (installed with the test extras" in said
    assert "trained in 1.0 min" in said and "2 at once" in said and "peaked at 900 MB at most" in said
    assert "took" not in said  # an existing sweep: the command was not timed here
    timed = needs.text(sweep, (3 * 1024 ** 3, 2 * 1024 ** 3, ["test"]), command_seconds=47.4)
    assert "`python -m harness batch_size=8,32,64,128 -m` took 47 s from start to report; the main job's 4 runs" \
        in timed
    assert needs.main([str(tmp_path), "--run"]) == 2  # --run into an existing folder would resume it: refused


def test_the_findings_provenance_names_the_sweeps_as_typed(tmp_path, monkeypatch):
    """Every sweeps/study-* folder named, as the shell expands the glob, is written back as `sweeps/study-*`; some
    of them stay named one by one."""
    from scripts.findings import command_line

    monkeypatch.chdir(tmp_path)
    for name in ("study-a", "study-b"):
        (tmp_path / "sweeps" / name).mkdir(parents=True)
    assert (command_line(["sweeps/study-a", "sweeps/study-b", "--main-job", "sweeps/main", "--update-docs"])
            == "python -m scripts.findings sweeps/study-* --main-job sweeps/main --update-docs")
    one = command_line(["sweeps/study-b", "--update-docs"])
    assert one == "python -m scripts.findings sweeps/study-b --update-docs"
