"""2D tensor parallelism: SUMMA over hidden × sequence (``Layout(tp_mode="2d", tp2d=(R, C))``).

The tp = R·C GPUs of a tensor-parallel group form an R × C grid, as in NERSC's transformer
performance model (Subramanian et al. 2024, "Comprehensive Performance Modeling and System Design
Insights for Foundation Models"; its tensor-parallel mode "2D", seed 003): every activation
[tokens, width] is split tokens over C and width over R, every weight [K, N] is split K over C and
N over R. A matmul Y = X·W runs SUMMA (van de Geijn & Watts 1997, "SUMMA: scalable universal
matrix multiplication algorithm") in ``blocks`` steps of a panel of K/blocks columns of X (rows of
W); in each step

- F: the X panel [T/C, K/nb] is broadcast along the grid row (R GPUs), the W panel [K/nb, N/R]
  along the grid column (C GPUs), and each GPU adds their product to its Y block;
- B (dX = dY·Wᵀ): the W panel is broadcast along the column, each GPU multiplies, and the
  partial dX panel [T/C, K/nb] is reduced along the row to its owner;
- W (dW = Xᵀ·dY): the X panel is broadcast along the row, each GPU multiplies, and the partial
  dW panel [K/nb, N/R] is reduced along the column to its owner.

So FLOPs per GPU equal 1D's at the same tp (2·T·K·N/tp a matmul), and the bytes a GPU moves per
matmul do not depend on the block count; more blocks add latency and kernel launches (the
trade-off the block count sets). Attention runs heads/R per GPU on T/C query tokens and gathers
the K and V of its heads over the column (their gradients reduce-scattered in B), as sequence
parallel attention does. Each norm all-reduces its two fp32 statistics per token along the row.
No communication is overlapped with compute (as NERSC's model). Activations are split over all tp
GPUs, so they follow Korthikanti's Table 2 tensor + sequence parallel form with t = R·C. Ranks:
the R side is fastest (stride 1), the C side R apart. Dense models only.
"""

from __future__ import annotations

from functools import lru_cache

from . import comm
from .layer import BF16, FP32, Part, Pass, Shape, _Acc, _divisors, activation_bytes, attention_core, peak_flops
from .specs import Gpu, Model, SpecError


def grid(gpu: Gpu, shape: Shape) -> tuple[int, int, int, int, int]:
    """(R, C, blocks, NVLink members of a row group, of a column group)."""
    R, C = shape.tp2d
    dom = gpu.nvlink_domain
    return R, C, shape.blocks, comm.per_domain(R, 1, dom), comm.per_domain(C, R, dom)


def step_bytes(T: float, K: float, N: float, R: int, C: int, nb: int) -> tuple[float, float]:
    """Bytes of one SUMMA step of Y[T,N] = X[T,K]·W[K,N], in every pass: (an X-sized panel
    [T/C, K/nb] along the grid row, a W-sized panel [K/nb, N/R] along the grid column). F
    broadcasts both; B broadcasts the W panel and reduces the dX panel; W broadcasts the X panel
    and reduces the dW panel."""
    return BF16 * T / C * K / nb, BF16 * K / nb * N / R


def matmul(acc: _Acc, gpu: Gpu, shape: Shape, T: float, K: float, N: float) -> None:
    """One matmul by SUMMA: ``blocks`` panel GEMMs per pass, each step's broadcast and reduce timed
    on the tier its row or column group sits on."""
    R, C, nb, kr, kc = grid(gpu, shape)
    Tl, Kp, Nl = T / C, K / nb, N / R
    flops = 2.0 * Tl * Kp * Nl
    io = BF16 * (Tl * Kp + Kp * Nl + 2 * Tl * Nl)  # both panels in, the running block read and written
    row, col = step_bytes(T, K, N, R, C, nb)
    per_step = comm.broadcast_s(row, R, kr, gpu) + comm.broadcast_s(col, C, kc, gpu)  # a reduce times as a broadcast
    for p in "fbw":
        for _ in range(nb):
            acc.op(p, flops, io, flops, tensor=True)
        acc.comm(p, nb * per_step)


def check(model: Model, shape: Shape) -> None:
    """Refuse grids the layer cannot be split into, saying what to change."""
    R, C = shape.tp2d
    nb = shape.blocks
    if model.moe:
        raise SpecError(
            "2D tensor parallelism is modelled for dense models only: use tp_mode 1d for MoE", field="tp_mode"
        )
    if shape.ep > 1:
        raise SpecError(f"ep {shape.ep} needs an MoE model ({model.name} is dense): use ep 1", field="ep")
    for what, n in (("attention heads", model.heads), ("KV heads", model.kv_heads), ("FFN width", model.ffn),
                    ("vocabulary", model.vocab)):  # fmt: skip
        if n % R:
            raise SpecError(
                f"the hidden side {R} of tp2d must divide the {n} {what}: use one of {_divisors(n)}", field="tp2d"
            )
    if (shape.mbs * model.seq) % C:
        raise SpecError(f"the sequence side {C} of tp2d must divide the tokens per microbatch (mbs·seq)", field="tp2d")
    for what, n in (
        ("hidden", model.hidden),
        ("FFN width", model.ffn),
        ("attention width", model.heads * model.d_head),
    ):
        if n % nb:
            raise SpecError(f"summa_blocks {nb} must divide the {what} {n} (each panel whole)", field="summa_blocks")


