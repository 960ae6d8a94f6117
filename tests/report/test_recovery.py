"""+study=recover's section as a user sees it in a real browser: after the confirmation and a budget round, the
headline, the verdict and budget tables, the trials and the three figures, nothing wider than the page."""
import pytest

from harness.report import html as report
from tests.helpers.sweeps import next_round, set_final, study_sweep

FIGURES = ("val_acc by epoch: as they are, and batch B with the recipe",
           "The search: each trial's tune_acc against its peak learning rate", "What mattered in the search")


@pytest.mark.slow
def test_the_recovery_is_legible_in_chromium_at_1400_px(tmp_path):
    from selenium.webdriver.common.by import By

    from tests.helpers.browser import chromium, image_states, section_screenshot

    sweep = study_sweep(tmp_path / "rec", "+study=recover", "batch_size=8,64", "epochs=2", "recover.trials=8",
                        "seed=0,1,2", "recover.guided=0")
    rung = next_round(sweep, 1)  # the rung: 4 of the 8 trials continue, 4 are cut at epoch 1
    for job in next_round(sweep, 2):  # the recipe below b on validation: not recovered, a budget round
        set_final(sweep, job.job, val_acc=0.6)
    for job in [*range(6, 14), *(int(j.job) for j in rung)]:
        set_final(sweep, job, val_acc=0.6)
    for job in next_round(sweep, 3):  # judged on fresh seeds: the recipe below b there too
        if job.arm.startswith("trial_"):
            set_final(sweep, job.job, val_acc=0.6)
    next_round(sweep, 4)
    page = report.write_report(sweep, tmp_path / "reports")
    with chromium(tmp_path / "profile", width=1400) as driver:
        driver.get(page.resolve().as_uri())
        section = driver.find_element(By.ID, "recovery")
        assert "Recovery at batch 64" in section.text
        body = driver.find_element(By.TAG_NAME, "body").text
        assert "not recovered" in body and "share of the drop recovered" in body and "wall time ÷ b's" in body
        for title in FIGURES:
            states = [s for s in image_states(driver) if s["alt"] == title]
            assert states and states[0]["complete"] and states[0]["shown"] >= 0.9 * states[0]["natural"], title
        assert driver.execute_script("return document.documentElement.scrollWidth") <= 1400
        assert section_screenshot(driver, section, tmp_path / "recovery.png", height=3200).stat().st_size > 50_000
