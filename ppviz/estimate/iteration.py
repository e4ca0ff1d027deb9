"""The whole iteration: model + GPU + layout → per-stage F/B/W in seconds → the schedule simulated
exactly → + the exposed DP gradient synchronisation + the optimizer step → an Estimate.

- Stages: the schedule decides the stage count S (interleaved p·v, V-shape 2p, DualPipe p with two
  directions). Layers are split evenly over the S stages, or as ``layer_split`` / ``edge_fewer``
  say; stage 0 adds the embedding and stage S−1 the output layer and the loss.
- p2p per microbatch per boundary: latency + s·b·h·2/t bytes (Megatron's scatter/gather, or SP)
  on NVLink when the neighbouring stage's ranks share the domain, else on the network; the
  simulator adds each link's own latency (``Costs.link_p2p``).
- Memory: static bytes per parameter as Megatron keeps them (2 bf16 weight + 4 fp32 main gradient
  + 12 fp32 master weight and Adam moments = 18; Megatron's theoretical_memory_usage.py), ZeRO
  dividing the optimizer state (1, Megatron's distributed optimizer), then the gradients (2), then
  the weights (3) over the data-parallel group: dp·cp ranks, dp·cp/ep for routed experts. Weights
  count once per weight version (PipeDream-2BW) and per model chunk a device holds (DualPipe
  holds two). Activation: the simulated curve with each stage's real bytes, so the schedule's
  true in-flight count is used.
- DP sync (Megatron --overlap-grad-reduce / --overlap-param-gather): the gradient reduce-scatter
  (all-reduce without ZeRO) of each device's fp32 gradients over the dp·cp group (routed experts:
  dp·cp/ep) runs behind the device's last backward op; what exceeds it is exposed. The parameter
  all-gather of the distributed optimizer runs behind the next iteration's first forward op. The
  iteration ends when the last device has finished both.
- ZeRO-3 (Rajbhandari et al. 2020, arXiv:1910.02054 §5; DeepSpeed stage 3 and PyTorch FSDP):
  the weights live sharded, so every layer's bf16 parameters are all-gathered over the DP group
  before its forward and again before its backward (they are freed after use), and its fp32
  gradients are reduce-scattered after its weight gradient, every microbatch. Prefetch (DeepSpeed's
  and FSDP's, one layer ahead) runs a layer's gather behind the previous layer's op, so each layer
  of an op is charged max(0, gather − its own time in that op): F and B hide the gather, W the
  reduce-scatter. These collectives run on the DP group's tier and replace the end-of-iteration
  reduce-scatter and parameter all-gather. The gathered layer's transient full weights are not
  added to memory.
- Several iterations (``iterations`` k of gpipe, 1f1b, eager-1f1b and the 2BW schedules): between
  two iterations each device runs its exposed DP sync, then its optimizer step, as a simulated
  step after its last backward op (``Costs.optimizer_step``, ``ppviz.iterations``); the last
  iteration's sync and step follow the makespan as for one iteration. ``iteration_s`` is the
  average over the k iterations; the batch, FLOPs and throughput are per iteration.
- Optimizer: a roofline of Adam's 30 bytes per parameter updated (read fp32 gradient, master,
  m, v; write master, m, v and the bf16 weight) at HBM bandwidth and its ~12 FLOPs at the vector
  peak: memory-bound on every preset.
- FLOPs (MFU): Korthikanti et al. eq. 7, 72·B·L·s·h²·(1 + s/(6h) + V/(12hL)) for a dense GPT,
  generalised as Megatron's num_floating_point_operations (GQA, SwiGLU, MoE top-k): three times
  the forward GEMMs, attention counted in full. HFU adds the recomputed FLOPs.

``estimate`` is three public steps, each a plain record computed once: ``simulate_layout`` (the
Simulation: stages, costs, the run), ``totals`` (Totals: iteration time and peak bytes, all a
search ranks by) and ``complete`` (the Estimate: throughput, FLOPs, the fit, the breakdown). What a
device holds and runs besides its ops (static bytes, optimizer, DP sync) is ``devices``'s, which
the search's bounds call before simulating.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from functools import lru_cache

import numpy as np

from .. import api, memory, metrics, schedules, simulator
from ..costs import Costs
from ..ir import KIND_INDEX, Kind, Placement, Schedule
from ..iterations import iterations
from ..units import gib
from . import comm, devices, layer, profile
from .devices import GRAD_B, WEIGHT_B, dp_groups, same_domain
from .specs import Gpu, Layout, Model, SpecError
from .specs import gpu as gpu_preset
from .specs import model as model_preset

_F, _B, _W, _BW = (KIND_INDEX[k] for k in (Kind.F, Kind.B, Kind.W, Kind.BW))
FLOPS_DEFINITION = (
    "model FLOPs = 3 × the forward GEMM FLOPs (Korthikanti et al. 2022 eq. 7, generalised to GQA, SwiGLU and "
    "MoE top-k as in Megatron-LM's num_floating_point_operations; attention counted in full)"
)


@dataclass(frozen=True)
class StagePlan:
    """The cost of every stage of a schedule, in seconds for one microbatch."""

    layers: tuple[int, ...]
    f: tuple[float, ...]
    b: tuple[float, ...]
    w: tuple[float, ...]
    comm: np.ndarray  # [kind F/B/W, stage] seconds of TP/CP/EP communication inside the op
    activation_bytes: np.ndarray  # per stage, one microbatch (layers + embedding/head extras)
    layer_activation_bytes: np.ndarray  # per stage, transformer layers only (Korthikanti Figure 1)
    params: np.ndarray  # per stage, held by one GPU
    expert_params: np.ndarray  # per stage, the routed-expert part of params
    recompute_flops: float  # per microbatch, summed over all stages of one GPU column
    a2a: np.ndarray  # [kind F/B/W, stage] seconds of MoE all-to-all inside the op (part of comm)
    zero3: np.ndarray  # [kind F/B/W, stage] exposed seconds of ZeRO-3's gathers and reduce-scatters (not in comm)


def shape_of(layout: Layout) -> layer.Shape:
    """What a layer's cost depends on. With ``tp_comm_overlap`` the bulk overlaps (the dgrad
    reduce-scatter behind the wgrad GEMM, the input all-gather behind the dgrad GEMM) need B and W
    to run together: not under the split-backward (zero-bubble) schedules, whose W may be deferred
    (Transformer Engine refuses userbuffers with a deferred weight gradient)."""
    grid = layout.tp2d if layout.tp_mode == "2d" else None
    overlap = layout.tp_comm_overlap
    spec = schedules.REGISTRY.get(layout.schedule)
    bulk = overlap and not (spec is not None and spec.split_backward)
    return layer.Shape(layout.tp, layout.cp, layout.ep, layout.dp, layout.mbs, layout.sequence_parallel,
                       layout.recompute, layout.precision, grid, layout.blocks, overlap, bulk)  # fmt: skip


def resolve(model: Model | str, gpu: Gpu | str) -> tuple[Model, Gpu]:
    m = model_preset(model) if isinstance(model, str) else model
    g = gpu_preset(gpu) if isinstance(gpu, str) else gpu
    if not isinstance(m, Model) or not isinstance(g, Gpu):
        raise SpecError("estimate needs a Model (or model preset name) and a Gpu (or GPU preset name)", field="model")
    return m, g


def schedule_for(layout: Layout, uniform: Costs | None = None) -> Schedule:
    """Build the layout's schedule on pp devices with its microbatches (``vpp`` as its chunks)."""
    spec = schedules.get(layout.schedule)
    params = dict(layout.schedule_params)
    if spec.param("chunks") is not None:
        if "chunks" in params and params["chunks"] != layout.vpp and layout.vpp != 1:
            raise SpecError(
                f"give the chunks per device once: vpp {layout.vpp} or chunks {params['chunks']}", field="vpp"
            )
        params.setdefault("chunks", layout.vpp)
    elif layout.vpp not in (1, spec.chunks):
        raise SpecError(
            f"{spec.name} has {spec.chunks} chunk(s) per device; drop vpp {layout.vpp} or pick an interleaved schedule",
            field="vpp",
        )
    key = None if uniform is None else (uniform.f, uniform.b, uniform.w, uniform.p2p, uniform.b_frees)
    return _build(layout.schedule, layout.pp, layout.microbatches, tuple(sorted(params.items())), key)


