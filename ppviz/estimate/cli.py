"""``ppviz presets`` and ``ppviz estimate``: the real-units commands.

``add_parsers`` registers both on the main parser; ``main`` runs them. Bad input raises
ValueError, which the main CLI prints as one line on stderr with exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys

from .. import formats, handoff
from ..cli_limits import DEVICES
from ..cli_types import NUMBER_TYPES, ascii_float, ascii_int, ascii_ints
from ..ops_json import dumps_with_ops
from ..schedules import REGISTRY
from ..search.advice import Advised, advise
from ..units import GIB, duration, gib, time_unit
from . import defaults, hf_config, planning, profile, specs
from .iteration import FLOPS_DEFINITION, Estimate, estimate

SPECS = (("model", specs.Model), ("gpu", specs.Gpu))  # the override flags' destinations: model_<field>, gpu_<field>


def _schedule_params() -> dict:
    out: dict = {}
    for spec in REGISTRY.values():
        for p in spec.params:
            if p.name != "chunks":
                out.setdefault(p.name, p)
    return out


def _layer_split(text: str) -> tuple[int, ...]:
    return tuple(ascii_ints(text, "layers per stage, e.g. 3,4,4,3", flag="--layer-split"))


def tp2d_grid(text: str) -> tuple[int, int]:
    ways = ascii_ints(text, "hidden,sequence ways, e.g. 4,2", flag="--tp2d")
    if len(ways) != 2:
        raise argparse.ArgumentTypeError(f"--tp2d wants hidden,sequence ways, e.g. 4,2 (got {text!r})")
    return ways[0], ways[1]


def _pair(text: str) -> tuple[int, int]:
    ranks = ascii_ints(text, "dp,pp ranks per NVLink domain, e.g. 2,4", flag="--nvlink-dp-pp")
    if len(ranks) != 2:
        raise argparse.ArgumentTypeError(f"--nvlink-dp-pp wants dp,pp ranks per NVLink domain, e.g. 2,4 (got {text!r})")
    return ranks[0], ranks[1]


def add_parsers(sub) -> None:
    """Add ``presets`` and ``estimate`` to the main CLI's subparsers."""
    pr = sub.add_parser("presets", help="list the model and GPU presets of `ppviz estimate`")
    pr.add_argument("--json", action="store_true", help="print every preset's fields as JSON")
    p = sub.add_parser("estimate", help="estimate one training iteration in seconds and bytes")
    add_layout_args(p)
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print the result as one JSON object (seconds, bytes)")
    out.add_argument("--csv", action="store_true", help="print the run's ops as CSV, times in seconds")
    out.add_argument("--trace", action="store_true",
                     help="print a Chrome / Perfetto trace: real time, activation bytes per device")  # fmt: skip
    p.add_argument("--no-ops", action="store_true", help="with --json, leave the run's ops out")
    p.add_argument("--no-advice", action="store_true",
                   help="when the layout does not fit, skip the search for the nearest layouts that do")  # fmt: skip
    p.add_argument(
        "--tokens", type=ascii_float, help="a token budget (e.g. 1e12): adds the days and GPU-hours it takes"
    )
    p.add_argument("--gpu-hour-price", type=ascii_float, metavar="PRICE",
                   help="with --tokens, the price of one GPU-hour: adds the cost (in that currency)")  # fmt: skip
    p.add_argument("--launch", choices=handoff.FRAMEWORKS,
                   help="print the layout's launch settings: Megatron-LM arguments or torchtitan TOML "
                   "(with --json: as launch)")  # fmt: skip


