"""What the page benches share (``bench_page.py``, ``bench_model_page.py``): Debian's headless
Chromium driven by selenium, a p50/p90 summary of latencies, the load average, and an older
revision of ``ppviz/figures.py`` to time beside this tree's."""

from __future__ import annotations

import importlib.util
import os
import statistics
import subprocess
import tempfile
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.options import Options

ROOT = Path(__file__).resolve().parents[1]


def browser() -> webdriver.Chrome:
    options = Options()
    options.binary_location = "/usr/bin/chromium"
    flags = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1500,1000")
    for arg in flags:
        options.add_argument(arg)
    return webdriver.Chrome(options=options)


def summary(times: list[float]) -> str:
    p90 = statistics.quantiles(times, n=10, method="inclusive")[-1] if len(times) > 1 else times[0]
    return (
        f"p50 {statistics.median(times):.0f} ms, p90 {p90:.0f} ms ({min(times):.0f}–{max(times):.0f}, n {len(times)})"
    )


def load() -> str:
    return " / ".join(f"{x:.1f}" for x in os.getloadavg())


def figures_at(rev: str):
    """``ppviz/figures.py`` as of git revision ``rev``, imported as a module of ppviz beside the current one."""
    text = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{rev}:ppviz/figures.py"], check=True, capture_output=True, text=True
    ).stdout
    path = Path(tempfile.mkdtemp(prefix="ppviz-ab-")) / "figures_before.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location("ppviz._figures_before", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