@lru_cache(maxsize=256)
def _build(name: str, pp: int, m: int, params: tuple, costs_key: tuple | None) -> Schedule:
    """Schedules are plain data, so one built for a (name, pp, m, params) serves every estimate."""
    costs = None
    if costs_key is not None:
        f, b, w, p2p, b_frees = costs_key
        costs = Costs(f, b, w, p2p=p2p, b_frees=b_frees)
    return schedules.build(name, pp, m, costs=costs, **dict(params))


def split_layers(model: Model, layout: Layout, stages: int) -> tuple[int, ...]:
    """Layers per stage: explicit, even, or even with k fewer on the first and last stage."""
    L = model.layers
    if layout.layer_split is not None:
        split = layout.layer_split
        if len(split) != stages or sum(split) != L:
            raise SpecError(
                f"layer_split needs {stages} entries (the schedule's stages) summing to {L} layers "
                f"(got {len(split)} entries summing to {sum(split)})",
                field="layer_split",
            )
        return split
    k = layout.edge_fewer
    if stages == 1:
        if k:
            raise SpecError("edge_fewer needs more than one stage", field="edge_fewer")
        return (L,)
    if (L + 2 * k) % stages or (L + 2 * k) // stages - k < 0:
        hint = f"; edge_fewer {k} needs (layers + 2·{k}) divisible by {stages}" if k else ""
        raise SpecError(
            f"{L} layers do not split evenly into {stages} stages{hint}: give layer_split (layers per "
            f"stage) or edge_fewer, or change pp/vpp",
            field="layer_split",
        )
    n = (L + 2 * k) // stages
    return (n - k,) + (n,) * (stages - 2) + (n - k,)


