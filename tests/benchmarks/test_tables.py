"""Each benchmark's table from canned measurements (benchmarks/: the measuring part runs real sweeps, the table part
is a pure function of its numbers): medians, not means, ratios of the medians, and the rows the docs' generated
blocks hold. The numbers are chosen so that a mean or a ratio of the wrong pair reads differently. One real smoke
round of a script stays in tests/e2e/test_benchmarks.py, and every script's options still parse."""
import importlib
import json
import re

import pytest

from benchmarks import (
    bench_backends,
    bench_floor,
    bench_data_checks,
    bench_gpu_share,
    bench_plan,
    bench_precise_bn,
    bench_probes,
    bench_ramp,
    bench_recipes,
    bench_report,
    bench_speed,
    bench_sweep,
    bench_tracking,
    diagnose_matrix,
)

SCRIPTS = ["bench_backends", "calibration", "bench_data_checks", "bench_floor", "bench_gpu_share", "bench_plan", "bench_precise_bn",
           "bench_probes", "bench_ramp", "bench_recipes", "ramp_rules",
           "bench_report",
           "bench_speed", "bench_sweep", "bench_tracking", "diagnose_matrix", "recover_matrix", "study_cost"]


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_benchmark_imports_and_parses_its_options(script, capsys):
    with pytest.raises(SystemExit) as done:
        importlib.import_module(f"benchmarks.{script}").main(["--help"])
    assert done.value.code == 0 and "--smoke" in capsys.readouterr().out


def test_probes_table_gives_medians_and_the_ratio_of_the_medians():
    text = bench_probes.table(on=[13.0, 12.0, 40.0], off=[11.0, 10.0, 30.0], final_probes=[1.0, 2.0, 9.0],
                              interpolation=[3.0, 3.5, 2.5], repeats=3, extra=["epochs=1"])
    assert "Median of 3 (MNIST-1D convnet, default epochs and probe_samples unless smoke; epochs=1)." in text
    assert "| main job with `probes=false`, wall time | 11.0 s |" in text
    assert "| main job with the default probes, wall time | 13.0 s |" in text
    assert "| ratio, probes on ÷ off | 1.18x |" in text  # 13 / 11, not the means' 21.7 / 17
    assert "| end-of-run probes of one run (eigenvalue, trace, sharpness at two ε) | 2.0 s |" in text
    assert "| the sweep's interpolation (`python -m harness.probe`), alone | 3.0 s |" in text


def test_speed_table_has_a_row_per_batch_size_with_both_ratios():
    results = {}
    for kind, train, process in (("baseline", [2.0, 1.0, 9.0], [6.0, 5.0, 20.0]),
                                 ("harness", [1.5, 1.2, 1.0], [4.0, 4.5, 5.0]),
                                 ("tf_loop", [1.0, 0.8, 1.2], [0, 0, 0])):
        results[(kind, 32, "train_seconds")] = train
        results[(kind, 32, "process_seconds")] = process
    lines = bench_speed.table(results, [32], epochs=5, repeats=3).splitlines()
    assert lines[2].startswith("| batch | training s: baseline / harness / tf.function loop | harness ÷ baseline")
    assert lines[4] == "| 32 | 2.00 / 1.20 / 1.00 | 0.60 | 1.20 | 6.0 / 4.5 | 0.75 |"


def test_precise_bn_table_weighs_each_batch_sizes_share_by_its_run_time():
    with_bn = {8: [11.0, 10.0, 50.0], 128: [2.0, 2.2, 2.1]}
    without = {8: [10.0, 9.0, 40.0], 128: [2.0, 2.0, 1.9]}
    spent = {8: [0.1, 0.2, 0.9], 128: [0.05, 0.05, 0.05]}
    lines = bench_precise_bn.table(with_bn, without, spent, repeats=3).splitlines()
    assert lines[4] == "| batch 8 | 20.0% | 10.00 s | 11.00 s | 1.100x |"
    assert lines[5] == "| batch 128 | 5.0% | 2.00 s | 2.10 s | 1.050x |"
    share = (0.2 * 11 + 0.05 * 2.1) / 13.1  # each run's share weighted by its time with the measurement
    assert lines[6] == f"| the main job's 2 runs together | {share:.1%} | 12.00 s | 13.10 s | {13.1 / 12:.3f}x |"


