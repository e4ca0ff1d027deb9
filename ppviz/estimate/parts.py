"""What every per-layer cost is built of, in 1D (``layer``) and 2D (``summa``) tensor parallelism:
the F/B/W passes, the roofline accumulator, the shape a cost depends on, attention's core and
the activation a layer keeps (Korthikanti et al. 2022 Table 2; the formulas are in ``layer``)."""

from __future__ import annotations

from dataclasses import dataclass

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


class Acc:
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
    """The tensor-core peak of ``precision``: FP16 and BF16 run at the same 16-bit rate on every
    preset (NVIDIA's datasheets list one figure for both; V100 has FP16 only), held in bf16_flops."""
    if precision == "fp8":
        if not gpu.fp8_flops:
            raise SpecError(f"{gpu.name} has no FP8 tensor cores: use precision bf16", field="precision")
        return gpu.fp8_flops
    return gpu.bf16_flops


def divisors(n: int) -> str:
    return ", ".join(str(d) for d in range(1, min(n, 64) + 1) if n % d == 0)


def attention_core(
    acc: Acc, core: Acc, tq: float, s: int, mbs: int, heads: float, d: int, kvd: float, flash: bool, drop: bool
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
