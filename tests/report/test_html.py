import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.report import html as report
from harness.store import command_file
from tests.helpers import page
from tests.helpers.sweeps import batch_sweep, make_run

# the claim with its condition: every batch size of the made-up sweeps trains at lr 0.001
ONE_LR = "Larger batches gave lower validation accuracy at one learning rate (0.001) for every batch size"


def test_report_of_a_partial_sweep_shows_verdict_plots_and_every_run(tmp_path):
    sweep = batch_sweep(tmp_path / "sweep-a", {8: [0.90, 0.91, 0.92], 128: [0.80, 0.81, 0.79]})
    make_run(sweep, 6, status="failed", val=(), error="disk on fire", batch_size=64)
    make_run(sweep, 7, status="running", val=(0.4,), finished=False, batch_size=32)
    path = report.write_report(sweep, tmp_path / "reports")
    assert path == report.report_path(sweep, tmp_path / "reports") and path.name.startswith("sweep-a-")
    html = path.read_text()
    assert (tmp_path / "reports" / "latest.html").read_text() == html
    assert f"{ONE_LR}: reproduced" in html and "n = 3 seeds" in html
    assert "partial" in html and "1 failed" in html and "1 running" in html
    assert "OSError: disk on fire" in html
    parsed = page.parse(html)
    assert re.search(r"recall at the final epoch, mean over completed runs: class \d: 0\.\d\d, class \d: ",
                     page.text(parsed))  # each recall says its class
    assert [img["src"][:22] for img in parsed.find_all("img")] == ["data:image/png;base64,"] * 4
    assert not [tag for tag in parsed.find_all(src=True) + parsed.find_all(href=True)  # nothing to fetch: offline
                if re.match(r"(https?:)?//", tag.get("src") or tag.get("href"))]
    assert [run["run"] for run in page.runs(parsed)] == [f"sweep-a/{n}" for n in range(8)]


def test_hostile_config_strings_are_escaped(tmp_path):
    sweep = tmp_path / "sweep"
    hostile = "<script>alert(1)</script>"
    make_run(sweep, 0, batch_size=8, overrides=[f"+note={hostile}"], optimizer=hostile)
    make_run(sweep, 1, batch_size=64, status="failed", val=(), error='<img src=x onerror="alert(2)">')
    html = report.build_report(sweep)
    assert "<script>" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "&lt;img src=x" in html


def test_varied_keys_get_their_own_verdicts_and_constants_are_listed_once(tmp_path):
    sweep = tmp_path / "sweep"
    job = 0
    for shuffle, finals in [(True, {8: [0.9, 0.91], 128: [0.8, 0.81]}), (False, {8: [0.3, 0.31], 128: [0.3, 0.3]})]:
        for batch, values in finals.items():
            for seed, final in enumerate(values):
                make_run(sweep, job, batch_size=batch, seed=seed, shuffle=shuffle, val=(final,))
                job += 1
    html = report.build_report(sweep)
    parsed = page.parse(html)
    # one batch-size verdict per shuffle value, and the unshuffled-data finding
    assert sorted(page.facets(parsed)) == ["Unshuffled data", "shuffle=False", "shuffle=True"]
    assert "Results are shown separately for each combination of shuffle" in html
    assert [page.text(code) for code in parsed.find_all("code")].count("optimizer") == 1


def test_a_diverged_run_is_a_result_named_in_the_verdict_not_a_partial_sweep(tmp_path):
    sweep = batch_sweep(tmp_path / "s", {8: [0.90], 32: [0.85]})
    make_run(sweep, 2, status="diverged", batch_size=128, val=(0.3,))
    html = report.build_report(sweep)
    assert "3 run(s): 2 completed, 1 diverged" in html
    assert "This sweep is partial" not in html
    assert "Batch 128 diverged (loss became NaN/inf at epoch 1)" in html
    assert "this verdict covers batch 8 to 32 only, without batch 128" in html


