"""Figure build time and JSON size at about 50,000 ops (issue 2 §10). Prints figures; not a test.

    .venv/bin/python bench/bench_figures.py [--repeat 5] [--browser]

Targets on a 2-core machine: Gantt build < 0.3 s for 50k ops and ≤ 40 bytes of figure JSON per
op. Times are medians of the repeats in process CPU seconds (less skewed by other load on a
shared machine than wall time); "encode s" is ``figures.encode`` (numpy arrays to base64 typed
arrays), "orjson s" and "json s" the serialisation of the encoded figure by plotly's
``to_json_plotly`` (what a Dash response runs) with the orjson engine and with the stdlib's.
``--browser`` also times ``Plotly.newPlot`` to the next frame in headless
Chromium (/usr/bin/chromium, selenium), wall time, median of 3: noisy on a shared machine.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from plotly.io.json import to_json_plotly  # noqa: E402

import ppviz  # noqa: E402
from ppviz import figures  # noqa: E402
from ppviz.ir import BW, Action, F, Overlap, Placement, make_schedule  # noqa: E402

CASES = [
    ("interleaved-1f1b", 16, 400, {"chunks": 4}),  # 51,200 ops, F and BW in 4 shades
    ("zb-h1", 16, 1024, {}),  # 49,152 ops, F, B and W
]


def overlapped_1f1b(microbatches: int) -> ppviz.Run:
    """Two devices whose steady state runs each F with a BW as one overlapped pair (4·m ops)."""
    a, m = Action, microbatches
    d0 = [a(0, i, F) for i in range(3)] + [Overlap(a(0, i, F), a(0, i - 3, BW)) for i in range(3, m)]
    d0 += [a(0, i, BW) for i in range(m - 3, m)]
    d1 = [a(1, 0, F)] + [Overlap(a(1, i, F), a(1, i - 1, BW)) for i in range(1, m)] + [a(1, m - 1, BW)]
    return ppviz.evaluate(make_schedule(Placement.standard(2), m, [d0, d1], "overlapped-1f1b (hand-made)"))


BROWSER_CASES = [
    ("1f1b", 8, 32, {}),
    ("1f1b", 16, 62, {}),
    ("interleaved-1f1b", 16, 80, {"chunks": 4}),
    ("interleaved-1f1b", 16, 160, {"chunks": 4}),
    ("interleaved-1f1b", 16, 400, {"chunks": 4}),
]
CHROMIUM_FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]
CHROMIUM_FLAGS += ["--window-size=1300,1000"]


def browser_draw_times(repeat: int = 3) -> None:
    """Print first-draw times of the Gantt and the overview in headless Chromium."""
    import tempfile

    import plotly
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options

    js = (Path(plotly.__file__).parent / "package_data" / "plotly.min.js").read_text()
    page = Path(tempfile.mkdtemp()) / "blank.html"
    page.write_text(f"<html><body><div id='g'></div><script>{js}</script></body></html>")
    options = Options()
    options.binary_location = "/usr/bin/chromium"
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options)
    driver.set_script_timeout(300)
    draw = """
      const done = arguments[1], fig = JSON.parse(arguments[0]);
      Plotly.purge('g');
      const t = performance.now();
      Plotly.newPlot('g', fig.data, fig.layout).then(() => requestAnimationFrame(() => done(performance.now() - t)));
    """
    try:
        driver.get(page.as_uri())
        print(f"\n{'schedule':<34} {'figure':<9} {'ops':>7} {'first draw ms':>14}")
        for name, p, m, params in BROWSER_CASES:
            run = ppviz.simulate(name, p, m, **params)
            label = f"{name} p={p} m={m}" + "".join(f" {k[0]}={v}" for k, v in params.items())
            for kind, fig in (("gantt", figures.gantt(run)), ("overview", figures.overview(run))):
                text = to_json_plotly(figures.encode(fig))
                ms = statistics.median(driver.execute_async_script(draw, text) for _ in range(repeat))
                print(f"{label:<34} {kind:<9} {len(run.result):>7,} {ms:>14,.0f}")
    finally:
        driver.quit()


def _median_cpu(fn, repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        t = time.process_time()
        out = fn()
        times.append(time.process_time() - t)
    return statistics.median(times), out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--browser", action="store_true", help="also time the first draw in headless Chromium")
    args = parser.parse_args(argv)
    figures.gantt(ppviz.simulate("1f1b", 2, 2))  # warm plotly's lazy imports outside the timings
    header = f"{'schedule':<34} {'figure':<9} {'ops':>7} {'build s':>8} {'encode s':>8} {'orjson s':>8} {'json s':>7}"
    header += f" {'JSON bytes':>11} {'B/op':>6}"
    print(header)
    print("-" * len(header))
    cases = [(name, p, m, params, ppviz.simulate(name, p, m, **params)) for name, p, m, params in CASES]
    cases.append(("overlapped pairs", 2, 12_500, {}, overlapped_1f1b(12_500)))
    for name, p, m, params, run in cases:
        ops = len(run.result)
        label = f"{name} p={p} m={m}" + "".join(f" {k[0]}={v}" for k, v in params.items())
        builders = {
            "gantt": lambda run=run: figures.gantt(run),
            "memory": lambda run=run, p=p: figures.memory(run, limit=float(p)),
            "overview": lambda run=run: figures.overview(run),
        }
        for kind, build in builders.items():
            seconds, fig = _median_cpu(build, args.repeat)
            encode_seconds, sent = _median_cpu(lambda fig=fig: figures.encode(fig), args.repeat)
            fast, text = _median_cpu(lambda sent=sent: to_json_plotly(sent, engine="orjson"), args.repeat)
            slow, _ = _median_cpu(lambda sent=sent: to_json_plotly(sent, engine="json"), args.repeat)
            size = len(text)
            row = f"{label:<34} {kind:<9} {ops:>7,} {seconds:>8.4f} {encode_seconds:>8.4f} {fast:>8.4f} {slow:>7.4f}"
            row += f" {size:>11,} {size / ops:>6.1f}"
            print(row)
    print("\ntargets: gantt build < 0.3 s at 50k ops; gantt JSON ≤ 40 B/op")
    if args.browser:
        browser_draw_times()


if __name__ == "__main__":
    main()
