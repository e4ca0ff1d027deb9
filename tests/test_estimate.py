"""The real-units estimate: presets and overrides, refusals, closed forms in seconds, memory in bytes,
communication tiers, DP sync and the optimizer step."""

import dataclasses

import pytest

import ppviz
from ppviz.estimate import Gpu, Layout, Model, estimate, gpu, gpu_names, model, model_names, override
from ppviz.estimate import comm as C

MODELS = ["gpt3-175b", "megatron-22b", "megatron-530b", "megatron-1t", "llama3-8b", "llama3-70b", "llama3-405b",
          "deepseek-v3", "mixtral-8x7b"]  # fmt: skip
GPUS = ["a100-40gb", "a100-80gb", "h100-sxm", "h200", "b200", "mi300x", "v100-sxm2-32gb"]
# no latency and unbounded links: p2p is (numerically) 0
FREE_LINKS = dict(nvlink_latency_s=0.0, network_latency_s=0.0, nvlink_bytes_per_s=1e30, network_bytes_per_s=1e30)


# --- presets and overrides ------------------------------------------------------------------


def test_preset_names_are_the_stable_identifiers():
    assert model_names() == MODELS
    assert gpu_names() == GPUS


@pytest.mark.parametrize("name", MODELS)
def test_every_model_preset_loads_and_estimates(name):
    m = model(name)
    assert m.name == name and m.layers > 0
    moe = m.experts > 0
    e = estimate(m, "h100-sxm", Layout(tp=8, pp=1, ep=8 if moe else 1, dp=8 if moe else 1, gbs=8))
    assert 0 < e.mfu < 1 and e.iteration_s > 0


@pytest.mark.parametrize("name", GPUS)
def test_every_gpu_preset_loads_and_estimates(name):
    g = gpu(name)
    assert g.name == name and g.hbm_bytes >= 32e9  # V100 32GB: 32,510 MiB
    e = estimate("llama3-8b", g, Layout(tp=8, gbs=1))
    assert e.capacity_bytes == g.hbm_bytes


def test_presets_follow_their_sources():
    big = model("llama3-405b")
    assert (big.layers, big.hidden, big.ffn, big.heads, big.kv_heads, big.vocab) == (126, 16384, 53248, 128, 8, 128256)
    g = gpu("h100-sxm")
    assert (g.bf16_flops, g.fp8_flops, g.hbm_bytes, g.hbm_bytes_per_s) == (989e12, 1979e12, 81_559 * 2**20, 3350e9)
    assert (model("gpt3-175b").hidden, model("megatron-1t").heads) == (12288, 160)


MODEL_OVERRIDES = {
    "layers": 16, "hidden": 2048, "heads": 16, "kv_heads": 4, "ffn": 8192, "vocab": 32000, "seq": 4096,
    "head_dim": 64, "gated_mlp": False, "tied_embeddings": True, "bias": True, "dropout": True,
    "flash_attention": False, "learned_positions": True,
}  # fmt: skip
MOE_OVERRIDES = {"experts": 4, "top_k": 1, "expert_ffn": 1024, "shared_experts": 1, "dense_layers": 2}
GPU_OVERRIDES = {
    "bf16_flops": 500e12, "fp8_flops": 1000e12, "vector_flops": 30e12, "hbm_bytes": 96e9, "hbm_bytes_per_s": 3e12,
    "nvlink_bytes_per_s": 400e9, "nvlink_domain": 72, "network_bytes_per_s": 100e9, "nvlink_latency_s": 1e-6,
    "network_latency_s": 8e-6, "matmul_efficiency": 0.6, "hbm_efficiency": 0.7, "nvlink_efficiency": 0.6,
    "network_efficiency": 0.5, "kernel_overhead_s": 1e-5, "reserve_bytes": 2**31,
}  # fmt: skip


def test_every_field_can_be_overridden():
    fields = {f.name for f in dataclasses.fields(Model)} - {"name"}
    assert set(MODEL_OVERRIDES) | set(MOE_OVERRIDES) == fields
    assert set(GPU_OVERRIDES) == {f.name for f in dataclasses.fields(Gpu)} - {"name"}
    for k, v in MODEL_OVERRIDES.items():
        assert getattr(model("llama3-8b", **{k: v}), k) == v != getattr(model("llama3-8b"), k)
    for k, v in MOE_OVERRIDES.items():
        assert getattr(model("mixtral-8x7b", **{k: v}), k) == v != getattr(model("mixtral-8x7b"), k)
    for k, v in GPU_OVERRIDES.items():
        assert getattr(gpu("a100-80gb", **{k: v}), k) == v != getattr(gpu("a100-80gb"), k)
        assert getattr(override(gpu("a100-80gb"), **{k: v}), k) == v


