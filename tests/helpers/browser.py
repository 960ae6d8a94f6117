"""Headless Chromium (Debian's chromium + chromium-driver, which `make test` installs) driven by Selenium."""
from __future__ import annotations

import shutil
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def chromium(profile: Path, width: int = 1400, height: int = 900):
    """A headless Chromium window of `width` x `height`; fails (never skips) when the browser is missing."""
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    browser, driver_path = shutil.which("chromium"), shutil.which("chromedriver")
    assert browser and driver_path, "make test installs Debian's chromium and chromium-driver"
    options = Options()
    options.binary_location = browser
    for arg in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run", f"--window-size={width},{height}",
                f"--user-data-dir={profile}"]:
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def image_states(driver) -> list[dict]:
    """Every <img>: loaded or not, its natural and its displayed size."""
    return driver.execute_script(
        "return Array.from(document.images).map(i => ({complete: i.complete, natural: i.naturalWidth, "
        "shown: i.getBoundingClientRect().width, alt: i.alt}))")


def section_screenshot(driver, section, path: Path, width: int = 1400, height: int = 2200) -> Path:
    """A screenshot of the page from just above `section` (an element), `height` pixels tall, as a user scrolled
    there sees it; its path."""
    top = section.location["y"]
    driver.set_window_size(width, top + height)
    driver.execute_script("window.scrollTo(0, arguments[0])", top - 20)
    driver.save_screenshot(str(path))
    return path