def test_data_checks_table_gives_the_median_share_of_each_command():
    cases = [("MNIST-1D", [(10.0, 0.01, 2), (12.0, 0.03, 2), (30.0, 0.02, 2)])]
    [line] = [row for row in bench_data_checks.table(cases, repeats=3).splitlines() if row.startswith("| MNIST")]
    assert line == "| MNIST-1D | 12.0 s | 20.0 ms (2 calls) | 0.10% |"  # median of 0.1%, 0.25%, 0.067%


def test_tracking_table_takes_the_median_of_each_rounds_cost_and_says_whether_the_bound_holds():
    table, verdict = bench_tracking.tables({"off": [10.0, 20.0, 11.0], "mlflow": [10.4, 20.2, 12.1]}, made=2.0,
                                           again=1.5, command="python -m harness batch_size=32,64 -m", rounds=3)
    row = re.search(r"median of 3 \| ([\d.]+) s \| ([\d.]+) s \| ([+-][\d.]+)% \|", table)
    assert row.groups() == ("11.0", "12.1", "+4.0")  # the rounds' costs +4%, +1%, +10%: their median
    assert "Each round's cost: +4.0%, +1.0%, +10.0%" in verdict
    bound = f"The bound is {bench_tracking.LIMIT:.0%}: {'met' if 0.04 <= bench_tracking.LIMIT else 'NOT met'}."
    assert bound in verdict
    assert "(+0.5 s, 4.5% of the job)" in verdict


def test_sweep_tables_give_the_seeds_ratio_throughput_and_phases():
    walls = {"3 seeds": [30.0, 33.0, 90.0], "1 seed": [11.0, 10.0, 12.0], bench_sweep.FRESH: []}
    where = [{"runs": 20.0, "report": 2.0}, {"runs": 22.0, "report": 1.0}, {"runs": 21.0, "report": 3.0}]
    table, breakdown = bench_sweep.tables(walls, {"3 seeds": 12, "1 seed": 4}, where, serial=[100.0, 90.0, 80.0],
                                          parallel=[170.0, 160.0, 150.0], memory=[700.0, 850.0], repeats=3, slots=2,
                                          smoke=False)
    assert "| main job `python -m harness batch_size=8,32,64,128 -m` (3 seeds, 12 runs), wall time | 33.0 s |" in table
    assert "| 3 seeds ÷ 1 seed | 3.00x |" in table
    assert "| 3 seeds with a fresh process per run (`hydra.launcher.reuse_processes=false`) | not run in a smoke " \
           "round |" in table
    assert "| two equal runs, throughput with n_jobs=2 ÷ n_jobs=1 | 1.78x |" in table  # 160 / 90
    assert "| peak memory of one run (largest seen) | 850 MB |" in table
    assert breakdown.splitlines()[-2:] == ["| runs | 21.0 |", "| report | 2.0 |"]


def test_report_and_plan_rows():
    assert bench_report.sweep_row(1000, 20, (4.25, 1.5, 2_400_000, 1.0, 3.0)) == \
        "| 1,000 runs, 20 facets | 4.2 s | 1.5 s | 2.4 MB | 1.0 s | 3.0 s |"
    assert bench_report.table([bench_report.index_row(3, 0.5)]).splitlines()[-1] == \
        "| `reports/index.html` over 3 sweeps (12 runs each) | 0.5 s | – | – | – | – |"
    row = bench_plan.row(10000, None, "not measured", (2.5, 0.00012, 640.0))
    assert row == "| 10,000 | not measured | – | – | 2.5 s | 0.12 ms | 640 MB |"
    assert bench_plan.row(100, (float("nan"), 0.001, 100.0), "", (1.0, 0.0001, 90.0)).startswith(
        "| 100 | not within the timeout | 1.00 ms | 100 MB |")
    assert bench_plan.table([row], "0f707c8", "abc1234").splitlines()[0].startswith(
        "| jobs | before (0f707c8): first run")