def test_overrides_change_the_estimate():
    base = estimate("llama3-8b", "h100-sxm", Layout(tp=8, gbs=1))
    assert estimate(model("llama3-8b", seq=4096), "h100-sxm", Layout(tp=8, gbs=1)).iteration_s < base.iteration_s
    slow = gpu("h100-sxm", matmul_efficiency=0.3)
    assert estimate("llama3-8b", slow, Layout(tp=8, gbs=1)).iteration_s > base.iteration_s


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda: model("gpt-5"), "unknown model preset 'gpt-5'"),
        (lambda: gpu("tpu"), "unknown GPU preset 'tpu'"),
        (lambda: model("llama3-8b", hiden=1), "no field hiden"),
        (lambda: gpu("h100-sxm", matmul_efficiency=1.5), "matmul_efficiency"),
        (lambda: gpu("h100-sxm", hbm_bytes=-1), "hbm_bytes must be > 0"),
        (lambda: model("llama3-8b", kv_heads=5), "kv_heads 5 must divide heads 32"),
        (lambda: model("llama3-8b", layers=0), "layers must be ≥ 1"),
        (lambda: model("llama3-8b", seq=4096.5), "whole number"),
        (lambda: model("mixtral-8x7b", top_k=9), "top_k"),
        (lambda: Layout(recompute="some"), "recompute must be one of"),
        (lambda: Layout(zero=4), "zero must be 0, 1, 2 or 3"),
        (lambda: Layout(tp=1, sequence_parallel=True), "needs tp > 1"),
        (lambda: Layout(tp=0), "tp must be ≥ 1"),
        (lambda: Layout(layer_split=(1, 2), edge_fewer=1), "either layer_split or edge_fewer"),
    ],
)
def test_bad_specs_are_refused_with_what_to_change(call, words):
    with pytest.raises(ValueError, match=words):
        call()


@pytest.mark.parametrize(
    "mdl, g, layout, words",
    [
        ("gpt3-175b", "a100-80gb", Layout(tp=5, gbs=1), "tp 5 must divide the 96 attention heads"),
        ("llama3-8b", "h100-sxm", Layout(tp=16, gbs=1), "tp 16 must divide the 8 KV heads"),
        ("gpt3-175b", "a100-80gb", Layout(tp=8, pp=5, gbs=5), "96 layers do not split evenly into 5 stages"),
        ("gpt3-175b", "a100-80gb", Layout(tp=8, pp=8, vpp=5, gbs=8, schedule="interleaved-1f1b"), "into 40 stages"),
        ("llama3-8b", "h100-sxm", Layout(tp=8, dp=2, mbs=2, gbs=6), "global batch 6 is not a multiple of dp·mbs"),
        ("llama3-8b", "h100-sxm", Layout(tp=8, pp=2, vpp=2, gbs=4, schedule="1f1b"), "drop vpp 2"),
        ("llama3-8b", "h100-sxm", Layout(tp=8, pp=2, gbs=4, schedule="nope"), "unknown schedule 'nope'"),
        ("llama3-8b", "h100-sxm", Layout(tp=8, pp=2, gbs=4, layer_split=(10, 20, 2)), "layer_split needs 2 entries"),
        ("llama3-8b", "h100-sxm", Layout(tp=8, pp=2, gbs=4, layer_split=(10, 20)), "summing to 32"),
        ("llama3-8b", "h100-sxm", Layout(tp=8, pp=3, gbs=4, edge_fewer=1), "edge_fewer 1 needs"),
        ("llama3-8b", "h100-sxm", Layout(tp=8, ep=2, dp=2, gbs=4), "needs an MoE model"),
        ("mixtral-8x7b", "h100-sxm", Layout(tp=8, ep=3, dp=3, gbs=3), "ep 3 must divide the 8 experts"),
        ("llama3-8b", "a100-80gb", Layout(tp=8, gbs=1, precision="fp8"), "no FP8 tensor cores"),
        ("llama3-8b", "h100-sxm", Layout(tp=8, cp=3, gbs=1), "cp 3 must divide the sequence length 8192"),
    ],
)
def test_bad_layouts_are_refused_with_what_to_change(mdl, g, layout, words):
    with pytest.raises(ValueError, match=words):
        estimate(mdl, g, layout)


