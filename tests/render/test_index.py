import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.report import html as report
from harness.render import index, summary
from tests.helpers import page
from tests.helpers.sweeps import batch_sweep, make_run

ONE_LR = "Larger batches gave lower validation accuracy at one learning rate (0.001) for every batch size"
REPRODUCED = f"{ONE_LR}: reproduced."
NOT_REPRODUCED = f"{ONE_LR}: not reproduced."


def started(sweep: Path, when: str) -> Path:
    """Move every run of a constructed sweep's start to `when`."""
    for run_file in sweep.glob("*/run.json"):
        record = json.loads(run_file.read_text())
        run_file.write_text(json.dumps({**record, "started_at": when}))
    return sweep


def index_rows(html: str) -> list[str]:
    """Each sweep's row of the index, as the text a reader sees."""
    return [page.text(row) for row in page.parse(html).select("tr.sweep-row")]


@pytest.fixture(scope="module")
def reported(tmp_path_factory):
    """Two reported sweeps in <root>/sweeps, their reports in <root>/reports: the older one reproduces the gap,
    the newer one does not."""
    root = tmp_path_factory.mktemp("reported")
    old = started(batch_sweep(root / "sweeps" / "gap", {8: [0.90, 0.91, 0.92], 128: [0.80, 0.81, 0.79]}),
                  "2026-01-05T10:00:00+00:00")
    new = started(batch_sweep(root / "sweeps" / "flat", {8: [0.85, 0.86, 0.85], 128: [0.855, 0.85, 0.86]}),
                  "2026-02-07T09:30:00+00:00")
    for sweep in (old, new):
        report.write_report(sweep, root / "reports")
    return root


def test_the_index_lists_every_sweep_newest_first_with_its_verdict_and_a_working_link(reported):
    html = (reported / "reports" / "index.html").read_text()
    rows = index_rows(html)
    assert len(rows) == 2
    assert "flat" in rows[0] and "2026-02-07 09:30" in rows[0] and NOT_REPRODUCED in rows[0]  # newest first
    assert "gap" in rows[1] and "2026-01-05 10:00" in rows[1] and REPRODUCED in rows[1]
    parsed = page.parse(html)
    for row, tr in zip(rows, parsed.select("tr.sweep-row")):
        assert "6 completed" in row and "batch_size = 8, 128" in row and "seed = 0, 1, 2" in row
        assert [page.text(code) for code in tr.find_all("code")] == ["batch_size", "seed"]
        assert "No report yet" not in row
    links = [a["href"] for a in parsed.find_all("a", href=True)]
    assert len(links) == 2 and not [link for link in links if "/" in link or ":" in link]  # relative: movable
    assert [(reported / "reports" / link).is_file() for link in links] == [True, True]
    assert links == [report.report_path(reported / "sweeps" / name, reported / "reports").name
                     for name in ("flat", "gap")]
    assert not [a for a in parsed.find_all(href=True) if re.match(r"(https?:)?//", a["href"])]  # offline
    assert not parsed.find_all(src=True) and not parsed.find_all("link")


