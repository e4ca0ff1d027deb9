"""Per pipeline device, what it holds and runs besides its ops: its parameters, its static bytes
(weights, gradients, optimizer state, sharded by ZeRO), its optimizer step and its exposed DP
synchronisation.

They need the placement and the stage plan, not a simulation (the DP sync needs the device's
last and first op, which a simulation gives, or a bound on them), so an estimate and the search's
bounds are computed by these same functions. Bytes per parameter are Megatron's mixed precision
(theoretical_memory_usage.py): a bf16 weight, an fp32 main gradient and 12 bytes of fp32 master
weight and Adam moments.
"""

from __future__ import annotations

import numpy as np

from ..ir import Placement
from . import comm
from .specs import Gpu, Layout, Model

WEIGHT_B, GRAD_B, OPTIMIZER_B = 2, 4, 12  # bytes per parameter
ADAM_BYTES_PER_PARAM = 30  # read fp32 gradient, master, m, v; write master, m, v and the bf16 weight
ADAM_FLOPS_PER_PARAM = 12  # moments, bias corrections, sqrt, divide, weight decay, update


def held(placement: Placement, directions, per_stage: np.ndarray) -> np.ndarray:
    """Per device, ``per_stage`` summed over every stage it holds for a direction that carries
    microbatches (``directions`` as in ``Schedule.directions``; None: only the first)."""
    used = {0} if directions is None else set(directions)
    out = np.zeros(placement.devices)
    for dev, chunks in enumerate(placement.held()):
        out[dev] = sum(per_stage[s] for d, s in chunks if d in used)
    return out


