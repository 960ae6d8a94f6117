"""The Diagnosis section of a +study=diagnose report (harness.studies.diagnose.figures, the report's template): its
waterfall laid out legibly and adding up, and the section as a user sees it in a real browser."""
import pytest
from matplotlib.colors import to_rgba

from harness.report import html as report
from harness.studies.diagnose.figures import GAINED, LOST, waterfall
from harness.studies.registry import assess
from tests.helpers import layout
from tests.helpers.sweeps import study_sweep

CASES = {
    "ladder with batch norm": ("model.batch_norm=true",),
    "ladder without batch norm": (),
    "shapley": ("model.batch_norm=true", "diagnose.attribution=shapley", "seed=0,1"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_waterfall_goes_from_the_small_batch_down_to_the_large_one_part_by_part(case, tmp_path):
    """Every text inside the figure and none overlapping; a bar per part between the two as-is levels, each the
    part's height, red where it lowered val_acc and green where it raised it."""
    sweep = study_sweep(tmp_path / "s", "+study=diagnose", "batch_size=8,64", "epochs=2", *CASES[case])
    d = assess(sweep).reading
    fig = waterfall(d)
    assert layout.problems(fig) == []
    ax = fig.axes[0]
    bars = list(ax.patches)
    assert len(bars) == len(d.parts) + 2
    assert bars[0].get_height() == pytest.approx(d.arm_values["b"][0])
    assert bars[-1].get_height() == pytest.approx(d.arm_values["B"][0])
    level = d.arm_values["b"][0]
    for bar, part in zip(bars[1:-1], d.parts):  # each part's bar hangs from the level the parts before left
        assert bar.get_height() == pytest.approx(part.estimate.value)
        assert bar.get_y() == pytest.approx(level - part.estimate.value)
        assert bar.get_facecolor() == to_rgba(LOST if part.estimate.value > 0 else GAINED)
        level -= part.estimate.value
    assert level == pytest.approx(d.arm_values["B"][0], abs=1e-9)  # and the last ends at the large batch's
    labels = [t.get_text().replace("\n", " ") for t in ax.get_xticklabels()]
    assert labels[0] == "val_acc at batch 8" and labels[-1] == "val_acc at batch 64"


@pytest.mark.slow
def test_the_diagnosis_is_legible_in_chromium_at_1400_px(tmp_path):
    """The section under the verdict: the headline, the waterfall shown at (nearly) its own size, the parts and the
    data checks tables, nothing wider than the page; a screenshot of it."""
    from selenium.webdriver.common.by import By

    from tests.helpers.browser import chromium, image_states, section_screenshot

    sweep = study_sweep(tmp_path / "diag", "+study=diagnose", "batch_size=8,64", "epochs=2", "model.batch_norm=true")
    page = report.write_report(sweep, tmp_path / "reports")
    with chromium(tmp_path / "profile", width=1400) as driver:
        driver.get(page.resolve().as_uri())
        section = driver.find_element(By.ID, "diagnosis")
        assert "why batch 64 lost to batch 8" in section.text
        waterfall_image = driver.find_element(By.CSS_SELECTOR, 'img[alt="The drop, part by part"]')
        states = [s for s in image_states(driver) if s["alt"] == "The drop, part by part"]
        assert states and states[0]["complete"] and states[0]["shown"] >= 0.9 * states[0]["natural"], states
        assert waterfall_image.location["y"] > section.location["y"]
        assert driver.execute_script("return document.documentElement.scrollWidth") <= 1400
        for name in ("stale_statistics", "fewer_updates", "remains", "label_shift", "feature_shift", "capacity"):
            assert name in driver.page_source
        assert section_screenshot(driver, section, tmp_path / "diagnosis.png").stat().st_size > 50_000


def test_a_path_below_zero_stays_inside_the_axes_with_every_label():
    """Both sizes at chance (0.08 and 0.09) with parts of both signs: the running total goes to -0.57 and back; the
    axis spans it, and every bar and label lies inside the axes, none outside the figure."""
    from types import SimpleNamespace as Parts

    def part(name, value, low, high):
        return Parts(name=name, estimate=Parts(value=value, low=low, high=high))

    parts = [part("stale_statistics", -0.03, -0.11, 0.05), part("fewer_updates", 0.41, 0.04, 0.77),
             part("learning_rate", 0.24, 0.11, 0.37), part("remains", -0.62, -0.78, -0.46)]
    d = Parts(drop=Parts(value=0.0), arm_values={"b": [0.085], "B": [0.085]}, small_batch=8, large_batch=64,
              parts=parts)
    fig = waterfall(d)
    assert layout.problems(fig) == []
    ax = fig.axes[0]
    bottom, top = ax.get_ylim()
    assert bottom < -0.57 - 0.05 and top > 0.085
    for bar in ax.patches:
        assert bottom <= min(bar.get_y(), bar.get_y() + bar.get_height()) and max(
            bar.get_y(), bar.get_y() + bar.get_height()) <= top
    renderer = fig.canvas.get_renderer()
    area = ax.get_window_extent(renderer)
    for text in ax.texts:  # the values beside the bars
        box = text.get_window_extent(renderer)
        assert area.y0 <= box.y0 and box.y1 <= area.y1, text.get_text()
