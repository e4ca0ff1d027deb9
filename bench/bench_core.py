"""The core's speed and memory, and the anchor's beside it in the same run (issue 22 §7). Prints
figures; not a test.

    .venv/bin/python bench/bench_core.py [--repeat 3] [--anchor DIR] [--only N] [--json PATH]

First the cost of ``import ppviz``, ``from ppviz import simulate``, ``ppviz --help`` and a small
``ppviz simulate`` in fresh interpreters (CPU ms of that code alone; ``--json PATH`` also writes
this table beside PATH, as ``NAME-imports.json``). Then the cases.

Each case runs in a fresh process, so memory is measured above that process's import baseline:
``peak B/act`` is the peak RSS (``getrusage``) above the RSS after imports and a warm-up run,
``kept B/act`` the RSS still held while the ``Run`` lives, ``traced B/act`` the peak of Python's
own allocations (tracemalloc, numpy's included). The baseline holds the event pass the case runs
(``pass``): the compiled one (``eventpass.warm()``, numba's ~114 MB) when the case's steps reach
``eventpass.LOAD_AFTER_STEPS``, else the reference, as a one-off ``ppviz simulate`` would; so the
figures are per action, and ``ppviz peak MB`` (the whole process's peak RSS, beside the
anchor's) is what that run costs, numba included. Times are medians of the repeats in process
CPU seconds, with the compiled pass loaded (a server's or a repeated run's steady state), so
other load on the shared machine skews them less than wall time would:

- ``gen``: ``schedules.build``; ``sim``: the simulator on the built schedule (validation and the
  event pass); ``simulate``: the whole ``ppviz.simulate`` (generation, validation, pass, metrics);
- ``json``: ``formats.write_run_json`` to /dev/null, as ``ppviz simulate --json`` writes; ``cli/sim``: the
  CPU time of a whole ``ppviz simulate … --json > /dev/null`` process over the in-process ``simulate``.

``--anchor DIR`` (a checkout of github.com/Victarry/PP-Schedule-Visualization, never vendored)
runs its generation and ``execute()`` on the same cases (1F1B and interleaved, fused backward)
in fresh processes too, and prints the ratios of CPU time and of peak RSS (whole process).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import json_out  # noqa: E402  (bench/ is on the path when a script runs)

ROOT = Path(__file__).resolve().parents[1]
# (schedule, p, m, v): the table, then 1M actions
CASES = [
    ("1f1b", 8, 64, 1),
    ("interleaved-1f1b", 16, 128, 4),
    ("1f1b", 64, 768, 1),
    ("interleaved-1f1b", 64, 512, 8),
    ("interleaved-1f1b", 64, 1024, 8),
]
MB = 2**20


def _cpu(repeat: int, fn, *args, **kwargs) -> float:
    times = []
    for _ in range(repeat):
        t = time.process_time()
        fn(*args, **kwargs)
        times.append(time.process_time() - t)
    return statistics.median(times)


def _peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kB on Linux


def _rss() -> int:
    import psutil

    return psutil.Process().memory_info().rss


def ppviz_case(name: str, p: int, m: int, v: int, repeat: int) -> dict:
    """One case in this (fresh) process: memory first, on the first run, then the times."""
    import gc
    import tracemalloc

    import ppviz
    from ppviz import eventpass, formats, schedules
    from ppviz.costs import Costs
    from ppviz.simulator import simulate

    params = {"chunks": v} if v > 1 else {}
    with open(os.devnull, "w", encoding="utf-8") as null:
        null.write(formats.run_json(ppviz.simulate(name, 2, 2, **({"chunks": 2} if v > 1 else {}))))  # warm-up
    compiled = 2 * p * v * m >= eventpass.LOAD_AFTER_STEPS  # the case's steps: F and BW per stage and microbatch
    if compiled:
        eventpass.warm()
    gc.collect()
    base = _rss()
    run = ppviz.simulate(name, p, m, **params)
    peak_rss = _peak_rss()
    peak, kept = peak_rss - base, _rss() - base
    n = len(run.result)
    del run
    gc.collect()
    eventpass._reference_steps = 0  # as in a fresh process: the traced run takes the same pass
    tracemalloc.start()
    run = ppviz.simulate(name, p, m, **params)
    traced = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    eventpass.warm()  # the times: steady state
    sched = schedules.build(name, p, m, **params)
    with open(os.devnull, "wb") as null:
        out = {
            "actions": n,
            "pass": "compiled" if compiled else "reference",
            "peak": peak,
            "kept": kept,
            "traced": traced,
            "peak_rss": peak_rss,
            "gen": _cpu(repeat, schedules.build, name, p, m, **params),
            "sim": _cpu(repeat, simulate, sched, Costs()),
            "simulate": _cpu(repeat, ppviz.simulate, name, p, m, **params),
            "json": _cpu(repeat, formats.write_run_json, run, null),
        }
    return out


def anchor_case(anchor: str, name: str, p: int, m: int, v: int, repeat: int) -> dict:
    """The anchor's generation and ``execute()`` of the same case, in this (fresh) process."""
    import threading

    sys.path.insert(0, anchor)
    sys.setrecursionlimit(10**7)  # its execute() recurses along the dependency chains
    threading.stack_size(1 << 30)
    from src import strategies  # the anchor's package
    from src.execution_model import ScheduleConfig

    def once() -> tuple[float, int]:
        config = ScheduleConfig(p, p * v, m, placement_strategy="interleave" if v > 1 else "standard")
        generate = strategies.generate_1f1b_interleave_schedule if v > 1 else strategies.generate_1f1b_schedule
        t = time.process_time()
        schedule = generate(config)
        schedule.execute()
        return time.process_time() - t, len(schedule.ops)

    base = _rss()
    got: list[tuple[float, int]] = []
    for _ in range(repeat):
        worker = threading.Thread(target=lambda: got.append(once()))
        worker.start()
        worker.join()
    return {"actions": got[0][1], "time": statistics.median(t for t, _ in got), "peak_rss": _peak_rss(),
            "peak": _peak_rss() - base}  # fmt: skip


