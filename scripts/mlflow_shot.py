"""The screenshot in docs/tracking.md: `mlflow ui` on a tracked sweep, some of its runs compared, in headless Chromium.

    python -m harness batch_size=8,32,64,128 tracking=mlflow hydra.sweep.dir=sweeps/main-job -m
    python -m scripts.mlflow_shot sweeps/main-job docs/mlflow-compare.png

Starts `mlflow ui` on the sweep's store (its tracking.json) on a free local port, opens MLflow's compare page for the
runs of the smallest and largest batch size, seeds 0 and 1, with their final train_eval_acc and val_acc in its
parallel-coordinates plot, and saves the window. Needs Debian's chromium and
chromium-driver (`make browser`) and selenium (the test extra).
"""
from __future__ import annotations

import argparse
import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def compared_runs(sweep_dir: Path) -> list[str]:
    """The MLflow ids of the runs at the smallest and the largest batch size, seeds 0 and 1."""
    records = [json.loads(p.read_text()) for p in sorted(sweep_dir.glob("*/run.json"))]
    sizes = sorted({r["config"]["batch_size"] for r in records})
    return [r["tracking"]["run_id"] for r in records
            if r["config"]["batch_size"] in (sizes[0], sizes[-1]) and r["config"]["seed"] in (0, 1)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweep", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--size", default="1400,2400",
                        help="the window, WIDTH,HEIGHT: tall enough for the params and metrics under the plot")
    args = parser.parse_args(argv)
    tracking = json.loads((args.sweep / "tracking.json").read_text())
    port = free_port()
    mlflow = Path(sys.executable).parent / "mlflow"
    server = subprocess.Popen([str(mlflow), "ui", "--backend-store-uri", tracking["uri"], "--host", "127.0.0.1",
                               "--port", str(port), "--workers", "1"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 90
        while True:
            try:
                urllib.request.urlopen(f"{base}/health", timeout=2).read()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise SystemExit("mlflow ui did not start")
                time.sleep(0.3)
        runs = json.dumps(compared_runs(args.sweep))
        query = urllib.parse.urlencode({"runs": runs, "experiments": json.dumps([tracking["experiment_id"]])})
        shoot(f"{base}/#/compare-runs?{query}", args.out, args.size)
    finally:
        server.terminate()
        server.wait(timeout=30)
    print(args.out)
    return 0


def shoot(url: str, out: Path, size: str) -> None:
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = shutil.which("chromium")
    with tempfile.TemporaryDirectory() as profile:
        for arg in ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", f"--window-size={size}",
                    f"--user-data-dir={profile}"]:
            options.add_argument(arg)
        driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
        try:
            driver.get(url)
            deadline = time.monotonic() + 60
            while "Metrics:" not in driver.page_source and time.monotonic() < deadline:
                time.sleep(0.5)
            time.sleep(2)
            show_metrics(driver, METRICS)
            time.sleep(3)  # the plot draws after its data arrives
            driver.save_screenshot(str(out))
        finally:
            driver.quit()


METRICS = ("train_eval_acc", "val_acc")  # the parallel-coordinates plot's, after batch_size


def show_metrics(driver, metrics: tuple[str, ...]) -> None:
    """Close MLflow's assistant panel and plot batch_size against `metrics`, instead of the params and the metric
    MLflow picks (the first by name): through the page's own controls, as a user would."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    for button in driver.find_elements(By.CSS_SELECTOR, 'button[aria-label="Close"]')[:1]:
        button.click()

    def select(label: str):
        return driver.find_element(By.XPATH, f"//div[normalize-space(text())='{label}']/following-sibling::div[1]")

    for chip in select("Parameters:").find_elements(By.CSS_SELECTOR, ".du-bois-light-select-selection-item"):
        if chip.text.strip() != "batch_size":
            chip.find_element(By.CSS_SELECTOR, ".du-bois-light-select-selection-item-remove").click()
    metric_select = select("Metrics:")
    for remove in metric_select.find_elements(By.CSS_SELECTOR, ".du-bois-light-select-selection-item-remove"):
        remove.click()
    for metric in metrics:
        metric_select.click()
        driver.switch_to.active_element.send_keys(metric)  # the list shows the names that match
        time.sleep(0.5)
        options = driver.find_elements(By.XPATH, f"//div[contains(@class, 'select-item-option') and @title='{metric}']")
        next(option for option in options if option.is_displayed()).click()
    driver.switch_to.active_element.send_keys(Keys.ESCAPE)  # the list closed


if __name__ == "__main__":
    sys.exit(main())