def stage_plan(model: Model, gpu: Gpu, layout: Layout, stages: int, tied_shared: bool) -> StagePlan:
    shape = shape_of(layout)
    split = split_layers(model, layout, stages)
    return _stage_plan(model, gpu, shape, split, tied_shared, zero3_groups(layout, gpu))


def check_nvlink(layout: Layout, gpu: Gpu) -> None:
    """An NVLink placement must fit in one domain: tp·cp·(dp ranks)·(pp ranks) GPUs at most."""
    if layout.nvlink_dp_pp is None:
        return
    a, b = layout.nvlink_dp_pp
    n = layout.tp * layout.cp * a * b
    if a * b > 1 and n > gpu.nvlink_domain:
        raise SpecError(
            f"nvlink_dp_pp {a},{b} puts tp·cp·{a}·{b} = {n} GPUs in one NVLink domain of {gpu.nvlink_domain}: "
            "lower the dp or pp ranks in it",
            field="nvlink_dp_pp",
        )


def zero3_groups(layout: Layout, gpu: Gpu) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """(size, members per domain) of the dense and expert DP groups when ZeRO-3 gathers per layer."""
    if layout.zero != 3:
        return None
    (nd, _, kd), (ne, _, ke) = dp_groups(layout, gpu)
    return (nd, kd), (ne, ke)


def zero3_exposed(part: layer.Part, gpu: Gpu, groups) -> tuple[float, float, float]:
    """Seconds ZeRO-3 adds to one layer's F, B and W: its bf16 parameter all-gather (before F and
    again before B) and its fp32 gradient reduce-scatter (after W), each prefetched behind the
    layer's own time in that op, so only the excess is exposed."""
    (nd, kd), (ne, ke) = groups
    dense, expert = part.params - part.expert_params, part.expert_params
    gather = comm.all_gather_s(WEIGHT_B * dense, nd, kd, gpu) + comm.all_gather_s(WEIGHT_B * expert, ne, ke, gpu)
    scatter = comm.reduce_scatter_s(GRAD_B * dense, nd, kd, gpu) + comm.reduce_scatter_s(GRAD_B * expert, ne, ke, gpu)
    return max(0.0, gather - part.f.s), max(0.0, gather - part.b.s), max(0.0, scatter - part.w.s)


@lru_cache(maxsize=512)
def _stage_plan(
    model: Model, gpu: Gpu, shape: layer.Shape, split: tuple[int, ...], tied_shared: bool, zero3=None
) -> StagePlan:
    # per stage, its dense and MoE layer counts, plus the embedding on stage 0 and the head on the last:
    # each column below is added in that order, so every figure is the per-stage sum k·part, term by term
    S = len(split)
    dense = layer.layer(model, gpu, shape, False)
    moe = layer.layer(model, gpu, shape, True) if model.moe else dense
    emb = layer.embedding(model, gpu, shape)
    hd = layer.head(model, gpu, shape, own_weights=not (model.tied_embeddings and tied_shared))
    n = np.asarray(split, dtype=float)
    ends = np.cumsum(split)
    n_moe = np.maximum(0, ends - np.maximum(ends - n, model.dense_layers)) if model.moe else np.zeros(S)
    first, last = np.zeros(S), np.zeros(S)
    first[0], last[-1] = 1.0, 1.0
    columns = [(dense, n - n_moe), (moe, n_moe), (emb, first), (hd, last)]
    f, b, w = np.zeros(S), np.zeros(S), np.zeros(S)
    cm, a2a, z3 = np.zeros((3, S)), np.zeros((3, S)), np.zeros((3, S))
    act, par, epar = np.zeros(S), np.zeros(S), np.zeros(S)
    for p, k in columns:
        if not k.any():
            continue
        ef, eb, ew = zero3_exposed(p, gpu, zero3) if zero3 is not None else (0.0, 0.0, 0.0)
        z3 += np.outer((ef, eb, ew), k)
        f += k * (p.f.s + ef)
        b += k * (p.b.s + eb)
        w += k * (p.w.s + ew)
        cm += np.outer((p.f.comm_s, p.b.comm_s, p.w.comm_s), k)
        a2a += np.outer((p.f.a2a_s, p.b.a2a_s, p.w.a2a_s), k)
        act += k * p.activation_bytes
        par += k * p.params
        epar += k * p.expert_params
    lact = (n - n_moe) * dense.activation_bytes + n_moe * moe.activation_bytes
    return StagePlan(
        tuple(split), tuple(f.tolist()), tuple(b.tolist()), tuple(w.tolist()), cm, act, lact, par, epar,
        _recompute_flops(columns), a2a, z3,
    )  # fmt: skip


