"""Make the README's and the handbook's screenshots from the running app, so that they show what it shows.

    python scripts/screenshots.py            # writes docs/screenshot.png, docs/model-view.png, docs/compare-mode.png,
                                             # docs/measured-view.png
    python scripts/screenshots.py docs/measured-view.png    # only the images named

Starts the app (`python app.py`) on a free loopback port, opens each view below in Debian's Chromium
(headless, through selenium as the browser tests do) at 1280 × 800, waits until the view has drawn,
saves the screen, and stops the app by its process id.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.common.by import By

ROOT = Path(__file__).resolve().parents[1]
WIDTH, HEIGHT = 1280, 800
MEASURED_RUN = ROOT / "tests" / "data" / "measured" / "torch-2.13" / "1f1b-runtime-4r"
# (image, the view's address on the app, CSS selector whose text says the view has drawn, text it holds,
# files chosen in the view's file input once it is open)
SHOTS = (
    ("docs/screenshot.png", "/#schedule=zb-v&devices=4&microbatches=8", "#card-makespan", "", ()),
    ("docs/compare-mode.png", "/#mode=compare&compare=1f1b,zb-v&devices=8&microbatches=16", "#ranking", "zb-v", ()),
    (
        "docs/model-view.png",
        "/model#model=llama3-70b&gpu=h100-sxm&schedule=zb-v&tp=8&pp=8&dp=1&gbs=32",
        "#card-iteration-model",
        "s",
        (),
    ),
    (
        "docs/measured-view.png",
        "/measured",
        "#summary-measured",
        "4 ranks",
        tuple(sorted(MEASURED_RUN.glob("rank*.trace.json.gz"))),
    ),
)
TIMEOUT_S = 120


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_app(port: int) -> subprocess.Popen:
    """The app on 127.0.0.1:port, in its own process group (stopped by its id, with whatever it started)."""
    env = {**os.environ, "HOST": "127.0.0.1", "PORT": str(port)}
    proc = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env, start_new_session=True)
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as r:
                if r.status == 200:
                    return proc
        except OSError:
            time.sleep(0.5)
        if proc.poll() is not None:
            raise SystemExit(f"the app exited with status {proc.returncode}")
    stop_app(proc)
    raise SystemExit(f"the app did not answer on port {port} within {TIMEOUT_S} s")


def stop_app(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)
    except ProcessLookupError:
        pass
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def browser() -> webdriver.Chrome:
    """Debian's Chromium, headless, its viewport exactly WIDTH × HEIGHT."""
    options = Options()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-background-networking", "--disable-component-update", "--hide-scrollbars"):  # fmt: skip
        options.add_argument(arg)
    driver = webdriver.Chrome(options=options)
    metrics = {"width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": False}
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
    return driver


def wait_drawn(driver, selector: str, text: str) -> None:
    """The view's marker holds its text and every chart on screen has drawn (and stopped moving)."""
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        found = driver.find_elements(By.CSS_SELECTOR, selector)
        if found and found[0].is_displayed() and found[0].text.strip() and text in found[0].text:
            charts = driver.execute_script(
                "return [...document.querySelectorAll('.js-plotly-plot')].filter(e => e.offsetParent)"
                ".every(e => e.querySelector('.main-svg'))"
            )
            if charts:
                time.sleep(1.5)  # plotly's last relayout and the fonts
                return
        time.sleep(0.3)
    raise SystemExit(f"{selector} did not show {text!r} within {TIMEOUT_S} s")


def main() -> int:
    only = set(sys.argv[1:])
    port = free_port()
    proc = start_app(port)
    try:
        driver = browser()
        try:
            for image, address, selector, text, files in SHOTS:
                if only and image not in only:
                    continue
                driver.get(f"http://127.0.0.1:{port}{address}")
                if files:
                    upload = "input[type=file]"
                    deadline = time.monotonic() + TIMEOUT_S
                    while not driver.find_elements(By.CSS_SELECTOR, upload) and time.monotonic() < deadline:
                        time.sleep(0.3)
                    driver.find_element(By.CSS_SELECTOR, upload).send_keys("\n".join(map(str, files)))
                wait_drawn(driver, selector, text)
                driver.save_screenshot(str(ROOT / image))
                print(f"wrote {image} ({address})")
        finally:
            driver.quit()
    finally:
        stop_app(proc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