def _in_fresh_process(*argv: str) -> dict:
    r = subprocess.run([sys.executable, __file__, *argv], capture_output=True, text=True, cwd=ROOT)
    if r.returncode != 0:
        raise RuntimeError(f"bench_core {' '.join(argv)} failed: {r.stderr.strip()[-400:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def _cli_cpu(name: str, p: int, m: int, v: int, repeat: int) -> float:
    """CPU seconds (user + system) of a whole ``ppviz simulate … --json`` process, output to /dev/null."""
    argv = [sys.executable, "-m", "ppviz", "simulate", name, "-p", str(p), "-m", str(m), "--json"]
    argv += ["--chunks", str(v)] if v > 1 else []
    times = []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        with open(os.devnull, "w") as null:
            subprocess.run(argv, stdout=null, check=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        times.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(times)


# what importing and starting costs, each in a fresh interpreter (CPU seconds of the code itself)
CLI = (
    "import contextlib, io\nimport ppviz.__main__ as cli\nwith contextlib.redirect_stdout(io.StringIO()): cli.main({})"
)
IMPORTS = {
    "import ppviz": "import ppviz",
    "from ppviz import simulate": "from ppviz import simulate",
    "ppviz --help": CLI.format(["--help"]),
    "ppviz simulate 1f1b -p 8 -m 32": CLI.format(["simulate", "1f1b", "-p", "8", "-m", "32"]),
}
PROBE = """
import time
t = time.process_time()
try:
    exec(compile(CODE, "probe", "exec"))
except SystemExit:
    pass
print(time.process_time() - t)
"""


def import_rows(repeat: int) -> list[list]:
    """Per probe: its median CPU ms and how many ppviz modules it leaves loaded."""
    rows = []
    for what, code in IMPORTS.items():
        probe = (
            PROBE.replace("CODE", repr(code))
            + "import sys\nprint(len([m for m in sys.modules if m.startswith('ppviz')]))"
        )
        times, count = [], 0
        for _ in range(max(repeat, 5)):
            r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=True)
            t, count = r.stdout.split()
            times.append(float(t))
        rows.append([what, round(1e3 * statistics.median(times), 1), int(count)])
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--anchor", metavar="DIR", help="a checkout of the Victarry visualizer, run on the same cases")
    ap.add_argument("--anchor-repeat", type=int, default=1, help="repeats of the anchor (slow: 155 s at 524k)")
    ap.add_argument("--anchor-max", type=int, default=600_000, metavar="ACTIONS",
                    help="run the anchor up to this many actions (its 1M case takes minutes of CPU)")  # fmt: skip
    ap.add_argument("--only", type=int, action="append", help="run only case N (0-based; repeatable)")
    ap.add_argument("--json", metavar="PATH", help="also write the table as JSON (the handbook's performance page)")
    ap.add_argument("--worker", choices=["ppviz", "anchor"], help=argparse.SUPPRESS)
    ap.add_argument("--case", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        case = CASES[args.case]
        if args.worker == "ppviz":
            print(json.dumps(ppviz_case(*case, args.repeat)))
        else:
            print(json.dumps(anchor_case(args.anchor, *case, args.anchor_repeat)))
        return
    load, rows = os.getloadavg(), []
    print(f"load average at the start: {', '.join(f'{x:.2f}' for x in load)}")
    cols = ["schedule", "p", "m", "v", "actions", "pass", "gen M act/s", "sim M act/s", "simulate M act/s",
            "peak B/act", "kept B/act", "traced B/act", "json s", "simulate s", "cli/sim"]  # fmt: skip
    if args.anchor:
        cols += ["anchor s", "anchor ÷ ppviz time", "anchor peak MB", "ppviz peak MB", "ppviz ÷ anchor RSS"]
    imports = import_rows(args.repeat)
    for what, ms, count in imports:
        print(f"{what}: {ms} ms CPU, {count} ppviz modules loaded")
    print(" | ".join(cols))
    for i in args.only or range(len(CASES)):
        name, p, m, v = CASES[i]
        got = _in_fresh_process("--worker", "ppviz", "--case", str(i), "--repeat", str(args.repeat))
        n = got["actions"]
        row = [name, p, m, v, n, got["pass"], n / got["gen"] / 1e6, n / got["sim"] / 1e6, n / got["simulate"] / 1e6,
               got["peak"] / n, got["kept"] / n, got["traced"] / n, got["json"], got["simulate"],
               _cli_cpu(name, p, m, v, args.repeat) / got["simulate"]]  # fmt: skip
        if args.anchor and n > args.anchor_max:
            row += [None] * 5
        elif args.anchor:
            them = _in_fresh_process("--worker", "anchor", "--case", str(i), "--anchor", args.anchor,
                                     "--anchor-repeat", str(args.anchor_repeat))  # fmt: skip
            row += [them["time"], them["time"] / got["simulate"], them["peak_rss"] / MB, got["peak_rss"] / MB,
                    got["peak_rss"] / them["peak_rss"]]  # fmt: skip
        rows.append([round(x, 4) if isinstance(x, float) else x for x in row])
        print(
            " | ".join(f"{x:,.3g}" if isinstance(x, float) else "—" if x is None else str(x) for x in rows[-1]),
            flush=True,
        )
    end = os.getloadavg()
    print(f"load average at the end: {', '.join(f'{x:.2f}' for x in end)}")
    if args.json:
        json_out.write(args.json, cols, rows, load)
        path = Path(args.json)
        json_out.write(str(path.with_name(f"{path.stem}-imports.json")), ["what", "CPU ms", "ppviz modules loaded"],
                       imports, load)  # fmt: skip


if __name__ == "__main__":
    main()
