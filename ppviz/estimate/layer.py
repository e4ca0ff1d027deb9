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
- Recompute adds the recomputed forward to B: the whole layer (full) or the attention core
  (selective; with flash attention there is nothing left to recompute).
- Activation bytes (Korthikanti Table 2): attention 11sbh + 5as²b, MLP 19sbh, norms 4sbh with
  dropout; the parts replicated across TP (10sbh) are divided by t only with sequence parallel;
  selective recompute drops the s² terms, full keeps the layer input, flash attention has no s²
  terms, no dropout drops the 1-byte masks. GQA, SwiGLU and MoE count their own tensors alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from . import comm
from .specs import Gpu, Model, SpecError

BF16 = 2  # bytes per element of activations and weights
FP32 = 4
FLASH_CAUSAL = 0.5  # a causal flash-attention kernel skips the masked half of the score tiles
FLASH_BACKWARD = 2.5  # flash backward: 5 score-sized GEMMs (QKᵀ recomputed) against 2 forward


@dataclass(frozen=True)
class Pass:
    """One of F, B, W: seconds split into compute and communication, and the FLOPs it runs."""

    compute_s: float = 0.0
    comm_s: float = 0.0
    flops: float = 0.0
    a2a_s: float = 0.0  # the MoE all-to-all part of comm_s (what an overlapped F&B pair can hide)

    @property
    def s(self) -> float:
        return self.compute_s + self.comm_s

    def __add__(self, other: Pass) -> Pass:
        return Pass(self.compute_s + other.compute_s, self.comm_s + other.comm_s, self.flops + other.flops,
                    self.a2a_s + other.a2a_s)  # fmt: skip

    def scaled(self, k: float) -> Pass:
        return Pass(self.compute_s * k, self.comm_s * k, self.flops * k, self.a2a_s * k)


@dataclass(frozen=True)
class Part:
    """A layer, or the embedding or the head: F, B (recompute included) and W on one GPU."""

    f: Pass
    b: Pass
    w: Pass
    recompute: Pass  # already inside b
    activation_bytes: float  # kept from F until B/W, one microbatch
    params: float  # parameters held on one GPU
    expert_params: float  # of which routed-expert parameters (their data-parallel group is dp·cp/ep)
    model_flops: float  # F + B + W FLOPs without recompute (the model FLOPs of MFU)


@dataclass(frozen=True)
class Shape:
    """What a layer's cost depends on in a layout (the cache key)."""

    tp: int
    cp: int
    ep: int
    dp: int
    mbs: int
    sp: bool
    recompute: str
    precision: str
    tp2d: tuple[int, int] | None = None  # 2D (SUMMA) grid: hidden ways × sequence ways (tp = their product)
    blocks: int = 0  # SUMMA steps per matmul
    tp_overlap: bool = False  # TP collectives pipelined with their GEMMs (needs sp)
    tp_bulk: bool = False  # and the bulk overlaps across dgrad and wgrad (B and W run together)


class _Acc:
    """Accumulates ops into F, B and W passes."""

    def __init__(self, gpu: Gpu, peak: float):
        self.gpu = gpu
        self.peak = peak * gpu.matmul_efficiency
        self.bw = gpu.hbm_bytes_per_s * gpu.hbm_efficiency
        self.vec = gpu.vector_flops
        self.t = {k: [0.0, 0.0, 0.0, 0.0] for k in "fbw"}  # compute, comm, flops, all-to-all

    def gemm(self, m: float, k: float, n: float, passes: str = "fbw") -> dict[str, float]:
        """C[m,n] = A[m,k]·B[k,n]: F computes C, B the input gradient, W the weight gradient.
        Returns each pass's seconds of this GEMM."""
        if m <= 0 or k <= 0 or n <= 0:
            return dict.fromkeys("fbw", 0.0)
        flops = 2.0 * m * k * n
        io = {
            "f": BF16 * (m * k + k * n + m * n),
            "b": BF16 * (m * n + k * n + m * k),
            "w": BF16 * (m * k + m * n) + FP32 * k * n,
        }
        return {p: self.op(p, flops, io[p], flops, tensor=True) if p in passes else 0.0 for p in "fbw"}

    def batched(self, p: str, flops: float, nbytes: float, model_flops: float) -> None:
        self.op(p, flops, nbytes, model_flops, tensor=True)

    def elementwise(self, nbytes: float, flops_per_byte: float = 1.0, backward: float = 2.0) -> None:
        """An elementwise op of ``nbytes`` traffic in F; its gradient in B moves ``backward``× that."""
        self.op("f", nbytes * flops_per_byte, nbytes, 0.0, tensor=False)
        if backward:
            self.op("b", nbytes * flops_per_byte * backward, nbytes * backward, 0.0, tensor=False)

    def comm(self, p: str, seconds: float, a2a: bool = False) -> None:
        self.t[p][1] += seconds
        if a2a:
            self.t[p][3] += seconds

    def op(self, p: str, flops: float, nbytes: float, model_flops: float, tensor: bool) -> float:
        """One kernel in pass ``p``: a roofline of its FLOPs and bytes, plus the launch overhead (seconds)."""
        peak = self.peak if tensor else self.vec
        seconds = max(flops / peak, nbytes / self.bw) + self.gpu.kernel_overhead_s
        self.t[p][0] += seconds
        self.t[p][2] += model_flops
        return seconds

    def passes(self) -> tuple[Pass, Pass, Pass]:
        return tuple(Pass(*self.t[k]) for k in "fbw")  # type: ignore[return-value]


