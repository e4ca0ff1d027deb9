"""Compare mode's server side: the page's compare figure and its sweep. Prints figures; not a test.

    .venv/bin/python bench/bench_compare.py [--repeat 5]

For each case: the old stacked Gantts (``figures.compare``, no memory) against the new Gantt +
memory per schedule (``figures.compare_memory``), both as the page builds them (then
``figures.encode``), in process CPU ms (median of the repeats, A/B in the same run, so the ratio
holds on a loaded machine even when the absolute times do not) and JSON bytes; then the page's
sweep (every compared schedule at the 7 powers of two around m) in CPU ms.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ppviz  # noqa: E402
from ppviz import figures  # noqa: E402
from ppviz.web.common import charts  # noqa: E402
from ppviz.web.pages.abstract import render, sync  # noqa: E402

CASES = [("1f1b", "zb-v", 8, 16), ("1f1b", "zb-v", 8, 64), ("interleaved-1f1b", "zb-h1", 32, 64)]


def cpu_ms(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.process_time()
        fn()
        times.append(1e3 * (time.process_time() - t))
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    repeat = parser.parse_args().repeat
    print("| case | ops | compare ms | compare_memory ms | ratio | compare KB | compare_memory KB | sweep ms |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for a, b, p, m in CASES:
        runs = [ppviz.simulate(n, p, m) for n in (a, b)]
        cap = charts.BARS_MAX_OPS // 2

        def old(runs=runs, cap=cap):
            return figures.encode(figures.compare(runs, max_bars=cap))

        def new(runs=runs, cap=cap):
            return figures.encode(figures.compare_memory(runs, max_bars=cap, band_over=charts.MEMORY_LINES))

        state = sync.read(f"#mode=compare&compare={a},{b}&devices={p}&microbatches={m}&show=sweep").state

        def sweep(state=state):
            render.clear_run_cache()
            return render.sweep_rows(state)

        t_old, t_new, t_sweep = cpu_ms(old, repeat), cpu_ms(new, repeat), cpu_ms(sweep, repeat)
        kb_old, kb_new = (len(json.dumps(f())) / 1024 for f in (old, new))
        ops = sum(len(r.result) for r in runs)
        print(
            f"| {a} vs {b} at {p} × {m} | {ops:,} | {t_old:.1f} | {t_new:.1f} | {t_new / t_old:.2f} | "
            f"{kb_old:.0f} | {kb_new:.0f} | {t_sweep:.0f} |"
        )


if __name__ == "__main__":
    main()
