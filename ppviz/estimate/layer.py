"""Per-layer cost on one GPU for one microbatch: F, B and W times, FLOPs, activation and parameters.

- FLOPs (Narayanan et al. 2021, arXiv:2104.04473; Korthikanti et al. 2022, arXiv:2205.05198
  App. A): a layer's forward is its GEMMs, 2·M·K·N each (QKV, QKᵀ, attention·V, output projection,
  MLP), generalised to GQA (K and V of g heads), SwiGLU (three FFN matrices) and MoE (top-k
  experts per token, shared experts, router).
- Split backward (Qi et al., Zero Bubble PP, arXiv:2401.10241, Table 1): B holds every GEMM's
  input gradient and all of attention's backward (it has no weights); W holds the weight
  gradients. For a dense GPT layer F = sbh(24h + 4s), B = sbh(24h + 8s), W = 24sbh².
- Time: each op is a roofline, max(FLOPs / (peak × matmul efficiency), bytes / (HBM × HBM
  efficiency)) + one kernel overhead (the NERSC model's form). Elementwise ops (norms, bias +
  dropout + residual, activation, softmax) are bounded by the vector peak and HBM.
- TP communication (Megatron-LM; Korthikanti §4.2.2): without sequence parallel two all-reduces
  of s·b·h in F and two in B; with it two all-gathers and two reduce-scatters each way, and W
  gathers the two sequence-sharded GEMM inputs again (Megatron keeps only the shard). Serial
  unless ``tp_comm_overlap`` (below). CP all-gathers K and V in F and reduce-scatters their
  gradients in B (ring attention overlaps them with the attention kernel, so the larger of the
  two counts). An MoE layer adds its dispatch and combine all-to-all in F and in B.
- TP communication overlapped with the GEMMs (Megatron ``--tp-comm-overlap``, Transformer
  Engine's userbuffers; NeMo's "Communication Overlap" guide, and the ``ub_tp_comm_overlap_cfg``
  of NVIDIA's DGX Cloud recipes), sequence parallel only. With C one collective's serial time:
  * pipelined all-gather ("ring_exchange": QKV and FC1 forward, the output gradient before the
    proj and FC2 dgrad GEMMs): the GEMM runs in t chunks, one per rank's shard, the local one
    first, while the t−1 ring steps (C/(t−1) each) bring the next; exposed
    (t−1)·max(0, C/(t−1) − G/t) = max(0, C − (t−1)/t·G), G the GEMM's own time;
  * pipelined reduce-scatter ("pipeline", num_splits n = 4 in the recipes: proj and FC2
    forward): the GEMM runs in n chunks and each chunk's reduce-scatter (C/n) runs behind the
    next chunk's GEMM, exposing the last one (NeMo: it "exposes one reduce-scatter chunk");
    exposed C/n + (n−1)/n·max(0, C − G);
  * bulk (no data dependency; TE's ``ub_bulk_dgrad`` / ``ub_bulk_wgrad``): the QKV and FC1
    inputs' all-gather for their weight gradients runs behind their dgrad GEMMs, and the
    dgrad's reduce-scatter behind their wgrad GEMMs; exposed max(0, C − G_other). This needs B
    and W together: TE refuses userbuffers with a deferred weight gradient ("Delayed weight grad
    computation is not supported with Userbuffers"), so for the split-backward (zero-bubble)
    schedules those two collectives stay serial (``Shape.tp_bulk`` False).
  MoE MLPs, the embedding and the output layer keep their collectives serial (Megatron runs
  them outside TE's userbuffers). Not modelled: the extra kernel launches of the chunks, and the
  SMs the communication kernels take from the GEMMs.
  Each overlapped collective hides at most the GEMM it runs beside: every form above exposes at
  least C − G, so a collective several times longer than its GEMM hides only the GEMM's time
  (min(C, G) per pair). And the overlap exists only inside one NVLink domain: userbuffers
  exchange through CUDA IPC / multicast handles over NVLink, so TE's comm+GEMM overlap "is
  currently only possible with single-node tensor-parallelism" (TransformerEngine issue #1071);
  multi-node NVLink domains (NVL72) joined in TE 2.2 (PR #1470, "Support for TP across multi-node
  NVLINK"). A TP group that spans NVLink domains runs its collectives serially over the network
  tier (SC21's Figure 13 checks that cost, ``calibration_sc21``), and asking it to overlap is
  refused (``check_tp_overlap``).
- Recompute adds the recomputed forward to B: the whole layer (full) or the attention core
  (selective; with flash attention there is nothing left to recompute).
- Activation bytes (Korthikanti Table 2): attention 11sbh + 5as²b, MLP 19sbh, norms 4sbh with
  dropout; the parts replicated across TP (10sbh) are divided by t only with sequence parallel;
  selective recompute drops the s² terms, full keeps the layer input, flash attention has no s²
  terms, no dropout drops the 1-byte masks. GQA, SwiGLU and MoE count their own tensors alike.
"""

