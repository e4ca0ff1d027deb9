"""Generation and simulation speed of the core (issue 2 §10). Prints figures; not a test.

    .venv/bin/python bench/bench_core.py [--repeat 5] [--json PATH]

Target on a 2-core machine: ≥ 1,000,000 actions/s for the simulation (validation included);
``gen+sim`` also counts generating the schedule.
Times are the median of the repeats, in process CPU seconds, so other load on a shared machine
skews them less than wall time would.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import json_out  # noqa: E402  (bench/ is on the path when a script runs)

from ppviz import metrics, schedules  # noqa: E402
from ppviz.costs import Costs  # noqa: E402
from ppviz.simulator import simulate  # noqa: E402

CASES = [
    ("interleaved-1f1b", 32, 256, {"chunks": 4}),
    ("interleaved-1f1b", 64, 512, {"chunks": 8}),
    ("1f1b", 64, 512, {}),
    ("zb-h1", 32, 512, {}),
]


def _median_cpu(repeat: int, fn, *args, **kwargs) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        t = time.process_time()
        out = fn(*args, **kwargs)
        times.append(time.process_time() - t)
    return statistics.median(times), out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", metavar="PATH", help="also write the table as JSON (the handbook's performance page)")
    args = ap.parse_args()
    load, rows = os.getloadavg(), []
    print(f"{'schedule':<18} {'p':>3} {'m':>4} {'v':>2} {'actions':>9} {'gen s':>7} {'sim s':>7} "
          f"{'sim act/s':>11} {'gen+sim act/s':>13} {'metrics s':>9}")  # fmt: skip
    for name, p, m, params in CASES:
        gen_s, sched = _median_cpu(args.repeat, schedules.build, name, p, m, **params)
        sim_s, result = _median_cpu(args.repeat, simulate, sched, Costs())
        met_s, _ = _median_cpu(args.repeat, metrics.compute, result)
        n = len(result)
        print(f"{name:<18} {p:>3} {m:>4} {params.get('chunks', 1):>2} {n:>9,} {gen_s:>7.3f} {sim_s:>7.3f} "
              f"{n / sim_s:>11,.0f} {n / (gen_s + sim_s):>13,.0f} {met_s:>9.3f}")  # fmt: skip
        rows.append([name, p, m, params.get("chunks", 1), n, gen_s, sim_s, round(n / sim_s), round(n / (gen_s + sim_s)),
                     met_s])  # fmt: skip
    if args.json:
        columns = ["schedule", "p", "m", "v", "actions", "generate (CPU s)", "simulate (CPU s)", "simulate actions/s",
                   "generate + simulate actions/s", "metrics (CPU s)"]  # fmt: skip
        json_out.write(args.json, columns, rows, load)


if __name__ == "__main__":
    main()
