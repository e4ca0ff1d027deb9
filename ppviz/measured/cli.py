"""``ppviz measured FILES…``: read a measured run, fit its costs, and compare it with the same order
simulated under them. Bad input raises ValueError, printed by the main CLI as one line (exit 2)."""

from __future__ import annotations

import argparse
import json

from ..cli_types import ascii_int
from .compare import compare, to_dict
from .read import read
from .whatif import what_if


def add_parser(sub) -> None:
    p = sub.add_parser("measured", help="fit a measured run's costs and compare it with its simulation",
                       description="Read PyTorch profiler traces (one per rank, gzipped or not), a PyTorch order "
                       "CSV or Megatron-LM timer logs; fit per-stage F/B/W and the p2p latency; simulate the same "
                       "order under them; print measured against simulated idle time.")  # fmt: skip
    p.add_argument("files", nargs="+", metavar="FILE", help="one trace per rank, or one order CSV, or timer logs")
    p.add_argument("--iteration", type=ascii_int, help="the ProfilerStep#N to read (default: the last complete one)")
    p.add_argument("--pattern", metavar="REGEX",
                   help="annotation names of other frameworks: a regex with named groups kind (F, I, W, B, BW), "
                   "microbatch and optionally stage, e.g. "
                   "'(?P<kind>[FIWB])_s(?P<stage>\\d+)_mb(?P<microbatch>\\d+)'")  # fmt: skip
    p.add_argument("--order", metavar="FILE",
                   help="traces without annotations (torch 2.13's Schedule1F1B): name each rank's compute by this "
                   "order CSV (torch's schedule._dump_csv, compute-only or compute+comms): its k-th forward "
                   "segment is the k-th F of the rank's row, its k-th backward segment the k-th B")  # fmt: skip
    p.add_argument("--schedule", metavar="NAME",
                   help="as --order, with the order of a ppviz schedule with one stage per rank (gpipe, 1f1b…) "
                   "for the traces' ranks and microbatches")  # fmt: skip
    p.add_argument(
        "--ignore-annotations",
        action="store_true",
        help="name annotated traces by --order or --schedule too (to check the naming against them)",
    )
    p.add_argument("--naming", choices=("auto", "torch", "torch-old"), default="auto",
                   help="action naming of an order CSV (default: read from its tokens)")  # fmt: skip
    p.add_argument("--estimator", choices=("mean", "median"), default="mean",
                   help="fit each op time, latency and host overhead as the mean of its samples (default: a step "
                   "pays its ops' long tails) or their median")  # fmt: skip
    p.add_argument("--cores", type=ascii_int, metavar="N",
                   help="a CPU run whose ranks time-shared a host's N cores (more ranks than cores): fit each op's "
                   "own work and simulate the ranks sharing the cores (default: a device per rank)")  # fmt: skip
    p.add_argument("--what-if", metavar="SCHEDULE", action="append", default=[],
                   help="the fitted costs under another schedule (repeatable): its `ppviz simulate` command and "
                   "makespan (JSON: what_if)")  # fmt: skip
    p.add_argument("--json", action="store_true", help="print one JSON object")


def main(args: argparse.Namespace) -> int:
    fmt, got = read(args.files, iteration=args.iteration, pattern=args.pattern, naming=args.naming,
                    order=args.order, schedule=args.schedule, ignore_annotations=args.ignore_annotations)  # fmt: skip
    if fmt == "megatron":
        summary = {"format": "megatron", **got.summary()}
        print(json.dumps(summary) if args.json else megatron_text(summary))
        return 0
    if got.format == "torch-csv":  # an order: what it holds, nothing to fit
        if args.json:
            print(json.dumps({"format": got.format, "ranks": got.ranks, "stages": got.stages,
                              "microbatches": got.microbatches, "notes": list(got.notes)}))  # fmt: skip
        else:
            print(f"{got.format}: {got.ranks} ranks, {got.stages} stages, {got.microbatches} microbatches; "
                  "an order without times (fitting needs profiler traces)")  # fmt: skip
            for note in got.notes:
                print(f"note: {note}")
        return 0
    c = compare(got, args.estimator, args.cores)
    d = to_dict(c)
    d["what_if"] = [what_if(c.fit, name, got.ranks, got.microbatches).to_dict() for name in args.what_if]
    print(json.dumps(d) if args.json else text(d))
    return 0


def _ms(seconds: float | None) -> str:
    return "—" if seconds is None else f"{seconds * 1e3:,.3f}"


def step_error(measured_s: float, simulated_s: float) -> str:
    """The simulated step against the measured one, signed: +5.0% is 5% longer in the simulation."""
    return "—" if measured_s <= 0 else f"{simulated_s / measured_s - 1:+.1%}"


