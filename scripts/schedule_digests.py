"""Every registry schedule's ops and exact times over a grid, as digests, to compare two checkouts.

    cd CHECKOUT && PYTHONPATH=. python scripts/schedule_digests.py OUT.json [--quick]
    python scripts/schedule_digests.py --compare BEFORE.json AFTER.json

The grid: p 1..8 and m 1..16 for every schedule and its parameters (chunks, group size,
iterations, memory limits), the searching ones under six cost settings and per-link latencies;
then the searching schedules at p 8..32 (``--quick`` leaves these out). Each case keeps a digest
of the schedule's columns (dtypes included), its makespan and a digest of every action's end, or
the error it raised. Two minutes on a quiet core; a refactor of a generator should change nothing.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time

import numpy as np

COSTS = {
    "eq": {},
    "b2f": {"b": 2},
    "lat": {"b": 2, "w": 0.5, "p2p": 0.1},
    "lat1": {"p2p": 0.1},
    "uneven": {"stage_times": {0: (2, 3, 1), 1: (1, 1.5, 0.5)}},
    "w0": {"b": 1.5, "w": 0.0, "p2p": 0.3},
}


def _params(spec, p: int) -> list[dict]:
    names = {q.name for q in spec.params}
    out: list[dict] = [{}]
    if "chunks" in names:
        out = [{"chunks": 2}, {"chunks": 3}] + (
            [{"chunks": 2, "group_size": max(1, p // 2)}] if "group_size" in names else []
        )
    if "iterations" in names:
        out.append({"iterations": 2})
    if spec.name == "zb-auto":
        out += [{"max_memory": x} for x in (1, 1.5, p, p + 0.5, 2 * p - 2, 3 * p) if x >= 1]
    if spec.name == "v-auto":
        out += [{"max_memory": x} for x in (0.5, 1, 1.5, p / 3, 0.6 * p, 0.75 * p, p + 1, 2.5, 4, 4.5) if x >= 0.5]
    return out


def _digest(schedule) -> str:
    c = schedule.columns
    h = hashlib.sha256()
    for a in (c.kind, c.stage, c.microbatch, c.bounds, c.slot):
        if a is not None:
            h.update(str(a.dtype).encode())
            h.update(np.ascontiguousarray(a).tobytes())
    h.update(repr((c.widths, schedule.name, schedule.params, schedule.directions)).encode())
    return h.hexdigest()


def collect(quick: bool) -> dict:
    from ppviz.costs import Costs
    from ppviz.schedules import REGISTRY, build
    from ppviz.simulator import simulate

    out: dict[str, dict] = {}

    def one(name: str, p: int, m: int, params: dict, label: str, costs: Costs) -> None:
        key = f"{name}|{p}|{m}|{json.dumps(params, sort_keys=True)}|{label}"
        try:
            schedule = build(name, p, m, costs=costs, **params)
        except Exception as e:  # noqa: BLE001  (the error is part of what must not change)
            out[key] = {"error": f"{type(e).__name__}: {e}"}
            return
        end = simulate(schedule, costs).slot_end
        out[key] = {"ops": _digest(schedule), "makespan": float(end.max()) if len(end) else 0.0,
                    "ends": hashlib.sha256(np.asarray(end).tobytes()).hexdigest()}  # fmt: skip

    def linked(p: int) -> Costs:
        return Costs(
            1, 2, 1, link_p2p=[[0 if i == j else 0.05 * (1 + (i + j) % 3) for j in range(p)] for i in range(p)]
        )

    for name, spec in REGISTRY.items():
        for p in (1, 2, 3, 4, 6, 8):
            for m in (1, 2, 3, 5, 8, 12, 16):
                for params in _params(spec, p):
                    settings = [*((k, Costs(**v)) for k, v in COSTS.items()), ("link", linked(p))]
                    for label, costs in settings if spec.uses_costs else [("eq", Costs())]:
                        one(name, p, m, params, label, costs)
    if not quick:
        for name in ("zb-auto", "v-min", "v-half", "v-zb", "v-auto", "zb-v"):
            for p, m in ((8, 32), (16, 32), (16, 64), (12, 48), (32, 64)):
                limits = {"v-auto": [{}, {"max_memory": 4}, {"max_memory": 4.5}, {"max_memory": 0.6 * p}],
                          "zb-auto": [{}, {"max_memory": p}, {"max_memory": 1.5 * p}]}.get(name, [{}])  # fmt: skip
                for params in limits:
                    for label in ("eq", "b2f", "lat1"):
                        one(name, p, m, params, label, Costs(**COSTS[label]))
        for name, params in (("v-auto", {}), ("v-half", {}), ("zb-auto", {}), ("v-auto", {"max_memory": 13})):
            one(name, 32, 128, params, "b2f", Costs(**COSTS["b2f"]))
    return out


def compare(before: dict, after: dict) -> int:
    if before.keys() != after.keys():
        print(f"different grids: {len(before)} and {len(after)} cases")
        return 1
    differ = [k for k in before if before[k] != after[k]]
    errors = sum("error" in v for v in before.values())
    print(f"{len(before)} cases ({errors} raise in both), {len(differ)} differ")
    for k in differ[:20]:
        print(k, before[k], after[k], sep="\n  ")
    return 1 if differ else 0


def main() -> int:
    if sys.argv[1] == "--compare":
        return compare(*(json.load(open(path)) for path in sys.argv[2:4]))
    t = time.time()
    out = collect("--quick" in sys.argv)
    with open(sys.argv[1], "w") as f:
        json.dump(out, f, indent=0, sort_keys=True)
    print(f"{len(out)} cases in {time.time() - t:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