def _norm(acc: _Acc, gpu: Gpu, shape: Shape, T: float, h: int) -> None:
    """A norm on the local block; its mean/variance (two fp32 per token) all-reduced along the row."""
    R, C, _, kr, _ = grid(gpu, shape)
    acc.elementwise(BF16 * 2 * T * h / (R * C), flops_per_byte=2.5)
    stats = comm.all_reduce_s(FP32 * 2 * T / C, R, kr, gpu)
    acc.comm("f", stats)
    acc.comm("b", stats)


@lru_cache(maxsize=1024)
def layer(model: Model, gpu: Gpu, shape: Shape) -> Part:
    """One dense transformer layer on one GPU of the grid, one microbatch."""
    R, C, _, _, kc = grid(gpu, shape)
    t = R * C
    h, a, d, s = model.hidden, model.heads, model.d_head, model.seq
    q, kv = a * d, model.kv_heads * d
    T = shape.mbs * s  # tokens of one microbatch (all of them: the grid splits them over C)
    x = T * h
    drop = model.dropout
    acc = _Acc(gpu, peak_flops(gpu, shape.precision))
    core = _Acc(gpu, peak_flops(gpu, shape.precision))

    def residual():
        acc.elementwise(BF16 * 3 * x / t + (x / t if drop else 0), flops_per_byte=1.0)

    _norm(acc, gpu, shape, T, h)
    matmul(acc, gpu, shape, T, h, q + 2 * kv)
    attention_core(acc, core, T / C, s, shape.mbs, a / R, d, kv / R, model.flash_attention, drop)
    kv_bytes = BF16 * 2 * T * kv / R  # the K and V of this GPU's heads, all tokens
    acc.comm("f", comm.all_gather_s(kv_bytes, C, kc, gpu))
    acc.comm("b", comm.reduce_scatter_s(kv_bytes, C, kc, gpu))
    matmul(acc, gpu, shape, T, q, h)
    residual()
    _norm(acc, gpu, shape, T, h)
    glu = 2 if model.gated_mlp else 1
    matmul(acc, gpu, shape, T, h, glu * model.ffn)
    acc.elementwise(BF16 * (glu + 1) * T * model.ffn / t)
    matmul(acc, gpu, shape, T, model.ffn, h)
    residual()

    f, b, w = acc.passes()
    model_flops = f.flops + b.flops + w.flops
    if shape.recompute == "full":
        rec = f
    elif shape.recompute == "selective" and not model.flash_attention:
        rec = core.passes()[0]
    else:
        rec = Pass()
    return Part(f, b + rec, w, rec, activation_bytes(model, _as_sequence_parallel(shape), False),
                params(model, shape), 0.0, model_flops)  # fmt: skip


def _as_sequence_parallel(shape: Shape) -> Shape:
    """Every saved tensor split over all R·C GPUs: Korthikanti's tensor + sequence parallel form."""
    return Shape(shape.tp, 1, shape.ep, shape.dp, shape.mbs, True, shape.recompute, shape.precision)


def params(model: Model, shape: Shape) -> float:
    """Parameters of one layer on one GPU: matrices split over R·C, vectors (norms, biases) over R."""
    R, C = shape.tp2d
    h, d = model.hidden, model.d_head
    q, kv = model.heads * d, model.kv_heads * d
    glu = 3 if model.gated_mlp else 2
    matrices = h * (q + 2 * kv) + q * h + glu * h * model.ffn
    vectors = 2 * h * (2 if model.bias else 1)
    if model.bias:
        vectors += (q + 2 * kv) + 2 * h + (glu - 1) * model.ffn
    return matrices / (R * C) + vectors / R


@lru_cache(maxsize=256)
def embedding(model: Model, gpu: Gpu, shape: Shape) -> Part:
    """The first stage's embedding: the table split vocabulary over C and width over R; the looked-up
    rows reduce-scattered along the column to their token block (gathered back in B)."""
    R, C, _, _, kc = grid(gpu, shape)
    t = R * C
    h, T = model.hidden, shape.mbs * model.seq
    x = T * h
    acc = _Acc(gpu, peak_flops(gpu, shape.precision))
    acc.elementwise(BF16 * 2 * x / t * (2 if model.learned_positions else 1), backward=0)
    acc.op("w", 0.0, (BF16 + 2 * FP32) * x / t, 0.0, tensor=False)
    acc.comm("f", comm.reduce_scatter_s(BF16 * x / R, C, kc, gpu))
    acc.comm("b", comm.all_gather_s(BF16 * x / R, C, kc, gpu))
    f, b, w = acc.passes()
    n = model.vocab * h / t + (model.seq * h / t if model.learned_positions else 0)
    act = x / t if model.dropout else 0.0
    return Part(f, b, w, Pass(), act, n, 0.0, 0.0)


@lru_cache(maxsize=256)
def head(model: Model, gpu: Gpu, shape: Shape, own_weights: bool) -> Part:
    """The last stage's final norm, the output layer by SUMMA (vocabulary over R) and the fp32 loss,
    whose softmax max, sum and target logit are all-reduced along the row."""
    R, C, _, kr, _ = grid(gpu, shape)
    t = R * C
    h, V, T = model.hidden, model.vocab, shape.mbs * model.seq
    acc = _Acc(gpu, peak_flops(gpu, shape.precision))
    _norm(acc, gpu, shape, T, h)
    matmul(acc, gpu, shape, T, h, V)
    acc.elementwise(FP32 * 3 * T * V / t, flops_per_byte=1.0)
    acc.comm("f", 3 * comm.all_reduce_s(FP32 * T / C, R, kr, gpu))
    f, b, w = acc.passes()
    act = 4 * T * h / t + FP32 * T * V / t
    n = (V * h / t if own_weights else 0) + h * (2 if model.bias else 1) / R
    return Part(f, b, w, Pass(), act, n, 0.0, f.flops + b.flops + w.flops)
