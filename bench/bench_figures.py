"""Figure build time and JSON size at about 50,000 ops (issue 2 §10). Prints figures; not a test.

    .venv/bin/python bench/bench_figures.py [--repeat 5]

Targets on a 2-core machine: Gantt build < 0.3 s for 50k ops and ≤ 40 bytes of figure JSON per
op. Times are medians of the repeats in process CPU seconds (less skewed by other load on a
shared machine than wall time); "json s" is ``fig.to_json()``, the serialisation a Dash callback
pays on top of the build.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

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
    args = parser.parse_args(argv)
    figures.gantt(ppviz.simulate("1f1b", 2, 2))  # warm plotly's lazy imports outside the timings
    header = f"{'schedule':<34} {'figure':<9} {'ops':>7} {'build s':>8} {'json s':>7} {'JSON bytes':>11} {'B/op':>6}"
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
            json_seconds, text = _median_cpu(fig.to_json, args.repeat)
            size = len(text)
            row = f"{label:<34} {kind:<9} {ops:>7,} {seconds:>8.4f} {json_seconds:>7.4f} {size:>11,} {size / ops:>6.1f}"
            print(row)
    print("\ntargets: gantt build < 0.3 s at 50k ops; gantt JSON ≤ 40 B/op")


if __name__ == "__main__":
    main()