def add_layout_args(p: argparse.ArgumentParser, *, render: bool = False) -> None:
    """The model, GPU and layout flags of `ppviz estimate`, defined once.

    ``render``: the flags of `ppviz render` in real units, where the schedule is the positional
    argument and ``--model`` and ``--gpu`` are checked by the command (which says what is missing).
    Unset flags are None (or False), so a caller can tell which were given.
    """
    add_model_args(p, required=not render)
    p.add_argument("--gpu", required=not render, help="GPU preset (see `ppviz presets`)")
    for name in ("tp", "pp", "dp", "cp", "ep", "vpp", "mbs"):
        p.add_argument(f"--{name}", type=ascii_int, help=f"{name} (default 1)")
    p.add_argument("--gbs", type=ascii_int, help="global batch in sequences (default: one microbatch per DP rank)")
    p.add_argument("--sequence-parallel", action=argparse.BooleanOptionalAction,
                   help="Megatron sequence parallelism (default: on when tp > 1)")  # fmt: skip
    p.add_argument("--tp-comm-overlap", action="store_true",
                   help="overlap the TP collectives with the GEMMs (Megatron --tp-comm-overlap; needs "
                   "--sequence-parallel)")  # fmt: skip
    p.add_argument("--recompute", choices=specs.RECOMPUTE,
                   help=f"activation recomputation (default {defaults.RECOMPUTE})")  # fmt: skip
    p.add_argument("--zero", type=ascii_int,
                   help=f"0 none, 1 distributed optimizer, 2 + gradients, 3 + weights "
                   f"(default {defaults.ZERO})")  # fmt: skip
    p.add_argument("--precision", choices=specs.PRECISIONS, help="bf16 (default), fp16 (same tensor rate) or fp8")
    if render:
        p.add_argument("schedule", nargs="?", help="pipeline schedule (see `ppviz list`)")
    else:
        p.add_argument("--schedule", default=defaults.SCHEDULE,
                       help=f"pipeline schedule (see `ppviz list`; default {defaults.SCHEDULE})")  # fmt: skip
    p.add_argument("--tp-mode", choices=specs.TP_MODES, help="1d (Megatron, default) or 2d (SUMMA over hidden × "
                   "sequence; implied by --tp2d)")  # fmt: skip
    p.add_argument("--tp2d", type=tp2d_grid, metavar="R,C",
                   help="2D TP grid: hidden ways R × sequence ways C (tp = R·C)")  # fmt: skip
    p.add_argument("--summa-blocks", type=ascii_int, help="SUMMA steps per matmul (default: lcm of R and C)")
    p.add_argument("--nvlink-dp-pp", type=_pair, metavar="A,B",
                   help="NVLink placement: A dp ranks and B pp ranks share a domain with the tp·cp group "
                   "(default: Megatron's rank order)")  # fmt: skip
    p.add_argument("--layer-split", type=_layer_split, metavar="N,N,...", help="layers of every stage")
    p.add_argument("--edge-fewer", type=ascii_int, help="k fewer layers on the first and last stage")
    p.add_argument("--no-dp-overlap", action="store_true", help="do not overlap the gradient reduction")
    p.add_argument("--b-frees", type=ascii_float, help="fraction of a stage's activation that B frees (default 0)")
    p.add_argument("--pair-overlap", action="store_true",
                   help="overlapped F&B pairs (DualPipe) hide each op's MoE all-to-all")  # fmt: skip
    for q in _schedule_params().values():
        flags = [f"--{n.replace('_', '-')}" for n in (q.name, *q.aliases)]
        p.add_argument(*flags, dest=q.name, type=NUMBER_TYPES.get(q.type, q.type), help=q.help)
    add_spec_overrides(p)


def add_model_args(p: argparse.ArgumentParser, *, required: bool) -> None:
    """The model: a preset name, or a Hugging Face config.json (read locally, never downloaded)."""
    g = p.add_mutually_exclusive_group(required=required)
    g.add_argument("--model", help="model preset (see `ppviz presets`)")
    g.add_argument("--hf-config", metavar="PATH",
                   help="a Hugging Face config.json (Llama, Mistral, Mixtral, Qwen2/3, DeepSeek-V3, GPT-2); "
                   "give --seq for the training sequence length")  # fmt: skip


class _HbmInGb(argparse.Action):
    """``--hbm-gb`` (HBM in 10⁹ bytes, before GiB) refused with the GiB value to give instead."""

    def __call__(self, parser, namespace, values, option_string=None):
        try:
            hint = f"--hbm-gib {float(values) * 1e9 / GIB:.6g} for {values} GB"
        except ValueError:
            hint = "--hbm-gib"
        raise argparse.ArgumentError(self, f"HBM is in GiB now (2^30 bytes, as nvidia-smi counts): give {hint}")


def add_spec_overrides(p: argparse.ArgumentParser) -> None:
    """Flags that override any field of the model and GPU presets (estimate, render and search),
    as the specs define them (``specs.override_flags``); ``--hbm-gb`` (before GiB) is refused with its
    GiB value, not read as an abbreviation of ``--hbm-gbps``."""
    p.add_argument("--hbm-gb", action=_HbmInGb, help=argparse.SUPPRESS)
    for prefix, cls in SPECS:
        for f in specs.override_flags(cls):
            if f.type is bool:
                p.add_argument(f"--{f.name}", dest=f"{prefix}_{f.field}", action=argparse.BooleanOptionalAction,
                               help=f.help)  # fmt: skip
            else:
                p.add_argument(f"--{f.name}", dest=f"{prefix}_{f.field}", type=NUMBER_TYPES[f.type], help=f.help)
    p.add_argument("--calibration", metavar="FILE", help="a calibration profile (`ppviz calibrate`): the GPU's "
                   "efficiencies fitted to your stack; efficiency flags given beside it win")  # fmt: skip