def test_unknown_layout_field_and_schedule_param():
    with pytest.raises(TypeError):
        Layout(group_size=3)
    lay = Layout(tp=8, pp=4, gbs=8, schedule="1f1b", schedule_params={"chunks": 3})
    with pytest.raises(ValueError, match="1f1b has 1 chunk"):
        estimate("llama3-8b", "h100-sxm", lay)


def test_a_given_schedule_is_reused_and_must_match_the_layout():
    lay = Layout(tp=8, pp=4, gbs=8, schedule="zb-h1")
    e = estimate("llama3-8b", "h100-sxm", lay)
    again = estimate("llama3-8b", "h100-sxm", lay, schedule=e.run.schedule)
    assert again.iteration_s == e.iteration_s
    with pytest.raises(ValueError, match="the layout needs pp 4 and 16"):
        estimate("llama3-8b", "h100-sxm", dataclasses.replace(lay, gbs=16), schedule=e.run.schedule)


# --- closed forms in seconds ----------------------------------------------------------------


def test_1f1b_closed_form_in_seconds_with_uniform_stages():
    """(m + p − 1)(F + B + W), F, B, W being one stage's layers in seconds, p2p 0."""
    m, p = 12, 4
    e = estimate("llama3-8b", gpu("h100-sxm", **FREE_LINKS), Layout(tp=8, pp=p, gbs=m))
    lp = e.layer_times_s()
    n = 32 // p
    F, B, W = n * lp.f.s, n * lp.b.s, n * lp.w.s
    run = ppviz.evaluate(e.run.schedule, ppviz.make_costs(exact_stage_times=[(F, B, W)] * p))
    assert run.metrics.makespan == pytest.approx((m + p - 1) * (F + B + W), rel=1e-12)
    assert pytest.approx(e.plan.f[1], rel=1e-12) == F  # a middle stage is exactly its layers


@pytest.mark.parametrize("name, p, m", [("llama3-8b", 4, 8), ("llama3-8b", 8, 3), ("gpt3-175b", 8, 16)])
def test_1f1b_makespan_with_the_heavier_last_stage(name, p, m):
    """With the loss head the last stage is the slowest; 1F1B then takes Σ_s (F+B+W)_s + (m − 1)(F+B+W)_last."""
    e = estimate(name, gpu("h100-sxm", **FREE_LINKS), Layout(tp=8, pp=p, gbs=m, schedule="1f1b"))
    pl = e.plan
    stage = [f + b + w for f, b, w in zip(pl.f, pl.b, pl.w)]
    assert stage[-1] == max(stage) and pl.f[0] > pl.f[1]  # the embedding and the head make stages uneven
    assert e.makespan_s == pytest.approx(sum(stage) + (m - 1) * stage[-1], rel=1e-9)


def test_one_stage_runs_m_times_its_forward_and_backward():
    e = estimate("megatron-22b", "a100-80gb", Layout(tp=8, mbs=1, gbs=6))
    assert e.makespan_s == pytest.approx(6 * (e.plan.f[0] + e.plan.b[0] + e.plan.w[0]), rel=1e-12)
    assert e.iteration_s == pytest.approx(e.makespan_s + e.dp_sync_s + e.optimizer_s, rel=1e-12)
    assert e.run.to_dict()["makespan"] == e.makespan_s  # the Run is in seconds


def test_recompute_adds_the_recomputed_forward_to_b():
    kw = dict(tp=8, mbs=4, gbs=4)
    none = estimate("megatron-22b", "a100-80gb", Layout(**kw)).layer_times_s()
    full = estimate("megatron-22b", "a100-80gb", Layout(**kw, recompute="full")).layer_times_s()
    sel = estimate("megatron-22b", "a100-80gb", Layout(**kw, recompute="selective")).layer_times_s()
    assert full.b.s == pytest.approx(none.b.s + none.f.s, rel=1e-12)
    assert (full.f.s, full.w.s) == (none.f.s, none.w.s)
    assert none.b.s < sel.b.s < full.b.s
    flash = model("llama3-8b")  # with flash attention selective recompute has nothing to recompute
    a = estimate(flash, "h100-sxm", Layout(tp=8, gbs=1)).layer_times_s()
    b = estimate(flash, "h100-sxm", Layout(tp=8, gbs=1, recompute="selective")).layer_times_s()
    assert a.b.s == b.b.s and a.activation_bytes == b.activation_bytes