def peak_flops(gpu: Gpu, precision: str) -> float:
    if precision == "fp8":
        if not gpu.fp8_flops:
            raise SpecError(f"{gpu.name} has no FP8 tensor cores: use precision bf16", field="precision")
        return gpu.fp8_flops
    return gpu.bf16_flops


def check(model: Model, shape: Shape) -> None:
    """Refuse layouts the layer cannot be split into, saying what to change."""
    if shape.tp2d is not None:
        from . import summa

        return summa.check(model, shape)
    t, cp = shape.tp, shape.cp
    if model.heads % t:
        raise SpecError(
            f"tp {t} must divide the {model.heads} attention heads: use tp in {_divisors(model.heads)}", field="tp"
        )
    if model.kv_heads % t:
        raise SpecError(
            f"tp {t} must divide the {model.kv_heads} KV heads: use tp in {_divisors(model.kv_heads)}", field="tp"
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


def _divisors(n: int) -> str:
    return ", ".join(str(d) for d in range(1, min(n, 64) + 1) if n % d == 0)


@lru_cache(maxsize=4096)
def layer(model: Model, gpu: Gpu, shape: Shape, moe: bool) -> Part:
    """One transformer layer (dense, or MoE when ``moe``) on one GPU, one microbatch."""
    if shape.tp2d is not None:
        from . import summa

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
    acc = _Acc(gpu, peak_flops(gpu, shape.precision))
    core = _Acc(gpu, peak_flops(gpu, shape.precision))  # attention core forward (for recompute)

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


def attention_core(
    acc: _Acc, core: _Acc, tq: float, s: int, mbs: int, heads: float, d: int, kvd: float, flash: bool, drop: bool
) -> None:
    """Attention's core on one GPU: ``tq`` query tokens against the ``mbs·s`` key tokens of their
    sequences, ``heads`` local heads of width d, ``kvd`` local K (and V) width. F goes into both
    ``acc`` and ``core`` (what selective recompute reruns), the backward into ``acc``."""
    qd = heads * d
    z = tq * s * heads  # score elements
    score_flops = 2.0 * tq * s * d * heads
    for c in (acc, core):
        if flash:
            io = BF16 * tq * 2 * qd + BF16 * 2 * s * mbs * kvd
            c.batched("f", 2 * score_flops * FLASH_CAUSAL, io, 2 * score_flops)
        else:
            c.batched("f", score_flops, BF16 * (tq * qd + s * mbs * kvd + z), score_flops)
            c.elementwise(BF16 * 2 * z + ((BF16 * 2 + 1) * z if drop else 0), flops_per_byte=1.0, backward=0)
            c.batched("f", score_flops, BF16 * (z + s * mbs * kvd + tq * qd), score_flops)
    if flash:
        io = BF16 * tq * 4 * qd + BF16 * 4 * s * mbs * kvd
        acc.batched("b", 2 * score_flops * FLASH_CAUSAL * FLASH_BACKWARD, io, 4 * score_flops)
    else:
        io = BF16 * 3 * z + BF16 * 2 * (tq * qd + s * mbs * kvd)
        acc.batched("b", 2 * score_flops, io, 2 * score_flops)  # attention·V backward: dP and dV
        acc.op("b", 0.0, BF16 * 3 * z + ((BF16 * 2 + 1) * z if drop else 0), 0.0, tensor=False)  # softmax, dropout
        acc.batched("b", 2 * score_flops, io, 2 * score_flops)  # QKᵀ backward: dQ and dK


def activation_bytes(model: Model, shape: Shape, moe: bool) -> float:
    """Bytes one layer keeps from F to its backward, one microbatch, one GPU (Korthikanti Table 2)."""
    t, sp = shape.tp, shape.sp
    h, s, d = model.hidden, model.seq, model.d_head
    T = shape.mbs * s / shape.cp
    rep = t if sp else 1  # the replicated parts are split only by sequence parallel
    x = T * h
    if shape.recompute == "full":
        return BF16 * x / rep
    drop = 1 if model.dropout else 0
    q, kv = model.heads * d, model.kv_heads * d
    replicated = BF16 * 2 * x + BF16 * x + BF16 * x + drop * 2 * x  # 2 norm inputs, QKV input, MLP input, masks
    split = BF16 * T * (q + 2 * kv) + BF16 * T * q  # Q, K, V and the output projection's input
    glu = 2 if model.gated_mlp else 1
    if moe:
        k, fe = model.top_k, model.expert_ffn
        replicated += BF16 * T * k * h  # the routed copies of the tokens
        split += BF16 * (glu + 1) * T * k * fe
        split += BF16 * (glu + 1) * T * model.shared_experts * fe
    else:
        split += BF16 * (glu + 1) * T * model.ffn
    out = replicated / rep + split / t
    if not model.flash_attention and shape.recompute != "selective":
        z = T * s * model.heads  # s² terms: softmax output, and with dropout its mask and output
        out += (BF16 + drop * (1 + BF16)) * z / t
    return out


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
        from . import summa

        return summa.embedding(model, gpu, shape)
    t, sp = shape.tp, shape.sp
    h = model.hidden
    T = shape.mbs * model.seq / shape.cp
    x = T * h
    acc = _Acc(gpu, peak_flops(gpu, shape.precision))
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
        from . import summa

        return summa.head(model, gpu, shape, own_weights)
    t, sp = shape.tp, shape.sp
    h, V = model.hidden, model.vocab
    T = shape.mbs * model.seq / shape.cp
    x = T * h
    xe = x / t if sp else x
    acc = _Acc(gpu, peak_flops(gpu, shape.precision))
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