def _recompute_flops(columns) -> float:
    """Recomputed FLOPs per microbatch over every stage, summed stage by stage (parts in column order)."""
    total = 0.0
    for s in range(len(columns[0][1])):
        for p, k in columns:
            if k[s]:
                total += int(k[s]) * p.recompute.flops
    return total


def p2p_links(model: Model, gpu: Gpu, layout: Layout, devices: int) -> tuple[tuple[float, ...], ...]:
    """Seconds to send one microbatch's activation (or its gradient) from each pipeline device to
    each other: on NVLink when their ranks share a domain, else on the network (0 to itself)."""
    per = layout.nvlink_dp_pp[1] if layout.nvlink_dp_pp is not None else 0
    return _links(model.seq, model.hidden, gpu, layout.mbs, layout.tp, layout.cp, layout.dp, devices, per)


@lru_cache(maxsize=256)
def _links(seq: int, hidden: int, gpu: Gpu, mbs: int, tp: int, cp: int, dp: int, devices: int, pp_per_domain: int = 0):
    size = layer.BF16 * mbs * seq / cp * hidden / tp
    inside, outside = comm.p2p_s(size, True, gpu), comm.p2p_s(size, False, gpu)
    same = [[same_domain(a, b, tp * cp * dp, gpu.nvlink_domain, pp_per_domain) for b in range(devices)]
            for a in range(devices)]  # fmt: skip
    return tuple(
        tuple(0.0 if a == b else inside if same[a][b] else outside for b in range(devices)) for a in range(devices)
    )


def boundary_p2p(links, placement: Placement) -> list[float]:
    """Per cross-device stage boundary, in every direction, its transfer time."""
    return [links[a][b] for row in placement.devices_of for a, b in zip(row, row[1:]) if a != b]


def p2p_seconds(model: Model, gpu: Gpu, layout: Layout, placement: Placement) -> float:
    """The fastest cross-device boundary's transfer of one microbatch: every dependency that crosses
    devices waits at least this long (a bound for searches; the simulation times each link)."""
    return min(boundary_p2p(p2p_links(model, gpu, layout, placement.devices), placement), default=0.0)


def pair_overlap(plan: StagePlan) -> float:
    """Time factor of an overlapped F&B pair when each op's MoE all-to-all runs behind the other's
    compute (DualPipe, DeepSeek-V3 §3.2.1): per stage, hidden = min(a2a_F, compute_B) +
    min(a2a_B, compute_F), factor = 1 − hidden / (F + B + W); the largest over the stages (the
    one that hides least), so no pair is charged less than its own stage allows."""
    f, b, w = (np.asarray(x) for x in (plan.f, plan.b, plan.w))
    comp_f, comp_b = f - plan.comm[0], b - plan.comm[1]
    hidden = np.minimum(plan.a2a[0], comp_b) + np.minimum(plan.a2a[1], comp_f)
    total = f + b + w
    factor = np.where(total > 0, 1.0 - hidden / np.where(total > 0, total, 1.0), 1.0)
    return float(min(1.0, max(factor.max(), 1e-3)))


def _uniform_costs(model: Model, gpu: Gpu, layout: Layout) -> Costs:
    """Per-device-share times for schedules that search their order under the op times."""
    plan = _stage_plan(model, gpu, shape_of(layout), (model.layers,), False, zero3_groups(layout, gpu))
    p = layout.pp
    return Costs(plan.f[0] / p, plan.b[0] / p, plan.w[0] / p, p2p=0.0, b_frees=layout.b_frees)


def estimate(
    model: Model | str,
    gpu: Gpu | str,
    layout: Layout,
    *,
    schedule: Schedule | None = None,
    run: api.Run | None = None,
    calibration: profile.Profile | str | None = None,
) -> Estimate:
    """Estimate one training iteration of ``model`` on ``gpu`` GPUs laid out as ``layout``.

    ``calibration``: a ``profile.Profile`` or the path of a profile file (``ppviz calibrate``),
    whose efficiencies replace the GPU's (it must be the GPU the profile was fitted on).

    Pass ``schedule`` (built for this layout's pp and microbatches) to reuse it, and ``run`` (that
    schedule already simulated) to reuse the simulation: it is used only when its costs equal this
    layout's, e.g. for layouts that differ only in ZeRO stage (the search). Raises ValueError
    with a message saying what to change when the inputs do not fit together.
    """
    if calibration is not None:
        model, gpu = resolve(model, gpu)
        gpu = profile.calibrated(gpu, calibration)
    return complete(totals(simulate_layout(model, gpu, layout, schedule=schedule, run=run)))