def given_flags(args: argparse.Namespace) -> list[str]:
    """The model, GPU and layout flags given on a `ppviz render` line in real units."""
    plain = ["model", "hf_config", "gpu", "tp", "pp", "dp", "cp", "ep", "vpp", "sequence_parallel", "recompute", "zero",
             "tp_mode", "tp2d", "summa_blocks", "nvlink_dp_pp", "precision", "layer_split", "edge_fewer",
             "no_dp_overlap", "pair_overlap", "tp_comm_overlap", "calibration"]  # fmt: skip
    flags = {n: n.replace("_", "-") for n in plain}
    flags.update({f"{prefix}_{f.field}": f.name for prefix, cls in SPECS for f in specs.override_flags(cls)})
    return [f"--{flag}" for dest, flag in flags.items() if getattr(args, dest, None) not in (None, False)]


def specs_from_args(args: argparse.Namespace) -> tuple[specs.Model, specs.Gpu]:
    """The model and GPU presets with the override flags of ``add_spec_overrides`` applied."""
    over: dict[str, dict] = {}
    for prefix, cls in SPECS:
        given = ((f, getattr(args, f"{prefix}_{f.field}")) for f in specs.override_flags(cls))
        over[prefix] = {f.field: v if f.unit == 1 else v * f.unit for f, v in given if v is not None}
    if getattr(args, "hf_config", None):
        model = specs.override(hf_config.model_from_config(args.hf_config, name=args.hf_config), **over["model"])
    else:
        model = specs.model(args.model, **over["model"])
    gpu = specs.gpu(args.gpu, **over["gpu"])
    if getattr(args, "calibration", None):
        gpu = profile.load(args.calibration).apply(gpu, keep=tuple(over["gpu"]))
    return model, gpu


def _or(value, default):
    return default if value is None else value


def build(args: argparse.Namespace) -> Estimate:
    """The estimate an ``ppviz estimate`` command line asks for."""
    model, gpu = specs_from_args(args)
    spec = REGISTRY.get(args.schedule)
    sched_params = {}
    for name in _schedule_params():
        v = getattr(args, name, None)
        if v is None:
            continue
        if spec is not None and spec.param(name) is None:
            raise ValueError(f"{args.schedule} does not take --{name.replace('_', '-')}")
        sched_params[name] = v
    ones = {n: _or(getattr(args, n), 1) for n in ("tp", "pp", "dp", "cp", "ep", "vpp", "mbs")}
    tp_mode = _or(args.tp_mode, "2d" if args.tp2d else "1d")
    if args.tp2d and args.tp is None:
        ones["tp"] = args.tp2d[0] * args.tp2d[1]
    layout = specs.default_layout(
        **ones, gbs=args.gbs, sequence_parallel=args.sequence_parallel, tp_comm_overlap=args.tp_comm_overlap,
        recompute=args.recompute, zero=args.zero, precision=_or(args.precision, "bf16"), schedule=args.schedule,
        schedule_params=sched_params, layer_split=args.layer_split, edge_fewer=_or(args.edge_fewer, 0),
        dp_overlap=not args.no_dp_overlap, b_frees=_or(args.b_frees, 0.0), pair_overlap=args.pair_overlap,
        tp_mode=tp_mode, tp2d=args.tp2d, summa_blocks=_or(args.summa_blocks, 0), nvlink_dp_pp=args.nvlink_dp_pp,
    )  # fmt: skip
    return estimate(model, gpu, layout)


