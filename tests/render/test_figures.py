"""Each plot function (harness.render.plots.sweep) on a small constructed sweep: a Figure with the expected axes and data."""
import numpy as np
import pytest
from matplotlib.figure import Figure

from harness.assess.assessment import assess
from harness.assess.verdicts import CLAIM
from harness.render.plots import sweep as plots
from tests.helpers.sweeps import batch_sweep, make_run

FINALS = {8: [0.90, 0.92], 128: [0.80, 0.84]}


@pytest.fixture
def sweep(tmp_path):
    """Two batch sizes, two seeds each, one facet; as the report sees it (with its `facet` column)."""
    return assess(batch_sweep(tmp_path / "s", FINALS))


@pytest.fixture
def faceted(tmp_path):
    """The same two batch sizes with shuffle=true and shuffle=false: two facets."""
    sweep = tmp_path / "f"
    job = 0
    for shuffle in (True, False):
        for batch in (8, 128):
            make_run(sweep, job, batch_size=batch, shuffle=shuffle, val=(0.5, 0.6 if shuffle else 0.3))
            job += 1
    return assess(sweep)


def visible(fig):
    return [ax for ax in fig.axes if ax.get_visible()]


def lines_by_label(ax):
    """Each plotted line by its legend label (an error-bar plot's data line by its container's label)."""
    bars = {c.get_label(): c.lines[0] for c in ax.containers}
    return bars or {line.get_label(): line for line in ax.get_lines()}


def test_learning_curves_have_a_panel_per_batch_size_with_the_three_accuracies(sweep):
    fig = plots.learning_curves(sweep.df)
    assert isinstance(fig, Figure)
    small, large = visible(fig)
    assert (small.get_title(), large.get_title()) == ("batch 8 (n=2)", "batch 128 (n=2)")
    assert small.get_ylabel() == "accuracy" and large.get_xlabel() == "epoch"
    labels = [label for _, label, _ in plots.CURVES]
    assert list(lines_by_label(small)) == labels and list(lines_by_label(large)) == labels
    assert [t.get_text() for t in fig.legends[0].get_texts()] == labels
    val = lines_by_label(small)["val_acc"]  # the mean over seeds at each epoch
    assert list(val.get_xdata()) == [1, 2, 3]
    assert np.allclose(val.get_ydata(), [np.mean(FINALS[8]) + d for d in (-0.2, -0.05, 0.0)])


def test_learning_curves_give_each_facet_and_batch_size_a_panel_of_one_grid(faceted):
    fig = plots.learning_curves(faceted.df)
    titles = [ax.get_title() for ax in visible(fig)]
    assert titles == ["batch 8 · shuffle=False (n=1)", "batch 128 · shuffle=False (n=1)",
                      "batch 8 · shuffle=True (n=1)", "batch 128 · shuffle=True (n=1)"]
    assert len({ax.get_position().y0 for ax in visible(fig)}) == 1  # four panels: one row of the 4-column grid


def test_accuracy_vs_batch_shows_final_and_best_accuracy_and_the_gap_on_a_log2_axis(sweep):
    fig = plots.accuracy_vs_batch(sweep.final)
    assert isinstance(fig, Figure)
    acc, gap = fig.axes
    assert (acc.get_title(), acc.get_xlabel(), acc.get_ylabel()) == (
        "val_acc vs batch size", "global batch size", "validation accuracy")
    assert (gap.get_title(), gap.get_xlabel(), gap.get_ylabel()) == (
        "generalization gap", "global batch size", "train_eval_acc - val_acc")
    for ax in (acc, gap):
        assert ax.get_xscale() == "log" and [t.get_text() for t in ax.get_xticklabels()] == ["8", "128"]
    assert acc.get_legend() is None  # legends sit below the plots, never over them
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["final val_acc", "best-epoch val_acc"]
    final = lines_by_label(acc)["final val_acc"]
    assert list(final.get_xdata()) == [8, 128]
    assert np.allclose(final.get_ydata(), [np.mean(FINALS[8]), np.mean(FINALS[128])])
    assert gap.get_legend() is None  # one facet: nothing to tell apart