def test_every_facet_is_labelled_and_one_without_results_says_why(tmp_path):
    sweep = tmp_path / "s"
    make_run(sweep, 0, dataset="digits", batch_size=16, val=(0.9,))
    make_run(sweep, 1, dataset="digits", batch_size=32, val=(0.8,))
    make_run(sweep, 2, dataset="mnist", batch_size=16, status="failed", val=(), error="not in the Keras cache")
    make_run(sweep, 3, dataset="mnist", batch_size=32, status="failed", val=(), error="not in the Keras cache")
    verdicts = {page.text(block.find("div", class_="facet")): page.text(block)
                for block in page.blocks(page.parse(report.build_report(sweep)))}
    assert set(verdicts) == {"dataset=digits", "dataset=mnist"}
    mnist = verdicts["dataset=mnist"]
    assert "Cannot be judged: needs at least two batch sizes with completed runs; found 0" in mnist
    assert "batch 16: 1 failed (OSError), batch 32: 1 failed (OSError)" in mnist


def test_runs_not_started_are_counted_and_a_stale_running_run_has_no_clock_time(tmp_path):
    sweep = batch_sweep(tmp_path / "s", {8: [0.90], 32: [0.85]})
    make_run(sweep, 2, status="running", val=(0.4,), finished=False, batch_size=64)
    (sweep / "3").mkdir()  # folder made, run.json not written yet
    jobs = [{"job": str(n), "overrides": [f"batch_size={b}", "seed=0"]} for n, b in enumerate((8, 32, 64, 128, 256))]
    (sweep / "sweep.json").write_text(json.dumps({"jobs": jobs}))  # as the command writes it
    html = report.build_report(sweep)
    assert "5 run(s): 2 completed, 1 running, 2 not started" in html
    assert "This sweep is partial: 1 running, 2 not started" in html
    runs = {run["run"]: run for run in page.runs(page.parse(html))}
    assert list(runs) == [f"s/{n}" for n in range(5)]
    assert [runs[f"s/{n}"]["status"] for n in (3, 4)] == ["not started", "not started"]
    assert "1 run(s) still marked running" in html and "resuming the sweep runs them from their last epoch" in html
    # a sweep from before command.json: the command that made it, its folder named; with one, the resume line
    said = page.text(page.parse(html))
    assert f"result run) with the command that made it, with hydra.sweep.dir={sweep.resolve()} added" in said
    command_file.write_once(sweep, command_file.for_this_process(["batch_size=8,32", "-m"], multirun=True))
    assert f"only the runs without a result run) with python -m harness.resume {sweep.resolve()}" in page.text(
        page.parse(report.build_report(sweep)))
    assert runs["s/2"]["status"] == "running" and runs["s/2"]["wall s"] == "–"  # wall time unknown, not "until now"


