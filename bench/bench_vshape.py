"""Generation time and quality of the V schedules (and the searched ones) at p = 16.

Run: ``.venv/bin/python bench/bench_vshape.py``. Prints, per schedule, the best of three
generation times, the makespan and longest span minus the ideal m(f+b+w), and the peak.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ppviz  # noqa: E402
from ppviz.schedules import build  # noqa: E402

SCHEDULES = [("zb-v", {}), ("v-min", {}), ("v-half", {}), ("v-zb", {}), ("v-auto", {"max_memory": 12}),
             ("zb-auto", {})]  # fmt: skip


def best_of(n: int, fn) -> float:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    p = 16
    print(f"{'schedule':10} {'m':>4} {'generate':>10} {'makespan−ideal':>15} {'span−ideal':>11} {'peak':>6}")
    for m in (32, 64):
        for name, params in SCHEDULES:
            seconds = best_of(3, lambda n=name, k=m, kw=params: build(n, p, k, **kw))
            met = ppviz.simulate(name, p, m, **params).metrics
            ideal = 3.0 * m
            print(
                f"{name:10} {m:>4} {seconds * 1000:>8.0f}ms {met.makespan - ideal:>15.2f} "
                f"{max(met.span) - ideal:>11.2f} {max(met.peak_activation):>6g}"
            )
    print(f"(1F1B's bubble at p={p}: (p−1)(f+b+w) = {3 * (p - 1)})")


if __name__ == "__main__":
    main()