def test_zero_bubble_flops_split():
    """Zero Bubble Table 1 (dense GPT, no flash): F = sbh(24h + 4s), B = sbh(24h + 8s), W = 24sbh², per GPU /t."""
    m = model("megatron-22b")
    e = estimate(m, "a100-80gb", Layout(tp=8, mbs=4, gbs=4))
    lp = e.layer_times_s()
    s, b, h = m.seq, 4, m.hidden
    assert lp.f.flops == pytest.approx(s * b * h * (24 * h + 4 * s) / 8, rel=1e-12)
    assert lp.b.flops == pytest.approx(s * b * h * (24 * h + 8 * s) / 8, rel=1e-12)
    assert lp.w.flops == pytest.approx(s * b * h * 24 * h / 8, rel=1e-12)


def test_interleaved_and_v_shape_stage_counts_come_from_the_schedule():
    g = "h100-sxm"
    inter = estimate("llama3-8b", g, Layout(tp=8, pp=4, vpp=2, gbs=8, schedule="interleaved-1f1b"))
    assert inter.run.schedule.stages == 8 and inter.plan.layers == (4,) * 8
    v = estimate("llama3-8b", g, Layout(tp=8, pp=4, gbs=8, schedule="zb-v"))
    assert v.run.schedule.stages == 8
    dual = estimate("llama3-8b", g, Layout(tp=8, pp=4, gbs=8, schedule="dualpipe"))
    assert dual.run.schedule.stages == 4 and dual.plan.layers == (8,) * 4


def test_uneven_layer_splits():
    e = estimate("llama3-405b", "h100-sxm", Layout(tp=8, pp=16, gbs=16, edge_fewer=1))
    assert e.plan.layers == (7,) + (8,) * 14 + (7,)
    e = estimate(
        "llama3-405b", "h100-sxm", Layout(tp=8, pp=16, vpp=2, gbs=16, edge_fewer=1, schedule="interleaved-1f1b")
    )
    assert e.plan.layers == (3,) + (4,) * 30 + (3,)
    split = (2, 10, 10, 10)
    e = estimate("llama3-8b", "h100-sxm", Layout(tp=8, pp=4, gbs=8, layer_split=split))
    assert e.plan.layers == split
    assert e.plan.f[2] == pytest.approx(10 * e.layer_times_s().f.s, rel=1e-12)


# --- communication --------------------------------------------------------------------------


def test_p2p_tier_follows_the_nvlink_domain():
    m = model("llama3-8b")
    g = gpu("h100-sxm")
    size = 2 * m.seq * m.hidden / 2  # bf16, one microbatch, scattered over tp 2
    inside = estimate(m, g, Layout(tp=2, pp=4, gbs=4))  # ranks 0, 2, 4, 6: one node
    assert inside.p2p_s == pytest.approx(g.nvlink_latency_s + size / (g.nvlink_bytes_per_s * g.nvlink_efficiency))
    across = estimate(m, g, Layout(tp=2, pp=4, dp=4, gbs=16))  # stride 8: every boundary crosses nodes
    assert across.p2p_s == pytest.approx(g.network_latency_s + size / (g.network_bytes_per_s * g.network_efficiency))


def test_ring_collectives():
    g = gpu("a100-80gb")
    bnv = g.nvlink_bytes_per_s * g.nvlink_efficiency
    bnet = g.network_bytes_per_s * g.network_efficiency
    S = 1e9
    assert C.all_reduce_s(S, 8, 8, g) == pytest.approx(2 * 7 / 8 * S / bnv + 14 * g.nvlink_latency_s)
    assert C.all_gather_s(S, 8, 8, g) == pytest.approx(C.all_reduce_s(S, 8, 8, g) / 2)
    flat = C.all_reduce_s(S, 4, 1, g)
    assert flat == pytest.approx(2 * 3 / 4 * S / bnet + 6 * g.network_latency_s)
    assert C.all_reduce_s(S, 1, 1, g) == 0
    assert C.per_domain(4, 2, 8) == 4 and C.per_domain(4, 8, 8) == 1 and C.per_domain(16, 2, 8) == 4