def text(d: dict) -> str:
    """The comparison as readable tables, times in ms."""
    lines = [f"{d['format']}: {d['ranks']} ranks, {d['stages']} stages, {d['microbatches']} microbatches"
             + ("" if d["iteration"] is None else f", ProfilerStep#{d['iteration']}"), "",
             f"fitted per-stage times (ms, {d['fitted']['estimator']} [min–max] × samples"
             + ("" if d["fitted"]["cores"] is None else f"; each op's own work, {d['fitted']['cores']} shared cores")
             + ")",
             f"{'stage':>5}  {'F':>28}  {'B':>28}  {'W':>28}"]  # fmt: skip
    for s in d["fitted"]["stage_times"]:
        cells = []
        for k in "fbw":
            v, spread, n = s[f"{k}_s"], s["spread_s"][k], s["samples"][k]
            cells.append("—" if v is None else f"{_ms(v)} [{_ms(spread[0])}–{_ms(spread[1])}] ×{n}")
        lines.append(f"{s['stage']:>5}  " + "  ".join(f"{c:>28}" for c in cells))
    f = d["fitted"]
    lines.append(f"p2p latency {_ms(f['p2p_s'])} ms ({f['p2p_samples']} waited-for transfers)")
    lines.append(
        "host overhead between ops (ms per rank): "
        + ", ".join(f"{_ms(h)} ×{n}" for h, n in zip(f["host_overhead_s"], f["host_overhead_samples"]))
    )
    lines += ["", f"{'':>9} {'makespan':>12}", f"{'measured':>9} {_ms(d['measured']['makespan_s']):>9} ms",
              f"{'simulated':>9} {_ms(d['simulated']['makespan_s']):>9} ms", "",
              f"{'rank':>4} {'measured idle':>15} {'= bubble':>12} {'+ host overhead':>16} "
              f"{'+ excess':>12}"]  # fmt: skip
    sim = d["simulated"]
    cols = (d["measured"]["idle_s"], sim["bubble_s"], sim["host_overhead_s"], d["excess_idle_s"])
    for r, (m, b, h, e) in enumerate(zip(*cols)):
        lines.append(f"{r:>4} {_ms(m):>12} ms {_ms(b):>9} ms {_ms(h):>13} ms {_ms(e):>9} ms")
    m, b, h, e = (sum(c) for c in cols)
    lines.append(f"{'all':>4} {_ms(m):>12} ms {_ms(b):>9} ms {_ms(h):>13} ms {_ms(e):>9} ms")
    lines += ["", f"{'rank':>4} {'measured step':>15} {'simulated step':>16} {'error':>8}"]
    for r, (m, s) in enumerate(zip(d["measured"]["step_s"], d["simulated"]["step_s"])):
        lines.append(f"{r:>4} {_ms(m):>12} ms {_ms(s):>13} ms {step_error(m, s):>8}")
    if d["late_ops"]:
        lines += ["", "latest against the model (start, ms)"]
        lines += [f"  {x['op']:>6} on rank {x['rank']}: measured {_ms(x['measured_start_s'])}, simulated "
                  f"{_ms(x['simulated_start_s'])} (+{_ms(x['late_s'])})" for x in d["late_ops"]]  # fmt: skip
    for w in d.get("what_if", []):
        lines += ["", f"under {w['schedule']}: makespan {_ms(w['makespan_s'])} ms ({w['command']})"]
        lines += [f"  note: {n}" for n in w["notes"]]
    lines += [""] + [f"note: {n}" for n in d["notes"]]
    return "\n".join(lines)


def megatron_text(s: dict) -> str:
    """A Megatron-LM log's summary as text: the iteration time, the timers, what can and cannot be fitted."""
    it = s["iteration_ms"]
    lines = [
        f"megatron-lm timers ({s['timer_form']} form), {s['iterations']} iterations, global batch {s['global_batch']}",
        f"iteration      {it['median']:,.1f} ms median of {it['samples']} (first {it['first']:,.1f} ms, "
        f"min {it['min']:,.1f}, max {it['max']:,.1f})",
        "timer                              median ms   samples",
    ]
    for name, t in s["timers"].items():
        lines.append(f"  {name:<32} {t['median_ms']:>10,.2f} {t['samples']:>8}")
    if s.get("backward_forward_ratio") is not None:
        lines.append(f"backward/forward compute: {s['backward_forward_ratio']:.2f}")
    lines += ["can be fitted:"] + [f"  - {x}" for x in s["fittable"]]
    lines += ["cannot be fitted:"] + [f"  - {x}" for x in s["not_fittable"]]
    lines += [f"note: {n}" for n in s["notes"]]
    return "\n".join(lines)
