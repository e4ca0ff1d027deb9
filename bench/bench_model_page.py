"""Real-browser latency of the model & cluster view: a change of the global batch until the Gantt (ms)
and memory (GB) chart, one figure, is redrawn, at pp 8 and about 64 microbatches (target p50 ≤ 300 ms).

Serves app.py from a child process and drives Debian's headless Chromium with selenium, as bench_page.py
does. Each move types a new global batch and presses Enter: the clock starts at that keydown and
stops at the chart's ``plotly_afterplot`` event (the later of both charts', on a page of two) once
the Gantt's title shows the new count. The batches cycle 72, 64, 56, 64 (multiples of pp, which
interleaved 1F1B needs: 65 is refused, and a bench waiting for a chart that never comes timed
out), and the server's estimate
cache is emptied before each move, so every move estimates anew. A page showing an error instead
of the charts stops the bench with that error. Also prints the server's share: ``model_render.render``
alone, cold (a new layout) and warm (cached), and the load average (other work on a shared
machine slows the browser: compare rows of one run).

``--ab REV`` also times the whole page of git revision REV (its tree, ``git archive``d to a temporary
directory), each page served by its own process (``serve_tree``; the estimate cache emptied before
every callback request, as above), alternating blocks of moves of both in one run, so that load
drift hits both alike::

    .venv/bin/python bench/bench_model_page.py [schedule ...] [--moves 15] [--ab main]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import psutil  # noqa: E402
from browsing import browser, load, summary  # noqa: E402
from selenium.common.exceptions import TimeoutException  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402

from ppviz.web.common import cluster  # noqa: E402
from ppviz.web.pages.model import render as model_render  # noqa: E402

# The charts on screen: the Gantt with its memory chart in one figure; a page before that drew the
# memory chart as a second one (``--ab`` of an older revision), timed until both are drawn.
HOOK = """
window.__t0 = null; window.__draws = {};
document.addEventListener('keydown', function (e) { if (e.key === 'Enter') window.__t0 = performance.now(); }, true);
for (const id of ['gantt-model', 'memory-model']) {
  const gd = document.querySelector('#' + id + ' .js-plotly-plot');
  if (!gd || gd.offsetParent === null) continue;
  window.__draws[id] = [];
  gd.on('plotly_afterplot', function () { window.__draws[id].push(performance.now()); });
}
"""
TITLE = """
const gd = document.querySelector('#gantt-model .js-plotly-plot');
if (!gd || !gd.layout) return null;
const notes = (gd.layout.annotations || []).map(a => String(a.text)).join(' ');
if (notes.indexOf('Nothing to draw') >= 0) return {error: notes};
const title = gd.layout.title && (gd.layout.title.text || gd.layout.title);
return String(title || '');
"""
DONE = (
    "const t0 = window.__t0, want = arguments[0];\nconst title = (function () {"
    + TITLE
    + """})();
if (title && title.error) return title;
if (t0 === null || !title || title.indexOf(want) < 0) return null;
let last = 0;
for (const draws of Object.values(window.__draws)) {
  const after = draws.filter(t => t > t0);
  if (!after.length) return null;
  last = Math.max(last, after[after.length - 1]);
}
return last - t0;
"""
)
MEMORY_DRAWN = """
const one = document.querySelector('#gantt-model .js-plotly-plot');
if (one && one.data && one.data.some(t => t.yaxis === 'y2')) return true;
const gd = document.querySelector('#memory-model .js-plotly-plot');
return gd && gd.offsetParent !== null && gd.data && gd.data.length > 2;
"""
LINK = "/model#model=llama3-70b&gpu=h100-sxm&schedule={schedule}&tp=8&pp=8&dp=1&mbs=1&gbs=64&vpp={vpp}"
BATCHES = (72, 64, 56, 64)  # global batches (= microbatches at dp 1, mbs 1), all multiples of pp 8


def wait(driver, script: str, *args, timeout: float = 60.0):
    """The script's first truthy answer, polled inside the page every 5 ms (polling from selenium
    would cost the browser CPU that the bench measures); an error shown on the page instead of a
    chart stops the bench."""
    looped = (
        "const done = arguments[arguments.length - 1], outer = arguments;"
        "const probe = function () {" + script + "};"
        "(function loop() { const v = probe.apply(null, outer); if (v) done(v); else setTimeout(loop, 5); })();"
    )
    driver.set_script_timeout(timeout)
    try:
        value = driver.execute_async_script(looped, *args)
    except TimeoutException:
        raise TimeoutError(f"no answer within {timeout:g} s from: {script.strip()[:80]}") from None
    if isinstance(value, dict) and "error" in value:
        raise RuntimeError(f"the page shows an error instead of the charts: {value['error']}")
    return value


def vpp_of(schedule: str) -> int:
    return 2 if schedule.startswith("interleaved") else 1


def browser_cpu_s(driver) -> float:
    """CPU seconds used so far by the browser's processes (renderer, GPU, browser): unlike wall time,
    hardly swollen by other work on a shared machine."""
    total = 0.0
    for proc in psutil.Process(driver.service.process.pid).children(recursive=True):
        try:
            times = proc.cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system
    return total


def moves(driver, base: str, schedule: str, count: int) -> tuple[list[float], list[float]]:
    """Open the view at 64 microbatches, then ``count`` moves: ms from Enter to both charts drawn,
    and the browser's CPU ms over each move."""
    driver.get(base + LINK.format(schedule=schedule, vpp=vpp_of(schedule)))
    driver.refresh()
    wait(driver, "const t = (function () {" + TITLE + "})(); return t && (t.error ? t : t.indexOf('· 64 micro') >= 0);")
    wait(driver, MEMORY_DRAWN)
    time.sleep(1.0)  # both charts settled: the hooks go on the elements that will be redrawn
    driver.execute_script(HOOK)
    out, cpu = [], []
    box = driver.find_element("css selector", "#gbs-model")
    for i in range(count):
        m = BATCHES[i % len(BATCHES)]
        box.send_keys(Keys.CONTROL, "a")
        box.send_keys(str(m))
        driver.execute_script("window.__t0 = null;")
        before = browser_cpu_s(driver)
        box.send_keys(Keys.ENTER)
        out.append(wait(driver, DONE, f"· {m} microbatches"))
        cpu.append((browser_cpu_s(driver) - before) * 1e3)
        time.sleep(0.2)
    return out, cpu


