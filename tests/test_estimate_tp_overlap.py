"""TP collectives overlapped with the GEMMs (Megatron --tp-comm-overlap, Transformer Engine userbuffers):
the closed forms of ppviz.estimate.layer, checked by hand on one layer, and the layout's rules."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ppviz.estimate import Layout, SpecError, comm, estimate, gpu, layer, model, parts
from ppviz.estimate.iteration import shape_of

H100 = gpu("h100-sxm")
GPT = model("gpt3-175b")
LLAMA = model("llama3-70b", seq=4096)


def _layer(m, lay: Layout) -> layer.Part:
    return layer.layer(m, H100, shape_of(lay), m.moe)


def _pair(m, lay: Layout):
    return _layer(m, lay), _layer(m, replace(lay, tp_comm_overlap=True))


def test_closed_forms():
    # ring exchange: t − 1 steps of C/(t−1) behind t GEMM chunks, the local one first
    assert layer.ring_exchange_exposed_s(7.0, 8.0, 8) == pytest.approx(0.0)  # 7·max(0, 1 − 1) = 0
    assert layer.ring_exchange_exposed_s(7.0, 4.0, 8) == pytest.approx(3.5)  # 7·(1 − 0.5)
    assert layer.ring_exchange_exposed_s(3.0, 0.0, 4) == pytest.approx(3.0)  # no GEMM: all of it
    assert layer.ring_exchange_exposed_s(3.0, 10.0, 1) == 0.0
    # chunked reduce-scatter in n = 4: one chunk C/4 exposed, plus what the rest exceeds the GEMM chunks
    assert layer.chunked_rs_exposed_s(4.0, 10.0) == pytest.approx(1.0)
    assert layer.chunked_rs_exposed_s(4.0, 2.0) == pytest.approx(1.0 + 0.75 * 2.0)
    assert layer.chunked_rs_exposed_s(4.0, 0.0) == pytest.approx(4.0)


def test_hides_exactly_the_hand_computed_amount():
    """GPT-3 175B, t 8, SP, 1F1B (B and W together): every TP collective is C = one all-gather of
    s·b·h bf16 (C is also the reduce-scatter's); each op's exposed TP time, from the GEMM times."""
    lay = Layout(tp=8, pp=8, mbs=1, sequence_parallel=True, schedule="1f1b")
    serial, over = _pair(GPT, lay)
    T, h, t = GPT.seq, GPT.hidden, 8
    c = comm.all_gather_s(2 * T * h, t, 8, H100)
    acc = parts.Acc(H100, H100.bf16_flops)
    qkv, proj = acc.gemm(T, h, 3 * h / t), acc.gemm(T, h / t, h)
    fc1, fc2 = acc.gemm(T, h, GPT.ffn / t), acc.gemm(T, GPT.ffn / t, h)
    pairs = ((qkv, proj), (fc1, fc2))
    f = sum(max(0.0, c - 7 / 8 * col["f"]) + c / 4 + 3 / 4 * max(0.0, c - row["f"]) for col, row in pairs)
    b = sum(max(0.0, c - 7 / 8 * row["b"]) + max(0.0, c - col["w"]) for col, row in pairs)
    w = sum(max(0.0, c - col["b"]) for col in (qkv, fc1))
    assert (serial.f.comm_s, serial.b.comm_s, serial.w.comm_s) == pytest.approx((4 * c, 4 * c, 2 * c))
    assert (over.f.comm_s, over.b.comm_s, over.w.comm_s) == pytest.approx((f, b, w))
    # F keeps at least the two reduce-scatter chunks; the layer hides the rest of its 10 collectives
    assert c / 2 <= over.f.comm_s < 4 * c
    hidden = (serial.f.s + serial.b.s + serial.w.s) - (over.f.s + over.b.s + over.w.s)
    assert hidden == pytest.approx(10 * c - (f + b + w)) and hidden > 9 * c
    assert (over.f.compute_s, over.b.compute_s, over.w.compute_s) == (
        serial.f.compute_s, serial.b.compute_s, serial.w.compute_s)  # fmt: skip


def test_slow_links_expose_what_the_gemms_cannot_cover():
    """With NVLink 100× slower every collective outlasts its GEMM: each exposes C minus the part of
    the GEMM that runs beside it, never more than C."""
    g = replace(H100, nvlink_bytes_per_s=H100.nvlink_bytes_per_s / 100)
    lay = Layout(tp=8, mbs=1, sequence_parallel=True)
    shape = shape_of(lay)
    serial = layer.layer(GPT, g, shape, False)
    over = layer.layer(GPT, g, shape_of(replace(lay, tp_comm_overlap=True)), False)
    assert 0 < over.f.comm_s < serial.f.comm_s and 0 < over.b.comm_s < serial.b.comm_s
    assert 0 < over.w.comm_s < serial.w.comm_s


@pytest.mark.parametrize("name", ["gpt3-175b", "llama3-70b", "mixtral-8x7b", "deepseek-v3"])
@pytest.mark.parametrize("schedule", ["1f1b", "zb-h1", "zb-v", "interleaved-1f1b"])
@pytest.mark.parametrize("tp", [2, 4, 8])
def test_never_slower_and_off_is_serial(name, schedule, tp):
    m = model(name, seq=4096)
    lay = Layout(tp=tp, mbs=1, sequence_parallel=True, schedule=schedule)
    serial, over = _pair(m, lay)
    for s, o in ((serial.f, over.f), (serial.b, over.b), (serial.w, over.w)):
        assert o.comm_s <= s.comm_s + 1e-15 and o.compute_s == s.compute_s
    assert _layer(m, replace(lay, tp_comm_overlap=False)) == serial


def test_split_backward_keeps_the_bulk_collectives_serial():
    """Zero-bubble schedules may defer W, and TE refuses userbuffers with a deferred weight gradient:
    the dgrad reduce-scatter (B) and the input re-gather (W) stay serial; the pipelined ones still hide."""
    lay = Layout(tp=8, pp=4, mbs=1, sequence_parallel=True, tp_comm_overlap=True)
    fused, split = _layer(GPT, replace(lay, schedule="1f1b")), _layer(GPT, replace(lay, schedule="zb-h1"))
    assert not shape_of(replace(lay, schedule="zb-h1")).tp_bulk and shape_of(lay).tp_bulk
    c = comm.all_gather_s(2 * GPT.seq * GPT.hidden, 8, 8, H100)
    assert split.f == fused.f
    assert split.w.comm_s == pytest.approx(fused.w.comm_s + 2 * c)
    assert split.b.comm_s == pytest.approx(fused.b.comm_s + 2 * c)
    serial = _layer(GPT, replace(lay, schedule="zb-h1", tp_comm_overlap=False))
    assert split.b.comm_s < serial.b.comm_s and split.w.comm_s == pytest.approx(serial.w.comm_s)


def test_moe_mlp_stays_serial():
    """The routed MLP's all-gather and reduce-scatter run outside TE's userbuffers: only attention hides."""
    m = model("mixtral-8x7b", seq=4096)
    lay = Layout(tp=4, mbs=1, dp=1, sequence_parallel=True)
    serial, over = _pair(m, lay)
    c = comm.all_gather_s(2 * m.seq * m.hidden, 4, 4, H100)
    assert over.f.comm_s >= 2 * c and over.b.comm_s >= 2 * c and over.w.comm_s >= c
    assert over.f.comm_s < serial.f.comm_s


def test_iteration_faster_and_tp1_needs_nothing():
    lay = Layout(tp=8, pp=4, dp=1, mbs=1, gbs=16, sequence_parallel=True, schedule="interleaved-1f1b", vpp=2)
    serial = estimate(LLAMA, H100, lay)
    over = estimate(LLAMA, H100, replace(lay, tp_comm_overlap=True))
    assert over.iteration_s < serial.iteration_s
    assert over.breakdown["tp_comm_s"] < serial.breakdown["tp_comm_s"]
    assert over.breakdown["compute_s"] == pytest.approx(serial.breakdown["compute_s"])
    assert over.to_dict(ops=False)["layout"]["tp_comm_overlap"] is True


def test_tp1_unchanged():
    """tp 1 has no TP collective to hide: a layer asked to overlap costs what it costs without (the
    Layout refuses the flag there, below; the page and the search apply it only with SP)."""
    base = layer.Shape(1, 1, 1, 1, 1, False, "none", "bf16")
    for m in (GPT, LLAMA):
        assert layer.layer(m, H100, replace(base, tp_overlap=True, tp_bulk=True), False) == layer.layer(
            m, H100, base, False)  # fmt: skip


@pytest.mark.parametrize("kw", [dict(tp=1), dict(tp=8), dict(tp=4, tp_mode="2d", tp2d=(2, 2))])
def test_refused_without_sequence_parallel(kw):
    """Megatron asserts sequence parallel with --tp-comm-overlap (and sequence parallel needs tp > 1)."""
    with pytest.raises(SpecError, match="tp_comm_overlap .*sequence_parallel"):
        Layout(tp_comm_overlap=True, **kw)
    with pytest.raises(SpecError, match="true or false"):
        Layout(tp=2, sequence_parallel=True, tp_comm_overlap="yes")


def test_each_collective_hides_at_most_its_gemm():
    """Overlap hides min(C, G) at most per (collective, GEMM) pair: whatever the link speed, the layer's
    hidden TP time is never more than the GEMMs the collectives run beside (each used once)."""
    lay = Layout(tp=8, mbs=1, sequence_parallel=True, schedule="1f1b")
    for factor in (1, 10, 100):
        g = replace(H100, nvlink_bytes_per_s=H100.nvlink_bytes_per_s / factor)
        serial = layer.layer(GPT, g, shape_of(lay), False)
        over = layer.layer(GPT, g, shape_of(replace(lay, tp_comm_overlap=True)), False)
        acc = parts.Acc(g, g.bf16_flops)
        T, h, t = GPT.seq, GPT.hidden, 8
        qkv, proj = acc.gemm(T, h, 3 * h / t), acc.gemm(T, h / t, h)
        fc1, fc2 = acc.gemm(T, h, GPT.ffn / t), acc.gemm(T, GPT.ffn / t, h)
        gemms = sum(c["f"] + c["b"] + c["w"] for c in (qkv, proj, fc1, fc2)) - proj["w"] - fc2["w"]
        hidden = sum(s.comm_s - o.comm_s for s, o in ((serial.f, over.f), (serial.b, over.b), (serial.w, over.w)))
        assert 0 < hidden <= gemms + 1e-12, factor


def test_tp_across_nvlink_domains_cannot_overlap():
    """Transformer Engine's userbuffers work inside one NVLink domain only (TE issue #1071): Megatron 1T
    with tp 16 over two 8-GPU A100 nodes is refused with the overlap, and runs its 16 s of TP serially;
    a 16-GPU NVLink domain (multi-node NVLink, TE PR #1470) takes it."""
    a100, m = gpu("a100-80gb"), model("megatron-1t")
    lay = Layout(tp=16, pp=16, dp=12, mbs=1, gbs=3072, recompute="selective", sequence_parallel=True, zero=1)
    with pytest.raises(SpecError, match="tp 16 spans domains of 8 GPUs") as err:
        estimate(m, a100, replace(lay, tp_comm_overlap=True))
    assert err.value.field == "tp_comm_overlap"
    serial = estimate(m, a100, lay)
    assert serial.breakdown["tp_comm_s"] > 15
    wide = replace(a100, nvlink_domain=16)
    assert estimate(m, wide, replace(lay, tp_comm_overlap=True)).iteration_s < estimate(m, wide, lay).iteration_s
    assert [layer.tp_overlap_possible(t, 8) for t in (1, 2, 4, 8, 16)] == [False, True, True, True, False]
    assert layer.tp_overlap_possible(16, 72) and not layer.tp_overlap_possible(128, 72)
