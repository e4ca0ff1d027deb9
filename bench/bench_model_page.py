"""Real-browser latency of the model & cluster view: a change of the global batch until the Gantt (ms)
and memory (GB) charts are redrawn, at pp 8 and about 64 microbatches (target p50 ≤ 300 ms).

Serves app.py from a thread and drives Debian's headless Chromium with selenium, as bench_page.py
does. Each move types a new global batch (a new microbatch count, so every move estimates anew)
and presses Enter: the clock starts at that keydown and stops at the later of the two charts'
``plotly_afterplot`` events once the Gantt's title shows the new count. Also prints the server's
share: ``model_views.render`` alone, cold (a new layout) and warm (cached). Prints figures:

    .venv/bin/python bench/bench_model_page.py
"""

from __future__ import annotations

import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_page import browser, serve  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402

from ppviz.web import model_state, model_views  # noqa: E402

HOOK = """
window.__t0 = null; window.__draws = {'gantt-model': [], 'memory-model': []};
document.addEventListener('keydown', function (e) { if (e.key === 'Enter') window.__t0 = performance.now(); }, true);
for (const id of ['gantt-model', 'memory-model']) {
  const gd = document.querySelector('#' + id + ' .js-plotly-plot');
  gd.on('plotly_afterplot', function () { window.__draws[id].push(performance.now()); });
}
"""
DONE = """
const t0 = window.__t0, title = arguments[0];
const gd = document.querySelector('#gantt-model .js-plotly-plot');
const text = gd && gd.layout && gd.layout.title && (gd.layout.title.text || gd.layout.title);
if (t0 === null || String(text).indexOf(title) < 0) return null;
const g = window.__draws['gantt-model'].filter(t => t > t0), m = window.__draws['memory-model'].filter(t => t > t0);
if (!g.length || !m.length) return null;
return Math.max(g[g.length - 1], m[m.length - 1]) - t0;
"""
LINK = "/#view=model&model=llama3-70b&gpu=h100-sxm&schedule={schedule}&tp=8&pp=8&dp=1&mbs=1&gbs=64&vpp={vpp}"


def wait(driver, script: str, *args, timeout: float = 60.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = driver.execute_script(script, *args)
        if value:
            return value
        time.sleep(0.02)
    raise TimeoutError(script[:80])


def moves(driver, base: str, schedule: str, count: int) -> list[float]:
    driver.get(base + LINK.format(schedule=schedule, vpp=2 if schedule.startswith("interleaved") else 1))
    driver.refresh()
    wait(driver, "return document.querySelector('#gantt-model .js-plotly-plot') && "
                 "String(document.querySelector('#gantt-model .js-plotly-plot').layout.title.text)"
                 ".indexOf('64 microbatches') >= 0;")  # fmt: skip
    wait(driver, "const gd = document.querySelector('#memory-model .js-plotly-plot');"
                 "return gd && gd.data && gd.data.length > 2;")  # fmt: skip
    time.sleep(1.0)  # both charts settled: the hooks go on the elements that will be redrawn
    driver.execute_script(HOOK)
    out = []
    box = driver.find_element("css selector", "#gbs-model")
    for i in range(count):
        m = 65 + i
        box.send_keys(Keys.CONTROL, "a")
        box.send_keys(str(m))
        driver.execute_script("window.__t0 = null;")
        box.send_keys(Keys.ENTER)
        out.append(wait(driver, DONE, f"{m} microbatches"))
        time.sleep(0.2)
    return out


def server_share(schedule: str) -> tuple[float, float]:
    state = replace(model_state.ModelState(), schedule=schedule, vpp=2 if schedule.startswith("interleaved") else 1)
    cold = []
    for i in range(5):
        model_views.clear_cache()
        s = replace(state, gbs=64 + i)
        t = time.perf_counter()
        model_views.render(s)
        cold.append(time.perf_counter() - t)
    t = time.perf_counter()
    model_views.render(replace(state, gbs=68))
    return statistics.median(cold), time.perf_counter() - t


def main() -> None:
    base, server = serve()
    driver = browser()
    try:
        print("| schedule | pp × m | change → both charts redrawn (15 moves) | server render cold / warm |")
        print("|---|---|---:|---:|")
        for schedule in sys.argv[1:] or ("1f1b", "zb-v", "interleaved-1f1b"):
            times = moves(driver, base, schedule, 15)
            cold, warm = server_share(schedule)
            print(
                f"| {schedule} | 8 × 65–79 | p50 {statistics.median(times):.0f} ms "
                f"({min(times):.0f}–{max(times):.0f} ms) | {cold * 1e3:.0f} / {warm * 1e3:.0f} ms |"
            )
    finally:
        driver.quit()
        server.shutdown()


if __name__ == "__main__":
    main()
