"""The report's Why section (harness.assess.why, harness.render.plots.why) on constructed sweeps with made-up probe files."""
import json
import math

import numpy as np
import pandas as pd
import pytest

from harness.assess import why
from harness.assess.analysis import BATCH
from harness.assess.assessment import assess
from harness.report import html as report
from harness.render.plots import why as why_plots
from tests.helpers import layout, page
from tests.helpers.sweeps import add_probes, batch_sweep, make_run, probe_values, study_sweep


def eigenvalues(by_batch: dict[int, float]):
    """A probes.json maker whose top eigenvalue is by_batch[batch] (+0.5 per seed), sharpness half of it."""
    return lambda batch, seed: {**probe_values(batch, seed), "hessian_top_eigenvalue": by_batch[batch] + 0.5 * seed,
                                "sharpness": (by_batch[batch] + 0.5 * seed) / 2}


def main_sweep(path, seeds: int, sizes=(8, 32, 64, 128), epochs: int = 15):
    """The main job's runs (`batch_size=8,32,64,128 seed=... -m`, 15 epochs) as constructed folders, with probes."""
    job = 0
    for size in sizes:
        for seed in range(seeds):
            val = [0.93 * (e + 1) / epochs - 0.01 * math.log2(size / 8) for e in range(epochs)]
            make_run(path, job, batch_size=size, seed=seed, epochs=epochs, val=val)
            job += 1
    return add_probes(path)


def test_a_clearly_sharper_large_batch_minimum_is_called_sharper_with_its_ratio(tmp_path):
    sweep = add_probes(batch_sweep(tmp_path / "s", {8: [0.9] * 3, 128: [0.8] * 3}), eigenvalues({8: 27, 128: 85}))
    [reading] = assess(sweep).why.readings
    sharp = reading.lines[0]
    assert sharp.startswith("The batch-128 minimum is 3.1x sharper than batch-8's (a ratio of the seeds' geometric "
                            "means; mean top Hessian eigenvalue 85.5 vs "
                            "27.5; sharpness 42.8 vs 13.8; 95% interval of the ratio [")
    assert "on the log scale over seeds, n = 3 and 3" in sharp


def test_equal_eigenvalues_say_the_data_show_no_sharpness_difference(tmp_path):
    sweep = add_probes(batch_sweep(tmp_path / "s", {8: [0.9] * 3, 128: [0.8] * 3}), eigenvalues({8: 27, 128: 27}))
    sharp = assess(sweep).why.readings[0].lines[0]
    assert sharp.startswith("The data do not show a sharpness difference between the batch-128 and the batch-8 "
                            "minimum (top Hessian eigenvalue 27.5 vs 27.5")
    assert "ratio 1x; 95% interval of the ratio [" in sharp


def test_one_seed_is_judged_by_a_stated_ratio_and_called_indicative(tmp_path):
    sweep = add_probes(batch_sweep(tmp_path / "s", {8: [0.9], 128: [0.8]}), eigenvalues({8: 20, 128: 60}))
    sharp = assess(sweep).why.readings[0].lines[0]
    assert "3x sharper" in sharp and "n = 1 seed per batch size" in sharp and "indicative only" in sharp
    assert f"{why.SINGLE_SEED_RATIO}x" in sharp
    same = add_probes(batch_sweep(tmp_path / "t", {8: [0.9], 128: [0.8]}), eigenvalues({8: 20, 128: 24}))
    assert assess(same).why.readings[0].lines[0].startswith("The data do not show a sharpness difference")


def test_the_noise_scale_is_set_against_the_swept_batch_sizes():
    epochs = pd.DataFrame({"run_id": ["a", "a", "b", "b"], "epoch": [1, 2, 1, 2], BATCH: [8, 8, 128, 128],
                           "noise_scale_smoothed": [10.0, 40.0, 12.0, 60.0]})
    line = why.noise_scale_sentence(epochs)
    assert "B_simple ≈ 50" in line and "mean over 2 runs" in line and "batch 128 lies above it" in line
    assert "Batches above ~B_noise gain little per step" in line and "critical batch size" in line