def main(args: argparse.Namespace) -> int:
    if args.command == "presets":
        _presets(args.json)
        return 0
    if args.gpu_hour_price is not None and args.tokens is None:
        raise ValueError("--gpu-hour-price prices a token budget: add --tokens (e.g. --tokens 1e12)")
    est = build(args)
    if args.no_ops and not args.json:
        raise ValueError("--no-ops applies to --json only: drop it, or add --json")
    plan = None if args.tokens is None else plan_of(est, args.tokens, args.gpu_hour_price)
    advised = None
    if not est.fits and not args.no_advice:  # within the CLI's bound on pipeline devices (cli_limits.DEVICES)
        advised = advise(est.model, est.gpu, est.layout, est=est, accept=lambda lay: lay.pp <= DEVICES)
    if args.json:
        out = est.to_dict(ops=False)  # the ops are written column-wise below
        if plan is not None:
            out["plan"] = plan.to_dict()
        if args.launch:
            out["launch"] = handoff.launch(args.launch, est.model, est.layout).to_dict()
        out["why"] = advised.why if advised is not None else ""
        out["advice"] = [a.to_dict() for a in advised.advice] if advised is not None else []
        sys.stdout.write((json.dumps(out) if args.no_ops else dumps_with_ops(out, est.run.result, at=("run",))) + "\n")
    elif args.launch:
        sys.stdout.write(handoff.launch(args.launch, est.model, est.layout).text)
    elif args.csv:
        sys.stdout.write(formats.ops_csv(est.run, time_unit="s"))
    elif args.trace:
        sys.stdout.write(formats.chrome_trace(est.run, **formats.trace_kwargs(est)))
    else:
        text = summary(est) + ("" if plan is None else plan_line(plan) + "\n")
        sys.stdout.write(text + ("" if advised is None else advice_lines(advised)))
    return 0


def plan_of(est: Estimate, tokens: float, gpu_hour_price: float | None) -> planning.TrainingPlan:
    """What ``tokens`` take at this estimate's throughput on all of its GPUs."""
    return planning.training_plan(est.tokens_per_s, est.layout.gpus, tokens, gpu_hour_price)


def plan_line(plan: planning.TrainingPlan) -> str:
    cost = "" if plan.cost is None else f", cost {plan.cost:,.0f} at {plan.gpu_hour_price:g} per GPU-hour"
    return f"plan           {plan.tokens:.4g} tokens: {plan.days:,.1f} days, {plan.gpu_hours:,.0f} GPU-hours{cost}"


def advice_lines(advised: Advised) -> str:
    """Why the layout does not fit, and the nearest layouts that do, each with its command."""
    lines = [f"why            {advised.why}"]
    if not advised.advice:
        lines.append(
            f"no layout that fits among the {advised.evaluated:,} nearest: use more GPUs or a GPU with more memory"
        )
    else:
        lines.append("nearest layouts that fit:")
    for a in advised.advice:
        lines.append(
            f"  - {', '.join(a.changes)}: iteration {duration(a.iteration_s)}, MFU {a.mfu:.1%}, "
            f"peak {gib(a.peak_bytes)} of {gib(a.usable_bytes)} usable"
        )
        lines.append(f"    {a.command}")
    return "\n".join(lines) + "\n"


def summary(est: Estimate) -> str:
    """A readable report of one estimate: times in ms below 10 s and s above, memory in GiB; throughput
    and MFU of a layout that does not fit say so."""
    d = est.to_dict(ops=False)
    lay = est.layout
    t = duration
    sp = "SP" if lay.sequence_parallel else "no SP"
    unfit = "" if est.fits else " (does not fit)"
    lines = [
        f"{est.model.name} on {lay.gpus:,} × {est.gpu.name}: tp {lay.tp}, pp {lay.pp}, dp {lay.dp}, cp {lay.cp}, "
        f"ep {lay.ep}{' (TP collectives overlapped)' if lay.tp_comm_overlap else ''}; {lay.schedule}, "
        f"{d['stages']} stages, {d['microbatches']} microbatches of {lay.mbs}",
        f"settings       recompute {lay.recompute}, {sp}, ZeRO {lay.zero}, {lay.precision}, reserve "
        f"{gib(est.reserve_bytes)}",
        f"iteration      {t(d['iteration_s'])}  (makespan {t(d['makespan_s'])} + DP sync {t(d['dp_sync_s'])}"
        f" + optimizer {t(d['optimizer_s'])})"
        if d["iterations"] == 1
        else f"iteration      {t(d['iteration_s'])} on average over {d['iterations']} iterations (run "
        f"{t(d['run_s'])}: makespan {t(d['makespan_s'])} with the steps between them + DP sync "
        f"{t(d['dp_sync_s'])} + optimizer {t(d['optimizer_s'])})",
        f"throughput     {d['tokens_per_s']:,.0f} tokens/s, {d['samples_per_s']:,.2f} samples/s{unfit}",
        f"per GPU        {d['tflops_per_gpu']:,.1f} TFLOP/s, MFU {d['mfu'] * 100:.1f}%"
        + (f", HFU {d['hfu'] * 100:.1f}%" if lay.recompute != "none" else "")
        + unfit,
        f"one layer      F {d['layer_ms']['f']:,.3f} ms, B {d['layer_ms']['b']:,.3f} ms, W {d['layer_ms']['w']:,.3f} ms"
        f"; p2p {d['p2p_ms']:,.3f} ms",
        "breakdown      " + _seconds_line(d["breakdown_s"]),
        f"{'device':>6} {'weights GiB':>12} {'grads GiB':>10} {'optimizer GiB':>14} {'activ. GiB':>11} {'peak GiB':>9}",
    ]
    for i in range(len(d["peak_bytes"])):
        lines.append(
            f"{i:>6} {d['weight_bytes'][i] / GIB:>12,.2f} {d['grad_bytes'][i] / GIB:>10,.2f} "
            f"{d['optimizer_bytes'][i] / GIB:>14,.2f} {d['peak_activation_bytes'][i] / GIB:>11,.2f} "
            f"{d['peak_bytes'][i] / GIB:>9,.2f}"
        )
    lines += memory_table(est)
    lines.append(est.verdict)
    lines.append(f"FLOPs: {FLOPS_DEFINITION}")
    return "\n".join(lines) + "\n"


