"""Benchmark of the layout search: how many layouts it ranks, how many it simulates, and how long it
takes. Target (issue #10): a space of ≥ 10,000 layouts (Llama-3 70B on 1,024 H100s, global batch
1,024, every schedule) ranked in ≤ 10 s on a 2-core machine. It prints wall and CPU seconds: on the
shared machine other work inflates the wall time, the CPU time is what the search itself used
(about the wall time on an idle machine; the budget of the searching schedules is work, ops of the
orders they build, so the same case simulates the same layouts under any load).
Run it with `nice`:

    nice .venv/bin/python bench/bench_search.py [--quick] [--json PATH]
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import json_out  # bench/ is on the path when a script runs

import ppviz

CASES = [
    # (label, model, gpu, gpus, global batch, options)
    ("Llama-3 70B, 1,024 H100, gbs 1,024, every schedule", "llama3-70b", "h100-sxm", 1024, 1024, {}),
    ("  the same, without the Pareto front", "llama3-70b", "h100-sxm", 1024, 1024, {"pareto": False}),
    ("  the same, Megatron's rank order only (no NVLink placements)", "llama3-70b", "h100-sxm", 1024, 1024,
     {"nvlink_placements": False}),
    ("  the same, the complete Pareto front (--complete-front)", "llama3-70b", "h100-sxm", 1024, 1024,
     {"pareto_within": float("inf")}),
    ("  the same, without the searching schedules (v-*, zb-auto)", "llama3-70b", "h100-sxm", 1024, 1024,
     {"schedules": [n for n, s in ppviz.REGISTRY.items() if not s.uses_costs]}),
    ("Llama-3 70B, 512 H100, gbs 512 (the issue's newcomer)", "llama3-70b", "h100-sxm", 512, 512, {}),
    ("Llama-3 8B, 16 H100, gbs 64", "llama3-8b", "h100-sxm", 16, 64, {}),
]  # fmt: skip
# the issue's space beside Calculon's (#20): GPT-3 175B on 1,024 A100s at GPT-3's batch of 1,536 sequences
GPT3 = ("GPT-3 175B, 1,024 A100, gbs 1,536, every schedule", "gpt3-175b", "a100-80gb", 1024, 1536, {})


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="only the first case")
    ap.add_argument("--gpt3", action="store_true", help="only GPT-3 175B on 1,024 A100s (the space beside Calculon's)")
    ap.add_argument("--skip-complete", action="store_true", help="leave out the complete front (the slowest case)")
    ap.add_argument("--json", metavar="PATH", help="also write the table as JSON (the handbook's performance page)")
    args = ap.parse_args()
    load, rows = os.getloadavg(), []
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print(f"{'case':<62} {'layouts':>9} {'pruned':>9} {'simulated':>9} {'cut':>5} {'wall s':>7} {'CPU s':>6}  best")
    print(f"load average {os.getloadavg()[0]:.1f} at the start")
    cases = [GPT3] if args.gpt3 else CASES[:1] if args.quick else CASES
    for label, model, gpu, gpus, gbs, kw in cases:
        if args.skip_complete and "pareto_within" in kw:
            continue
        t, c = time.perf_counter(), time.process_time()
        r = ppviz.search(model, gpu, gpus, gbs, **kw)
        dt, dc = time.perf_counter() - t, time.process_time() - c
        best = r.layouts[0]
        front = f", front {len(r.pareto)} points" if r.pareto else ""
        print(f"{label:<62} {r.searched:>9,} {r.pruned:>9,} {r.simulated:>9,} {r.budget_cut:>5,} {dt:>7.2f} {dc:>6.2f} "
              f"{best['iteration_s']:.3f} s, MFU {best['mfu'] * 100:.1f}%, {best['peak_gb']:.1f} GB "
              f"({best['schedule']} tp {best['tp']} pp {best['pp']} dp {best['dp']} cp {best['cp']})"
              f"{front}")  # fmt: skip
        layout = f"{best['schedule']}, tp {best['tp']} pp {best['pp']} dp {best['dp']} cp {best['cp']}"
        figures = f"{best['iteration_s']:.3f} s, MFU {best['mfu'] * 100:.1f}%, {best['peak_gb']:.1f} GB"
        rows.append([label.strip(), r.searched, r.pruned, r.simulated, r.budget_cut, round(dt, 2), round(dc, 2),
                     round(r.searched / dc), f"{layout}: {figures}"])  # fmt: skip
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    if args.json:
        columns = ["case", "layouts", "pruned by a bound", "simulated", "cut by the budget", "wall s", "CPU s",
                   "layouts per CPU s", "best"]  # fmt: skip
        json_out.write(args.json, columns, rows, load)


if __name__ == "__main__":
    main()