def server_share(schedule: str) -> tuple[float, float]:
    """Median seconds of ``model_render.render`` with an empty cache, and one cached call."""
    state = replace(cluster.ModelState(), schedule=schedule, vpp=vpp_of(schedule), pp=8, tp=8, dp=1, mbs=1)
    cold = []
    for m in BATCHES + BATCHES[:1]:
        model_render.clear_cache()
        t = time.perf_counter()
        model_render.render(cluster.derive(replace(state, gbs=m)))
        cold.append(time.perf_counter() - t)
    t = time.perf_counter()
    model_render.render(cluster.derive(replace(state, gbs=BATCHES[0])))
    return statistics.median(cold), time.perf_counter() - t


SERVE = """
import logging, sys
from flask import request
from werkzeug.serving import make_server
import app
from ppviz.web.pages.model import render as model_render

@app.server.before_request
def _cold():  # every move estimates anew, as a new layout would
    if request.path.endswith("_dash-update-component"):
        model_render.clear_cache()

logging.getLogger("werkzeug").setLevel(logging.ERROR)
server = make_server("127.0.0.1", 0, app.server, threaded=True)
print(server.server_port, flush=True)
server.serve_forever()
"""


def serve_tree(root: Path) -> tuple[str, subprocess.Popen]:
    """The page of the tree at ``root`` served by a child process (werkzeug, threaded); its address."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    child = subprocess.Popen([sys.executable, "-c", SERVE], cwd=root, env=env, stdout=subprocess.PIPE, text=True)
    port = child.stdout.readline().strip()
    if not port.isdigit():
        child.kill()
        raise RuntimeError(f"the page of {root} did not start")
    return f"http://127.0.0.1:{port}", child


def tree_at(rev: str) -> Path:
    """Git revision ``rev``'s files in a temporary directory."""
    path = Path(tempfile.mkdtemp(prefix="ppviz-ab-"))
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(path)], input=archive, check=True)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("schedules", nargs="*", default=["1f1b", "zb-v", "interleaved-1f1b"])
    parser.add_argument("--moves", type=int, default=15, help="moves per schedule and variant (default 15)")
    parser.add_argument("--ab", metavar="REV", help="also time the page of this git revision, in turns")
    args = parser.parse_args()
    variants = [("now", ROOT)]
    if args.ab:
        variants.insert(0, (args.ab, tree_at(args.ab)))
    blocks = 3 if args.ab else 1  # alternate before/after in blocks so both see the same load
    servers = {name: serve_tree(root) for name, root in variants}
    driver = browser()
    print(f"load average (1/5/15 min) at start: {load()}; {os.cpu_count()} CPUs")
    print(
        "| schedule | page | change → both charts redrawn, pp 8 × m 56–72 | browser CPU a move (p50) "
        "| server render cold / warm (this tree) |"
    )
    print("|---|---|---:|---:|---:|")
    try:
        for schedule in args.schedules:
            times: dict[str, list[float]] = {name: [] for name, _ in variants}
            cpu: dict[str, list[float]] = {name: [] for name, _ in variants}
            for b in range(blocks):
                for name, _ in variants:
                    n = args.moves // blocks + (1 if b < args.moves % blocks else 0)
                    wall, used = moves(driver, servers[name][0], schedule, n)
                    times[name] += wall
                    cpu[name] += used
            cold, warm = server_share(schedule)
            for name, _ in variants:
                share = f"{cold * 1e3:.0f} / {warm * 1e3:.0f} ms" if name == "now" else ""
                used = statistics.median(cpu[name])
                print(f"| {schedule} | {name} | {summary(times[name])} | {used:.0f} ms | {share} |")
            print(f"  (load average now {load()})", flush=True)
    finally:
        driver.quit()
        for _, child in servers.values():
            child.terminate()
            child.wait()


if __name__ == "__main__":
    main()