def _seconds_line(parts: dict[str, float]) -> str:
    """ "compute 7,780.4 ms, tp comm 2,463.0 ms, …": every part in the unit of the largest."""
    scale, unit = time_unit(parts.values())
    return ", ".join(f"{k[:-2].replace('_', ' ')} {v * scale:,.1f} {unit}" for k, v in parts.items())


def memory_table(est: Estimate) -> list[str]:
    """The fullest device's memory by what holds it, and the reserve, against the HBM (GiB)."""
    parts = est.memory_breakdown()
    used = sum(parts.values())
    lines = [f"memory of device {est.fullest_device} (the fullest)   GiB   share of HBM"]
    for name, n in parts.items():
        lines.append(f"  {name:<28} {n / GIB:>8,.2f} {n / est.capacity_bytes:>8.1%}")
    lines.append(f"  {'total with the reserve':<28} {used / GIB:>8,.2f} {used / est.capacity_bytes:>8.1%}")
    lines.append(f"  {'HBM (' + est.gpu.name + ')':<28} {est.capacity_bytes / GIB:>8,.2f}")
    return lines


def facts(est: Estimate) -> list[tuple[str, str]]:
    """The headline figures of a page in real units (``ppviz render --model``): (label, value)."""
    peak = float(est.peak_bytes.max())
    unfit = "" if est.fits else " (does not fit)"
    return [
        ("iteration", duration(est.iteration_s)),
        ("makespan", duration(est.makespan_s)),
        ("tokens/s", f"{est.tokens_per_s:,.0f}{unfit}"),
        ("MFU", f"{est.mfu:.1%}{unfit}"),
        ("peak memory", f"{gib(peak)} of {gib(est.usable_bytes)} usable ({gib(est.capacity_bytes)} HBM)"),
        ("fits" if est.fits else "does not fit", est.verdict),
        (
            "layout",
            f"{est.model.name} on {est.layout.gpus:,} × {est.gpu.name}, {est.microbatches} microbatches"
            + (f" × {est.iterations} iterations (iteration: their average)" if est.iterations > 1 else ""),
        ),
    ]


def _presets(as_json: bool) -> None:
    models = {n: specs.as_dict(specs.model(n)) for n in specs.model_names()}
    gpus = {n: specs.as_dict(specs.gpu(n)) for n in specs.gpu_names()}
    if as_json:
        print(json.dumps({"models": models, "gpus": gpus}, indent=1))
        return
    print("models:")
    for n, m in models.items():
        moe = f", MoE {m['experts']}×top-{m['top_k']}" if m["experts"] else ""
        print(f"  {n:<14} L {m['layers']}, h {m['hidden']}, heads {m['heads']}/{m['kv_heads']} KV, ffn {m['ffn']}, "
              f"vocab {m['vocab']}, seq {m['seq']}{moe}")  # fmt: skip
    print("gpus:")
    for n, g in gpus.items():
        print(f"  {n:<14} {g['bf16_flops'] / 1e12:g} TF/s BF16, {g['hbm_bytes'] / GIB:,.2f} GiB at "
              f"{g['hbm_bytes_per_s'] / 1e9:g} GB/s, NVLink {g['nvlink_bytes_per_s'] / 1e9:g} GB/s × "
              f"{g['nvlink_domain']}, network {g['network_bytes_per_s'] / 1e9:g} GB/s")  # fmt: skip
