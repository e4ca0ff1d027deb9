"""Generation time of the V schedules, and their spans beside the controllable-memory authors' search.

Run: ``nice .venv/bin/python bench/bench_vshape.py`` for the times (p = 16 and 32; each schedule
built once in a fresh process, so no cache helps), and ``--authors`` for the comparison table:
the authors' search at a memory limit (every block of their family, their warm-up and cool-down
rules, their timing; ppviz's ``vfamily`` builds them order for order, which
tests/test_vshape_reference.py checks against a literal re-implementation) against ppviz at the
same limit. The comparison builds the whole family (about 1,800 blocks at p = 32): minutes.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

TIMED = [
    ("v-min", {}),
    ("v-half", {}),
    ("v-zb", {}),
    ("v-auto", {}),
    ("v-auto", {"max_memory": 0.6}),
    ("zb-auto", {}),
]  # fmt: skip  (v-auto 0.6: a limit of 0.6 p, between V-Half's and V-ZB's)


def time_one(name: str, p: int, m: int, params: dict) -> float:
    """Seconds to build one schedule in a fresh interpreter (cold caches, as on a first request)."""
    args = {k: (v * p if k == "max_memory" else v) for k, v in params.items()}
    code = (
        f"import time, sys; sys.path.insert(0, {str(ROOT)!r}); from ppviz.schedules import build; "
        f"t = time.perf_counter(); build({name!r}, {p}, {m}, **{args!r}); print(time.perf_counter() - t)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout)


def times() -> None:
    print(f"{'schedule':22} {'p':>3} {'m':>4} {'generate (best of 2, cold)':>28}")
    for p, m in ((16, 64), (32, 128)):
        for name, params in TIMED:
            label = name + (f" {params['max_memory']:g}p" if params else "")
            best = min(time_one(name, p, m, params) for _ in range(2))
            print(f"{label:22} {p:>3} {m:>4} {best:>27.2f}s", flush=True)


COSTS = {"equal": (1, 1, 1, 0), "latency 0.5": (1, 1, 1, 0.5), "b = 2": (1, 2, 1, 0)}  # per chunk


def authors(p: int, m: int) -> None:
    """The authors' best span per limit (all their orders / only those that run) against ppviz."""
    import test_vshape_reference as ref

    import ppviz
    from ppviz.schedules import vfamily

    t = time.perf_counter()
    built = [b for b in (vfamily.build_rows(p, m, block) for block in vfamily.blocks(p)) if b is not None]
    runs = [vfamily.runs_in_order(rows) for rows, _ in built]
    print(f"p={p} m={m}: {len(built)} orders built in {time.perf_counter() - t:.0f}s, "
          f"{runs.count(False)} run a W before its B", flush=True)  # fmt: skip
    lowest = min(peak for _, peak in built)
    limits = {"v-min": (p + 4) // 3, "v-half": (p + 2) // 2, "v-zb": p}
    limits["v-auto 0.6p"] = round(0.6 * p * 2) / 2
    limits["v-auto 0.8p"] = round(0.8 * p * 2) / 2
    for cost_name, cost in COSTS.items():
        spans = [ref.span([list(r) for r in rows], *cost) for rows, _ in built]
        for name, limit in limits.items():
            half = int(2 * limit)
            if half < lowest:
                continue
            fit = [(s, ok) for s, (_, peak), ok in zip(spans, built, runs) if peak <= half]
            any_order = min(s for s, _ in fit)
            running = min((s for s, ok in fit if ok), default=float("nan"))
            f, b, w, c = cost
            params = {"max_memory": limit} if name.startswith("v-auto") else {}
            run = ppviz.simulate(name.split()[0], p, m, f=2 * f, b=2 * b, w=2 * w, p2p=c, **params)
            mine = max(run.metrics.span)
            runs_text = "—" if running != running else f"{running:g}"  # NaN: none of them runs
            print(f"| {p} | {m} | {cost_name} | {name} | {limit:g} | {any_order:g} | {runs_text} | {mine:g} "
                  f"| {mine - any_order:+g} |", flush=True)  # fmt: skip


def main() -> None:
    if "--authors" in sys.argv:
        print("| p | m | costs (per chunk) | schedule | limit | authors | authors, orders that run | ppviz "
              "| ppviz − authors |")  # fmt: skip
        print("|---:|---:|---|---|---:|---:|---:|---:|---:|")
        for p, m in ((16, 32), (16, 64), (32, 64)):
            authors(p, m)
    else:
        times()


if __name__ == "__main__":
    main()