def test_val_vs_steps_puts_each_batch_size_on_the_optimizer_step_axis(sweep):
    fig = plots.val_vs_steps(sweep.df)
    assert isinstance(fig, Figure)
    [ax] = visible(fig)
    assert (ax.get_title(), ax.get_xlabel(), ax.get_ylabel(), ax.get_xscale()) == (
        "val_acc vs steps", "optimizer steps", "val_acc", "log")
    lines = lines_by_label(ax)
    assert list(lines) == ["batch 8", "batch 128"]
    steps_per_epoch = sweep.df.groupby("global_batch_size")["steps_per_epoch"].first()
    for batch in (8, 128):
        assert list(lines[f"batch {batch}"].get_xdata()) == [steps_per_epoch[batch] * e for e in (1, 2, 3)]


def test_val_vs_steps_titles_each_facet(faceted):
    fig = plots.val_vs_steps(faceted.df)
    assert [ax.get_title() for ax in visible(fig)] == ["shuffle=False", "shuffle=True"]


def test_throughput_vs_batch_is_samples_per_second_on_log_axes(sweep):
    fig = plots.throughput_vs_batch(sweep.df)
    assert isinstance(fig, Figure)
    [ax] = fig.axes
    assert (ax.get_title(), ax.get_xlabel(), ax.get_ylabel()) == (
        "throughput", "global batch size", "training samples / s")
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    [line] = lines_by_label(ax).values()
    assert list(line.get_xdata()) == [8, 128] and list(line.get_ydata()) == [800.0, 12800.0]  # 100 x batch


def test_throughput_vs_replicas_has_a_line_per_global_batch(tmp_path):
    sweep = tmp_path / "r"
    job = 0
    for gpus in (1, 2):
        for batch in (32, 64):
            make_run(sweep, job, batch_size=batch, gpus=gpus, val=(0.5, 0.6))
            job += 1
    fig = plots.throughput_vs_replicas(assess(sweep).df)
    assert isinstance(fig, Figure)
    [ax] = fig.axes
    assert (ax.get_title(), ax.get_xlabel(), ax.get_ylabel()) == (
        "throughput vs replicas", "replicas", "training samples / s")
    lines = lines_by_label(ax)
    assert list(lines) == ["batch 32", "batch 64"]
    assert list(lines["batch 32"].get_xdata()) == [1, 2]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2"]


STUDIES = ["main", "batch_size", "batchnorm", "capacity", "causes", "controls", "hoffer", "imbalance", "preprocess",
           "shuffle", "smoke"]
# what the report of each study must hold beside its figures: the batch-size verdict, or a finding on its suspect
SECTIONS = {"main": "batch size", "batch_size": "batch size", "batchnorm": "Batch-norm statistics",
            "capacity": "Model capacity and data size", "causes": "Class imbalance",
            "controls": "Controls: steps and learning rate", "hoffer": "Hoffer's recipe: steps, sqrt LR, ghost batch norm",
            "imbalance": "Class imbalance", "preprocess": "Preprocessing mismatch", "shuffle": "Unshuffled data",
            "smoke": "batch size"}


@pytest.mark.parametrize("study", STUDIES)
def test_every_figure_of_every_study_report_is_laid_out_legibly(study, tmp_path):
    """Each figure the report draws for the main job and every study preset (from a constructed sweep of the
    preset's real jobs): every text inside the figure, no two texts overlapping, no legend over a plot; and the
    section the study is for is there (tests/studies/tuned/test_reading.py does +study=tuned)."""
    from harness.assess.sweep import read
    from harness.render.figures import figures
    from harness.studies import registry
    from tests.helpers import layout
    from tests.helpers.sweeps import study_sweep

    sweep = read(study_sweep(tmp_path / study, *(["batch_size=8,32,64,128"] if study == "main" else
                                                 [f"+study={study}"])))
    a, found = registry.assess(sweep), registry.of_sweep(sweep)
    drawn = [figure for section in ("main", "why") for figure in figures(a, section)]
    drawn += [figure for section in (found.sections(a) if found else []) for figure in section.figures]
    assert len(drawn) >= 4
    for title, fig, _ in drawn:
        assert layout.problems(fig) == [], title
    if SECTIONS[study] == "batch size":
        assert a.batch_verdicts and all(v.headline.startswith(CLAIM) for v in a.batch_verdicts)
    else:
        assert SECTIONS[study] in [f.subject for f in a.findings]