def test_backends_tables_compare_the_medians_of_the_two_backends():
    results = {}
    for backend, step, plain in (("tensorflow", [2.0, 3.0, 9.0], [1.0, 1.0, 1.0]), ("jax", [1.0, 1.5, 1.2], [2, 2, 2])):
        results[(backend, 32, "step_ms")], results[(backend, 32, "plain_ms")] = step, plain
        results[(backend, 32, "first_extra")], results[(backend, 32, "process")] = [1.0], [10.0]
    speed, agreement = bench_backends.tables(results, [32], 2, 3, {"tensorflow": {}, "jax": {}}, {},
                                             ["| 8 | 0.900 ± 0.010 | 0.905 ± 0.012 | yes |"])
    assert "| harness, ms per training step at batch 32 | 3.00 ms | 1.20 ms | 0.40x |" in speed
    assert "| plain Keras `fit`, ms per step at batch 32 | 1.00 ms | 2.00 ms | 2.00x |" in speed
    assert agreement.splitlines()[-1] == "| 8 | 0.900 ± 0.010 | 0.905 ± 0.012 | yes |"


def test_diagnose_matrix_row_says_whether_the_case_came_out_as_expected():
    found = {"drop": {"value": 0.3, "low": 0.1, "high": 0.5},
             "parts": [{"name": "fewer_updates", "value": 0.25, "low": 0.2, "high": 0.3},
                       {"name": "remains", "value": 0.05, "low": None, "high": None}],
             "checks": [{"name": "order", "flagged": False}, {"name": "label_shift", "flagged": True}]}
    case = diagnose_matrix.Case("3. class imbalance", ("imbalance=0.9", "probes=false"), largest="fewer_updates",
                                flagged=frozenset({"label_shift"}))
    assert diagnose_matrix.row(case, found, wall=100.0, checks=2.0) == (
        "| 3. class imbalance:<br>`imbalance=0.9` | +0.300 [+0.100, +0.500] | fewer_updates +0.250 [+0.200, +0.300]"
        "<br>remains +0.050 | label_shift | yes: fewer_updates the largest part; flagged: label_shift | 2.0% | "
        "100 s |")
    found["checks"][0]["flagged"] = True  # a check the case does not expect
    assert "| no: fewer_updates" in diagnose_matrix.row(case, found, wall=100.0, checks=2.0)


def test_recipes_table_gives_each_recipes_interval_and_its_time_over_constant_adams_at_the_same_batch():
    import pandas as pd

    runs = pd.DataFrame([
        {"batch": b, "optimizer": o, "schedule": s, "seed": seed, "val_acc": acc + 0.01 * seed, "seconds": sec}
        for b, o, s, acc, secs in [(8, "adam", "constant", 0.90, (10.0, 11.0, 30.0)),
                                   (8, "lamb", "cosine", 0.92, (12.0, 13.0, 14.0)),
                                   (128, "adam", "constant", 0.80, (2.0, 2.0, 9.0)),
                                   (128, "lamb", "cosine", 0.91, (3.0, 3.0, 3.0))]
        for seed, sec in enumerate(secs)])
    found = {(r["optimizer"], r["batch"]): r for r in bench_recipes.rows(runs)}
    assert found[("lamb", 8)]["time_ratio"] == pytest.approx(13.0 / 11.0)  # medians: 30 s does not count
    assert found[("lamb", 128)]["time_ratio"] == pytest.approx(1.5) and found[("adam", 128)]["time_ratio"] == 1.0
    assert found[("lamb", 128)]["val_acc"] == pytest.approx(0.92) and found[("lamb", 128)]["seeds"] == 3
    half = 4.3027 * 0.01 / 3 ** 0.5  # t(0.975, 2) x sd / sqrt(3) of 0.91, 0.92, 0.93
    assert found[("lamb", 128)]["low"] == pytest.approx(0.92 - half, abs=1e-4)
    text = bench_recipes.table(list(found.values()))
    assert text.splitlines()[0].startswith("| `optimizer` | `lr_schedule` | batch 8: val_acc [95% CI]")
    assert "| `lamb` | `cosine` | 0.930 [" in text and "1.18x the time | 0.920 [" in text


