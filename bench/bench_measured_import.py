"""Importing a large PyTorch profiler trace (issue #21): a ~100 MB Kineto-shaped trace (a simulated
1F1B run's ``PP:`` annotations padded with operator events as a real trace has), read by
``ppviz measured``'s reader, in a fresh process each time: wall and CPU seconds, the peak of Python's
own allocations during a second, untimed read (tracemalloc) and the process's peak RSS (Python, numpy and ppviz
included). The temp files are deleted after.

    nice .venv/bin/python bench/bench_measured_import.py [--mb 100] [--json docs/bench/measured_import.json]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

PAD = (
    '  {{\n    "ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 0, "tid": 0,\n'
    '    "ts": {ts:.3f}, "dur": 1.250,\n'
    '    "args": {{"External id": {i}, "Record function id": 0, "Sequence number": {i}, "Ev Idx": {i}}}\n  }},\n'
)


def write_traces(folder: str, mb: float, gz: bool) -> list[str]:
    """Two ranks of a simulated 1F1B run; rank 0 padded with operator events to ``mb`` MB (uncompressed)."""
    import ppviz
    from ppviz.measured.synthetic import rank_traces

    traces = rank_traces(ppviz.simulate("1f1b", 2, 64, f=1.0, b=2.0, p2p=0.1))
    paths = []
    for r, trace in enumerate(traces):
        path = os.path.join(folder, f"rank{r}.trace.json" + (".gz" if gz else ""))
        events = trace.pop("traceEvents")
        with gzip.open(path, "wt", compresslevel=1) if gz else open(path, "w") as fh:
            fh.write(json.dumps(trace)[:-1] + ', "traceEvents": [\n')
            written, i = 0, 0
            lo = events[0]["ts"]
            while r == 0 and written < mb * 1e6:
                chunk = "".join(PAD.format(ts=lo + 1 + (i + k) % 100_000, i=i + k) for k in range(1000))
                fh.write(chunk)
                written, i = written + len(chunk), i + 1000
            fh.write(",\n".join(json.dumps(e) for e in events) + "\n]}\n")
        paths.append(path)
    return paths


def child(paths: list[str]) -> None:
    import tracemalloc

    from ppviz.measured.kineto import read_traces

    t0, c0 = time.perf_counter(), time.process_time()
    run = read_traces(paths)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KB on Linux
    tracemalloc.start()  # a second read, untimed: tracing every allocation slows it several-fold
    read_traces(paths)
    peak = tracemalloc.get_traced_memory()[1]
    print(json.dumps({"wall_s": wall, "cpu_s": cpu, "python_peak_mb": peak / 1e6, "peak_rss_mb": rss,
                      "ops": sum(len(r) for r in run.ops)}))  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=100.0, help="size of rank 0's trace, uncompressed (default 100)")
    ap.add_argument("--json", metavar="PATH", help="also write the table for the handbook")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child)
        return
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    rows = []
    for gz in (False, True):
        with tempfile.TemporaryDirectory() as folder:
            paths = write_traces(folder, args.mb, gz)
            size = os.path.getsize(paths[0])
            out = subprocess.run([sys.executable, __file__, "--child", *paths], capture_output=True, text=True,
                                 check=True)  # fmt: skip
            r = json.loads(out.stdout)
        form = "gzipped" if gz else "plain JSON"
        rows.append([form, round(size / 1e6, 1), round(r["wall_s"], 2), round(r["cpu_s"], 2),
                     round(r["python_peak_mb"], 1), round(r["peak_rss_mb"], 1), r["ops"]])  # fmt: skip
        print(
            f"{form:>10}: {size / 1e6:,.1f} MB on disk, {r['wall_s']:.2f} s wall, {r['cpu_s']:.2f} s CPU, "
            f"Python peak {r['python_peak_mb']:.1f} MB, process peak RSS {r['peak_rss_mb']:.1f} MB, {r['ops']} ops"
        )
    if args.json:
        from json_out import write

        write(args.json, ["rank 0's trace", "MB on disk", "wall s", "CPU s", "Python peak MB (tracemalloc)",
                          "process peak RSS MB", "ops read"], rows, load)  # fmt: skip


if __name__ == "__main__":
    main()