def dp_groups(layout: Layout, gpu: Gpu) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """(size, rank stride, members per NVLink domain) of the data-parallel groups of the dense
    parameters (dp·cp, as Megatron shards them) and of the routed experts (dp·cp/ep). With an NVLink
    placement (``nvlink_dp_pp``) the domain holds the whole tp·cp group and that many dp ranks."""
    dom = gpu.nvlink_domain
    n_dense = layout.dp * layout.cp
    n_exp = max(1, n_dense // layout.ep)
    stride_exp = layout.tp * layout.cp * layout.ep
    if layout.nvlink_dp_pp is not None:
        k = comm.per_domain(layout.cp, layout.tp, dom) * layout.nvlink_dp_pp[0]
        return (n_dense, layout.tp, k), (n_exp, stride_exp, max(1, k // layout.ep))
    dense = (n_dense, layout.tp, comm.per_domain(n_dense, layout.tp, dom))
    return dense, (n_exp, stride_exp, comm.per_domain(n_exp, stride_exp, dom))


def pipeline_same_domain(layout: Layout, gpu: Gpu, a: int, b: int) -> bool:
    """Whether pipeline devices a and b share an NVLink domain (Megatron's order, or the placement's
    consecutive pp ranks per domain)."""
    per = layout.nvlink_dp_pp[1] if layout.nvlink_dp_pp is not None else 0
    return same_domain(a, b, layout.tp * layout.cp * layout.dp, gpu.nvlink_domain, per)


def same_domain(a: int, b: int, stride: int, domain: int, pp_per_domain: int) -> bool:
    """``pipeline_same_domain`` from the numbers it depends on (pipeline rank stride, domain size)."""
    if pp_per_domain:
        return a // pp_per_domain == b // pp_per_domain
    return comm.same_domain(a * stride, b * stride, domain)


def bytes_per_param(zero: int, shard: int) -> float:
    """Static bytes per parameter under ZeRO stage ``zero`` over a data-parallel group of ``shard`` ranks."""
    return (
        WEIGHT_B / (shard if zero >= 3 else 1)
        + GRAD_B / (shard if zero >= 2 else 1)
        + OPTIMIZER_B / (shard if zero >= 1 else 1)
    )


def sharded(
    layout: Layout, gpu: Gpu, params: np.ndarray, expert: np.ndarray, per_param: float, from_zero: int,
    zero: int | None = None,
) -> np.ndarray:  # fmt: skip
    """Per device: ``per_param`` bytes × its parameters (``expert`` of them routed experts), divided
    over their data-parallel group from ZeRO stage ``from_zero``. ``zero``: the ZeRO stage when not
    the layout's (here and below: the search bounds every stage of one layout)."""
    (nd, _, _), (ne, _, _) = dp_groups(layout, gpu)
    dense = params - expert
    if (layout.zero if zero is None else zero) >= from_zero:
        return per_param * (dense / nd + expert / ne)
    return per_param * (dense + expert)


def static_bytes(
    layout: Layout, gpu: Gpu, params: np.ndarray, expert: np.ndarray, versions: int, zero: int | None = None
) -> dict[str, np.ndarray]:
    """Per device, the bytes of its weights (one copy per weight version), gradients and optimizer state."""
    return {
        "weight": sharded(layout, gpu, params, expert, WEIGHT_B, 3, zero) * versions,
        "grad": sharded(layout, gpu, params, expert, GRAD_B, 2, zero),
        "optimizer": sharded(layout, gpu, params, expert, OPTIMIZER_B, 1, zero),
    }


def optimizer_s(
    layout: Layout, gpu: Gpu, params: np.ndarray, expert: np.ndarray, zero: int | None = None
) -> np.ndarray:
    """Per device, Adam over its share of the optimizer state: a roofline of its bytes at HBM
    bandwidth and its FLOPs at the vector peak (the bytes bound it on every preset)."""
    updated = sharded(layout, gpu, params, expert, 1.0, 1, zero)
    bytes_s = ADAM_BYTES_PER_PARAM * updated / (gpu.hbm_bytes_per_s * gpu.hbm_efficiency)
    return np.maximum(bytes_s, ADAM_FLOPS_PER_PARAM * updated / gpu.vector_flops)


def tied_sync_s(model: Model, gpu: Gpu, layout: Layout, placement: Placement) -> np.ndarray:
    """Per device: tied embeddings on two devices all-reduce their gradients between the two."""
    out = np.zeros(placement.devices)
    if not model.tied_embeddings:
        return out
    for row in placement.devices_of:
        a, b = row[0], row[-1]
        if a != b:
            same = pipeline_same_domain(layout, gpu, a, b)
            size = GRAD_B * model.vocab * model.hidden / layout.tp
            t = comm.all_reduce_s(size, 2, 2 if same else 1, gpu)
            out[a] = max(out[a], t)
            out[b] = max(out[b], t)
    return out


def dp_exposed_s(
    model: Model, gpu: Gpu, layout: Layout, placement: Placement, params: np.ndarray, expert: np.ndarray,
    last_op: np.ndarray, first_op: np.ndarray, zero: int | None = None,
) -> np.ndarray:  # fmt: skip
    """Per device, the DP synchronisation its last and first op do not hide: the gradient
    reduce-scatter (all-reduce without ZeRO) behind its last op, the distributed optimizer's
    parameter all-gather behind the next iteration's first op (both serial without ``dp_overlap``),
    and the tied embeddings' all-reduce. ZeRO-3 gathers and reduce-scatters inside the ops instead."""
    zero = layout.zero if zero is None else zero
    tied = tied_sync_s(model, gpu, layout, placement)
    if zero == 3:
        return tied
    dense = params - expert
    rs = np.zeros(len(dense))
    ag = np.zeros(len(dense))
    for (n, _, k), group in zip(dp_groups(layout, gpu), (dense, expert)):
        for d, q in enumerate(group):
            if zero >= 1:
                rs[d] += comm.reduce_scatter_s(GRAD_B * q, n, k, gpu)
                ag[d] += comm.all_gather_s(WEIGHT_B * q, n, k, gpu)
            else:
                rs[d] += comm.all_reduce_s(GRAD_B * q, n, k, gpu)
    if layout.dp_overlap:
        exposed = np.maximum(0.0, rs - last_op) + np.maximum(0.0, ag - first_op)
    else:
        exposed = rs + ag
    return exposed + tied