def test_study_cost_sums_run_seconds_by_round_and_gives_choose_in_its_own_baseline_runs(tmp_path):
    from benchmarks import study_cost

    sweep = tmp_path / "sweep"
    resumed = [None, None, None, None, 2]  # the last continued a run paused after epoch 2: 3 epochs of its own
    timings = [{"import": 2.0, "training": 2.5, "evaluation": 0.5}, {"training": 3.5, "evaluation": 0.5},
               {"training": 2.0}, {"import": 1.5, "training": 0.5}, {"training": 1.0, "evaluation": 0.25}]
    for job, (round_, seconds) in enumerate([(1, 5.0), (1, 7.0), (2, 3.0), (3, 2.5), (3, 2.5)]):
        (sweep / str(job)).mkdir(parents=True)
        (sweep / str(job) / "run.json").write_text(json.dumps({"run_seconds": seconds, "epochs_completed": 5,
                                                               "resumed_from_epoch": resumed[job],
                                                               "timings": timings[job]}))
    (sweep / "sweep.json").write_text(json.dumps({"jobs": [{"job": str(j), "round": r} for j, r in
                                                           enumerate([1, 1, 2, 3, 3])],
                                                  "choose": {"target": None, "settings": {}}}))
    found = study_cost.cost(sweep)
    assert found == {"runs": 5, "seconds": 20.0, "rounds": {1: 12.0, 2: 3.0, 3: 5.0}, "baseline": 6.0,
                     "epochs": 23, "stages": ["baseline", "candidates", "grid", "confirm", "time", "check"],
                     "parts": {1: {"runs": 2, "import": 2.0, "training": 6.0, "evaluation": 1.0},
                               2: {"runs": 1, "import": 0.0, "training": 2.0, "evaluation": 0.0},
                               3: {"runs": 2, "import": 1.5, "training": 1.5, "evaluation": 0.25}}}
    assert study_cost.row("choose", "this tree", [found, {**found, "seconds": 30.0}], ["batch 128, linear"]) == (
        "| `+study=choose` | this tree | 5 | 23 | 25 s (20, 30) | 12 + 3 + 5 | 4.2x (6.00 s a run) | batch 128, "
        "linear |")
    rows = study_cost.where_it_goes([found]).splitlines()
    assert rows[4:7] == ["| 1. baseline | 2 | 12.0 s | 2.0 s | 6.0 s | 1.0 s | 2.0x |",
                         "| 2. candidates | 1 | 3.0 s | 0.0 s | 2.0 s | 0.0 s | 0.5x |",
                         "| 3. grid | 2 | 5.0 s | 1.5 s | 1.5 s | 0.2 s | 0.8x |"]
    assert rows[-1].startswith("Its training alone is 3.2x the mean training of its baseline runs")  # 9.5 / 3
    assert "Its timing" not in rows[-1]  # an older sweep: no round timed each run as printed
    measured = {**found, "stages": ["baseline", "candidates", "confirm"]}  # round 3 confirms: each run timed alone
    assert study_cost.where_it_goes([measured], "choose model.width=4").splitlines()[-1].endswith(
        "Its timing, the confirm round (2 runs, each as printed, alone, in a fresh process), costs 5 s, 0.8x its "
        "baseline runs, 2 s of it importing Keras and its backend: what a time that is the number the printed "
        "command records costs.")
    assert study_cost.row("choose model.width=4", "this tree", [found], ["batch 32, as is"]) == (
        "| `+study=choose model.width=4` | this tree | 5 | 23 | 20 s (20) | 12 + 3 + 5 | 3.3x (6.00 s a run) | batch 32, "
        "as is |")  # a case of choose: in its own baseline runs too
    assert set(study_cost.COMMANDS) == {"choose", "choose model.width=4", "recover"}