@dataclass(frozen=True, eq=False)
class Simulation:
    """A layout's schedule simulated under its real costs: what every figure of an estimate is computed from."""

    model: Model
    gpu: Gpu
    layout: Layout
    run: api.Run  # times in seconds
    costs: Costs
    plan: StagePlan
    p2p_s: float  # the slowest stage boundary's transfer


def simulate_layout(
    model: Model | str, gpu: Gpu | str, layout: Layout, *, schedule: Schedule | None = None, run: api.Run | None = None
) -> Simulation:
    """The first step of ``estimate`` (same arguments): the layout checked, its stages costed in
    seconds, its schedule built and simulated, with the optimizer steps between iterations."""
    model, gpu = resolve(model, gpu)
    if not isinstance(layout, Layout):
        raise SpecError("layout must be a ppviz.Layout", field="layout")
    m = layout.microbatches
    shape = shape_of(layout)
    layer.check(model, shape)
    layer.check_tp_overlap(shape, gpu)
    check_nvlink(layout, gpu)
    if schedule is None:
        spec = schedules.get(layout.schedule)
        uniform = _uniform_costs(model, gpu, layout) if spec.uses_costs else None
        schedule = schedule_for(layout, uniform)
    elif schedule.devices != layout.pp or schedule.microbatches != m * iterations(schedule)[0]:
        raise SpecError(
            f"the given schedule has {schedule.devices} devices and {schedule.microbatches} microbatches; "
            f"the layout needs pp {layout.pp} and {m} per iteration",
            field="pp",
        )
    pl = schedule.placement
    tied_shared = any(row[0] == row[-1] for row in pl.devices_of)
    plan = stage_plan(model, gpu, layout, schedule.stages, tied_shared)
    links = p2p_links(model, gpu, layout, schedule.devices)
    p2p = max(boundary_p2p(links, pl), default=0.0)
    overlap = pair_overlap(plan) if layout.pair_overlap else 1.0
    costs = Costs(p2p=p2p, overlap=overlap, b_frees=layout.b_frees, link_p2p=links if p2p else (),
                  exact_stage_times=tuple(zip(plan.f, plan.b, plan.w)))  # fmt: skip
    if iterations(schedule)[0] > 1:  # the steps between iterations come from the run without them
        params, expert = params_per_device(plan, schedule)
        _, _, last_op, first_op = device_times(api.evaluate(schedule, costs))
        steps = devices.dp_exposed_s(model, gpu, layout, pl, params, expert, last_op, first_op)
        steps = steps + devices.optimizer_s(layout, gpu, params, expert)
        costs = replace(costs, optimizer_step=tuple(steps.tolist()))
    if run is None or run.schedule is not schedule or run.costs != costs:
        run = api.evaluate(schedule, costs)
    return Simulation(model, gpu, layout, run, costs, plan, p2p)


def params_per_device(plan: StagePlan, schedule: Schedule) -> tuple[np.ndarray, np.ndarray]:
    """Per device, the parameters of every stage it holds for a direction that carries
    microbatches, and the routed-expert part of them."""
    pl, used = schedule.placement, schedule.directions
    return devices.held(pl, used, plan.params), devices.held(pl, used, plan.expert_params)


