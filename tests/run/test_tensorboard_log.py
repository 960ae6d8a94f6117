"""Every run's tb/ folder, read back with TensorBoard's own loader and shown by a real TensorBoard in Chromium."""
from __future__ import annotations

import json
import math
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pandas as pd
import pytest

from harness.run.tensorboard_log import TAGS, hyperparameters
from tests.conftest import TINY
from tests.helpers.board import assert_board_matches_metrics, read_board
from tests.helpers.runs import record

FAST = TINY  # probes off








def run_in_process(compose, run_dir: Path, *overrides: str) -> Path:
    from harness.run.experiment import run_experiment

    run_experiment(compose(*overrides), run_dir, run_id=f"sweep/{run_dir.name}")
    return run_dir


def stop_after_epoch(monkeypatch, epoch: int, error: BaseException) -> None:
    """The run raises `error` right after epoch `epoch`'s metrics row, before that epoch's checkpoint."""
    from harness.run import train

    original = train.EpochRecorder.on_epoch_end

    def stop(self, index, logs=None):
        original(self, index, logs)
        if index + 1 == epoch:
            raise error

    monkeypatch.setattr(train.EpochRecorder, "on_epoch_end", stop)


def test_a_run_writes_its_scalars_per_epoch_and_a_session_with_its_config_and_success(compose, tmp_path):
    from harness.store.run_files import config_columns

    overrides = [*TINY, "probes=true", "epochs=3", "batch_size=32", "probe_samples=128", "tune_fraction=0.1"]
    run_dir = run_in_process(compose, tmp_path / "run", *overrides)
    board = assert_board_matches_metrics(run_dir)
    assert set(board.values) == set(TAGS.values())  # the probes' and the tuning slice's columns too
    final = pd.read_parquet(run_dir / "metrics.parquet").iloc[-1]
    assert board.series(TAGS["gap"])[3] == pytest.approx(final["train_eval_acc"] - final["val_acc"], abs=1e-6)
    assert board.statuses == ["STATUS_SUCCESS"]
    [hparams] = board.hparams
    from harness.config.schema import NOT_IDENTITY

    config = config_columns({k: v for k, v in compose(*overrides).flat().items() if k not in NOT_IDENTITY})
    assert hparams["batch_size"] == 32 and hparams["shuffle"] is True and hparams["optimizer"] == "adam"
    assert hparams["dataset.num_samples"] == 600 and hparams["model"] == config["model"]
    assert hparams == hyperparameters(config)  # every set config value, named as its metrics column (where a
    # run pauses is none: the rows of a paused run and of the job that continues it are one run's)
    assert config["devices"] is None and "devices" not in hparams  # None is left out, not a "None" string


@pytest.mark.parametrize("error, status", [(RuntimeError("disk on fire"), "STATUS_FAILURE"),
                                           (SystemExit(-1), "STATUS_UNKNOWN")], ids=["failed", "interrupted"])
def test_a_run_that_stops_early_ends_its_session_with_its_status(compose, tmp_path, monkeypatch, error, status):
    stop_after_epoch(monkeypatch, 1, error)
    with pytest.raises(type(error)):
        run_in_process(compose, tmp_path / "run", *FAST, "epochs=3")
    assert record(tmp_path / "run")["status"] in ("failed", "interrupted")
    board = assert_board_matches_metrics(tmp_path / "run")
    assert board.statuses == [status] and list(board.series(TAGS["val_acc"])) == [1]


def test_a_run_that_fails_before_its_first_epoch_is_still_a_failed_session(compose, tmp_path, monkeypatch):
    from harness.run import experiment as run

    def broken(cfg):
        raise OSError("the data folder went away")

    monkeypatch.setattr(run, "prepare_data", broken)
    with pytest.raises(OSError):
        run_in_process(compose, tmp_path / "run", *FAST, "batch_size=16")
    board = read_board(tmp_path / "run")
    assert board.statuses == ["STATUS_FAILURE"] and board.hparams[0]["batch_size"] == 16 and not board.values


def test_a_diverged_run_is_a_failure_and_its_nan_values_are_left_out(compose, tmp_path):
    run_dir = run_in_process(compose, tmp_path / "run", *FAST, "epochs=3", "optimizer=sgd", "lr=1e12", "model=mlp")
    assert record(run_dir)["status"] == "diverged"
    board = assert_board_matches_metrics(run_dir)
    assert board.statuses == ["STATUS_FAILURE"]
    last = pd.read_parquet(run_dir / "metrics.parquet").iloc[-1]
    assert not math.isfinite(last["train_loss"]) and last["epoch"] not in board.series(TAGS["train_loss"])