def test_the_distance_sentence_names_each_batch_size_and_the_share_travelled(tmp_path):
    line = assess(main_sweep(tmp_path / "m", seeds=1)).why.readings[0].lines[2]
    assert line.startswith("Distance from the initial weights by the final epoch")
    assert "batch 8: 17.8 after 7,500 steps" in line and "batch 128: 12.4 after 480 steps" in line  # 2·ln(1 + step)
    assert all(f"batch {b}: " in line for b in (8, 32, 64, 128)) and "in the same 15 epochs" in line


def test_ema_and_the_smoothed_noise_scale_by_hand():
    # beta 0.5, from zero, bias-corrected: 1 -> 0.5/0.5 = 1; 3 -> (0.25 + 1.5)/0.75 = 7/3
    assert np.allclose(why.ema(pd.Series([1.0, 3.0]), 0.5), [1.0, 7 / 3])
    assert np.allclose(why.ema(pd.Series([1.0, float("nan"), 3.0]), 0.5), [1.0, 1.0, 7 / 3])  # a gap holds
    # tr(Σ) 2, 4, 6 and |G|² 1, -1, 1 smoothed apart: ratios 1/0.5, 2.5/-0.25 (not positive: NaN), 4.25/0.375
    run = pd.DataFrame({"grad_trace_cov": [2.0, 4.0, 6.0], "grad_norm_sq": [1.0, -1.0, 1.0]})
    assert np.allclose(why.smoothed_noise_scale(run, 0.5), [2.0, np.nan, 4.25 / 0.375], equal_nan=True)


def test_a_negative_gradient_norm_is_an_inconclusive_noise_scale_with_its_count_never_averaged_in():
    epochs = pd.DataFrame({"run_id": ["a", "a", "b", "b"], "epoch": [1, 2, 1, 2], BATCH: [8, 8, 128, 128],
                           "grad_norm_sq": [1.0, 0.5, 1.0, -3.0],
                           "noise_scale_smoothed": [10.0, 40.0, 12.0, float("nan")]})  # b: |G|² smoothed below 0
    line = why.noise_scale_sentence(epochs)
    assert "B_simple ≈ 40" in line and "mean over 1 runs" in line
    assert "For 1 of 2 runs the smoothed |G|² came out zero or negative at the last epoch" in line
    assert "inconclusive and not in the mean" in line
    none = why.noise_scale_sentence(epochs.assign(noise_scale_smoothed=float("nan")))
    assert none.startswith("Gradient noise scale at the last epoch: inconclusive.") and "For 2 of 2 runs" in none


def test_a_trace_that_missed_its_error_or_spans_zero_is_reported_not_hidden(tmp_path):
    def probes(batch, seed):
        values = probe_values(batch, seed)
        if batch == 128 and seed == 0:  # stopped at its cap with a 30% error
            values.update(hessian_trace=10.0, trace_stderr=3.0, trace_converged=False)
        if batch == 128 and seed == 1:  # an indefinite Hessian whose trace is zero within its error
            values.update(hessian_trace=1.0, trace_stderr=2.0, trace_converged=False)
        if batch == 8 and seed == 1:
            values.update(eigen_converged=False)
        return values

    sweep = add_probes(batch_sweep(tmp_path / "s", {8: [0.9, 0.91], 128: [0.8, 0.81]}), probes)
    notes = " ".join(assess(sweep).why.notes)
    assert ("The Hessian trace did not reach a standard error of 5% within its cap of Hessian-vector products for 2 "
            "of 4 runs (s/2, s/3) (up to 200%).") in notes
    assert "The Hessian trace is inconclusive for 1 of 4 runs (s/3): its 95% interval spans zero (s/3: " in notes
    assert "The top eigenvalue's error bound stayed above 0.001 of it for 1 of 4 runs (s/1)" in notes
    html = report.build_report(sweep)
    assert "its 95% interval spans zero" in html and "did not reach a standard error of 5%" in html
    # the figure draws every run's trace with its interval: one dot per run, hollow where it did not converge
    figure = why_plots.curvature_vs_batch(assess(sweep).why.probes)
    trace_axes = [ax for ax in figure.axes if ax.get_title() == "Hessian trace"][0]
    [dots] = [c for c in trace_axes.collections if c.get_offsets().shape[0] == 4]
    hollow = [face[3] == 0 for face in dots.get_facecolors()]
    assert sum(hollow) == 2
    assert trace_axes.get_yscale() == "linear"  # a log axis would hide the interval that reaches below zero