def test_the_layout_check_catches_a_legend_over_a_plot_cut_and_overlapping_text():
    from tests.helpers import layout

    fig = Figure(figsize=(3, 2), layout="constrained")
    ax = fig.subplots()
    ax.plot([1, 2], [1, 2], label="a line")
    ax.legend(loc="center")
    ax.set_title("a title far too long to fit inside a figure only three inches wide, so it is cut")
    ax.text(1.5, 1.5, "here")
    ax.text(1.5, 1.5, "there")
    found = " | ".join(layout.problems(fig))
    assert "covers a plotting area" in found and "is cut at the figure's edge" in found and "overlap" in found


@pytest.mark.parametrize("sizes", [[8, 32, 512], [8, 16, 32, 64, 128, 256, 512, 1024, 2048]])
def test_every_swept_batch_size_is_a_readable_tick(sizes, tmp_path):
    from tests.helpers import layout

    finals = {size: [0.9 - 0.01 * i] for i, size in enumerate(sizes)}
    fig = plots.accuracy_vs_batch(assess(batch_sweep(tmp_path / "b", finals)).final)
    for ax in fig.axes:
        assert [t.get_text() for t in ax.get_xticklabels()] == [str(s) for s in sizes]
    assert layout.problems(fig) == []


RENDER_BOTH_WAYS = """
import json, subprocess, sys
import tensorflow  # a report written where a run trained: the child is spawned, never forked from this process
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter
from harness.render import figures

real_popen, real_png = subprocess.Popen, figures.png
for case in sys.argv[1:]:
    figs = []
    for i in range(5):
        fig = Figure(figsize=(3, 2))
        fig.add_subplot().plot(range(10), [i * v for v in range(10)])
        figs.append(fig)
    started, here = [], []
    def popen(args, **kw):
        started.append(args)
        if case == "child fails":
            args = [sys.executable, "-c", "import sys; sys.stdin.buffer.read(); sys.exit(1)"]
        return real_popen(args, **kw)
    figures.subprocess.Popen = popen
    if case == "a figure does not pickle":
        figs[-1].axes[0].xaxis.set_major_formatter(FuncFormatter(lambda value, _: str(value)))
    figures.png = real_png
    serial = [figures.png(fig) for fig in figs]
    figures.png = lambda fig: here.append(fig) or real_png(fig)
    same = figures.rendered(figs) == serial
    print(json.dumps({"case": case, "spawned": [a[-1] for a in started], "same": same, "drawn here": len(here)}))
"""


def test_a_report_renders_its_figures_on_two_cores_as_one_would():
    """The later half of the PNGs comes from a spawned child (harness.render.encode), byte for byte what this
    process would draw, in a process that loaded TensorFlow (a forked child crashed there now and then); a child
    that fails, or a figure that does not pickle, leaves this process to draw them. In one fresh process, the
    three cases in turn."""
    import json
    import os
    import subprocess
    import sys

    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("the report renders in one process on one core")
    cases = {"child renders": (["harness.render.encode"], 3), "child fails": (["harness.render.encode"], 5),
             "a figure does not pickle": ([], 5)}
    proc = subprocess.run([sys.executable, "-c", RENDER_BOTH_WAYS, *cases], capture_output=True, text=True,
                          timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert [json.loads(line) for line in proc.stdout.splitlines()[-3:]] == [
        {"case": case, "spawned": spawned, "same": True, "drawn here": here}
        for case, (spawned, here) in cases.items()]
