"""How close the fitted simulation comes to real runs recorded by `make_pipeline_traces.py`.

For every run directory (rank*.trace.json.gz, step_times.json, order_compute.csv) under the given
paths, and every profiled step: each rank's simulated step end under the costs fitted from that
step's own ops, against `schedule.step`'s wall time of that step (as tests/test_measured_real.py).
Runs without pipelining annotations are named by their own order_compute.csv.

    python scripts/measured_accuracy.py tests/data/measured/torch-2.13 [--cores 2] [--estimator median] [--markdown]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ppviz.measured.compare import compare  # noqa: E402
from ppviz.measured.read import read_run  # noqa: E402

TARGET = 0.10


def run_dirs(paths: list[str]) -> list[Path]:
    out = []
    for p in map(Path, paths):
        out += [p] if (p / "step_times.json").exists() else sorted(d.parent for d in p.glob("*/step_times.json"))
    return out


def step_errors(run_dir: Path, estimator: str, cores: int | None = None) -> list[tuple[int, list[float], list[float]]]:
    """Per profiled step: (iteration, measured step per rank in s, simulated step per rank in s)."""
    traces = sorted(map(str, run_dir.glob("rank*.trace.json.gz")))
    settings = json.loads((run_dir / "step_times.json").read_text())
    walls = [[s["step_s"] for s in r["steps"] if s["profiled"]] for r in settings["per_rank"]]
    first = read_run(traces)
    order = None if any(first.ops) else str(run_dir / "order_compute.csv")
    iterations = range(first.iteration - len(walls[0]) + 1, first.iteration + 1)
    out = []
    for k, it in enumerate(iterations):
        c = compare(read_run(traces, iteration=it, order=order), estimator, cores)
        out.append((it, [w[k] for w in walls], list(c.simulated_step_s)))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="+", help="run directories, or directories of them")
    ap.add_argument("--estimator", choices=("mean", "median"), default="mean")
    ap.add_argument(
        "--cores", type=int, help="the host's cores, when the ranks time-shared them (ppviz measured --cores)"
    )
    ap.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = ap.parse_args()
    within = total = 0
    if args.markdown:
        print("| run | step | measured step (ms) | simulated step (ms) | simulated against measured |")
        print("|---|---|---|---|---|")
    for d in run_dirs(args.paths):
        for it, measured, simulated in step_errors(d, args.estimator, args.cores):
            errors = [s / m - 1 for m, s in zip(measured, simulated)]
            ok = max(map(abs, errors)) <= TARGET
            within, total = within + ok, total + 1
            ms = [", ".join(f"{t * 1e3:.1f}" for t in ts) for ts in (measured, simulated)]
            err = ", ".join(f"{e:+.1%}" for e in errors)
            if args.markdown:
                print(f"| `{d.parent.name}/{d.name}` | {it} | {ms[0]} | {ms[1]} | {err} |")
            else:
                print(f"{'ok  ' if ok else 'MISS'} {d.parent.name}/{d.name:22} step {it}  {err}")
    cores = "a device per rank" if args.cores is None else f"{args.cores} shared cores"
    print(f"\n{within} of {total} steps within {TARGET:.0%} on every rank (estimator: {args.estimator}; {cores})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