def test_tp_communication_is_timed_and_sequence_parallel_keeps_its_volume():
    g = "a100-80gb"
    one = estimate("megatron-22b", g, Layout(tp=1, mbs=1, gbs=1)).layer_times_s()
    assert one.f.comm_s == one.b.comm_s == 0
    tp = estimate("megatron-22b", g, Layout(tp=8, mbs=1, gbs=1)).layer_times_s()
    sp = estimate("megatron-22b", g, Layout(tp=8, mbs=1, gbs=1, sequence_parallel=True)).layer_times_s()
    ar = C.all_reduce_s(2 * 2048 * 6144, 8, 8, gpu(g))
    assert tp.f.comm_s == pytest.approx(2 * ar) and sp.f.comm_s == pytest.approx(2 * ar)
    assert sp.w.comm_s > 0 == tp.w.comm_s  # SP gathers the GEMM inputs again for W


def test_moe_all_to_all_and_expert_parameters():
    base = dict(tp=1, pp=1, gbs=8, mbs=1)
    m = model("mixtral-8x7b", seq=4096)
    e1 = estimate(m, "h100-sxm", Layout(**base, dp=8, ep=1, zero=1))
    e8 = estimate(m, "h100-sxm", Layout(**base, dp=8, ep=8, zero=1))
    assert e8.layer_times_s().f.comm_s > 0 == e1.layer_times_s().f.comm_s
    h, fe = m.hidden, m.expert_ffn
    assert e1.layer_times_s().params - e8.layer_times_s().params == pytest.approx(8 * 3 * h * fe * (1 - 1 / 8))


# --- iteration: DP sync, optimizer, throughput ---------------------------------------------


def test_dp_sync_without_overlap_is_the_ring_all_reduce_of_fp32_gradients():
    g = gpu("h100-sxm")
    m = model("llama3-8b")  # untied: no embedding all-reduce
    lay = Layout(tp=8, dp=4, gbs=4, dp_overlap=False)
    e = estimate(m, g, lay)
    params = e.params_per_device[0]
    assert e.dp_sync_s == pytest.approx(C.all_reduce_s(4 * params, 4, 1, g), rel=1e-12)
    hidden = estimate(m, g, dataclasses.replace(lay, dp_overlap=True))
    assert hidden.dp_sync_s < e.dp_sync_s
    assert estimate(m, g, Layout(tp=8, gbs=1)).dp_sync_s == 0


def test_zero_divides_static_memory_and_the_optimizer_step():
    g = gpu("h100-sxm")
    lay = Layout(tp=8, pp=1, dp=4, gbs=4)
    expected = {0: 18, 1: 6 + 12 / 4, 2: 2 + 16 / 4, 3: 18 / 4}
    for zero, bpp in expected.items():
        e = estimate("llama3-8b", g, dataclasses.replace(lay, zero=zero))
        assert e.bytes_per_param == pytest.approx(bpp)
        d = e.to_dict(ops=False)
        static = d["weight_bytes"][0] + d["grad_bytes"][0] + d["optimizer_bytes"][0]
        assert static == pytest.approx(bpp * e.params_per_device[0], rel=1e-12)
        shard = 4 if zero else 1
        assert e.optimizer_s == pytest.approx(
            30 * e.params_per_device[0] / shard / (g.hbm_bytes_per_s * g.hbm_efficiency), rel=1e-12
        )


def test_two_weight_copies_for_dualpipe_and_2bw():
    lay = Layout(tp=8, pp=4, gbs=8)
    one = estimate("llama3-8b", "h100-sxm", lay).to_dict(ops=False)
    bw2 = estimate("llama3-8b", "h100-sxm", dataclasses.replace(lay, schedule="1f1b-2bw")).to_dict(ops=False)
    assert bw2["weight_bytes"][1] == pytest.approx(2 * one["weight_bytes"][1])
    assert bw2["grad_bytes"][1] == pytest.approx(one["grad_bytes"][1])
    dual = estimate("llama3-8b", "h100-sxm", dataclasses.replace(lay, schedule="dualpipe"))
    assert dual.params_per_device[1] == pytest.approx(dual.plan.params[1] + dual.plan.params[2])
    assert dual.to_dict(ops=False)["weight_bytes"][1] == pytest.approx(2 * one["weight_bytes"][1])