def test_damaged_empty_and_unreported_sweeps_get_rows_that_say_so(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # as the harness runs: reports/ and sweeps/ in the working folder
    sweeps = Path("sweeps")
    damaged = make_run(sweeps / "damaged", 0, batch_size=8).parent
    (damaged / "0" / "run.json").write_text('{"run_id": "damaged/0", "sta')  # a copy cut short
    make_run(damaged, 1, batch_size=64, status="failed", val=(), error="out of memory")
    (sweeps / "empty").mkdir()
    (sweeps / "junk-sweep-json").mkdir()
    (sweeps / "junk-sweep-json" / "sweep.json").write_text("[1, 2")
    make_run(sweeps / "unreported", 0, batch_size=8)
    make_run(sweeps / "unreported", 1, batch_size=32, status="running", finished=False, val=(0.4,))
    Path("reports").mkdir()
    Path("reports", "stray.html").write_text("<html>not a report</html>")
    Path("reports", summary.report_file_name(sweeps / "unreported")).write_text("<html><head>")  # cut short

    parsed = page.parse(index.write_index(Path("reports")).read_text())
    cells = {page.text(row.find(class_="sweep-id")): row for row in parsed.select("tr.sweep-row")}
    rows = {sweep: page.text(row) for sweep, row in cells.items()}
    assert set(rows) == {"damaged", "empty", "junk-sweep-json", "unreported", "stray"}
    assert "1 failed" in rows["damaged"] and "1 damaged" in rows["damaged"]
    assert (f"1 run(s) damaged: their run.json cannot be read; the command that made it, with hydra.sweep.dir="
            f"{(sweeps / 'damaged').resolve()} runs them again") in rows["damaged"]
    assert "No report yet: python -m harness.report sweeps/damaged" in rows["damaged"]
    assert "no runs" in rows["empty"] and "Empty: no run has been recorded" in rows["empty"]
    assert "sweep.json cannot be read" in rows["junk-sweep-json"]
    assert "1 completed" in rows["unreported"] and "1 running" in rows["unreported"]
    assert "batch_size = 8, 32" in rows["unreported"] and page.text(cells["unreported"].code) == "batch_size"
    links = {sweep: [a["href"] for a in row.find_all("a")] for sweep, row in cells.items()}
    assert "carries no summary" in rows["unreported"] and links["unreported"][0].startswith("unreported-")
    assert "carries no summary" in rows["stray"] and links["stray"] == ["stray.html"]
    assert all("no verdict" in row for row in rows.values())


def test_a_report_older_than_its_runs_is_flagged_and_a_moved_reports_folder_keeps_its_index(reported, tmp_path):
    import shutil

    sweeps = tmp_path / "sweeps"
    shutil.copytree(reported / "sweeps" / "gap", sweeps / "gap")
    report.write_report(sweeps / "gap", tmp_path / "reports")
    assert "changed after this report" not in (tmp_path / "reports" / "index.html").read_text()
    make_run(sweeps / "gap", 6, batch_size=32)  # the sweep resumed, or was extended, after its report
    [row] = index_rows(index.build_index(tmp_path / "reports"))
    assert "Its runs changed after this report was built" in row and REPRODUCED in row

    moved = tmp_path / "elsewhere" / "reports"  # the reports folder alone, as zipped and unzipped on a laptop
    shutil.copytree(reported / "reports", moved)
    rows = index_rows(index.build_index(moved, tmp_path / "no-sweeps-here"))
    assert len(rows) == 2 and NOT_REPRODUCED in rows[0] and REPRODUCED in rows[1]


def test_the_summary_a_report_embeds_survives_hostile_strings(tmp_path):
    hostile = '</script><script>alert(1)</script>'
    sweep = tmp_path / "sweeps" / "s"
    make_run(sweep, 0, batch_size=8, optimizer=hostile)
    make_run(sweep, 1, batch_size=32, optimizer="adam")
    html = report.build_report(sweep)
    assert "<script>alert(1)" not in html
    page = tmp_path / "page.html"
    page.write_text(html)
    found = summary.read_summary(page)
    assert found["sweep_dir"] == str(sweep.resolve()) and ["optimizer", f"{hostile}, adam"] in found["varied"]
    assert "&lt;/script&gt;&lt;script&gt;alert(1)" in index.build_index(tmp_path / "no-reports", tmp_path / "sweeps")


def test_sweeps_grouped_in_a_subfolder_are_found(tmp_path):
    make_run(tmp_path / "sweeps" / "project" / "2026-01-01_10-00-00", 0, batch_size=8)
    make_run(tmp_path / "sweeps" / "project" / "2026-01-02_10-00-00", 0, batch_size=8)
    make_run(tmp_path / "sweeps" / "single", 0, batch_size=8)
    found = index.sweep_folders(tmp_path / "sweeps")
    assert [p.relative_to(tmp_path / "sweeps").as_posix() for p in found] == [
        "project/2026-01-01_10-00-00", "project/2026-01-02_10-00-00", "single"]


def test_the_index_never_assesses_a_sweep(reported, monkeypatch):
    """Rows come from the reports' summaries and run.json files: building the index of many sweeps stays cheap."""
    from harness.assess import assessment, sweep

    def refuse(*args, **kwargs):
        raise AssertionError("the index assessed a sweep")

    monkeypatch.setattr(assessment, "assess", refuse)
    monkeypatch.setattr(sweep, "load_epochs", refuse)
    assert len(index_rows(index.build_index(reported / "reports"))) == 2


def test_index_command_rebuilds_it_and_exits_0(reported):
    target = reported / "reports" / "index.html"
    target.unlink()
    code = ("import sys; from harness.report import html as report; rc = report.main(sys.argv[1:]); "
            "assert 'tensorflow' not in sys.modules; sys.exit(rc)")
    proc = subprocess.run([sys.executable, "-c", code, "--index"], cwd=reported, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == str(Path("reports") / "index.html")
    assert len(index_rows(target.read_text())) == 2

    other = reported / "other-reports"  # --out and --sweeps choose the folders
    proc = subprocess.run([sys.executable, "-m", "harness.report", "--index", "--out", str(other), "--sweeps",
                           str(reported / "sweeps")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    rows = index_rows((other / "index.html").read_text())
    assert len(rows) == 2 and all("No report yet" in row for row in rows)  # its reports are in reports/


def test_the_index_is_legible_and_its_links_work_in_chromium(reported, tmp_path):
    from selenium.webdriver.common.by import By

    from tests.helpers.browser import chromium

    page = reported / "reports" / "index.html"
    with chromium(tmp_path / "profile", width=1400) as driver:
        driver.get(page.resolve().as_uri())
        rows = driver.find_elements(By.CSS_SELECTOR, "tr.sweep-row")
        assert len(rows) == 2 and all(row.is_displayed() for row in rows)
        assert "flat" in rows[0].text and "gap" in rows[1].text
        assert driver.execute_script("return document.documentElement.scrollWidth") <= 1400  # nothing overflows
        cells = driver.execute_script(  # no cell's content wider than its cell (cut or overlapping text)
            "return Array.from(document.querySelectorAll('td')).filter(td => td.scrollWidth > td.clientWidth + 1)"
            ".map(td => td.textContent)")
        assert cells == []
        rows[1].find_element(By.LINK_TEXT, "report").click()
        assert driver.title == "Sweep gap: batch size and the train/val gap"
        assert REPRODUCED in driver.find_element(By.CSS_SELECTOR, ".verdict .headline").text
        driver.back()
        driver.find_elements(By.CSS_SELECTOR, "tr.sweep-row")[0].find_element(By.LINK_TEXT, "report").click()
        assert driver.title == "Sweep flat: batch size and the train/val gap"
