"""What ``ppviz simulate --json`` costs beside the simulation, against another checkout in the same run.

    .venv/bin/python bench/bench_json.py [--repeat 5] [--against DIR ...] [--json PATH]

Per case and per checkout (this one, and each ``--against DIR``, e.g. the tree before a change),
each in a fresh process: the in-process ``ppviz.simulate`` with the compiled pass loaded (``sim
s``), writing its ``--json`` text to /dev/null the way that checkout's CLI does (``write s``: with
numba loaded, so by the compiled writer where the checkout has one), the same with CPython's join
(``joined s``: as a process without numba writes; "-" where the checkout has one writer only),
the compiled writer's load from numba's cache on its first write (``load s``), the simulate of a
process without numba (``ref sim s``: the reference event pass, as a one-off CLI run below 1M steps
runs it) and that process's in-process ``--json`` work against it (``(ref+joined)/ref``), and the CPU time
of whole ``ppviz simulate …`` processes with ``--json`` and without (the text summary), output to
/dev/null. Times are medians of the repeats in process CPU seconds (user + system); the
machine's load is printed, so compare the ratios within one run.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
import json_out  # noqa: E402  (bench/ is on the path when a script runs)

ROOT = Path(__file__).resolve().parents[1]
# (schedule, p, m, v): 98k, 524k and 1M actions
CASES = [("1f1b", 64, 768, 1), ("interleaved-1f1b", 64, 512, 8), ("interleaved-1f1b", 64, 1024, 8)]


def _cpu(repeat: int, fn) -> float:
    times = []
    for _ in range(repeat):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return statistics.median(times)


def child(name: str, p: int, m: int, v: int, repeat: int) -> dict:
    """One case in this fresh process, with the checkout on the path: simulate and write times."""
    import ppviz
    from ppviz import eventpass, formats

    params = {"chunks": v} if v > 1 else {}
    ref_sim = None
    if hasattr(eventpass, "LOAD_AFTER_STEPS"):  # as a process that never loads numba
        threshold, eventpass.LOAD_AFTER_STEPS = eventpass.LOAD_AFTER_STEPS, 10**15
        ppviz.simulate(name, p, m, **params)
        ref_sim = _cpu(repeat, lambda: ppviz.simulate(name, p, m, **params))
        eventpass.LOAD_AFTER_STEPS = threshold
    eventpass.warm()
    run = ppviz.simulate(name, p, m, **params)
    sim = _cpu(repeat, lambda: ppviz.simulate(name, p, m, **params))
    null = open(os.devnull, "w")  # noqa: SIM115  (open for the whole case)
    from ppviz import ops_json

    # a checkout with one writer has no kernel (an editable install may still find this one's module)
    ops_json_kernel = getattr(ops_json, "ops_json_kernel", None)
    load = None
    if ops_json_kernel is not None:
        load = time.process_time()
        ops_json_kernel.warm()  # as the simulation's pass: the steady state
        load = time.process_time() - load
    if hasattr(formats, "write_run_json"):  # the CLI writes the bytes a chunk at a time

        def write():
            formats.write_run_json(run, null.buffer)
            null.buffer.write(b"\n")
    else:  # the CLI writes the whole text

        def write():
            null.write(formats.run_json(run))
            null.write("\n")
            null.flush()

    got = {"actions": len(run.result), "sim": sim, "write": _cpu(repeat, write), "joined": None, "load": load,
           "ref_sim": ref_sim}  # fmt: skip
    if ops_json_kernel is not None:
        ops_json_kernel._kernel = False  # as in a process without numba
        got["joined"] = _cpu(repeat, write)
    return got


def _cli_cpu(tree: Path, argv: list[str]) -> float:
    """CPU seconds of one whole ``ppviz`` process of ``tree``, output to /dev/null."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(os.devnull, "w") as null:
        subprocess.run([sys.executable, "-m", "ppviz", *argv], stdout=null, check=True, cwd=tree,
                       env={**os.environ, "PYTHONPATH": str(tree)})  # fmt: skip
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def measure(trees: list[Path], case: tuple[str, int, int, int], repeat: int) -> list[dict]:
    """The case in each tree: in-process times in a fresh process per tree, then whole CLI
    processes taking turns between the trees, so that a change of load falls on all of them."""
    name, p, m, v = case
    got = []
    for tree in trees:
        argv = [sys.executable, __file__, "--child", name, str(p), str(m), str(v), str(repeat)]
        r = subprocess.run(argv, capture_output=True, text=True, cwd=tree, env={**os.environ, "PYTHONPATH": str(tree)})
        if r.returncode != 0:
            raise RuntimeError(f"bench_json in {tree} failed: {r.stderr.strip()[-400:]}")
        got.append({**json.loads(r.stdout.strip().splitlines()[-1]), "cli_json": [], "cli_text": []})
    cli = ["simulate", name, "-p", str(p), "-m", str(m), *(["--chunks", str(v)] if v > 1 else [])]
    for _ in range(repeat):
        for tree, times in zip(trees, got):
            times["cli_json"].append(_cli_cpu(tree, [*cli, "--json"]))
            times["cli_text"].append(_cli_cpu(tree, cli))
    return [{**g, **{k: statistics.median(g[k]) for k in ("cli_json", "cli_text")}} for g in got]


def _round(value: float | None, digits: int) -> float | str:
    return "-" if value is None else round(value, digits)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--against", metavar="DIR", action="append", default=[],
                    help="another ppviz checkout, measured in the same run (repeatable)")  # fmt: skip
    ap.add_argument("--json", metavar="PATH", help="also write the table as JSON (the handbook's performance page)")
    ap.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        name, *numbers = args.child
        print(json.dumps(child(name, *map(int, numbers))))
        return
    load = os.getloadavg()
    print(f"load average at the start: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    trees = [("this", ROOT)] + [(d, Path(d).resolve()) for d in args.against]
    cols = ["case", "actions", "tree", "sim s", "write s", "write/sim", "joined s", "load s", "ref sim s",
            "(ref+joined)/ref", "cli --json s", "cli text s"]  # fmt: skip
    rows = []
    print(" | ".join(cols))
    for case in CASES:
        name, p, m, v = case
        label = f"{name} {p} × {m}" + (f" × {v}" if v > 1 else "")
        for (tree_name, _), got in zip(trees, measure([tree for _, tree in trees], case, args.repeat)):
            ratio = got["write"] / got["sim"]
            ref, joined = got.get("ref_sim"), got["joined"]
            one_shot = (ref + joined) / ref if ref and joined is not None else None
            row = [label, got["actions"], tree_name, round(got["sim"], 4), round(got["write"], 4), round(ratio, 2),
                   _round(joined, 4), _round(got["load"], 4), _round(ref, 4), _round(one_shot, 2),
                   round(got["cli_json"], 3), round(got["cli_text"], 3)]  # fmt: skip
            rows.append(row)
            print(" | ".join(map(str, row)), flush=True)
    if args.json:
        json_out.write(args.json, cols, rows, load)


if __name__ == "__main__":
    main()