from __future__ import annotations

from functools import lru_cache

from . import comm, summa
from .parts import BF16, FP32, Acc, Part, Pass, Shape, activation_bytes, attention_core, divisors, peak_flops
from .specs import Gpu, Model, SpecError


def check(model: Model, shape: Shape) -> None:
    """Refuse layouts the layer cannot be split into, saying what to change."""
    if shape.tp2d is not None:
        return summa.check(model, shape)
    t, cp = shape.tp, shape.cp
    if model.heads % t:
        raise SpecError(
            f"tp {t} must divide the {model.heads} attention heads: use tp in {divisors(model.heads)}", field="tp"
        )
    if model.kv_heads % t:
        raise SpecError(
            f"tp {t} must divide the {model.kv_heads} KV heads: use tp in {divisors(model.kv_heads)}", field="tp"
        )
    if model.ffn % t or (model.moe and model.expert_ffn % t):
        raise SpecError(f"tp {t} must divide the FFN width {model.ffn}", field="tp")
    if model.vocab % t:
        raise SpecError(f"tp {t} must divide the vocabulary {model.vocab} (pad the vocabulary)", field="tp")
    if model.seq % cp:
        raise SpecError(f"cp {cp} must divide the sequence length {model.seq}", field="cp")
    if shape.sp and (shape.mbs * model.seq // cp) % t:
        raise SpecError(
            f"sequence parallel needs tp {t} to divide the tokens per microbatch (mbs·seq/cp)",
            field="sequence_parallel",
        )
    if model.moe and model.experts % shape.ep:
        raise SpecError(f"ep {shape.ep} must divide the {model.experts} experts", field="ep")
    if not model.moe and shape.ep > 1:
        raise SpecError(f"ep {shape.ep} needs an MoE model ({model.name} is dense): use ep 1", field="ep")
    if shape.ep > 1 and shape.dp % shape.ep:
        raise SpecError(f"ep {shape.ep} is carved out of dp {shape.dp} (Megatron): make ep divide dp", field="ep")


def tp_overlap_possible(tp: int, domain: int) -> bool:
    """Whether a TP group of ``tp`` ranks (Megatron's order: consecutive ranks) can overlap its
    collectives with the GEMMs: it needs tp > 1 and the whole group inside one NVLink domain of
    ``domain`` GPUs (Transformer Engine's userbuffers; see the module's docstring)."""
    return tp > 1 and comm.per_domain(tp, 1, domain) == tp


def check_tp_overlap(shape: Shape, gpu: Gpu) -> None:
    """Refuse TP overlap for a TP group that spans NVLink domains, saying what to change."""
    if shape.tp_overlap and shape.tp > 1 and not tp_overlap_possible(shape.tp, gpu.nvlink_domain):
        raise SpecError(
            f"tp_comm_overlap runs through Transformer Engine's userbuffers, inside one NVLink domain: tp "
            f"{shape.tp} spans domains of {gpu.nvlink_domain} GPUs, so its collectives cross the network "
            f"serially; drop tp_comm_overlap, or use tp ≤ {gpu.nvlink_domain}",
            field="tp_comm_overlap",
        )


@lru_cache(maxsize=4096)
def layer(model: Model, gpu: Gpu, shape: Shape, moe: bool) -> Part:
    """One transformer layer (dense, or MoE when ``moe``) on one GPU, one microbatch."""
    if shape.tp2d is not None:
        return summa.layer(model, gpu, shape)
    t, sp = shape.tp, shape.sp
    h, a, g, d, s = model.hidden, model.heads, model.kv_heads, model.d_head, model.seq
    T = shape.mbs * s / shape.cp  # tokens of one microbatch on this GPU's sequence shard
    at = a / t
    q, kv = a * d, g * d
    x = T * h  # residual-stream elements
    xe = x / t if sp else x  # elementwise ops run on the sequence shard under SP
    drop = model.dropout
    flash = model.flash_attention
    acc = Acc(gpu, peak_flops(gpu, shape.precision))
    core = Acc(gpu, peak_flops(gpu, shape.precision))  # attention core forward (for recompute)

    def norm():
        acc.elementwise(BF16 * 2 * xe, flops_per_byte=2.5)

    def residual():
        acc.elementwise(BF16 * 3 * xe + (xe if drop else 0), flops_per_byte=1.0)

    # attention
    norm()
    qkv = acc.gemm(T, h, (q + 2 * kv) / t)
    attention_core(acc, core, T, s, shape.mbs, at, d, kv / t, flash, drop)
    proj = acc.gemm(T, q / t, h)
    residual()
    pairs = [(qkv, proj)]  # (column-parallel, row-parallel) GEMMs whose TP collectives can overlap
    # MLP
    norm()
    glu = 2 if model.gated_mlp else 1
    if moe:
        k, fe = model.top_k, model.expert_ffn
        acc.gemm(T, h, model.experts)  # router (replicated over TP)
        acc.elementwise(BF16 * 4 * T * k * h)  # permute and un-permute the routed tokens
        acc.gemm(T * k, h, glu * fe / t)
        acc.elementwise(BF16 * (glu + 1) * T * k * fe / t)
        acc.gemm(T * k, fe / t, h)
        if model.shared_experts:
            fs = model.shared_experts * fe
            acc.gemm(T, h, glu * fs / t)
            acc.elementwise(BF16 * (glu + 1) * T * fs / t)
            acc.gemm(T, fs / t, h)
    else:
        fc1 = acc.gemm(T, h, glu * model.ffn / t)
        acc.elementwise(BF16 * (glu + 1) * T * model.ffn / t)
        fc2 = acc.gemm(T, model.ffn / t, h)
        pairs.append((fc1, fc2))
    residual()

    # communication
    dom = gpu.nvlink_domain
    tp_k = comm.per_domain(t, 1, dom)
    size = BF16 * x  # one full residual-stream tensor
    if t > 1 and shape.tp_overlap:
        f_s, b_s, w_s = tp_overlap_exposed_s(size, t, tp_k, gpu, pairs, shape.tp_bulk)
        acc.comm("f", f_s)
        acc.comm("b", b_s)
        acc.comm("w", w_s)
    elif t > 1:
        per = 2 * comm.all_gather_s(size, t, tp_k, gpu) if sp else comm.all_reduce_s(size, t, tp_k, gpu)
        acc.comm("f", 2 * per)
        acc.comm("b", 2 * per)
        if sp:  # Megatron keeps only the input shard and gathers it again for the weight gradients
            acc.comm("w", 2 * comm.all_gather_s(size, t, tp_k, gpu))
    if shape.cp > 1:
        cp_k = comm.per_domain(shape.cp, t, dom)
        kv_bytes = BF16 * 2 * shape.mbs * s * kv / t
        gather = comm.all_gather_s(kv_bytes, shape.cp, cp_k, gpu)
        core_f = core.passes()[0].s
        acc.comm("f", max(0.0, gather - core_f))  # ring attention hides it behind the kernel
        acc.comm("b", max(0.0, gather - 2 * core_f))
    if moe and shape.ep > 1:
        ep_k = comm.per_domain(shape.ep, t * shape.cp, dom)
        a2a = comm.all_to_all_s(BF16 * T * model.top_k * h / (t if sp else 1), shape.ep, ep_k, gpu)
        acc.comm("f", 2 * a2a, a2a=True)
        acc.comm("b", 2 * a2a, a2a=True)

    f, b, w = acc.passes()
    model_flops = f.flops + b.flops + w.flops
    if shape.recompute == "full":
        rec = f
    elif shape.recompute == "selective" and not flash:
        rec = core.passes()[0]
    else:
        rec = Pass()
    b = b + rec
    experts = expert_params(model, shape) if moe else 0.0
    return Part(f, b, w, rec, activation_bytes(model, shape, moe), params(model, shape, moe), experts, model_flops)


RS_SPLITS = 4  # chunks of the pipelined reduce-scatter (num_splits of proj_fprop and fc2_fprop in NVIDIA's recipes)


def ring_exchange_exposed_s(collective_s: float, gemm_s: float, t: int) -> float:
    """Exposed seconds of an all-gather pipelined with the GEMM that consumes it (TE's ring
    exchange): the GEMM runs in t chunks, the local shard first, while each of the t−1 ring steps
    (collective_s/(t−1) each) brings the next; only what a step exceeds its chunk shows:
    (t−1)·max(0, C/(t−1) − G/t) = max(0, C − (t−1)/t·G)."""
    if t <= 1:
        return 0.0
    return (t - 1) * max(0.0, collective_s / (t - 1) - gemm_s / t)


def chunked_rs_exposed_s(collective_s: float, gemm_s: float, n: int = RS_SPLITS) -> float:
    """Exposed seconds of a reduce-scatter pipelined after the GEMM that produces it, in n chunks
    (TE's "pipeline" method; NeMo: it "exposes one reduce-scatter chunk"): each chunk's
    reduce-scatter (C/n) runs behind the next chunk's GEMM (G/n) and the last one is exposed:
    C/n + (n−1)·max(0, C/n − G/n) = C/n + (n−1)/n·max(0, C − G), never more than C."""
    return collective_s / n + (n - 1) / n * max(0.0, collective_s - gemm_s)


def tp_overlap_exposed_s(size: float, t: int, k: int, gpu: Gpu, pairs, bulk: bool) -> tuple[float, float, float]:
    """Exposed TP seconds of one layer's F, B and W under sequence parallel with the collectives
    overlapped (Megatron --tp-comm-overlap): ``pairs`` holds each (column-parallel, row-parallel)
    GEMM pair's per-pass seconds (QKV and proj; FC1 and FC2 of a dense MLP); a layer's other
    sublayers (an MoE MLP) keep their all-gather and reduce-scatter serial. ``bulk``: B and W run
    together, so the column GEMMs' input all-gather hides behind their dgrad GEMM and their dgrad
    reduce-scatter behind their wgrad GEMM (TE's bulk overlap); otherwise both are serial."""
    c = comm.all_gather_s(size, t, k, gpu)  # one all-gather or reduce-scatter of the residual stream
    f = b = w = 0.0
    for col, row in pairs:
        f += ring_exchange_exposed_s(c, col["f"], t) + chunked_rs_exposed_s(c, row["f"])
        b += ring_exchange_exposed_s(c, row["b"], t)  # the output gradient gathered before the row dgrad
        b += max(0.0, c - col["w"]) if bulk else c  # the column dgrad's reduce-scatter
        w += max(0.0, c - col["b"]) if bulk else c  # the column input gathered again for its wgrad
    serial = 2 - len(pairs)  # sublayers without overlap (an MoE MLP)
    return f + serial * 2 * c, b + serial * 2 * c, w + serial * c


def expert_params(model: Model, shape: Shape) -> float:
    """Routed-expert parameters of one MoE layer on one GPU (experts/ep of them, each split by tp)."""
    glu = 3 if model.gated_mlp else 2
    return model.experts / shape.ep * glu * model.hidden * model.expert_ffn / shape.tp


def params(model: Model, shape: Shape, moe: bool) -> float:
    """Parameters of one layer held by one GPU (TP splits the matrices; norms are replicated)."""
    t = shape.tp
    h, d = model.hidden, model.d_head
    q, kv = model.heads * d, model.kv_heads * d
    glu = 3 if model.gated_mlp else 2
    n = (h * (q + 2 * kv) + q * h) / t
    norms = 2 * h * (2 if model.bias else 1)
    if model.bias:
        n += (q + 2 * kv) / t + 2 * h  # QKV bias split; output and FC2 biases replicated
    if moe:
        fe = model.expert_ffn
        n += expert_params(model, shape) + model.shared_experts * glu * h * fe / t + h * model.experts
    else:
        n += glu * h * model.ffn / t
        if model.bias:
            n += (glu - 1) * model.ffn / t
    return n + norms


@lru_cache(maxsize=1024)
def embedding(model: Model, gpu: Gpu, shape: Shape) -> Part:
    """The first stage's extra: the vocab-parallel embedding (and learned positions, dropout)."""
    if shape.tp2d is not None:
        return summa.embedding(model, gpu, shape)
    t, sp = shape.tp, shape.sp
    h = model.hidden
    T = shape.mbs * model.seq / shape.cp
    x = T * h
    acc = Acc(gpu, peak_flops(gpu, shape.precision))
    acc.elementwise(BF16 * 2 * x * (2 if model.learned_positions else 1), backward=0)
    acc.op("w", 0.0, (BF16 + 2 * FP32) * x, 0.0, tensor=False)  # scatter-add into the fp32 gradient
    if t > 1:
        tp_k = comm.per_domain(t, 1, gpu.nvlink_domain)
        size = BF16 * x
        acc.comm("f", comm.all_gather_s(size, t, tp_k, gpu) if sp else comm.all_reduce_s(size, t, tp_k, gpu))
        if sp:
            acc.comm("b", comm.all_gather_s(size, t, tp_k, gpu))
    f, b, w = acc.passes()
    n = model.vocab * h / t + (model.seq * h if model.learned_positions else 0)
    act = (x / t if sp else x) if model.dropout else 0.0  # Korthikanti §4.3: the dropout mask, sbh/t under SP
    return Part(f, b, w, Pass(), act, n, 0.0, 0.0)


@lru_cache(maxsize=1024)
def head(model: Model, gpu: Gpu, shape: Shape, own_weights: bool) -> Part:
    """The last stage's extra: final norm, the vocab-parallel output layer and the fp32 loss."""
    if shape.tp2d is not None:
        return summa.head(model, gpu, shape, own_weights)
    t, sp = shape.tp, shape.sp
    h, V = model.hidden, model.vocab
    T = shape.mbs * model.seq / shape.cp
    x = T * h
    xe = x / t if sp else x
    acc = Acc(gpu, peak_flops(gpu, shape.precision))
    acc.elementwise(BF16 * 2 * xe, flops_per_byte=2.5)
    acc.gemm(T, h, V / t)
    acc.elementwise(FP32 * 3 * T * V / t, flops_per_byte=1.0)  # upcast, softmax, loss (and their gradient)
    if t > 1:
        tp_k = comm.per_domain(t, 1, gpu.nvlink_domain)
        size = BF16 * x
        step = comm.all_gather_s(size, t, tp_k, gpu) if sp else comm.all_reduce_s(size, t, tp_k, gpu)
        acc.comm("f", (step if sp else 0.0) + 3 * comm.all_reduce_s(FP32 * T, t, tp_k, gpu))
        acc.comm("b", step)
    f, b, w = acc.passes()
    rec = Pass()  # Megatron does not recompute the output layer
    act = 4 * x / t + FP32 * T * V / t  # Korthikanti §4.3: 4sbh/t·(1 + V/h), logits in fp32
    n = (V * h / t if own_weights else 0) + h * (2 if model.bias else 1)
    return Part(f, b, w, rec, act, n, 0.0, f.flops + b.flops + w.flops)