def test_recover_matrix_row_gives_the_verdict_and_the_budget_line_from_recovery_json():
    from benchmarks import recover_matrix

    case = recover_matrix.Case("3. batch 8 vs 512", ("batch_size=8,512", "epochs=5", "probes=false"))
    found = {"drop": {"value": 0.553, "low": 0.479, "high": 0.627}, "recipe_trial": 4,
             "recipe": {"lr_factor": 31.55, "optimizer": None}, "gap": {"value": 0.34, "low": 0.24, "high": 0.44},
             "recovered": {"value": 0.39, "low": 0.15, "high": 0.59}, "verdict": "partly", "shown": False,
             "budget": {"asked": True, "small_tune_acc": 0.9, "lengths": [
                 {"epochs": 10, "multiple": 2.0, "tune_acc": 0.85, "reached": False, "wall_ratio": 0.3},
                 {"epochs": 20, "multiple": 4.0, "tune_acc": 0.91, "reached": True, "wall_ratio": 0.61}]}}
    assert recover_matrix.row(case, found, wall=90.0, runs=34) == (
        "| 3. batch 8 vs 512:<br>`batch_size=8,512` `epochs=5` | +0.553 [+0.479, +0.627] | trial 4: `lr_factor=31.55` "
        "| +0.340 [+0.240, +0.440] | 39% [15%, 59%] | – | partly | b's tune_acc reached at 4x the epochs (20), 0.61x "
        "b's wall time | 34 | – | 1.5 min |")
    found["trials"] = [{"rule": None}] * 4 + [{"rule": "linear"}]
    assert "| trial 4 (the linear rule): `lr_factor=31.55` | " in recover_matrix.row(
        case, found, 90.0, 34, "linear -0.002, sqrt -0.040; search +0.001 (guided trial 20)")
    found["budget"].update(rule_trial=16, rule_lengths=[
        {"epochs": 10, "multiple": 2.0, "tune_acc": 0.92, "reached": True, "wall_ratio": 0.31}])
    assert "| b's tune_acc reached at 2x the epochs (10) by trial 16, 0.31x b's wall time |" in recover_matrix.row(
        case, found, 90.0, 34)  # the rule beside the recipe reached it first
    found.update(verdict="undecided", seeds_needed=6)
    assert "| undecided (about 6 seeds would decide it) |" in recover_matrix.row(case, found, 90.0, 34)
    found.update(verdict="recovered", shown=False, seeds_needed=15)
    assert "| recovered, not shown (about 15 seeds would show it) | not needed |" in recover_matrix.row(case, found,
                                                                                                          90.0, 34)
    found.update(verdict=None, recipe_trial=None, recipe=None, gap=None, recovered=None)
    assert "| – | – | – | – | no verdict | no verdict |" in recover_matrix.row(case, found, 90.0, 34)
    assert recover_matrix.row(case, found, 90.0, 34, cost="79 s (-36% against 124 s before, which read recovered)") \
        .endswith("| 34 | 79 s (-36% against 124 s before, which read recovered) | 1.5 min |")


def _share_sweep(seeds, k, round_, span, wall, busy, exit_code=0, completed=None, runs=4, fit=2.0, speed=100.0,
                 deadline=False, failed=0):
    return {"round": round_, "seeds": seeds, "k": k, "exit_code": exit_code, "deadline": deadline, "failed": failed,
            "wall_s": wall, "gpu_busy": busy,
            "gpu_memory_mib": 1024.0 * k, "runs": runs, "completed": runs if completed is None else completed,
            "span_s": span, "fit_s": fit, "run_s": fit + 3, "epochs": 15, "devices": ["gpu:0"],
            "speeds": {"8": speed * 10, "128": speed * 100}}


def test_gpu_share_table_takes_medians_of_clean_rounds_and_the_ratio_to_one_run_per_gpu():
    results = {"machine": "NVIDIA H200 with JAX 0.11.2, 16 CPU cores",
               "commands": ["scripts/gpu_smoke.sh share WHEELS"],
               "sweeps": [_share_sweep("0", 4, "warm", 90.0, 99.0, 50.0),  # the warm-up times nothing
                          _share_sweep("0", 1, "1", 40.0, 48.0, 5.0, speed=100.0),
                          _share_sweep("0", 4, "1", 10.0, 16.0, 20.0, speed=90.0),
                          _share_sweep("0", 1, "2", 44.0, 50.0, 7.0, speed=110.0),
                          _share_sweep("0", 4, "2", 12.0, 18.0, 30.0, speed=80.0),
                          _share_sweep("0", 1, "3", 100.0, 120.0, 6.0, speed=120.0),  # mean 61.3, median 44
                          _share_sweep("0", 4, "3", 11.0, 17.0, 25.0, speed=70.0),
                          _share_sweep("0,1,2", 12, "1", 3.0, 9.0, 60.0, exit_code=143, completed=9, runs=12,
                                       deadline=True)]}
    text = bench_gpu_share.table(results)
    assert text.startswith("Measured by `scripts/gpu_smoke.sh share WHEELS` on NVIDIA H200 with JAX 0.11.2")
    lines = text.splitlines()
    header = next(line for line in lines if line.startswith("| runs |"))
    assert "samples/s (thousands) at batch 8 / 128" in header
    assert "| 4 (seed=0) | 1 | 3 | 44.0 s (1.00x) | 50.0 s | 2.0 s / 5.0 s | 1.1 / 11.0 | 6% · 1 GiB |" in lines
    # 11 / 44, the ratio of the medians (not of the means, 11 / 61.3)
    assert "| 4 (seed=0) | 4 | 3 | 11.0 s (0.25x) | 17.0 s | 2.0 s / 5.0 s | 0.8 / 8.0 | 25% · 4 GiB |" in lines
    assert not any(line.startswith("| 12 ") for line in lines)  # the cut sweep times nothing
    assert lines[-1] == "Left out: seed=0,1,2 K=12 round 1 (9 of 12 runs completed; stopped at the deadline)."


