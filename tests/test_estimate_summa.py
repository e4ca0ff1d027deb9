"""2D tensor parallelism (SUMMA over hidden × sequence): FLOPs per GPU as 1D's at the same tp, the
bytes of each SUMMA step, the tiers of the row and column groups, activation and weight memory
per GPU, and refusals."""

import pytest

from ppviz.__main__ import main
from ppviz.estimate import Layout, SpecError, default_layout, estimate, gpu, model, parts, summa
from ppviz.estimate import comm as C
from ppviz.estimate import layer as L
from ppviz.estimate.iteration import shape_of

GPT = model("gpt3-175b")  # biases, dropout, no flash attention
LLAMA = model("llama3-70b", seq=4096)  # GQA, SwiGLU, flash attention
A100 = gpu("a100-80gb")
NO_LATENCY = gpu("a100-80gb", nvlink_latency_s=0.0, network_latency_s=0.0, kernel_overhead_s=0.0)


def part(m, g, **kw):
    return L.layer(m, g, shape_of(Layout(tp=8, mbs=1, **kw)), False)


@pytest.mark.parametrize("m", [GPT, LLAMA], ids=["gpt3", "llama3"])
@pytest.mark.parametrize("grid", [(8, 1), (4, 2), (2, 4), (1, 8)])
@pytest.mark.parametrize("recompute", ["none", "full"])
def test_flops_per_gpu_equal_1d_at_the_same_tp(m, grid, recompute):
    one = part(m, A100, recompute=recompute)
    two = part(m, A100, tp_mode="2d", tp2d=grid, recompute=recompute)
    for p in ("f", "b", "w"):
        assert getattr(two, p).flops == pytest.approx(getattr(one, p).flops, rel=1e-12)
    assert two.model_flops == pytest.approx(one.model_flops, rel=1e-12)
    # and the dense GEMMs are the closed form: F = 2·T·(h·(q + 2kv) + q·h + glu·h·ffn)/tp + attention
    T, h, d = m.seq, m.hidden, m.d_head
    q, kv, glu = m.heads * d, m.kv_heads * d, (3 if m.gated_mlp else 2)
    attention = 2 * 2 * T * m.seq * q / 8
    assert two.f.flops == pytest.approx(2 * T * (h * (q + 2 * kv) + q * h + glu * h * m.ffn) / 8 + attention)


def test_step_bytes_closed_form_and_total_independent_of_blocks():
    T, K, N, R, Cc = 2048, 12288, 36864, 4, 2
    for nb in (4, 8, 64):
        row, col = summa.step_bytes(T, K, N, R, Cc, nb)
        assert row == 2 * (T / Cc) * (K / nb)  # an X panel, bf16, along the row of R GPUs
        assert col == 2 * (K / nb) * (N / R)  # a W panel, bf16, along the column of C GPUs
        assert nb * row == 2 * T * K / Cc and nb * col == 2 * K * N / R


def test_matmul_communication_per_step_on_the_nvlink_tier():
    """Grid 4 × 2 inside one 8-GPU domain, no latency: each pass moves nb panels, each broadcast
    (or reduce) streaming once through NVLink, so a matmul's comm = (2·T·K/C + 2·K·N/R) / B_nv,
    whatever the block count; with latency each step adds (R−1 + C−1) NVLink latencies."""
    T, K, N = 2048, 12288, 36864
    bnv = A100.nvlink_bytes_per_s * A100.nvlink_efficiency
    for nb, g in ((4, NO_LATENCY), (16, NO_LATENCY), (16, A100)):
        shape = shape_of(Layout(tp=8, tp_mode="2d", tp2d=(4, 2), summa_blocks=nb))
        acc = parts.Acc(g, g.bf16_flops)
        summa.matmul(acc, g, shape, T, K, N)
        f, b, w = acc.passes()
        want = (2 * T * K / 2 + 2 * K * N / 4) / bnv + nb * (3 + 1) * g.nvlink_latency_s
        assert f.comm_s == pytest.approx(want, rel=1e-12) and b.comm_s == f.comm_s and w.comm_s == f.comm_s
        assert f.flops == 2 * T * K * N / 8


def test_row_and_column_groups_sit_on_their_tiers():
    """Ranks: the hidden side R fastest. With NVLink domains of 4, a 4 × 2 grid keeps each row
    (4 GPUs, stride 1) inside a domain and puts each column (2 GPUs, 4 apart) on the network."""
    g4 = gpu("a100-80gb", nvlink_domain=4)
    shape = shape_of(Layout(tp=8, tp_mode="2d", tp2d=(4, 2)))
    assert summa.grid(g4, shape) == (4, 2, 4, 4, 1)
    assert summa.grid(A100, shape) == (4, 2, 4, 4, 2)
    S = 1e8
    assert C.broadcast_s(S, 4, 4, g4) == pytest.approx(S / (300e9 * 0.72) + 3 * 2e-6)
    assert C.broadcast_s(S, 2, 1, g4) == pytest.approx(S / (25e9 * 0.8) + 5e-6)
    assert C.reduce_s(S, 2, 1, g4) == C.broadcast_s(S, 2, 1, g4)
    slow = part(GPT, g4, tp_mode="2d", tp2d=(4, 2))
    fast = part(GPT, A100, tp_mode="2d", tp2d=(4, 2))
    assert slow.f.comm_s > fast.f.comm_s and slow.f.compute_s == fast.f.compute_s