def test_a_sweep_without_probes_says_so_in_one_line(tmp_path):
    sweep = batch_sweep(tmp_path / "s", {8: [0.9], 128: [0.8]}, probes=False)
    result = assess(sweep).why
    assert result.readings == [] and len(result.notes) == 1 and "(probes=false)" in result.notes[0]
    html = report.build_report(sweep)
    assert "No probe measurements in this sweep (probes=false)" in html
    assert html.count('src="data:image/png;base64,') == 4  # the usual figures, none of the Why section


def test_a_damaged_or_failed_probe_is_left_out_with_a_note_not_a_crash(tmp_path):
    sweep = add_probes(batch_sweep(tmp_path / "s", {8: [0.9, 0.91], 128: [0.8, 0.81]}))
    (sweep / "0" / "probes.json").write_text('{"hessian_top_eig')  # cut short by a full disk
    failed = {"probe_samples": 2048, "error": "ResourceExhaustedError: OOM"}  # no numbers, as the contract says
    (sweep / "3" / "probes.json").write_text(json.dumps(failed))
    (sweep / "interpolation.parquet").write_bytes(b"PAR1 not really")
    result = assess(sweep).why
    assert sorted(result.probes["run_id"]) == ["s/1", "s/2"]
    notes = " ".join(result.notes)
    assert "Left out: " in notes and "0/probes.json cannot be read" in notes
    assert "The final probe of s/3 failed: ResourceExhaustedError: OOM" in notes
    assert "interpolation.parquet cannot be read" in notes and result.interpolation is None
    html = report.build_report(sweep)
    assert "The final probe of s/3 failed" in html and "indicative only" in html  # one seed left at each end


def figures_are_legible(sweep) -> list[str]:
    drawn = why_plots.figures(assess(sweep))
    for title, fig, _ in drawn:
        assert layout.problems(fig) == [], title
    return [title for title, _, _ in drawn]


ALL = ["Sharpness of the final minimum vs batch size", "Between the two solutions",
       "Gradient noise scale over training", "Distance from the initial weights"]


@pytest.mark.parametrize("seeds", [1, 3])
def test_every_why_figure_of_the_main_job_is_laid_out_legibly(seeds, tmp_path):
    assert figures_are_legible(main_sweep(tmp_path / "m", seeds)) == ALL


def test_every_why_figure_of_a_faceted_study_is_laid_out_legibly_and_says_what_it_leaves_out(tmp_path):
    sweep = add_probes(study_sweep(tmp_path / "shuffle", "+study=shuffle"))  # shuffle x batch 8,32,128 x 3 seeds
    assert figures_are_legible(sweep) == ALL
    readings = assess(sweep).why.readings
    assert [r.subject for r in readings] == ["shuffle=False", "shuffle=True"]
    captions = {title: caption for title, _, caption in why_plots.figures(assess(sweep))}
    assert "4 of 6 pairs are drawn, taking each facet in turn." in captions["Between the two solutions"]
    # jobs are seed-major (the default seed sweep comes first), so the pairs are labelled seed first, as the real
    # interpolation's alphabetical labels are
    assert why_plots.first_pairs(assess(sweep).why.interpolation) == [
        "seed=0, shuffle=False", "seed=0, shuffle=True", "seed=1, shuffle=False", "seed=1, shuffle=True"]


