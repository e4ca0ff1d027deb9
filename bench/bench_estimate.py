"""How long one real-units estimate takes, its simulation included (target: a 175B layout < 50 ms).

Prints medians over repeated runs:
- cold: every cache cleared (layer costs, stage plan, schedule build);
- new layout: the schedule is cached but the layer costs are not (what a search over mbs,
  recompute or tp sees most of the time);
- warm: the same layout again (the simulation and memory curve still run each time);
- to_dict: the full JSON contract (with the ops and the breakdown's second simulation).

    .venv/bin/python bench/bench_estimate.py [--json PATH]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import json_out  # bench/ is on the path when a script runs

from ppviz.estimate import Layout, estimate, gpu, layer, model, summa
from ppviz.estimate import iteration as it

CASES = [
    ("gpt3-175b", "a100-80gb", Layout(tp=8, pp=8, vpp=3, mbs=1, gbs=64, recompute="selective", sequence_parallel=True,
                                      schedule="interleaved-1f1b")),
    ("gpt3-175b", "a100-80gb", Layout(tp=8, pp=8, mbs=1, gbs=64, recompute="selective", sequence_parallel=True,
                                      schedule="zb-h1")),
    ("llama3-70b", "h100-sxm", Layout(tp=8, pp=8, dp=4, mbs=1, gbs=256, recompute="selective", sequence_parallel=True,
                                      zero=1, schedule="zb-v")),
    ("gpt3-175b", "a100-80gb", Layout(tp=8, pp=8, mbs=1, gbs=64, recompute="selective", tp_mode="2d", tp2d=(4, 2),
                                      schedule="zb-h1")),
    ("llama3-70b", "h100-sxm", Layout(tp=8, pp=8, dp=4, mbs=1, gbs=256, recompute="selective", sequence_parallel=True,
                                      zero=3, schedule="zb-v")),
    ("megatron-1t", "a100-80gb", Layout(tp=8, pp=64, mbs=1, gbs=512, recompute="selective", sequence_parallel=True)),
]  # fmt: skip


LAYER_CACHES = (layer.layer, layer.embedding, layer.head, summa.layer, summa.embedding, summa.head, it._stage_plan)


def run_once(m, gp, lay, caches=()) -> None:
    """One estimate after clearing ``caches``, read as a search reads it (time and memory)."""
    for f in caches:
        f.cache_clear()
    e = estimate(m, gp, lay)
    e.iteration_s, e.peak_bytes  # noqa: B018


def timed(fn, repeat: int, *args) -> float:
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(*args)
        out.append(time.perf_counter() - t0)
    return statistics.median(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", metavar="PATH", help="also write the table as JSON (the handbook's performance page)")
    args = ap.parse_args()
    load, rows = os.getloadavg(), []
    head = f"{'model':<12} {'schedule':<17} {'mode':<10} {'actions':>8}"
    print(f"{head} {'cold':>9} {'new layout':>11} {'warm':>9} {'to_dict':>9}")
    for name, g, lay in CASES:
        m, gp = model(name), gpu(g)
        repeat = 5 if lay.pp * lay.microbatches > 10_000 else 20
        n = len(estimate(m, gp, lay).run.result)
        t_cold = timed(run_once, repeat, m, gp, lay, (*LAYER_CACHES, it._build))
        t_new = timed(run_once, repeat, m, gp, lay, LAYER_CACHES)
        t_warm = timed(run_once, repeat, m, gp, lay)
        t_dict = timed(lambda *a: estimate(*a).to_dict(), max(3, repeat // 4), m, gp, lay)
        mode = f"2D {lay.tp2d[0]}×{lay.tp2d[1]}" if lay.tp_mode == "2d" else f"ZeRO {lay.zero}"
        print(f"{name:<12} {lay.schedule:<17} {mode:<10} {n:>8,} {t_cold * 1e3:>7.1f}ms {t_new * 1e3:>9.1f}ms "
              f"{t_warm * 1e3:>7.1f}ms {t_dict * 1e3:>7.1f}ms")  # fmt: skip
        times = [round(t * 1e3, 2) for t in (t_cold, t_new, t_warm, t_dict)]
        rows.append([f"{name}, t {lay.tp} p {lay.pp} d {lay.dp}, m {lay.microbatches}", lay.schedule, mode, n, *times])
    if args.json:
        columns = ["model, layout", "schedule", "mode", "actions", "cold ms", "new layout ms", "warm ms", "to_dict ms"]
        json_out.write(args.json, columns, rows, load)


if __name__ == "__main__":
    main()
