"""The event pass alone, compiled and in plain Python, and the whole ``ppviz.simulate`` (issue 22 §2).
Prints figures; not a test.

    .venv/bin/python bench/bench_pass.py [--repeat 7] [--json PATH]
    .venv/bin/python bench/bench_pass.py --cold [--json PATH]

The first form times, in this process, the pass alone on the steps ``simulate`` gives it (compiled:
``ppviz.eventpass``; reference: ``ppviz.eventpass_reference``) and ``simulate`` with the compiled
pass loaded (validation, steps and pass; ``metrics`` apart). Target at 524k actions: the compiled
pass ≥ 50 M actions/s, ``simulate`` ≥ 5 M actions/s. Median process CPU seconds.

``--cold`` times whole fresh processes instead (CPU of the child, median): ``ppviz simulate`` of a
small, a 98k-action and a 524k-action schedule (the reference pass: below
``eventpass.LOAD_AFTER_STEPS``, too few steps to repay loading numba) and of a 1M-action one (past
it: the compiled pass), and loading it alone
(``eventpass.warm()``), each with an empty numba cache (``NUMBA_CACHE_DIR`` a new folder: numba
compiles) and with a filled one; ``import ppviz`` alone is the baseline.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import json_out  # noqa: E402  (bench/ is on the path when a script runs)

from ppviz import eventpass, eventpass_reference, schedules  # noqa: E402
from ppviz.costs import Costs  # noqa: E402
from ppviz.simulator import simulate  # noqa: E402

CASES = [  # the sizes of issue 22's table: 16k, 98k and 524k actions
    ("interleaved-1f1b", 16, 128, {"chunks": 4}),
    ("1f1b", 64, 768, {}),
    ("interleaved-1f1b", 64, 512, {"chunks": 8}),
]
COLD_CASES = [  # (what, command line after `python`)
    ("ppviz simulate 1f1b -p 8 -m 64 (1,024 actions)", ["-m", "ppviz", "simulate", "1f1b", "-p", "8", "-m", "64"]),
    ("ppviz simulate 1f1b -p 64 -m 768 (98k actions)", ["-m", "ppviz", "simulate", "1f1b", "-p", "64", "-m", "768"]),
    (
        "ppviz simulate interleaved-1f1b -p 64 -m 512 --chunks 8 (524k actions)",
        ["-m", "ppviz", "simulate", "interleaved-1f1b", "-p", "64", "-m", "512", "--chunks", "8"],
    ),
    (
        "ppviz simulate interleaved-1f1b -p 64 -m 1024 --chunks 8 (1M actions)",
        ["-m", "ppviz", "simulate", "interleaved-1f1b", "-p", "64", "-m", "1024", "--chunks", "8"],
    ),
    ("import ppviz, eventpass.warm()", ["-c", "from ppviz import eventpass; assert eventpass.warm()"]),
    ("import ppviz alone (the baseline)", ["-c", "import ppviz"]),
]


def _median_cpu(repeat: int, fn, *args) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        t = time.process_time()
        out = fn(*args)
        times.append(time.process_time() - t)
    return statistics.median(times), out


def _pass_inputs(schedule, costs):
    """The arrays ``simulate`` hands the pass for this schedule."""
    seen = []
    run = eventpass.run
    eventpass.run = lambda *a: seen.append(a) or run(*a)
    try:
        simulate(schedule, costs)
    finally:
        eventpass.run = run
    return seen[0]


def warm_table(repeat: int) -> tuple[list[str], list[list]]:
    assert eventpass.warm(), "the compiled pass did not load"
    columns = ["schedule", "p", "m", "v", "actions", "compiled s", "compiled act/s", "reference s",
               "reference act/s", "ratio", "simulate s", "simulate act/s"]  # fmt: skip
    rows = []
    for name, p, m, params in CASES:
        schedule = schedules.build(name, p, m, **params)
        inputs = _pass_inputs(schedule, Costs())
        fast, _ = _median_cpu(repeat, eventpass._kernel, *inputs)
        slow, _ = _median_cpu(max(3, repeat // 2), eventpass_reference.run, *inputs)
        sim, result = _median_cpu(repeat, simulate, schedule, Costs())
        n = len(result)
        rows.append([name, p, m, params.get("chunks", 1), n, round(fast, 4), round(n / fast), round(slow, 3),
                     round(n / slow), round(slow / fast), round(sim, 3), round(n / sim)])  # fmt: skip
    return columns, rows


def _child_cpu(args: list[str], cache: str) -> float:
    before = os.times()
    env = {**os.environ, "NUMBA_CACHE_DIR": cache}
    subprocess.run([sys.executable, *args], check=True, stdout=subprocess.DEVNULL, env=env, cwd=ROOT)
    after = os.times()
    return (after.children_user - before.children_user) + (after.children_system - before.children_system)


def cold_table(repeat: int) -> tuple[list[str], list[list]]:
    columns = ["fresh process", "empty numba cache: CPU s", "filled cache: CPU s"]
    rows = []
    for what, args in COLD_CASES:
        empty, filled = [], []
        for _ in range(repeat):
            cache = tempfile.mkdtemp(prefix="ppviz-numba-")
            try:
                empty.append(_child_cpu(args, cache))
                filled.append(_child_cpu(args, cache))
            finally:
                shutil.rmtree(cache)
        rows.append([what, round(statistics.median(empty), 2), round(statistics.median(filled), 2)])
    return columns, rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--cold", action="store_true", help="time fresh processes with an empty and a filled numba cache")
    ap.add_argument("--json", metavar="PATH", help="also write the table as JSON (the handbook's performance page)")
    args = ap.parse_args()
    load = os.getloadavg()
    columns, rows = cold_table(min(args.repeat, 3)) if args.cold else warm_table(args.repeat)
    widths = [max(len(str(c)), *(len(f"{r[i]:,}" if isinstance(r[i], int) else str(r[i])) for r in rows))
              for i, c in enumerate(columns)]  # fmt: skip
    print("  ".join(f"{c:>{w}}" for c, w in zip(columns, widths)))
    for row in rows:
        print("  ".join(f"{v:>{w},}" if isinstance(v, int) else f"{v!s:>{w}}" for v, w in zip(row, widths)))
    print(f"load average at start: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    if args.json:
        json_out.write(args.json, columns, rows, load)


if __name__ == "__main__":
    main()