def test_gpu_share_reads_a_sweep_folder_and_merges_measurements(tmp_path):
    import json

    import pandas as pd

    sweep = tmp_path / "s0-k4-1"
    for job, (batch, start, end) in enumerate([(8, "10:00:00", "10:00:07"), (128, "10:00:02", "10:00:12")]):
        (sweep / str(job)).mkdir(parents=True)
        (sweep / str(job) / "run.json").write_text(json.dumps({
            "status": "completed", "config": {"batch_size": batch, "epochs": 3}, "fit_seconds": 2.0 + job,
            "run_seconds": 6.0, "started_at": f"2026-12-04T{start}+00:00", "finished_at": f"2026-12-04T{end}+00:00",
            "environment": {"devices": ["gpu:0"], "share": {"XLA_PYTHON_CLIENT_MEM_FRACTION": "0.225"}}}))
        # epoch 1 (compiling) is left out of the median
        pd.DataFrame({"samples_per_second": [1.0, 100.0 * (job + 1), 300.0 * (job + 1)]}).to_parquet(
            sweep / str(job) / "metrics.parquet")
    read = bench_gpu_share.read_sweep(sweep)
    assert read["span_s"] == 12.0 and read["runs"] == read["completed"] == 2 and read["fit_s"] == 2.5
    assert read["speeds"] == {"8": 200.0, "128": 400.0} and read["devices"] == ["gpu:0"]
    for name, command in (("a", "one"), ("b", "two")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "results.json").write_text(json.dumps(
            {"machine": "H200, 16 CPU cores", "date": "2026-12-0" + ("3" if name == "a" else "4"),
             "commands": [command], "sweeps": [{"k": 1}]}))
    both = bench_gpu_share.merged([tmp_path / "a", tmp_path / "b"])
    assert both["commands"] == ["one", "two"] and both["date"] == "2026-12-04" and len(both["sweeps"]) == 2


@pytest.mark.parametrize("completed, exit_code, deadline, failed, fails", [
    (4, 0, False, 0, False), (3, 1, False, 1, True), (0, 2, False, 0, True),  # exit 2: refused, nothing ran
    (2, 143, True, 0, False), (2, 143, True, 1, True)])  # the deadline excuses the runs it stopped, not a failed one
def test_gpu_share_fails_when_a_run_failed_but_not_when_the_deadline_stopped_a_sweep(
        tmp_path, monkeypatch, capsys, completed, exit_code, deadline, failed, fails):
    def sweep(folder, seeds, k, gpus, extra, timeout):  # what run_sweep gives, without a GPU or a run
        row = _share_sweep(seeds, k, None, 10.0, 12.0, 5.0, exit_code=exit_code, completed=completed,
                           runs=0 if exit_code == 2 else 4, deadline=deadline, failed=failed)
        folders.append(folder.name)
        return {key: value for key, value in row.items() if key != "round"}  # measure() names the round

    folders: list[str] = []
    monkeypatch.setattr(bench_gpu_share, "run_sweep", sweep)
    monkeypatch.setattr(bench_gpu_share, "machine", lambda: "test, 2 CPU cores")
    argv = ["--out", str(tmp_path), "--k", "1", "--repeats", "1"]
    if fails:
        with pytest.raises(SystemExit) as done:
            bench_gpu_share.main(argv)
        assert done.value.code == 1 and "FAILED" in capsys.readouterr().out
    else:
        bench_gpu_share.main(argv)
        assert "FAILED" not in capsys.readouterr().out
    try:  # the same folder measured again: every sweep keeps a folder of its own
        bench_gpu_share.main([*argv, "--seeds", "0,1,2"])
    except SystemExit:
        pass
    assert folders == ["00-s0-k1-warm", "01-s0-k1-1", "02-s0_1_2-k1-warm", "03-s0_1_2-k1-1"]


