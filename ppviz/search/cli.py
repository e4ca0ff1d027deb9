"""``ppviz search``: every layout of a model on N GPUs, ranked by its simulated iteration time.

``add_parser`` registers the command; ``main`` runs it. Bad input raises ValueError, which the main
CLI prints as one line on stderr with exit status 2. Before any work the search's size is bounded
(``check_size``); while it runs, its memory (``--max-memory-gb``). The progress bar (tqdm) goes to stderr, only
when stderr is a terminal and the search takes over a second.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
import time

from ..cli_limits import DEVICES, OVERSUBSCRIBE, SEARCH_ACTIONS, cores, default_memory_gb, memory_cap
from ..cli_types import ascii_float, ascii_int, ascii_ints
from ..estimate.cli import add_model_args, add_spec_overrides, specs_from_args, tp2d_grid
from ..units import gib, time_unit
from .engine import BUDGET_OPS, search
from .parallel import search_parallel
from .result import SearchResult, equivalents_text, group_near
from .space import Options, divisors, order_actions

CSV_FIELDS = ("rank", "iteration_s", "tokens_per_s", "mfu", "peak_gib", "fits", "tp", "pp", "dp", "cp", "ep", "vpp",
              "mbs", "schedule", "recompute", "sequence_parallel", "tp_comm_overlap", "zero", "tp_mode", "tp2d",
              "summa_blocks", "nvlink_dp_pp", "layer_split", "microbatches", "bubble_fraction", "command",
              "equivalents")  # fmt: skip


def _ints(text: str) -> list[int]:
    out = ascii_ints(text)
    if not out:
        raise argparse.ArgumentTypeError("wants at least one whole number, e.g. 4,8")
    return out


def _names(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def add_parser(sub) -> None:
    p = sub.add_parser("search", help="rank every parallel layout of a model on N GPUs by simulated iteration time")
    add_model_args(p, required=True)
    p.add_argument("--gpu", required=True, help="GPU preset (see `ppviz presets`)")
    p.add_argument("--gpus", type=ascii_int, required=True, help="number of GPUs")
    p.add_argument("--gbs", type=ascii_int, required=True, help="global batch in sequences")
    p.add_argument("--top", type=ascii_int, default=10, help="how many layouts to rank (default 10)")
    p.add_argument("--schedules", type=_names, help="schedules to consider, e.g. 1f1b,zb-v (default: all)")
    for name in ("tp", "cp", "pp", "dp", "ep", "vpp", "mbs", "zero"):
        p.add_argument(f"--{name}", dest=f"opt_{name}", type=_ints, metavar="N,N", help=f"restrict {name}")
    p.add_argument("--recompute", type=_names, help="restrict recompute: none,selective,full")
    p.add_argument("--sequence-parallel", choices=("on", "off", "both"), default="both", help="(default both)")
    p.add_argument("--tp-comm-overlap", nargs="?", const="on", choices=("on", "off", "both"), default="both",
                   help="TP collectives overlapped with the GEMMs (Megatron --tp-comm-overlap), searched where the "
                   "layout allows it (sequence parallel, the TP group inside one NVLink domain); the bare flag "
                   "or 'on' pins it on there, 'off' pins it off (default both)")  # fmt: skip
    p.add_argument("--even-only", action="store_true", help="only stage counts that divide the layers")
    p.add_argument("--tp-within-domain", action="store_true", help="keep every TP group inside one NVLink domain")
    p.add_argument("--megatron-order", action="store_true",
                   help="only Megatron's rank order in the NVLink domain (not NERSC's dp/pp placements)")  # fmt: skip
    p.add_argument(
        "--tp-mode",
        type=_names,
        metavar="1d,2d",
        help="tensor parallelism searched: 1d (Megatron, default), 2d (SUMMA over hidden × sequence) or both",
    )
    p.add_argument(
        "--tp2d",
        type=tp2d_grid,
        action="append",
        metavar="R,C",
        help="restrict 2D grids to hidden ways R × sequence ways C (repeat for more; implies --tp-mode 2d)",
    )
    p.add_argument("--summa-blocks", type=_ints, metavar="N,N",
                   help="SUMMA steps per matmul to search for 2D (default 0: lcm of R and C)")  # fmt: skip
    p.add_argument("--headroom", type=ascii_float, default=0.0,
                   help="fraction of HBM kept free beyond the GPU's reserve (--reserve-gib), e.g. 0.1")  # fmt: skip
    p.add_argument("--budget-ops", type=ascii_int, default=BUDGET_OPS,
                   help="work for the schedules that search their order (v-*, zb-auto): the ops of the orders they "
                   "build, each counted once; work, not seconds, so a search ranks the same on any machine "
                   f"(default {BUDGET_OPS:,}, about 2 CPU-seconds)")  # fmt: skip
    p.add_argument("--no-pareto", action="store_true", help="skip the Pareto front (faster)")
    p.add_argument("--pareto-within", type=ascii_float, default=0.1,
                   help="the front covers layouts up to this fraction slower than the best (default 0.1)")  # fmt: skip
    p.add_argument("--group-within", type=ascii_float, metavar="FRACTION",
                   help="fold rows at most this fraction slower than a row above them that differ from it in one "
                   "setting (ZeRO 1/2, vpp, SP) into its equivalents, e.g. 0.001")  # fmt: skip
    p.add_argument("--complete-front", action="store_true",
                   help="the exact front over every layout that fits (slower: see docs/search.md)")  # fmt: skip
    p.add_argument("--jobs", type=ascii_int, default=1,
                   help=f"local processes to spread the work over (default 1; at most the {cores()} cores this "
                   "process may use)")  # fmt: skip
    p.add_argument("--oversubscribe", action="store_true",
                   help=f"allow --jobs past the cores, up to {OVERSUBSCRIBE}× them (each holds its own search's "
                   "memory)")  # fmt: skip
    p.add_argument("--max-memory-gb", type=ascii_float, default=default_memory_gb(),
                   help="memory the search may take, all its processes together; past it, it stops with a "
                   "message (default: half this machine's, %(default)g GB)")  # fmt: skip
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print the result as one JSON object")
    out.add_argument("--csv", action="store_true", help="print the ranked layouts as CSV")
    add_spec_overrides(p)


def options(args: argparse.Namespace) -> Options:
    sp = {"on": (True,), "off": (False,), "both": None}[args.sequence_parallel]
    return Options(
        **{n: getattr(args, f"opt_{n}") for n in ("tp", "cp", "pp", "dp", "ep", "vpp", "mbs", "zero")},
        schedules=args.schedules, recompute=args.recompute, sequence_parallel=sp, uneven=not args.even_only,
        headroom=args.headroom, tp_within_domain=args.tp_within_domain, tp_mode=args.tp_mode, tp2d=args.tp2d,
        summa_blocks=args.summa_blocks, nvlink_placements=not args.megatron_order,
        tp_comm_overlap={"on": (True,), "off": (False,), "both": None}[args.tp_comm_overlap],
    )  # fmt: skip


def check_size(model, gpus: int, gbs: int, opt: Options) -> None:
    """Refuse, before any work, a search whose pp could pass DEVICES (an estimate's work grows with pp²) or
    whose schedule orders could take more memory than SEARCH_ACTIONS."""
    most_pp = max((p for p in opt.pp or divisors(gpus) if gpus % p == 0 and p <= model.layers), default=1)
    if most_pp > DEVICES:
        raise ValueError(
            f"this search would try pp up to {most_pp:,} ({gpus:,} GPUs, {model.layers:,} layers); the bound is "
            f"{DEVICES:,} (an estimate's work grows with pp²): restrict it, e.g. --pp 8,16,32,64"
        )
    n = order_actions(model, gpus, gbs, opt)
    if n > SEARCH_ACTIONS:
        raise ValueError(
            f"this search may build schedules of {n:,} actions in all; the bound is {SEARCH_ACTIONS:,} "
            "(several GB of memory): narrow it with --pp, --mbs, --vpp or --schedules, or lower --gbs"
        )


class _Bar:
    """A tqdm bar on stderr that appears only once the search has run for a second."""

    def __init__(self):
        self.start = time.perf_counter()
        self.bar = None

    def __call__(self, done: int, total: int) -> None:
        if self.bar is None:
            if time.perf_counter() - self.start < 1.0:
                return
            from tqdm import tqdm

            # from what is already done, so its rate counts only the layouts decided while it shows
            self.bar = tqdm(total=total, initial=done, unit=" layouts", file=sys.stderr, dynamic_ncols=True,
                            leave=False)  # fmt: skip
        self.bar.total = total
        self.bar.n = done
        self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def main(args: argparse.Namespace) -> int:
    model, gpu = specs_from_args(args)
    check_size(model, args.gpus, args.gbs, options(args))
    bar = _Bar() if sys.stderr.isatty() else None
    kw = dict(top=args.top, options=options(args), budget_ops=args.budget_ops, pareto=not args.no_pareto, progress=bar,
              pareto_within=float("inf") if args.complete_front else args.pareto_within)  # fmt: skip
    try:
        with memory_cap(args.max_memory_gb / args.jobs):  # each process its share
            if args.jobs > 1:
                result = search_parallel(model, gpu, args.gpus, args.gbs, jobs=args.jobs, **kw)
            else:
                result = search(model, gpu, args.gpus, args.gbs, **kw)
    except MemoryError:
        raise ValueError(
            f"the search passed its memory bound of {args.max_memory_gb:g} GB (--max-memory-gb): narrow it with "
            "--pp, --mbs, --vpp or --schedules, or raise the bound"
        ) from None
    finally:
        if bar is not None:
            bar.close()
    if args.group_within is not None:
        result.layouts = group_near(result.layouts, args.group_within)
    if args.json:
        sys.stdout.write(json.dumps(result.to_dict()) + "\n")
    elif args.csv:
        sys.stdout.write(to_csv(result))
    else:
        sys.stdout.write(summary(result))
    return 0


def to_csv(result: SearchResult) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_FIELDS)
    for row in result.layouts:
        w.writerow(
            [
                equivalents_text(row)
                if k == "equivalents"
                else "/".join(map(str, row[k]))
                if k in ("layer_split", "tp2d", "nvlink_dp_pp") and row[k]
                else row[k]
                for k in CSV_FIELDS
            ]  # fmt: skip
        )
    return buf.getvalue()


def summary(result: SearchResult) -> str:
    """A readable ranking: iteration in one unit for the column (ms below 10 s, else s), memory in GiB."""
    scale, unit = time_unit([r["iteration_s"] for r in result.layouts + result.pareto])
    lines = [
        f"{result.model} on {result.gpus:,} × {result.gpu}, global batch {result.global_batch:,}: "
        f"{result.searched:,} layouts, {result.pruned:,} pruned by a bound, {result.simulated:,} simulated "
        f"in {result.seconds:,.1f} s; fits in {gib(result.capacity_bytes)} per GPU (HBM less the reserve"
        + (f" and {result.headroom:.0%} kept free)" if result.headroom else ")"),
        f"{'#':>3} {'iter ' + unit:>10} {'tokens/s':>11} {'MFU':>6} {'peak GiB':>9} {'bubble':>7}  layout",
    ]
    for r in result.layouts:
        lines.append(
            f"{r['rank']:>3} {r['iteration_s'] * scale:>10,.1f} {r['tokens_per_s']:>11,.0f} {r['mfu'] * 100:>5.1f}% "
            f"{r['peak_gib']:>9,.2f} {r['bubble_fraction'] * 100:>6.1f}%  {_layout(r)}"
        )
    if result.pareto:
        lines.append("Pareto front (iteration time against peak memory):")
        for r in result.pareto:
            lines.append(f"    {r['iteration_s'] * scale:>10,.1f} {unit} {r['peak_gib']:>9,.2f} GiB  {_layout(r)}")
    lines += [f"note: {n}" for n in result.notes]
    lines.append("rerun any row with `ppviz estimate` (--json / --csv give the exact command of each row)")
    return "\n".join(lines) + "\n"


def _layout(r: dict) -> str:
    parts = [r["schedule"], f"tp {r['tp']}", f"pp {r['pp']}", f"dp {r['dp']}"]
    if r["cp"] > 1:
        parts.append(f"cp {r['cp']}")
    if r["ep"] > 1:
        parts.append(f"ep {r['ep']}")
    if r["vpp"] > 1:
        parts.append(f"vpp {r['vpp']}")
    parts += [f"mbs {r['mbs']}", f"recompute {r['recompute']}"]
    if r["sequence_parallel"]:
        parts.append("SP, TP overlapped" if r.get("tp_comm_overlap") else "SP")
    if r["tp_mode"] == "2d":
        parts.append(
            f"2D {r['tp2d'][0]}×{r['tp2d'][1]}" + (f" {r['summa_blocks']} blocks" if r["summa_blocks"] else "")
        )
    if r.get("nvlink_dp_pp"):
        parts.append(f"NVLink dp {r['nvlink_dp_pp'][0]} × pp {r['nvlink_dp_pp'][1]}")
    parts.append(f"ZeRO {r['zero']}")
    if r["layer_split"]:
        parts.append("layers " + "/".join(map(str, r["layer_split"])))
    same = equivalents_text(r)
    return ", ".join(parts) + (f" ({same})" if same else "")
