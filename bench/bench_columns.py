"""Schedules as columns (issue 22 §1, §3): generation, flattening and whole-simulate time, and
memory per action above the import baseline. Prints figures; not a test.

    .venv/bin/python bench/bench_columns.py [--repeat 5] [--against /work/main] [--search]

Each figure comes from a fresh process per checkout, so the two checkouts are measured in one
run under the same load. Times are process CPU seconds (median of the repeats). Memory: the peak
RSS (VmHWM, reset after the import) and tracemalloc's (tm) peak and kept bytes, each above what
``import ppviz`` leaves, divided by the actions. ``--search`` runs the searching schedules
instead (few actions, much work per action: use ``--repeat 1``, so ``gen`` is a cold build).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

CASES = [
    ("interleaved-1f1b", 64, 512, {"chunks": 8}),  # 524,288 actions
    ("interleaved-1f1b", 64, 1024, {"chunks": 8}),  # 1,048,576
    ("1f1b", 64, 4096, {}),  # 524,288
    ("zb-h1", 32, 4096, {}),  # 393,216
]
SEARCH_CASES = [
    ("zb-auto", 32, 128, {}),
    ("zb-auto", 64, 256, {}),
    ("v-half", 16, 64, {}),
    ("v-auto", 32, 128, {}),
    ("v-auto", 32, 256, {}),  # p·m past the greedy re-timings' size: the family search alone
]

_CHILD = r"""
import json, statistics, sys, time, tracemalloc
case = json.loads(sys.argv[1])
name, p, m, params = case["name"], case["p"], case["m"], case["params"]

def rss(field):
    for line in open("/proc/self/status"):
        if line.startswith(field):
            return int(line.split()[1]) * 1024

import ppviz
from ppviz import schedules, simulator
from ppviz.costs import Costs

def cpu(fn):
    times = []
    for _ in range(case["repeat"]):
        t = time.process_time()
        out = fn()
        times.append(time.process_time() - t)
    return statistics.median(times), out

if case["what"] == "time":
    gen, sched = cpu(lambda: schedules.build(name, p, m, **params))
    prep, _ = cpu(lambda: simulator._prepare(sched))
    full, run = cpu(lambda: ppviz.simulate(name, p, m, **params))
    print(json.dumps({"actions": len(run.result), "gen": gen, "prepare": prep, "simulate": full}))
elif case["what"] == "rss":
    base = rss("VmRSS:")
    open("/proc/self/clear_refs", "w").write("5")  # the peak RSS restarts from here
    run = ppviz.simulate(name, p, m, **params)
    print(json.dumps({"actions": len(run.result), "peak": rss("VmHWM:") - base, "retained": rss("VmRSS:") - base}))
else:
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    run = ppviz.simulate(name, p, m, **params)
    now, peak = tracemalloc.get_traced_memory()
    print(json.dumps({"actions": len(run.result), "peak": peak - base, "retained": now - base}))
"""


def _measure(checkout: Path, case: dict) -> dict:
    out = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(case)], cwd=checkout, capture_output=True,
                         text=True, check=True, env={**os.environ, "PYTHONPATH": str(checkout)})  # fmt: skip
    return json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--against", metavar="DIR", help="another checkout (e.g. the main branch) measured alongside")
    ap.add_argument("--search", action="store_true", help="the searching schedules instead of the large closed forms")
    args = ap.parse_args()
    here = Path(__file__).resolve().parents[1]
    checkouts = [("this", here)] + ([("against", Path(args.against).resolve())] if args.against else [])
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"{'checkout':<8} {'schedule':<17} {'p':>3} {'m':>5} {'actions':>9} {'gen s':>6} {'prep s':>6} "
          f"{'sim s':>6} {'M act/s':>7} {'RSS pk':>6} {'kept':>5} {'tm pk':>6} {'kept':>5}")  # fmt: skip
    for name, p, m, params in SEARCH_CASES if args.search else CASES:
        for label, checkout in checkouts:
            case = {"name": name, "p": p, "m": m, "params": params, "repeat": args.repeat}
            t = _measure(checkout, {**case, "what": "time"})
            r = _measure(checkout, {**case, "what": "rss"})
            tm = _measure(checkout, {**case, "what": "tracemalloc"})
            n = t["actions"]
            print(f"{label:<8} {name:<17} {p:>3} {m:>5} {n:>9,} {t['gen']:>6.3f} {t['prepare']:>6.3f} "
                  f"{t['simulate']:>6.3f} {n / t['simulate'] / 1e6:>7.2f} {r['peak'] / n:>6.0f} "
                  f"{r['retained'] / n:>5.0f} {tm['peak'] / n:>6.0f} {tm['retained'] / n:>5.0f}")  # fmt: skip
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
