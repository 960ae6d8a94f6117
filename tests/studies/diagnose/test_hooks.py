"""A diagnosis's data checks as a run makes them (harness.studies.diagnose.hooks): on the arrays as the run feeds
them, each suspect the harness can inject found by its check, image files checked on a small grayscale copy, the
file written once, and a check that fails recorded instead of failing the run. No training."""
import json

import pytest

from harness.run.inputs import prepare_data
from harness.studies.diagnose import hooks as data_checks
from harness.studies.diagnose.settings import Settings
from tests.helpers.user_data import write_images

SMALL = ("dataset.num_samples=1500", "tune_fraction=0.1")


@pytest.mark.parametrize("injected,flagged", [
    ((), set()),
    (("imbalance=0.9",), {"label_shift"}),
    (("shuffle=false",), {"order"}),
    (("preprocess_mismatch=shifted",), {"feature_shift"}),
    (("preprocess_mismatch=unscaled",), {"feature_shift"}),
])
def test_each_injected_suspect_is_found_and_nothing_else(compose, injected, flagged):
    cfg = compose(*SMALL, *injected)
    found = {c.name: c for c in data_checks.run_checks(cfg, prepare_data(cfg), Settings())}
    assert list(found) == ["label_shift", "order", "feature_shift"]
    assert {name for name, c in found.items() if c.flagged} == flagged, {n: c.detail for n, c in found.items()}


def test_image_files_are_checked_on_a_small_grayscale_copy(compose, tmp_path):
    write_images(tmp_path / "pics", per_class=40, size=(36, 36))
    cfg = compose("dataset=images", f"dataset.path={tmp_path / 'pics'}", "dataset.image_size=[36,36]")
    shift = data_checks.run_checks(cfg, prepare_data(cfg), Settings(feature_shift=0.25))[2]
    assert shift.name == "feature_shift" and shift.statistic is not None and not shift.flagged
    assert shift.extra["top_inputs"][0]["input"].endswith("of 12x12")  # 36 px in blocks of 3: 12 x 12 inputs


def test_the_checks_are_written_once_and_a_failing_check_is_recorded_not_raised(compose, tmp_path, monkeypatch):
    cfg = compose(*SMALL)
    data_in = prepare_data(cfg)
    data_checks.check_once(cfg, data_in, tmp_path, Settings())
    written = json.loads((tmp_path / "data_checks.json").read_text())
    assert [c["name"] for c in written["checks"]] == ["label_shift", "order", "feature_shift"]
    assert written["error"] is None and written["train_samples"] == len(data_in.y_train)
    before = (tmp_path / "data_checks.json").stat().st_mtime_ns
    data_checks.check_once(cfg, data_in, tmp_path, Settings())  # a resumed run: checked already
    assert (tmp_path / "data_checks.json").stat().st_mtime_ns == before
    from harness.studies.diagnose import data_checks as checks

    monkeypatch.setattr(checks, "order", lambda *a, **k: 1 / 0)
    data_checks.check_once(cfg, data_in, tmp_path / "again", Settings())
    failed = json.loads((tmp_path / "again" / "data_checks.json").read_text())
    assert failed["checks"] == [] and failed["error"].startswith("ZeroDivisionError")