def test_activation_and_weight_memory_per_gpu():
    """Every saved tensor is split over all R·C GPUs: Korthikanti Table 2's tensor + sequence
    parallel form s·b·h·(34 + 5·a·s/h)/t; matrices split over R·C, vectors (norms, biases) over R."""
    s, h, a = GPT.seq, GPT.hidden, GPT.heads
    for grid in ((4, 2), (2, 4)):
        p = part(GPT, A100, tp_mode="2d", tp2d=grid)
        assert p.activation_bytes == pytest.approx(s * h * (34 + 5 * a * s / h) / 8, rel=1e-12)
        assert p.params == pytest.approx(12 * h * h / 8 + 13 * h / grid[0], rel=1e-12)
    sel = part(GPT, A100, tp_mode="2d", tp2d=(4, 2), recompute="selective")
    assert sel.activation_bytes == pytest.approx(s * h * 34 / 8, rel=1e-12)
    e = estimate(GPT, A100, Layout(tp=8, pp=8, gbs=8, tp_mode="2d", tp2d=(4, 2), recompute="selective"))
    assert e.static_bytes["weight"] == pytest.approx(2 * e.params_per_device)
    one = estimate(GPT, A100, Layout(tp=8, pp=8, gbs=8, sequence_parallel=True, recompute="selective"))
    assert e.activation.peak == pytest.approx(one.activation.peak, rel=1e-12)  # same bytes, same schedule
    assert e.model_flops == pytest.approx(one.model_flops, rel=1e-12)


def test_long_sequences_favour_2d():
    """At 64k tokens per microbatch activations dwarf the weights SUMMA broadcasts, so a 2D grid
    communicates less than 1D's all-reduces of the whole sequence (the regime NERSC studies)."""
    long = model("llama3-8b", seq=65536)
    one = part(long, A100)
    two = part(long, A100, tp_mode="2d", tp2d=(2, 4))
    assert two.f.comm_s < one.f.comm_s


@pytest.mark.parametrize(
    "kw, words",
    [
        (dict(tp=8, tp_mode="2d"), "tp_mode 2d needs tp2d"),
        (dict(tp=8, tp_mode="2d", tp2d=(4, 4)), "tp2d 4,4 multiplies to 16, not tp 8"),
        (dict(tp=8, tp_mode="2d", tp2d=(4, 2), sequence_parallel=True), "drop sequence_parallel"),
        (dict(tp=8, cp=2, tp_mode="2d", tp2d=(4, 2)), "use cp 1 with tp_mode 2d"),
        (dict(tp=8, tp_mode="2d", tp2d=(4, 2), summa_blocks=6), "must be a multiple of both sides"),
        (dict(tp=8, tp2d=(4, 2)), "add tp_mode 2d"),
        (dict(tp=8, tp_mode="3d"), "tp_mode must be one of 1d, 2d"),
    ],
)
def test_bad_layouts_are_refused(kw, words):
    with pytest.raises(SpecError, match=words):
        Layout(**kw)


def test_bad_grids_for_the_model_are_refused():
    with pytest.raises(SpecError, match="hidden side 16 of tp2d must divide the 8 KV heads"):
        estimate(LLAMA, A100, Layout(tp=16, tp_mode="2d", tp2d=(16, 1)))
    with pytest.raises(SpecError, match="ep 2 needs an MoE model"):
        estimate(LLAMA, A100, Layout(tp=8, dp=2, ep=2, tp_mode="2d", tp2d=(4, 2)))
    with pytest.raises(SpecError, match="dense models only"):
        estimate("mixtral-8x7b", A100, Layout(tp=8, tp_mode="2d", tp2d=(4, 2)))
    with pytest.raises(SpecError, match="summa_blocks 128 must divide"):
        estimate(model("llama3-8b", hidden=4160, heads=32, kv_heads=8, head_dim=128), A100,
                 Layout(tp=8, tp_mode="2d", tp2d=(4, 2), summa_blocks=128))  # fmt: skip


def test_cli_flags(capsys):
    import json

    base = ["estimate", "--model", "gpt3-175b", "--gpu", "a100-80gb", "--pp", "8", "--gbs", "8", "--json", "--no-ops"]
    assert main([*base, "--tp2d", "4,2", "--summa-blocks", "8"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert (d["layout"]["tp"], d["layout"]["tp_mode"], d["layout"]["tp2d"], d["layout"]["summa_blocks"]) == (
        8, "2d", [4, 2], 8,
    )  # fmt: skip
    lay = default_layout(tp=8, pp=8, gbs=8, tp_mode="2d", tp2d=(4, 2), summa_blocks=8)  # the CLI's defaults
    assert (lay.recompute, lay.zero, lay.sequence_parallel) == ("selective", 1, False)  # no SP: 2D splits s itself
    e = estimate(GPT, A100, lay)
    assert d["iteration_s"] == e.iteration_s
    for argv, says in (
        (["--tp2d", "4x2"], "--tp2d wants hidden,sequence ways"),
        (["--tp", "4", "--tp2d", "4,2"], "multiplies to 8, not tp 4"),
        (["--tp-mode", "2d", "--tp", "8"], "tp_mode 2d needs tp2d"),
    ):
        assert main([*base, *argv]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and says in err, err