def test_report_command_prints_the_path_last_and_never_loads_tensorflow(tmp_path):
    sweep = batch_sweep(tmp_path / "s1", {8: [0.9], 64: [0.85]})
    code = (
        "import sys; from harness.report import html as report; rc = report.main(sys.argv[1:]); "
        "assert 'tensorflow' not in sys.modules and 'keras' not in sys.modules; sys.exit(rc)"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(sweep), "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == str(report.report_path(sweep, tmp_path / "out"))
    assert (tmp_path / "out" / "index.html").is_file()  # every report rewrites the folder's index

    missing = subprocess.run([sys.executable, "-m", "harness.report", str(tmp_path / "nope")],
                             capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2 and len(missing.stderr.strip().splitlines()) == 1
    assert "sweep_dir=" in missing.stderr


@pytest.mark.parametrize("args, says", [
    ([], "give a sweep folder"),
    (["--index", "--sweeps", "no-such-folder"], "--sweeps='no-such-folder' is not a folder"),
    (["--index", "--bogus"], "unrecognized arguments: --bogus"),
    (["--index", "--out", "a-file"], "--out='a-file' is a file"),
])
def test_bad_report_arguments_exit_2_with_one_line(tmp_path, monkeypatch, capsys, args, says):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a-file").write_text("")
    try:
        code = report.main(args)
    except SystemExit as exit_:  # argparse's own errors
        code = exit_.code
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and says in err, err


def test_sweeps_of_one_name_in_different_folders_get_a_report_each(tmp_path, monkeypatch):
    first = batch_sweep(tmp_path / "a" / "sweeps" / "x", {8: [0.9], 64: [0.8]})
    second = batch_sweep(tmp_path / "b" / "sweeps" / "x", {8: [0.9], 64: [0.9]})
    paths = [report.write_report(sweep, tmp_path / "reports") for sweep in (first, second)]
    assert paths[0] != paths[1] and all(p.is_file() and p.name.startswith("x-") for p in paths)
    claim = f"{ONE_LR}: reproduced."
    assert claim in paths[0].read_text() and claim not in paths[1].read_text()  # each report its own sweep's
    assert len(page.parse((tmp_path / "reports" / "index.html").read_text()).select("tr.sweep-row")) == 2
    monkeypatch.chdir(tmp_path)  # a relative spelling of a folder names the same report
    assert report.report_path(Path("a/sweeps/x"), tmp_path / "reports") == paths[0]
    assert report.report_path(Path("other/x")) != report.report_path(Path("a/sweeps/x"))


@pytest.mark.slow
def test_report_of_a_real_sweep_renders_in_a_real_browser(smoke_sweep, tmp_path):
    from selenium.webdriver.common.by import By

    from tests.helpers.browser import chromium

    cwd, proc = smoke_sweep
    page = cwd / proc.stdout.strip().splitlines()[-1]
    with chromium(tmp_path / "profile", width=1280) as driver:
        driver.get(page.as_uri())
        images = driver.find_elements(By.TAG_NAME, "img")
        assert len(images) == 8  # 4 figures of the verdict and 4 of the Why section (probes are on by default)
        sizes = [driver.execute_script("return [arguments[0].complete, arguments[0].naturalWidth, "
                                       "arguments[0].naturalHeight]", img) for img in images]
        assert all(done and w > 0 and h > 0 for done, w, h in sizes), sizes
        headline = driver.find_element(By.CSS_SELECTOR, ".verdict .headline")
        assert headline.is_displayed() and "Larger batches gave lower validation accuracy" in headline.text
        fetched = driver.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
        assert not [name for name in fetched if name.startswith("http")]
        height = driver.execute_script("return document.body.scrollHeight")
        driver.set_window_size(1280, height)
        screenshot = tmp_path / "report.png"
        driver.save_screenshot(str(screenshot))
        assert screenshot.stat().st_size > 20_000


def test_a_sweep_where_no_run_finished_an_epoch_still_gets_its_report(tmp_path):
    sweep = tmp_path / "s"
    make_run(sweep, 0, status="failed", val=(), error="no data offline", batch_size=16)
    make_run(sweep, 1, status="failed", val=(), error="no data offline", batch_size=32)
    html = report.build_report(sweep)
    assert "2 run(s): 2 failed" in html and "found 0; runs without a result: batch 16: 1 failed" in html
    assert [run["status"] for run in page.runs(page.parse(html))].count("failed") == 2


def test_batch_size_varied_only_with_another_key_is_called_confounded(tmp_path):
    sweep = tmp_path / "s"  # weak scaling: per_replica_batch with gpus=1,2 gives global batch 32 and 64
    make_run(sweep, 0, batch_size=32, gpus=1, val=(0.8,))
    make_run(sweep, 1, batch_size=64, gpus=2, val=(0.7,))
    html = report.build_report(sweep)
    assert "Batch size (32, 64) varies only together with gpus" in html
    assert "No completed runs yet" not in html and "This sweep holds one batch size" not in html


def test_a_verdict_names_the_runs_it_could_not_use(tmp_path):
    sweep = batch_sweep(tmp_path / "s", {8: [0.90, 0.91], 128: [0.80, 0.81]})
    make_run(sweep, 4, status="failed", val=(), error="disk on fire", batch_size=64)
    assert "Runs without a result, not in these numbers: batch 64: 1 failed (OSError)." in report.build_report(sweep)


@pytest.mark.slow
@pytest.mark.parametrize("study", ["causes", "controls"])
def test_a_study_report_is_legible_in_chromium_at_1400_px(study, tmp_path):
    """Every figure loads, fits the page and is shown at (nearly) its own size, so its text stays readable."""
    from tests.helpers.browser import chromium, image_states
    from tests.helpers.sweeps import study_sweep

    written = report.write_report(study_sweep(tmp_path / f"study-{study}", f"+study={study}"), tmp_path / "reports")
    with chromium(tmp_path / "profile", width=1400) as driver:
        driver.get(written.resolve().as_uri())
        states = image_states(driver)
        assert len(states) == 5 and all(s["complete"] and s["natural"] > 0 for s in states), states
        assert all(s["shown"] >= 0.9 * s["natural"] for s in states), states  # not shrunk into illegibility
        assert driver.execute_script("return document.documentElement.scrollWidth") <= 1400  # nothing overflows
        assert "Suspects: each treated group beside its reference" in driver.page_source
        driver.set_window_size(1400, driver.execute_script("return document.body.scrollHeight"))
        screenshot = tmp_path / f"{study}.png"
        driver.save_screenshot(str(screenshot))
        assert screenshot.stat().st_size > 50_000


def test_the_main_job_as_planned_gets_a_verdict_with_three_seeds_and_an_interval(tmp_path):
    """`python -m harness batch_size=8,32,64,128 -m` plans 3 seeds per batch size (made-up accuracies, drop with
    batch size and some spread over seeds): its verdict carries the interval, not "indicative only"."""
    from tests.helpers.sweeps import study_sweep

    text = report.build_report(study_sweep(tmp_path / "main", "batch_size=8,32,64,128"))
    assert f"{ONE_LR}: reproduced." in text
    assert "n = 3 seeds per batch size" in text and "95% interval of the drop [" in text
    assert "indicative only" not in text.split("Why:")[0]


@pytest.mark.slow  # a constructed sweep of 1,000 runs
def test_the_report_of_a_thousand_runs_reads_as_one_table_and_a_few_figures(thousand_runs, tmp_path):
    """20 facets (10 learning rates x 2 optimizers): one verdict block and a sortable table of the facets instead of
    20 blocks, figures that draw two facets, every figure laid out legibly, the runs table folded away, and the page
    as a user sees it at 1,400 px: nothing wider than the page, every image at (nearly) its own size, a click on a
    heading sorting the table."""
    from selenium.webdriver.common.by import By

    from harness.assess.assessment import assess
    from harness.render.figures import figures
    from tests.helpers import layout
    from tests.helpers.browser import chromium, image_states

    written = report.write_report(thousand_runs, tmp_path / "reports")
    text = written.read_text()
    assert len(page.blocks(page.parse(text))) == 1 and "reproduced in 20 of 20 facets" in text
    assert written.stat().st_size < 3_000_000
    assert "<details><summary>1000 run(s)" in text  # folded: a sweep this size is not read run by run
    a = assess(thousand_runs)
    for section in ("main", "why"):
        for title, fig, _ in figures(a, section):
            assert layout.problems(fig) == [], title
            assert len(fig.axes) <= 40, title
    with chromium(tmp_path / "profile", width=1400) as driver:
        driver.get(written.resolve().as_uri())
        assert driver.execute_script("return document.documentElement.scrollWidth") <= 1400
        states = image_states(driver)
        assert states and all(s["complete"] and s["shown"] >= 0.9 * s["natural"] for s in states), states
        table = driver.find_element(By.CSS_SELECTOR, "table.sortable")
        facets = lambda: [row.find_elements(By.TAG_NAME, "td")[0].text  # noqa: E731
                          for row in table.find_elements(By.CSS_SELECTOR, "tbody tr")]
        assert len(facets()) == 20
        table.find_elements(By.TAG_NAME, "th")[0].click()
        assert facets() == sorted(facets())
        driver.set_window_size(1400, driver.execute_script("return document.body.scrollHeight"))
        screenshot = tmp_path / "thousand.png"
        driver.save_screenshot(str(screenshot))
        assert screenshot.stat().st_size > 50_000


def test_a_report_reads_each_runs_files_once(tmp_path, monkeypatch):
    """Every section of the report (verdicts, the probes' Why, the runs table, the environment) reads the one
    harness.assess.sweep.Sweep: each run.json and probes.json is read once, however many sections use it."""
    from collections import Counter

    from harness.assess import sweep as sweep_files
    from harness.store import probes_file
    from tests.helpers.sweeps import add_probes

    sweep = add_probes(batch_sweep(tmp_path / "s", {8: [0.90, 0.91], 128: [0.80, 0.81]}))
    jobs = [{"job": str(n), "overrides": json.loads((sweep / str(n) / "run.json").read_text())["overrides"]}
            for n in range(4)] + [{"job": "4", "overrides": ["batch_size=64"]}]  # as the command writes it, and a
    # fifth job not started yet
    (sweep / "sweep.json").write_text(json.dumps({"jobs": jobs}))
    reads: Counter = Counter()
    for module, name in ((sweep_files, "inspect_run"), (probes_file, "read")):
        original = getattr(module, name)
        monkeypatch.setattr(module, name, lambda path, _f=original, _n=name: reads.update([(_n, Path(path).name)])
                            or _f(path))
    assert "1 not started" in report.build_report(sweep)
    assert reads and set(reads.values()) == {1}, reads
    assert {job for _, job in reads} == {"0", "1", "2", "3"}