def test_activation_curve_in_bytes_uses_each_stage_size():
    p, m = 4, 8
    e = estimate("gpt3-175b", "a100-80gb", Layout(tp=8, pp=p, gbs=m))
    act = e.plan.activation_bytes
    assert act[0] > act[1] == act[2] < act[3]  # the embedding's dropout mask; the fp32 logits
    assert e.activation.peak[0] == pytest.approx(p * act[0], rel=1e-12)  # 1F1B: p in flight on device 0
    assert e.activation.peak[p - 1] == pytest.approx(act[p - 1], rel=1e-12)  # one on the last
    gp = estimate("gpt3-175b", "a100-80gb", Layout(tp=8, pp=p, gbs=m, schedule="gpipe"))
    assert gp.activation.peak[0] == pytest.approx(m * act[0], rel=1e-12)


def test_peak_against_capacity():
    e = estimate("gpt3-175b", "a100-40gb", Layout(tp=8, pp=8, vpp=3, gbs=64, schedule="interleaved-1f1b"))
    d = e.to_dict(ops=False)
    parts = [sum(x) for x in zip(d["weight_bytes"], d["grad_bytes"], d["optimizer_bytes"], d["peak_activation_bytes"])]
    assert d["peak_bytes"] == pytest.approx(parts, rel=1e-12)
    usable = 40 * 2**30 - 3 * 2**30  # an A100-40GB's 40,960 MiB less the 3 GiB reserve
    assert d["usable_bytes"] == usable and d["reserve_bytes"] == 3 * 2**30
    assert not d["fits"] and d["over_bytes"] == pytest.approx(max(d["peak_bytes"]) - usable)
    assert d["verdict"] == (
        f"does not fit by {d['over_bytes'] / 2**30:,.2f} GiB (device 0: peak {max(d['peak_bytes']) / 2**30:,.2f} GiB "
        "of 37.00 GiB usable = 40.00 GiB HBM − 3.00 GiB reserve)"
    )
    small = estimate("llama3-8b", "h100-sxm", Layout(tp=8, gbs=1))
    assert small.fits and small.verdict.startswith("fits: peak ")
    assert small.verdict.endswith("76.65 GiB usable = 79.65 GiB HBM − 3.00 GiB reserve (device 0, 48.06 GiB free)")


def test_throughput_breakdown_and_flops():
    lay = Layout(tp=2, pp=4, dp=2, gbs=32, schedule="zb-h1", recompute="selective", sequence_parallel=True, zero=1)
    e = estimate(model("llama3-8b", seq=4096), "h100-sxm", lay)
    assert e.tokens_per_s == pytest.approx(32 * 4096 / e.iteration_s)
    assert e.samples_per_s == pytest.approx(32 / e.iteration_s)
    assert sum(e.breakdown.values()) == pytest.approx(e.iteration_s, rel=1e-9)
    assert all(v >= 0 for v in e.breakdown.values())
    assert e.tflops_per_gpu == pytest.approx(e.mfu * 989)
    assert e.hfu == e.mfu  # flash attention: selective recompute recomputes nothing
    full = estimate(model("llama3-8b", seq=4096), "h100-sxm", dataclasses.replace(lay, recompute="full"))
    assert full.hfu > full.mfu


@pytest.mark.parametrize("schedule", ["1f1b", "interleaved-1f1b", "zb-v", "dualpipe"])
def test_the_p2p_share_is_what_p2p_adds_to_the_simulated_makespan(schedule):
    """The breakdown's p2p wait: the makespan less that of the same schedule simulated with p2p free
    (measured in full by ``api.evaluate``, which the breakdown skips for speed)."""
    lay = Layout(tp=8, pp=8, gbs=32, schedule=schedule, vpp=2 if schedule == "interleaved-1f1b" else 1)
    e = estimate("llama3-70b", "h100-sxm", lay)
    free = ppviz.evaluate(e.run.schedule, dataclasses.replace(e.costs, p2p=0.0, link_p2p=())).metrics.makespan
    assert e.p2p_s > 0 and e.breakdown["p2p_s"] == pytest.approx(e.makespan_s - free, rel=1e-12, abs=1e-15)
    assert 0 < e.breakdown["p2p_s"] < e.makespan_s


def test_schedule_speedups_show_in_seconds():
    lay = Layout(tp=8, pp=8, gbs=64, recompute="selective", sequence_parallel=True)
    t = {s: estimate("llama3-70b", "h100-sxm", dataclasses.replace(lay, schedule=s)).makespan_s
         for s in ("1f1b", "zb-h1", "zb-v")}  # fmt: skip
    assert t["zb-v"] < t["zb-h1"] < t["1f1b"]


