"""The studies found by name (harness.studies.registry): a user's study that cannot load fails loudly, in one line
naming its folder (exit 2 for a command, a line in the report for a sweep), and a folder of the user's that is no
study (a helper package) never breaks the reading of a sweep that does not name it."""
import json
import shutil
from pathlib import Path

import pytest

from harness.fields import ConfigError
from harness.launch.cli import main
from harness.studies import registry

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PRESET = "# @package _global_\ndataset:\n  num_samples: 600\nepochs: 1\nprobes: false\n"


def _conf(tmp_path, name: str, code: str) -> Path:
    """A --config-dir with a preset conf/study/<name>.yaml and the study's folder conf/studies/<name>/."""
    conf = tmp_path / "conf"
    (conf / "study").mkdir(parents=True, exist_ok=True)
    (conf / "study" / f"{name}.yaml").write_text(PRESET)
    (conf / "studies" / name).mkdir(parents=True)
    (conf / "studies" / name / "__init__.py").write_text(code)
    return conf


BROKEN = [
    ("misspelled", "from harness.studies.study import Study\n\n\nclass Mine(Study):\n    name = 'misspelled'\n\n\n"
     "STUDI = Mine()\n", "studies/misspelled/__init__.py has no STUDY"),
    ("notastudy", "STUDY = 'mine'\n", "studies/notastudy/__init__.py has STUDY = a str"),
    ("raises", "raise RuntimeError('not finished')\n", "studies/raises/__init__.py raised RuntimeError: not finished"),
    ("recover", "from harness.studies.study import Study\n\nSTUDY = Study()\n",
     "studies/recover has the name of the built-in study recover (harness/studies/recover); rename your folder"),
]


@pytest.mark.parametrize("name,code,said", BROKEN, ids=["misspelled", "not-a-study", "raises", "a-built-in-name"])
def test_a_study_that_cannot_load_is_one_line_exit_2_and_nothing_written(name, code, said, tmp_path, monkeypatch,
                                                                         capsys):
    """Before, a misspelled STUDY planned a plain batch-size sweep with the study's settings ignored, and a user's
    study named like a built-in one was shadowed without a word."""
    conf = _conf(tmp_path, name, code)
    monkeypatch.chdir(tmp_path)
    assert main(["--config-dir", str(conf), f"+study={name}", "batch_size=16,64", "seed=0", "-m"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith(f"harness: error: +study={name!r} is not allowed"), err
    assert said in err and str(conf / "studies") in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["conf"]  # no sweep folder, no report


def test_a_helper_package_beside_the_studies_is_passed_over_where_no_command_names_it(tmp_path):
    conf = _conf(tmp_path, "helpers", "VALUE = 1\n")
    found = {study.name for study in registry.every([conf / "studies"])}
    assert {"diagnose", "recover", "scaling", "tuned"} <= found and "helpers" not in found
    with pytest.raises(ConfigError, match="has no STUDY"):
        registry.find("helpers", [conf / "studies"])


def test_a_sweep_whose_study_folder_is_gone_is_read_as_a_batch_size_sweep_and_its_report_says_why(tmp_path):
    """The main job's fixture sweep, recorded as a user's study `toy` from a folder that no longer exists: the report
    is written, as a batch-size sweep's, with one line naming the study and the folder; the same for a folder that
    is there but no study."""
    from harness.report import html
    from tests.helpers import page

    sweep = tmp_path / "sweep"
    shutil.copytree(FIXTURES / "studies" / "main", sweep)
    content = json.loads((sweep / "sweep.json").read_text())
    gone = tmp_path / "moved" / "studies"
    (sweep / "sweep.json").write_text(json.dumps({**content, "study": "toy", "study_paths": [str(gone)]}))
    report = page.parse(html.write_report(sweep, tmp_path / "reports").read_text())
    text = page.text(report)
    assert (f"This sweep is read as a batch-size sweep: its study, toy, was in {gone} when it ran, and no folder "
            "toy/ with an __init__.py is there now") in text
    assert "Larger batches gave lower validation accuracy" in text  # read as the batch-size sweep it is
    _conf(tmp_path / "moved", "toy", "VALUE = 1\n")
    (gone.parent / "conf" / "studies").rename(gone)
    text = page.text(page.parse(html.write_report(sweep, tmp_path / "reports").read_text()))
    assert "This sweep is read as a batch-size sweep: its study cannot be loaded (+study='toy' is not allowed" in text
    assert f"{gone / 'toy' / '__init__.py'} has no STUDY" in text


def test_a_config_dir_whose_name_holds_a_comma_or_a_quote_is_found(tmp_path, monkeypatch, capsys):
    """The user's folders come from Hydra's own reading of the search path (was a regex over the overrides, which
    cut a path at its comma): the study in "my, 'conf'" is found, and so refused for its misspelled STUDY."""
    conf = _conf(tmp_path / "my, 'odd' [folder]", "commas", "STUDI = None\n")
    monkeypatch.chdir(tmp_path)
    assert main(["--config-dir", str(conf), "+study=commas", "batch_size=16,64", "seed=0", "-m"]) == 2
    assert f"{conf / 'studies' / 'commas' / '__init__.py'} has no STUDY" in capsys.readouterr().err


def test_a_reports_page_finds_the_sweeps_study_once(tmp_path, monkeypatch):
    """The page, its study's sections and its note come from one lookup (registry.read): before, the page looked
    the study up three times over (of_sweep, assess, the note)."""
    from harness.report import html

    sweep = tmp_path / "sweep"
    shutil.copytree(FIXTURES / "studies" / "recover", sweep)
    calls = []
    looked_up = registry._of_sweep
    monkeypatch.setattr(registry, "_of_sweep", lambda *args: calls.append(1) or looked_up(*args))
    html.build_report(sweep)
    assert len(calls) == 1


def test_two_folders_with_a_study_of_one_name_each_load_their_own_in_one_process(tmp_path):
    """One process reading two sweeps (python -m harness.report A B, a warm worker, a test worker) whose user studies
    share a name but not a folder: each sweep gets its own folder's study, never the one imported first."""
    from harness.studies import registry

    code = ("from harness.studies.study import Study\n\n\nclass Mine(Study):\n    name = 'twin'\n    priority = {}\n\n\n"
            "STUDY = Mine()\n")
    first = _conf(tmp_path / "a", "twin", code.format(7)) / "studies"
    second = _conf(tmp_path / "b", "twin", code.format(8)) / "studies"
    assert registry.find("twin", [first]).priority == 7
    assert registry.find("twin", [second]).priority == 8
    assert registry.find("twin", [first]).priority == 7  # the first folder's again, not re-imported