def test_a_resumed_run_has_one_value_per_step_and_one_end_status(compose, tmp_path, monkeypatch):
    stop_after_epoch(monkeypatch, 2, SystemExit(-1))  # the resume repeats epoch 2: its checkpoint was not saved
    with pytest.raises(SystemExit):
        run_in_process(compose, tmp_path / "run", *FAST, "epochs=4")
    assert list(read_board(tmp_path / "run").series(TAGS["val_acc"])) == [1, 2]
    monkeypatch.undo()
    run_in_process(compose, tmp_path / "run", *FAST, "epochs=4")
    assert record(tmp_path / "run")["resumed_from_epoch"] == 1
    board = assert_board_matches_metrics(tmp_path / "run")
    assert list(board.series(TAGS["val_acc"])) == [1, 2, 3, 4]
    assert board.statuses == ["STATUS_SUCCESS"] and len(board.hparams) == 1


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def tensorboard(smoke_sweep, tmp_path):
    """The venv's `tensorboard` serving the smoke sweep on a free local port; stopped at the end, however it ends."""
    cwd, _ = smoke_sweep
    port = free_port()
    executable = Path(sys.executable).with_name("tensorboard")
    log = open(tmp_path / "tensorboard.log", "w")
    server = subprocess.Popen([str(executable), "--logdir", str(cwd / "sweeps" / "smoke"), "--port", str(port),
                               "--host", "127.0.0.1"], stdout=log, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{url}/data/runs", timeout=5) as answer:
                    if len(json.loads(answer.read())) >= 2:  # both runs loaded
                        break
            except OSError:
                pass
            assert server.poll() is None, (tmp_path / "tensorboard.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "TensorBoard never answered"
            time.sleep(0.5)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


# The page's text, one line per text node: TensorBoard's dashboards live in shadow roots, which innerText skips.
PAGE_TEXT = r"""
const texts = [];
const walk = (node) => {
  if (node.nodeType === Node.TEXT_NODE) {
    const text = node.nodeValue.trim();
    if (text) texts.push(text);
    return;
  }
  if (["STYLE", "SCRIPT"].includes(node.nodeName)) return;
  if (node.shadowRoot) walk(node.shadowRoot);
  for (const child of node.childNodes) walk(child);
};
walk(document.body);
return texts.join("\n");
"""


def session_statuses(url: str) -> dict[str, list[str]]:
    """Each session group's (run's) session statuses, as TensorBoard's HParams backend serves them."""
    request = {"experimentName": "", "startIndex": 0, "sliceSize": 100, "colParams": [],
               "allowedStatuses": ["STATUS_UNKNOWN", "STATUS_SUCCESS", "STATUS_FAILURE", "STATUS_RUNNING"]}
    post = urllib.request.Request(f"{url}/data/plugin/hparams/session_groups", data=json.dumps(request).encode(),
                                  headers={"Content-Type": "application/json", "X-XSRF-Protected": "1"})
    with urllib.request.urlopen(post, timeout=30) as answer:
        groups = json.loads(answer.read())["sessionGroups"]
    return {group["name"]: [session.get("status") for session in group["sessions"]] for group in groups}


@pytest.mark.slow
def test_tensorboard_s_hparams_dashboard_lists_the_runs_with_their_batch_sizes(tensorboard, tmp_path):
    from selenium.webdriver.support.ui import WebDriverWait

    from tests.helpers.browser import chromium

    assert session_statuses(tensorboard) == {"smoke/0": ["STATUS_SUCCESS"], "smoke/1": ["STATUS_SUCCESS"]}
    with chromium(tmp_path / "profile", width=2100, height=640) as driver:
        driver.get(f"{tensorboard}/#hparams")

        def table_text(driver) -> str | None:
            text = driver.execute_script(PAGE_TEXT)
            return text if "smoke/0" in text and "smoke/1" in text else None

        text = WebDriverWait(driver, 60).until(table_text)
        screenshot = tmp_path / "tensorboard-hparams.png"  # what docs/tensorboard-hparams.png shows; never written
        driver.save_screenshot(str(screenshot))           # into the checkout by a test run
        assert screenshot.stat().st_size > 20_000
        print(f"screenshot: {screenshot}")
    lines = text.splitlines()
    # the smoke study's batch sizes, in the batch_size column (TensorBoard shows numbers with three decimals)
    assert "batch_size" in lines and "16.000" in lines and "64.000" in lines, lines
    assert TAGS["val_acc"] in lines and TAGS["gap"] in lines  # the final accuracies are the table's metrics