def device_times(run: api.Run) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per device of a simulated run: first start, last end, last op's duration, first op's duration."""
    r = run.result
    p = run.schedule.devices
    first = np.full(p, np.inf)
    last = np.full(p, -np.inf)
    np.minimum.at(first, r.slot_device, r.slot_start)
    np.maximum.at(last, r.slot_device, r.slot_end)
    dur = r.slot_end - r.slot_start
    bounds = np.searchsorted(r.slot_device, np.arange(p + 1))
    last_op = np.array([dur[bounds[d + 1] - 1] if bounds[d + 1] > bounds[d] else 0.0 for d in range(p)])
    first_op = np.array([dur[bounds[d]] if bounds[d + 1] > bounds[d] else 0.0 for d in range(p)])
    return first, last, last_op, first_op


@dataclass(frozen=True, eq=False)
class Totals(Simulation):
    """A simulation's iteration time and each device's peak bytes (what ranks a layout), with the
    figures they are made of."""

    iterations: int  # the run holds (the schedule's ``iterations``, else 1)
    makespan_s: float
    dp_exposed_s: np.ndarray  # per device, the DP synchronisation its ops do not hide
    dp_sync_s: float  # exposed DP synchronisation: how much later than the makespan the last device is done
    optimizer_device_s: np.ndarray  # per device, Adam over its share of the optimizer state
    optimizer_s: float  # the optimizer step after the run: the slowest device's
    optimizer_step_s: np.ndarray  # per device, its work between two iterations: exposed DP sync, then its step
    run_s: float  # all the run's iterations: the makespan (with the steps between them), the last sync and step
    iteration_s: float  # one iteration on average: run_s / iterations
    params_per_device: np.ndarray  # every stage a device holds for a direction that carries microbatches
    expert_params_per_device: np.ndarray  # the routed-expert part of params_per_device
    static_bytes: dict[str, np.ndarray]  # per device: "weight", "grad", "optimizer"
    activation: memory.MemoryCurves  # activation bytes over time (seconds) per device, every stage at its size
    peak_bytes: np.ndarray  # per device, static bytes + its activation peak


def totals(sim: Simulation) -> Totals:
    """The second step of ``estimate``: time and memory of a simulation (all a search ranks by)."""
    lay, gpu, sched = sim.layout, sim.gpu, sim.run.schedule
    k = iterations(sched)[0]
    makespan = sim.run.metrics.makespan
    first, last, last_op, first_op = device_times(sim.run)
    params, expert = params_per_device(sim.plan, sched)
    exposed = devices.dp_exposed_s(sim.model, gpu, lay, sched.placement, params, expert, last_op, first_op)
    start = float(first[np.isfinite(first)].min())
    done = np.where(np.isfinite(last), last, start) + exposed
    dp_sync = max(0.0, float(done.max()) - start - makespan)
    opt = devices.optimizer_s(lay, gpu, params, expert)
    optimizer = float(opt.max())
    run_s = makespan + dp_sync + optimizer
    static = devices.static_bytes(lay, gpu, params, expert, sched.param_versions)
    activation = memory.activation(sim.run.result, sim.plan.activation_bytes)
    peak = static["weight"] + static["grad"] + static["optimizer"] + activation.peak
    return Totals(**_fields(sim, Simulation), iterations=k, makespan_s=makespan, dp_exposed_s=exposed,
                  dp_sync_s=dp_sync, optimizer_device_s=opt, optimizer_s=optimizer, optimizer_step_s=exposed + opt,
                  run_s=run_s, iteration_s=run_s / k, params_per_device=params, expert_params_per_device=expert,
                  static_bytes=static, activation=activation, peak_bytes=peak)  # fmt: skip


def _fields(record, cls) -> dict:
    return {f.name: getattr(record, f.name) for f in fields(cls)}


@dataclass(frozen=True, eq=False)
class Estimate(Totals):
    """One estimated iteration, every figure computed once by ``estimate``: the simulated Run (times
    in seconds) and its Costs, time, throughput, FLOPs, memory and the breakdown."""

    microbatches: int  # per iteration (the run holds ``iterations`` times as many)
    global_batch: int
    tokens_per_s: float
    samples_per_s: float
    model_flops: float  # of one iteration by the definition in FLOPS_DEFINITION (whole cluster)
    hardware_flops: float  # model FLOPs plus the recomputed ones
    peak_flops: float
    tflops_per_gpu: float
    mfu: float
    hfu: float
    layer_activation: memory.MemoryCurves  # the transformer layers alone (what Korthikanti's Figure 1 counts)
    bytes_per_param: float  # static bytes per dense parameter (routed experts shard over dp·cp/ep instead)
    capacity_bytes: float  # the card's HBM
    reserve_bytes: float  # what a run cannot use of it (the Gpu's reserve)
    usable_bytes: float  # capacity − reserve: what every device's peak must stay within
    fits: bool
    over_bytes: float  # how far the fullest device is over the usable bytes (0 when it fits)
    verdict: str  # "fits: peak 64.10 GiB of 76.65 GiB usable …" or "does not fit by 3.60 GiB (device 0: …)"
    breakdown: dict[str, float]  # seconds of the iteration on its busiest device (see ``breakdown``)

    # --- the CLI contract -------------------------------------------------------------------

    def layer_times_s(self) -> layer.Part:
        """One transformer layer's F, B and W (the model's MoE layer when it has them)."""
        return layer.layer(self.model, self.gpu, shape_of(self.layout), self.model.moe)

    @property
    def fullest_device(self) -> int:
        return int(np.argmax(self.peak_bytes))

    def memory_breakdown(self, device: int | None = None) -> dict[str, float]:
        """Bytes of one device (default: the fullest) by what holds them, and the reserve: they sum to
        its peak plus the reserve, to compare with the capacity."""
        d = self.fullest_device if device is None else device
        st = self.static_bytes
        return {
            "weights": float(st["weight"][d]),
            "gradients": float(st["grad"][d]),
            "optimizer": float(st["optimizer"][d]),
            "activations": float(self.activation.peak[d]),
            "reserve": self.reserve_bytes,
        }

    def to_dict(self, ops: bool = True) -> dict:
        """The `ppviz estimate --json` contract: seconds and bytes (layer and stage times in ms)."""
        lp = self.layer_times_s()
        plan = self.plan
        st = self.static_bytes
        run = self.run.to_dict() if ops else self.run.summary()
        return {
            "model": _spec_dict(self.model),
            "gpu": _spec_dict(self.gpu),
            "layout": _spec_dict(self.layout),
            "iteration_s": self.iteration_s,
            "iterations": self.iterations,
            "run_s": self.run_s,
            "makespan_s": self.makespan_s,
            "tokens_per_s": self.tokens_per_s,
            "samples_per_s": self.samples_per_s,
            "tflops_per_gpu": self.tflops_per_gpu,
            "mfu": self.mfu,
            "hfu": self.hfu,
            "flops_definition": FLOPS_DEFINITION,
            "model_flops": self.model_flops,
            "microbatches": self.microbatches,
            "stages": self.run.schedule.stages,
            "gpus": self.layout.gpus,
            "layer_ms": {"f": lp.f.s * 1e3, "b": lp.b.s * 1e3, "w": lp.w.s * 1e3},
            "stage_ms": [
                {"stage": s, "layers": plan.layers[s], "f": plan.f[s] * 1e3, "b": plan.b[s] * 1e3, "w": plan.w[s] * 1e3}
                for s in range(len(plan.layers))
            ],
            "p2p_ms": self.p2p_s * 1e3,
            "p2p_boundary_ms": [x * 1e3 for x in boundary_p2p(self.costs.link_p2p, self.run.schedule.placement)]
            if self.costs.link_p2p
            else [],
            "dp_sync_s": self.dp_sync_s,
            "optimizer_s": self.optimizer_s,
            "optimizer_step_s": self.optimizer_step_s.tolist() if self.iterations > 1 else [],
            "breakdown_s": self.breakdown,
            "activation_bytes_per_layer": lp.activation_bytes,
            "params_per_layer": lp.params,
            "bytes_per_param": self.bytes_per_param,
            "weight_bytes": st["weight"].tolist(),
            "grad_bytes": st["grad"].tolist(),
            "optimizer_bytes": st["optimizer"].tolist(),
            "peak_activation_bytes": self.activation.peak.tolist(),
            "peak_bytes": self.peak_bytes.tolist(),
            "capacity_bytes": self.capacity_bytes,
            "reserve_bytes": self.reserve_bytes,
            "usable_bytes": self.usable_bytes,
            "memory_breakdown_bytes": self.memory_breakdown(),
            "fits": self.fits,
            "over_bytes": self.over_bytes,
            "verdict": self.verdict,
            "run": run,
        }


def complete(t: Totals) -> Estimate:
    """The last step of ``estimate``: throughput, FLOPs, the fit and the breakdown of a simulation's totals."""
    lay, gpu, model = t.layout, t.gpu, t.model
    m = t.run.schedule.microbatches // t.iterations
    gbs = m * lay.dp * lay.mbs
    shape = shape_of(lay)
    dense = layer.layer(model, gpu, shape, False)
    moe = layer.layer(model, gpu, shape, True) if model.moe else dense
    n_moe = sum(1 for i in range(model.layers) if model.is_moe_layer(i))
    hd = layer.head(model, gpu, shape, True)
    per_mb_gpu = (model.layers - n_moe) * dense.model_flops + n_moe * moe.model_flops + hd.model_flops
    model_flops = per_mb_gpu * lay.tp * lay.cp * m * lay.dp
    hardware_flops = model_flops + t.plan.recompute_flops * lay.tp * lay.cp * m * lay.dp
    peak_flops = layer.peak_flops(gpu, lay.precision)
    n = lay.dp * lay.cp
    usable = gpu.usable_bytes
    fullest = float(t.peak_bytes.max())
    return Estimate(
        **_fields(t, Totals), microbatches=m, global_batch=gbs, tokens_per_s=gbs * model.seq / t.iteration_s,
        samples_per_s=gbs / t.iteration_s, model_flops=model_flops, hardware_flops=hardware_flops,
        peak_flops=peak_flops, tflops_per_gpu=model_flops / t.iteration_s / lay.gpus / 1e12,
        mfu=model_flops / (t.iteration_s * lay.gpus * peak_flops),
        hfu=hardware_flops / (t.iteration_s * lay.gpus * peak_flops),
        layer_activation=memory.activation(t.run.result, t.plan.layer_activation_bytes),
        bytes_per_param=devices.bytes_per_param(lay.zero, n), capacity_bytes=gpu.hbm_bytes,
        reserve_bytes=gpu.reserve_bytes, usable_bytes=usable, fits=fits(fullest, gpu),
        over_bytes=max(0.0, fullest - usable), verdict=verdict(t.peak_bytes, gpu), breakdown=breakdown(t),
    )  # fmt: skip