def _floor_runs(val_accs, key="rows"):
    return [{"run_id": f"s/{i}", "config": {"batch_size": 8, "seed": i}, "batch_size": 8, "seed": i,
             key: [{"val_acc": v} for v in accs]} for i, accs in enumerate(val_accs)]


def test_the_floor_must_agree_with_the_jax_harness_and_a_jax_sweep_exactly():
    reference = _floor_runs([[0.5, 0.6], [0.4, 0.7]])
    assert bench_floor.check_agreement(reference, floor_runs=_floor_runs([[0.5, 0.605], [0.4, 0.7]])) == \
        pytest.approx(0.005)
    with pytest.raises(AssertionError, match="s/1: the floor's val_acc is 0.0200 from the harness's"):
        bench_floor.check_agreement(reference, floor_runs=_floor_runs([[0.5, 0.6], [0.42, 0.7]]))
    assert bench_floor.check_agreement(reference, harness_runs=_floor_runs([[0.5, 0.6], [0.4, 0.7]])) == 0
    with pytest.raises(AssertionError, match="s/0: val_acc"):  # with and without probes: the same training
        bench_floor.check_agreement(reference, harness_runs=_floor_runs([[0.5, 0.6001], [0.4, 0.7]]))


def test_floor_table_gives_medians_spreads_and_ratios_to_the_floor_and_to_probes_off():
    walls = {name: [10.0, 11.0, 40.0] for name in bench_floor.VARIANTS}
    walls[bench_floor.FLOOR] = [8.0, 10.0, 9.0]
    walls[bench_floor.TF_ON] = [13.2, 12.1, 99.0]
    phases = {name: [dict.fromkeys(bench_floor.PHASES, 1.0)] * 3 for name in bench_floor.VARIANTS}
    text = bench_floor.table(walls, phases, runs=12, epochs=15, worst=0.0, smoke=False)
    median, spread, floor, probes = text.splitlines()[4:8]
    assert "| wall time, median | 11.0 s | 11.0 s | 9.0 s |" in median
    assert "8.0–10.0 s" in spread and "12.1–99.0 s" in spread
    assert floor.endswith("| 1.22x | 1.22x | 1.00x | 1.22x | 1.22x | 1.47x |")
    assert probes.endswith("| – | – | – | 1.00x | – | 1.20x |")  # 13.2 / 11.0 on TensorFlow
    assert "| between runs, idle slots | 1.0 | 1.0 | 1.0 | 1.0 | 1.0 | 1.0 |" in text
    # the probes' share: end-of-run slot-seconds over 2 slots, against the probes=false job's median wall time
    phases[bench_floor.TF_ON] = [{**dict.fromkeys(bench_floor.PHASES, 1.0), "end-of-run probes": 4.4,
                                  bench_floor.PHASES[-1]: 3.5}] * 3
    said = bench_floor.probes_share(walls, phases, bench_floor.TF_ON)
    assert said.startswith("harness, TensorFlow, default probes: the end-of-run probes alone are 4.4 slot-seconds, "
                           "2.2 s of wall time with 2 runs at once, 20% of the job without probes (11.0 s)")
    assert said.endswith("and +2.5 s after the last run (the interpolation, the report's probe figures).")
    phases[bench_floor.TF_ON] = [{**phases[bench_floor.TF_ON][0], bench_floor.PRODUCTS: n} for n in (23, 18, 23)]
    assert bench_floor.probes_share(walls, phases, bench_floor.TF_ON).startswith(
        "harness, TensorFlow, default probes: the end-of-run probes (23 Hessian-vector products a run and the two "
        "sharpness searches) alone are 4.4 slot-seconds")


