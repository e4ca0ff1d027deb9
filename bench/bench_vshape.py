"""Generation time of the V schedules, and their spans beside the controllable-memory authors' search.

Run: ``nice .venv/bin/python bench/bench_vshape.py`` for the times (p = 16 and 32; each schedule
built once in a fresh process, so no cache helps, in CPU seconds; ``--against DIR`` times another
checkout's code in the same run, e.g. the previous commit's), and ``--authors`` for the comparison table:
the authors' search at a memory limit (every block of their family, their warm-up and cool-down
rules, their timing; ppviz's ``vfamily`` builds them order for order, which
tests/test_vshape_reference.py checks against a literal re-implementation) against ppviz at the
same limit, at V-Min's, V-Half's and V-ZB's memory and six limits between (``--every``: every
half share from V-Min's to V-ZB's besides), under four cost settings. The comparison builds the
whole family (about 1,600 blocks at p = 32) and times it the authors' way: tens of minutes;
``--cache DIR`` keeps the authors' side, ``--sizes 16x32,32x64`` picks sizes.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

TIMED = [
    ("v-min", {}, {}),
    ("v-half", {}, {}),
    ("v-zb", {}, {}),
    ("v-auto", {}, {}),
    ("v-auto", {"max_memory": 0.6}, {}),
    ("v-auto", {"max_memory": 0.55}, {"b": 4}),
    ("zb-auto", {}, {}),
]  # fmt: skip  (v-auto 0.6: a limit of 0.6 p, between V-Half's and V-ZB's; 0.55 p with b = 2 f: issue 11's case)


def time_one(name: str, p: int, m: int, params: dict, costs: dict, root: Path = ROOT) -> float:
    """CPU seconds to build one schedule in a fresh interpreter (cold caches, as on a first
    request) with ``root``'s ppviz, under ``costs`` (``make_costs`` arguments). CPU time, not
    wall time: the machine is shared, and other work on its cores stretches the wall time."""
    args = {k: (v * p if k == "max_memory" else v) for k, v in params.items()}
    code = (
        f"import time, sys; sys.path.insert(0, {str(root)!r}); from ppviz import make_costs; "
        f"from ppviz.schedules import build; c = make_costs(**{costs!r}); t = time.process_time(); "
        f"build({name!r}, {p}, {m}, costs=c, **{args!r}); print(time.process_time() - t)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root)
    return float(out.stdout)


def times(against: Path | None) -> None:
    """Best of 3 per schedule; with ``--against DIR`` (another checkout), its code and this one
    interleaved in the same run, "before → after"."""
    roots = [against, ROOT] if against else [ROOT]
    head = "generate, CPU (best of 3, cold)" + (f", {against} → this" if against else "")
    print(f"{'schedule':22} {'p':>3} {'m':>4}  {head}")
    for p, m in ((16, 64), (32, 128)):
        for name, params, costs in TIMED:
            label = name + (f" {params['max_memory']:g}p" if params else "") + (" b=2f" if costs else "")
            runs: dict[Path, list[float]] = {root: [] for root in roots}
            for _ in range(3):
                for root in roots:
                    runs[root].append(time_one(name, p, m, params, costs, root))
            text = " → ".join(f"{min(runs[root]):.2f}s" for root in roots)
            print(f"{label:22} {p:>3} {m:>4}  {text}", flush=True)


COSTS = {"equal": (1, 1, 1, 0), "latency 0.1": (1, 1, 1, 0.1), "latency 0.5": (1, 1, 1, 0.5), "b = 2": (1, 2, 1, 0)}
SIZES = ((16, 32), (16, 48), (16, 64), (32, 64), (32, 96), (32, 128))
BETWEEN = (0.45, 0.55, 0.6, 0.7, 0.8, 0.9)  # v-auto limits, × p, rounded to a half: V-Min's to V-ZB's


def authors_family(p: int, m: int, cache: Path | None) -> list[tuple[int, bool, dict[str, float]]]:
    """(peak in half shares, runs as it is, the authors' span per cost) of every order of their
    family; ``--cache DIR`` keeps them (they do not depend on ppviz's search), since the authors'
    timing, a literal re-implementation, takes minutes at p = 32."""
    import test_vshape_reference as ref

    from ppviz.schedules import vfamily

    path = cache / f"authors_{p}x{m}.json" if cache else None
    if path and path.exists():
        kept = [(peak, runs, spans) for peak, runs, spans in json.loads(path.read_text())]
        if all(set(COSTS) <= set(spans) for _, _, spans in kept):
            return kept
    out = []
    for block in vfamily.blocks(p):
        built = vfamily.build_rows(p, m, block)
        if built is not None:
            rows, peak = built
            spans = {name: ref.span([list(r) for r in rows], *cost) for name, cost in COSTS.items()}
            out.append((peak, vfamily.runs_in_order(rows), spans))
    if path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(out))
    return out


def authors(p: int, m: int, cache: Path | None, tally: dict, every: bool = False) -> None:
    """The authors' best span per limit (all their orders / only those that run) against ppviz;
    ``every``: v-auto at every half share from the family's least peak to p besides."""
    import ppviz

    t = time.perf_counter()
    built = authors_family(p, m, cache)
    stuck = sum(not runs for _, runs, _ in built)
    print(f"<!-- p={p} m={m}: {len(built)} orders ({time.perf_counter() - t:.0f}s), {stuck} run a W before its B -->",
          flush=True)  # fmt: skip
    lowest = min(peak for peak, _, _ in built)
    limits = {"v-min": (p + 4) // 3, "v-half": (p + 2) // 2, "v-zb": p}
    for x in BETWEEN:
        limits[f"v-auto {x:g}p"] = round(x * p * 2) / 2
    if every:
        limits |= {f"v-auto {half / 2:g}": half / 2 for half in range(lowest, 2 * p + 1)}
    for cost_name, cost in COSTS.items():
        for name, limit in limits.items():
            half = int(2 * limit)
            if half < lowest:
                continue
            fit = [(spans[cost_name], runs) for peak, runs, spans in built if peak <= half]
            any_order = min(s for s, _ in fit)
            running = min((s for s, ok in fit if ok), default=float("nan"))
            f, b, w, c = cost
            params = {"max_memory": limit} if name.startswith("v-auto") else {}
            run = ppviz.simulate(name.split()[0], p, m, f=2 * f, b=2 * b, w=2 * w, p2p=c, **params)
            mine = max(run.metrics.span)
            assert max(run.metrics.peak_activation) <= limit + 1e-9, (name, limit)
            runs_text = "—" if running != running else f"{running:g}"  # NaN: none of them runs
            diff = _difference(mine, any_order)
            row = tally.setdefault((p, m, cost_name), [0, 0, 0, 0.0])
            row[0 if diff < 0 else 1 if diff == 0 else 2] += 1
            row[3] = min(row[3], diff)
            print(f"| {p} | {m} | {cost_name} | {name} | {limit:g} | {any_order:g} | {runs_text} | {mine:g} "
                  f"| {diff:+g} |", flush=True)  # fmt: skip


def _difference(mine: float, theirs: float) -> float:
    """ppviz's span less the authors', 0 within rounding: the two timings add the same op times and
    latencies in different orders, so with a latency of 0.1 equal spans differ in the last bits
    (232.399999999999 against 232.3999999999993), which counted as longer before."""
    diff = mine - theirs
    return 0.0 if abs(diff) <= 1e-9 * max(1.0, abs(theirs)) else diff


def main() -> None:
    if "--authors" in sys.argv:
        cache = Path(sys.argv[sys.argv.index("--cache") + 1]) if "--cache" in sys.argv else None
        sizes = SIZES
        if "--sizes" in sys.argv:  # e.g. --sizes 16x32,32x64
            arg = sys.argv[sys.argv.index("--sizes") + 1]
            sizes = tuple(tuple(map(int, size.split("x"))) for size in arg.split(","))
        print("| p | m | costs (per chunk) | schedule | limit | authors | authors, orders that run | ppviz "
              "| ppviz − authors |")  # fmt: skip
        print("|---:|---:|---|---|---:|---:|---:|---:|---:|")
        tally: dict = {}
        for p, m in sizes:
            authors(p, m, cache, tally, "--every" in sys.argv)
        print("\n| p | m | costs (per chunk) | ppviz shorter | equal | longer | most shorter by |")
        print("|---:|---:|---|---:|---:|---:|---:|")
        for (p, m, cost_name), (short, equal, longer, gain) in tally.items():
            print(f"| {p} | {m} | {cost_name} | {short} | {equal} | {longer} | {max(0.0, -gain):g} |")
    else:
        times(Path(sys.argv[sys.argv.index("--against") + 1]).resolve() if "--against" in sys.argv else None)


if __name__ == "__main__":
    main()