def fits(peak_bytes: float, gpu: Gpu) -> bool:
    """The fit rule of every surface: a device's peak within the HBM less the reserve."""
    return peak_bytes <= gpu.usable_bytes


def verdict(peak_bytes: np.ndarray, gpu: Gpu) -> str:
    """One line for people, in GiB: "fits: peak 64.10 GiB of 76.65 GiB usable (…)" or "does not fit by …"."""
    d = int(np.argmax(peak_bytes))
    peak = float(peak_bytes[d])
    usable = gpu.usable_bytes
    of = f"{gib(usable)} usable = {gib(gpu.hbm_bytes)} HBM − {gib(gpu.reserve_bytes)} reserve"
    if fits(peak, gpu):
        return f"fits: peak {gib(peak)} of {of} (device {d}, {gib(usable - peak)} free)"
    return f"does not fit by {gib(peak - usable)} (device {d}: peak {gib(peak)} of {of})"


def breakdown(t: Totals) -> dict[str, float]:
    """Seconds of the iteration on its busiest device: compute, TP/CP/EP communication, ZeRO-3's
    exposed per-layer gathers and reduce-scatters, p2p waits, the rest of the pipeline bubble,
    exposed DP sync, optimizer. They sum to iteration_s; over k iterations each is the average
    (the busiest device's k − 1 steps between iterations, and the last one after the run)."""
    r = t.run.result
    sched = t.run.schedule
    p = sched.devices
    comm_of = np.zeros((4, sched.stages))
    comm_of[_F], comm_of[_B], comm_of[_W] = t.plan.comm
    comm_of[_BW] = t.plan.comm[1] + t.plan.comm[2]
    dur = np.asarray(t.costs.durations(sched.stages, p))
    factor = np.where(r.paired, t.costs.overlap, 1.0)
    busy = np.bincount(r.device, weights=dur[r.kind, r.stage] * factor, minlength=p)
    comm_busy = np.bincount(r.device, weights=comm_of[r.kind, r.stage] * factor, minlength=p)
    z3_of = np.zeros((4, sched.stages))
    z3_of[_F], z3_of[_B], z3_of[_W] = t.plan.zero3
    z3_of[_BW] = t.plan.zero3[1] + t.plan.zero3[2]
    z3_busy = np.bincount(r.device, weights=z3_of[r.kind, r.stage] * factor, minlength=p)
    d = int(np.argmax(busy))
    no_p2p = _makespan_without_p2p(sched, t.costs) if t.p2p_s else None
    p2p_wait = max(0.0, t.makespan_s - no_p2p) if no_p2p is not None else 0.0
    k = t.iterations
    between = k - 1 if any(t.costs.optimizer_step) else 0  # steps inside the makespan, per device
    dp_between = between * float(t.dp_exposed_s[d])
    opt_between = between * float(t.optimizer_device_s[d])
    bubble = max(0.0, t.makespan_s - float(busy[d]) - p2p_wait - dp_between - opt_between)
    return {
        "compute_s": float(busy[d] - comm_busy[d] - z3_busy[d]) / k,
        "tp_comm_s": float(comm_busy[d]) / k,
        "zero3_comm_s": float(z3_busy[d]) / k,
        "p2p_s": p2p_wait / k,
        "bubble_s": bubble / k,
        "dp_sync_s": (dp_between + t.dp_sync_s) / k,
        "optimizer_s": (opt_between + t.optimizer_s) / k,
    }


def _without_p2p(costs: Costs) -> Costs:
    return replace(costs, p2p=0.0, link_p2p=())


def _makespan_without_p2p(schedule: Schedule, costs: Costs) -> float:
    """The makespan were p2p free (the breakdown's p2p wait is what p2p adds to it): simulated only,
    not measured, as the memory curves were half of that second evaluation's time."""
    return metrics.makespan_of(simulator.simulate(schedule, _without_p2p(costs)))


def _spec_dict(spec) -> dict:
    out = {}
    for k, v in spec.__dict__.items():
        if isinstance(v, tuple):
            v = dict(v) if k == "schedule_params" else list(v)
        out[k] = v
    return out


def layout_from(mapping: Mapping) -> Layout:
    """A Layout from a plain mapping (JSON, URL state); unknown keys are refused."""
    known = set(Layout.__dataclass_fields__)
    unknown = sorted(set(mapping) - known)
    if unknown:
        raise SpecError(f"Layout has no field {', '.join(unknown)}", field=unknown[0])
    return Layout(**mapping)
