"""Real-browser latency of the page: a slider release until both charts are redrawn.

Serves app.py from a thread (werkzeug, threaded) and drives Debian's headless Chromium with
selenium. A keyboard step on a slider commits its value at once, like releasing a drag. The
clock starts at that keydown (a capture listener in the page) and stops at the later of the two
charts' ``plotly_afterplot`` events once the Gantt chart shows the new size. Prints figures:

    .venv/bin/python bench/bench_page.py            # 8×32 p50 over 15 moves, ~20,000 ops, zooms
    .venv/bin/python bench/bench_page.py --sweep    # also bars vs overview at 5k…50k ops
    .venv/bin/python bench/bench_page.py --ab main  # only 8×32 and 8×64: main's figures.py against these, in turns
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from browsing import browser, figures_at, load, summary  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from werkzeug.serving import make_server  # noqa: E402

import app as page  # noqa: E402
from ppviz.web.common import charts  # noqa: E402
from ppviz.web.pages.abstract import render  # noqa: E402

HOOK = """
window.__t0 = null; window.__draws = {gantt: [], memory: []};
document.addEventListener('keydown', function () { window.__t0 = performance.now(); }, true);
for (const id of ['gantt', 'memory']) {
  const gd = document.querySelector('#' + id + ' .js-plotly-plot');
  gd.on('plotly_afterplot', function () { window.__draws[id].push(performance.now()); });
}
"""
DONE = """
const t0 = window.__t0, title = arguments[0];
const gd = document.querySelector('#gantt .js-plotly-plot');
const text = gd && gd.layout && gd.layout.title && (gd.layout.title.text || gd.layout.title);
if (t0 === null || String(text).indexOf(title) < 0) return null;
const g = window.__draws.gantt.filter(t => t > t0), m = window.__draws.memory.filter(t => t > t0);
if (!g.length || !m.length) return null;
return Math.max(g[g.length - 1], m[m.length - 1]) - t0;
"""


def serve() -> tuple[str, object]:
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = make_server("127.0.0.1", 0, page.server, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_port}", server


def open_view(driver, base: str, schedule: str, p: int, m: int) -> None:
    driver.get(f"{base}/#schedule={schedule}&devices={p}&microbatches={m}")
    deadline = time.time() + 120
    while time.time() < deadline:
        ready = driver.execute_script(
            "const gd = document.querySelector('#gantt .js-plotly-plot');"
            "return !!(gd && gd.layout && gd.layout.title && String(gd.layout.title.text).indexOf(arguments[0]) >= 0)",
            f"{m} microbatches",
        )
        if ready:
            break
        time.sleep(0.05)
    time.sleep(0.5)
    driver.execute_script(HOOK)


def move(driver, m_new: int, key: str, timeout: float = 120.0) -> float:
    """Press a key on the microbatches slider; seconds until both charts show m_new."""
    driver.execute_script("window.__t0 = null;")
    driver.find_element(By.CSS_SELECTOR, "#microbatches [role=slider]").send_keys(key)
    deadline = time.time() + timeout
    while time.time() < deadline:
        ms = driver.execute_script(DONE, f"· {m_new} microbatches")
        if ms is not None:
            return ms / 1000
        time.sleep(0.01)
    raise TimeoutError(f"the page did not show {m_new} microbatches within {timeout} s")


ZOOM = """
window.__t0 = performance.now();
Plotly.relayout(document.querySelector('#gantt .js-plotly-plot'), arguments[0]);
"""
ZOOMED = """
const t0 = window.__t0, want = arguments[0];
const stamp = document.querySelector('#zoom-stamp').textContent;
if (want === '' ? stamp !== '' : stamp.indexOf(want) < 0) return null;
const g = window.__draws.gantt.filter(t => t > t0);
return g.length ? g[g.length - 1] - t0 : null;
"""


def zoom(driver, relayout: dict, stamp: str, timeout: float = 60.0) -> tuple[float, str]:
    """Zoom the Gantt chart as a drag or a double-click does; seconds until the server's redraw is
    drawn (the zoom stamp names the window, or is empty after a reset), and how it was drawn."""
    driver.execute_script(ZOOM, relayout)
    deadline = time.time() + timeout
    while time.time() < deadline:
        ms = driver.execute_script(ZOOMED, stamp)
        if ms is not None:
            time.sleep(0.3)  # let the memory chart's echo land before the next zoom
            shown = driver.execute_script("return document.querySelector('#zoom-stamp').textContent")
            return ms / 1000, shown.rsplit("|", 1)[-1] if shown else "overview"
        time.sleep(0.01)
    raise TimeoutError(f"the zoom to {relayout} was not drawn within {timeout} s")


def latencies(driver, base: str, schedule: str, p: int, m: int, moves: int) -> list[float]:
    open_view(driver, base, schedule, p, m)
    out = []
    for i in range(moves):
        up = i % 2 == 0
        out.append(move(driver, m + 1 if up else m, Keys.ARROW_RIGHT if up else Keys.ARROW_LEFT))
        time.sleep(0.2)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--moves", type=int, default=15, help="slider moves at 8×32 (default 15)")
    parser.add_argument("--sweep", action="store_true", help="also time bars and overview from 5k to 50k ops")
    parser.add_argument("--ab", metavar="REV", help="only 8×32 and 8×64, the figures.py of REV against these, in turns")
    args = parser.parse_args()
    base, server = serve()
    driver = browser()
    if args.ab:
        try:
            compare_figures(driver, base, args.ab, args.moves)
        finally:
            driver.quit()
            server.shutdown()
        return
    try:
        small = latencies(driver, base, "1f1b", 8, 32, args.moves)
        print(
            f"8 devices × 32 microbatches (512 ops), {len(small)} moves: p50 {statistics.median(small) * 1000:.0f} ms, "
            f"min {min(small) * 1000:.0f} ms, max {max(small) * 1000:.0f} ms"
        )
        big = latencies(driver, base, "1f1b", 20, 500, 3)
        shown = "overview" if charts.BARS_MAX_OPS < 20_000 else "bars"
        times = ", ".join(f"{t:.2f}" for t in big)
        print(f"20 devices × 500 microbatches (20,000 ops, {shown}): median {statistics.median(big):.2f} s ({times})")
        for t0, t1 in ((100.0, 130.0), (100.0, 400.0), (100.0, 1300.0)):
            there, drawn = zoom(driver, {"xaxis.range": [t0, t1]}, f"({t0}, {t1})")
            back, _ = zoom(driver, {"xaxis.autorange": True}, "")
            print(f"  zoom to [{t0:g}, {t1:g}] ({drawn}): {there:.2f} s; back to the whole run: {back:.2f} s")
        if args.sweep:
            sweep(driver, base)
    finally:
        driver.quit()
        server.shutdown()


def compare_figures(driver, base: str, rev: str, moves: int) -> None:
    """Slider moves at 8×32 and 8×64 with the figures.py of git revision ``rev`` and with this one, in
    three alternating blocks each, so that other work on the machine slows both alike."""
    from ppviz import figures

    variants = ((rev, figures_at(rev)), ("now", figures))
    print(f"load average at start: {load()}")
    try:
        for m in (32, 64):
            times: dict[str, list[float]] = {name: [] for name, _ in variants}
            for _ in range(3):
                for name, module in variants:
                    render.figures = module
                    times[name] += [t * 1000 for t in latencies(driver, base, "1f1b", 8, m, max(moves // 3, 1))]
            for name, _ in variants:
                print(f"8 devices × {m} microbatches, figures {name}: {summary(times[name])}")
    finally:
        render.figures = figures
    print(f"load average at the end: {load()}")


def sweep(driver, base: str) -> None:
    """Bars against the overview at growing sizes (1F1B, 2·p·m ops), 3 moves each."""
    saved = charts.BARS_MAX_OPS
    try:
        for p, m in ((10, 250), (10, 500), (20, 375), (20, 500), (50, 500)):
            ops = 2 * p * m
            row = []
            for label, limit in (("bars", 10**9), ("overview", 0)):
                charts.BARS_MAX_OPS = limit
                if label == "bars" and ops > 30_000:
                    row.append(f"{label} skipped")
                    continue
                t = statistics.median(latencies(driver, base, "1f1b", p, m, 3))
                row.append(f"{label} {t:.2f} s")
            print(f"{ops:>6,} ops ({p}×{m}): " + ", ".join(row))
    finally:
        charts.BARS_MAX_OPS = saved


if __name__ == "__main__":
    main()