def test_the_report_has_a_why_section_with_its_sentences_and_figures(tmp_path):
    parsed = page.parse(report.build_report(main_sweep(tmp_path / "m", seeds=3)))
    why_section = page.section(parsed, "beside")
    assert "The batch-128 minimum is 3.9x sharper than batch-8's" in why_section
    assert "Gradient noise scale at the last epoch" in why_section
    assert "Distance from the initial weights" in why_section
    assert "they do not show what caused it" in why_section  # a correlate, not a cause
    assert "the verdict names the command of +study=diagnose and of +study=recover for this setting" \
        in why_section  # a drop: it does (the studies that offer a next step, in their order)
    flat_sweep = batch_sweep(tmp_path / "flat", {8: [0.9, 0.9], 64: [0.9, 0.9]})
    flat = page.section(page.parse(report.build_report(flat_sweep)), "beside")
    assert ("a study of a small batch b against a large one B on your own setting, +study=diagnose batch_size=b,B "
            "or +study=recover batch_size=b,B") in flat  # no drop, no command for a setting named
    in_why = [img for node in page.section_nodes(parsed, "beside") if hasattr(node, "find_all")
              for img in ([node] if node.name == "img" else node.find_all("img"))]
    assert len(in_why) == 4 and len(parsed.find_all("img")) == 8


def test_the_figures_mark_the_two_solutions_and_every_swept_batch_size(tmp_path):
    result = assess(main_sweep(tmp_path / "m", seeds=1)).why
    loss_ax, acc_ax = why_plots.interpolation(result.interpolation).axes
    assert [t.get_text() for t in loss_ax.get_xticklabels()] == ["−1", "0\nbatch 8", "1\nbatch 128", "2"]
    assert [line.get_linestyle() for line in acc_ax.get_lines()[:2]] == ["-", "--"]  # train, validation
    assert loss_ax.get_yscale() == "log"
    [noise_ax] = why_plots.noise_scale_over_training(result.epochs).axes
    assert [t.get_text() for t in noise_ax.texts] == ["batch 8", "batch 32", "batch 64", "batch 128"]
    assert noise_ax.get_yscale() == "log"
    [distance_ax] = why_plots.distance_vs_steps(result.epochs).axes
    assert distance_ax.get_xscale() == "log" and distance_ax.get_xlabel() == "optimizer steps"
    sharp_ax = why_plots.curvature_vs_batch(result.probes).axes[0]
    assert [t.get_text() for t in sharp_ax.get_xticklabels()] == ["8", "32", "64", "128"]


def test_non_positive_eigenvalues_are_not_made_into_a_ratio(tmp_path):
    sweep = add_probes(batch_sweep(tmp_path / "s", {8: [0.9], 128: [0.8]}), eigenvalues({8: -3, 128: 50}))
    assert "not both positive" in assess(sweep).why.readings[0].lines[0]


def test_the_eigenvalues_ratio_interval_covers_the_true_ratio_at_its_level_at_three_seeds():
    """Log-normal eigenvalues, three seeds a side, the large batch's 3x the small's (a spread of 30% a seed): the
    ratio's 95% interval on the log scale covers 3 in 95% of 4,000 draws (within twice their binomial spread, and
    a point for Welch's approximate degrees of freedom); equal minima are called different at most as often."""
    import numpy as np

    from harness.assess.why import eigenvalue_ratio

    rng = np.random.default_rng(0)
    draws, covered, differ = 4000, 0, 0
    for _ in range(draws):
        small = 20 * np.exp(rng.normal(0, 0.3, 3))
        _, low, high = eigenvalue_ratio(3 * 20 * np.exp(rng.normal(0, 0.3, 3)), small)
        covered += low <= 3 <= high
        _, low, high = eigenvalue_ratio(20 * np.exp(rng.normal(0, 0.3, 3)), small)
        differ += not low <= 1 <= high
    slack = 2 * math.sqrt(0.05 * 0.95 / draws) + 0.01
    assert covered / draws >= 0.95 - slack and differ / draws <= 0.05 + slack, (covered, differ)