def test_ramp_table_sets_the_ramps_median_against_the_sum_of_its_phases_medians():
    names = list(bench_ramp.variants())
    assert names == ["ramp", "batch 32 alone, 2 epochs", "batch 128 alone, 2 epochs", "batch 512 alone, 2 epochs"]
    seconds = {"ramp": [3.0, 2.9, 9.0], names[1]: [1.5, 1.4, 1.6], names[2]: [0.6, 0.7, 0.5], names[3]: [0.3, 0.2, 5.0]}
    text = bench_ramp.table(seconds, {name: 1 for name in names[1:]} | {"ramp": 3}, repeats=3)
    assert "| batch 32 alone, 2 epochs | 1.50 s | 1 |" in text
    assert "| the phases together | 2.40 s | 3 |" in text  # 1.5 + 0.6 + 0.3, not the means' sum
    assert "| the ramp, one fit per phase | 3.00 s | 3 |" in text
    assert "| ramp ÷ its phases | 1.250x | |" in text


def test_ramp_rules_table_pairs_the_seeds_and_says_what_the_paired_interval_shows():
    import pandas as pd

    from benchmarks import ramp_rules

    decaying = pd.DataFrame({"val_acc": [0.60, 0.70, 0.65], "step": [2000, 2000, 2000]}, index=[0, 1, 2])
    ramp = pd.DataFrame({"val_acc": [0.62, 0.73, 0.66], "step": [1060, 1070, 1050]}, index=[2, 1, 0])  # by seed
    text = ramp_rules.table(decaying, ramp, ["lr_schedule=step"], ["batch_schedule=[[0,32],[8,320]]"])
    assert "| step decay | 0.650 [" in text and "| 2000 [2000, 2000] |" in text and "| 1060 [1050, 1070] |" in text
    # seed by seed (the ramp's rows in another order): +0.06, +0.03, -0.03, a mean of +0.02 whose interval holds 0
    assert "| ramp − decay, paired | +0.020 [" in text and text.endswith("Neither is shown better: the paired "
                                                                           "interval holds 0.")
    above = ramp_rules.table(decaying, decaying.assign(val_acc=decaying["val_acc"] + [0.02, 0.03, 0.025]), [], [],
                             ("cosine decay", "Seesaw's ramp"))
    assert "| cosine decay | 0.650 [" in above
    assert above.endswith("Seesaw's ramp reached a higher val_acc: the paired interval lies above 0.")


def test_calibration_counts_the_reruns_inside_their_stated_interval_and_pairs_the_speed_up_by_seed():
    """A rerun that missed is never inside; the speed-up of the reruns is the geometric mean of b's over the answer's
    on the same seed (2 and 8 on two seeds: 4x, where the mean of the ratios of means would read 5x)."""
    from benchmarks import calibration

    band = {"low": 0.5, "high": 2.0, "center": 1.0, "level": 0.95, "n": 3}
    case = {"case": "one", "speedup": {"value": 3.0, "low": 2.0, "high": 5.0, "n": 3}, "runs": [
        {"which": "answer", "seed": 5, "seconds": 1.0, **band}, {"which": "answer", "seed": 6, "seconds": 0.5, **band},
        {"which": "b as it is", "seed": 5, "seconds": 2.0, **band},
        {"which": "b as it is", "seed": 6, "seconds": 4.0, **band}]}
    missed = {"case": "two", "speedup": {"value": 2.0, "low": 0.5, "high": 9.0, "n": 3}, "runs": [
        {"which": "answer", "seed": 5, "seconds": None, **band}, {"which": "b as it is", "seed": 5, "seconds": 1.2,
                                                                  **band}]}
    text = calibration.table([case, missed])
    assert "| one | answer | 5 | 1 | 1 | +0% | [0.5, 2] | yes |" in text
    assert "| one | b as it is | 6 | 4 | 1 | +300% | [0.5, 2] | no |" in text
    assert "| two | answer | 5 | missed | 1 |  | [0.5, 2] | no |" in text
    assert "**4 of 6 reruns** landed inside their stated 95% prediction interval." in text
    assert "| one | 4x | 3x | [2, 5] (3 seeds) | yes |" in text  # sqrt(2 x 8)
    assert "| two | a rerun missed | 2x | [0.5, 9] (3 seeds) | no |" in text