def test_routed_experts_shard_over_dp_cp_over_ep():
    m = model("mixtral-8x7b", seq=4096)
    e = estimate(m, "h100-sxm", Layout(tp=2, dp=8, ep=4, gbs=8, zero=1))
    expert = e.expert_params_per_device[0]
    dense = e.params_per_device[0] - expert
    assert expert == pytest.approx(32 * 8 / 4 * 3 * m.hidden * m.expert_ffn / 2)
    d = e.to_dict(ops=False)
    assert d["optimizer_bytes"][0] == pytest.approx(12 * (dense / 8 + expert / 2), rel=1e-12)
    assert d["grad_bytes"][0] == pytest.approx(4 * (dense + expert), rel=1e-12)
    cp = estimate(m, "h100-sxm", Layout(tp=2, dp=4, cp=2, ep=4, gbs=4, zero=1))  # Megatron shards over dp·cp
    assert cp.to_dict(ops=False)["optimizer_bytes"][0] == pytest.approx(12 * (dense / 8 + expert / 2), rel=1e-12)


def test_figures_draw_an_estimate_in_ms_and_gib():
    from ppviz import figures

    e = estimate("llama3-8b", "h100-sxm", Layout(tp=8, pp=4, gbs=8, schedule="zb-h1"))
    mem = figures.to_plotly(figures.memory(e.run, **figures.gantt_kwargs(e), **figures.memory_kwargs(e)))
    tops = [max(tr.y) for tr in mem.data if tr.name and tr.name.startswith("device")]
    assert tops == pytest.approx((e.peak_bytes / 2**30).tolist(), rel=1e-6)
    assert mem.layout.xaxis.title.text == "time (ms)" and mem.layout.yaxis.title.text == "memory (GiB)"
    (band,) = [tr for tr in mem.data if tr.name and tr.name.startswith("reserve")]
    assert band.name == "reserve 3.00 GiB" and band.y == (79.6474609375,) * 2 and band.fill == "tonexty"
    gantt = figures.to_plotly(figures.gantt(e.run, **figures.gantt_kwargs(e)))
    assert gantt.layout.xaxis.title.text == "time (ms)"


# --- per-link latency in the simulator (what per-boundary p2p needs) -------------------------


def test_link_p2p_equal_links_match_the_scalar_latency():
    sched = ppviz.build("interleaved-1f1b", 4, 8, chunks=2)
    c = 0.25
    links = [[0.0 if a == b else c for b in range(4)] for a in range(4)]
    one = ppviz.evaluate(sched, ppviz.make_costs(p2p=c))
    many = ppviz.evaluate(sched, ppviz.Costs(link_p2p=links))
    assert (one.result.start == many.result.start).all()
    assert many.metrics.formula_makespan is None  # closed forms assume no latency


def test_link_p2p_one_microbatch_pays_each_boundary_twice():
    """One microbatch through p stages and back: Σ (f + b + w) + 2 Σ boundary latencies."""
    p = 4
    lat = [0.1, 0.7, 0.2]  # boundary s ↔ s+1
    links = [[0.0] * p for _ in range(p)]
    for s, x in enumerate(lat):
        links[s][s + 1] = links[s + 1][s] = x
    run = ppviz.evaluate(ppviz.build("1f1b", p, 1), ppviz.Costs(f=1, b=2, w=0, link_p2p=links))
    assert run.metrics.makespan == pytest.approx(p * 3 + 2 * sum(lat))


def test_link_p2p_is_checked():
    with pytest.raises(ValueError, match="must be square"):
        ppviz.Costs(link_p2p=[[0, 1], [1]])
    with pytest.raises(ValueError, match=r"link_p2p\[0\]\[1\]"):
        ppviz.Costs(link_p2p=[[0, -1], [1, 0]])
    with pytest.raises(ValueError, match="latencies for 2 devices, but there are 4"):
        ppviz.evaluate(ppviz.build("1f1b", 4, 4), ppviz.Costs(link_p2p=[[0, 1], [1, 0]]))


def test_each_pipeline_boundary_on_its_own_tier():
    """tp 2, pp 8, dp 1 on 8-GPU NVLink domains: stage ranks 0, 2, …, 14, so the boundary 3 ↔ 4
    crosses nodes and the other six stay on NVLink. One microbatch pays each boundary twice."""
    from ppviz.estimate.iteration import p2p_seconds

    g = gpu("h100-sxm")
    m = model("llama3-8b")
    e = estimate(m, g, Layout(tp=2, pp=8, gbs=1))
    size = 2 * m.seq * m.hidden / 2
    nv = g.nvlink_latency_s + size / (g.nvlink_bytes_per_s * g.nvlink_efficiency)
    net = g.network_latency_s + size / (g.network_bytes_per_s * g.network_efficiency)
    d = e.to_dict(ops=False)
    assert d["p2p_boundary_ms"] == pytest.approx([x * 1e3 for x in [nv] * 3 + [net] + [nv] * 3])
    assert d["p2p_ms"] == pytest.approx(net * 1e3)
    stage = sum(f + b + w for f, b, w in zip(e.plan.f, e.plan.b, e.plan.w))
    assert e.makespan_s == pytest.approx(stage + 2 * (6 * nv + net), rel=1e-12)
    assert p2p_seconds(m, g, e.layout, e.run.schedule.placement) == pytest.approx(nv)  # a bound on every crossing


def test_dp_sync_overlaps_the_last_backward_op_only():
    g = gpu("h100-sxm", network_bytes_per_s=2e9)  # a slow network, so some of the reduction shows
    m = model("llama3-8b")
    e = estimate(m, g, Layout(tp=8, dp=4, gbs=8))
    ar = C.all_reduce_s(4 * e.params_per_device[0], 4, 1, g)
    last_bw = e.plan.b[0] + e.plan.w[0]  # 1F1B on one stage ends with a full backward
    assert ar > last_bw
    assert e.dp_sync_s == pytest.approx(ar - last_bw, rel=1e-9)


def test_context_parallel_splits_the_sequence():
    m = model("llama3-8b")
    one = estimate(m, "h100-sxm", Layout(tp=8, cp=1, gbs=2))
    two = estimate(m, "h100-sxm", Layout(tp=8, cp=2, gbs=2))
    a, b = one.layer_times_s(), two.layer_times_s()
    assert b.activation_bytes == pytest.approx(a.activation_bytes / 2, rel=1e-12)  # flash: no s² terms
    assert b.f.flops == pytest.approx(a.f.flops / 2, rel=1e-12)  # half the queries, every key
    # K and V are all-gathered over cp behind the attention kernel: hidden on NVLink, not on a slow link
    fast = estimate(m, "h100-sxm", Layout(cp=2, gbs=1)).layer_times_s()
    slow = estimate(m, gpu("h100-sxm", nvlink_bytes_per_s=1e9), Layout(cp=2, gbs=1)).layer_times_s()
    assert fast.f.comm_s == 0 < slow.f.comm_s
    assert two.model_flops == pytest.approx(one.model_flops, rel=1e-12)
    assert two.layout.gpus == 16 and two.tokens_per_s == pytest.approx(2 * 8192 / two.iteration_s)


def test_pair_overlap_hides_the_moe_all_to_all_in_overlapped_pairs():
    from ppviz.estimate.iteration import pair_overlap

    moe = model("deepseek-v3", layers=32, dense_layers=0, seq=4096)
    base = Layout(tp=1, pp=4, dp=8, ep=8, gbs=64, zero=1, schedule="dualpipe")
    plain = estimate(moe, "h100-sxm", base)
    hid = estimate(moe, "h100-sxm", dataclasses.replace(base, pair_overlap=True))
    pl = hid.plan
    s = 1  # a middle stage: its layers only
    hidden = min(pl.a2a[0, s], pl.b[s] - pl.comm[1, s]) + min(pl.a2a[1, s], pl.f[s] - pl.comm[0, s])
    assert hidden > 0 and 1 - hidden / (pl.f[s] + pl.b[s] + pl.w[s]) <= pair_overlap(pl) < 1
    assert hid.costs.overlap == pair_overlap(pl) and hid.makespan_s < plain.makespan_s
    one = dataclasses.replace(base, schedule="1f1b")  # no pairs: nothing changes
    assert estimate(moe, "h100-sxm", dataclasses.replace(one, pair_overlap=True)).makespan_s == pytest.approx(
        estimate(moe, "h100-sxm", one).makespan_s, rel=1e-12
    )
    dense = estimate("llama3-8b", "h100-sxm", Layout(tp=8, pp=4, gbs=8, schedule="dualpipe", pair_overlap=True))
    assert dense.costs.overlap == 1.0
