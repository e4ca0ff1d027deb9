"""Real units against published figures: Korthikanti et al. 2022 (arXiv:2205.05198) Table 2 and
Figure 1 exactly, Tables 4 and 5 within 10%, with one set of efficiency parameters (the A100-80GB
preset's defaults). H100: the matmul efficiency fitted on NVIDIA's published BF16 step times, and
held-out runs (Llama 3 405B, arXiv:2407.21783 Table 4) within stated tolerances."""

from dataclasses import replace

import pytest

from ppviz.estimate import Layout, estimate, gpu, model
from ppviz.estimate import calibration as cal

GIB = 2**30
A100 = gpu("a100-80gb")


def sbh(m, b=1):
    return m.seq * b * m.hidden


# --- Table 2: activation bytes per layer, one microbatch ------------------------------------


@pytest.mark.parametrize(
    "tp, sp, recompute, formula",
    [
        (1, False, "none", lambda s, b, h, a, t: s * b * h * (34 + 5 * a * s / h)),
        (8, False, "none", lambda s, b, h, a, t: s * b * h * (10 + 24 / t + 5 * a * s / (h * t))),
        (8, True, "none", lambda s, b, h, a, t: s * b * h * (34 + 5 * a * s / h) / t),
        (8, False, "selective", lambda s, b, h, a, t: s * b * h * (10 + 24 / t)),
        (8, True, "selective", lambda s, b, h, a, t: 34 * s * b * h / t),
        (1, False, "full", lambda s, b, h, a, t: 2 * s * b * h),
        (8, True, "full", lambda s, b, h, a, t: 2 * s * b * h / t),
    ],
)
def test_table2_activation_per_layer(tp, sp, recompute, formula):
    m = model("megatron-22b")
    e = estimate(m, A100, Layout(tp=tp, mbs=4, gbs=4, sequence_parallel=sp, recompute=recompute))
    expected = formula(m.seq, 4, m.hidden, m.heads, tp)
    assert e.to_dict(ops=False)["activation_bytes_per_layer"] == pytest.approx(expected, rel=1e-12)


def test_flash_attention_drops_the_s2_terms_and_no_dropout_drops_the_masks():
    m = model("megatron-22b", flash_attention=True)
    e = estimate(m, A100, Layout(tp=8, mbs=4, gbs=4))
    assert e.layer_times_s().activation_bytes == pytest.approx(sbh(m, 4) * (10 + 24 / 8), rel=1e-12)
    m = model("megatron-22b", flash_attention=True, dropout=False)
    e = estimate(m, A100, Layout(tp=8, mbs=4, gbs=4))
    assert e.layer_times_s().activation_bytes == pytest.approx(sbh(m, 4) * (8 + 24 / 8), rel=1e-12)


# --- Figure 1: activation memory of the first device, from the simulated schedule ------------

FIGURE1 = [
    # model, tp, pp, vpp, mbs, gbs, GiB without recompute (TP only), GiB with SP + selective
    ("megatron-22b", 8, 1, 1, 4, 4, 59.25, 9.5625),
    ("gpt3-175b", 8, 8, 3, 1, 64, 66.84, 12.35),
    ("megatron-530b", 8, 35, 3, 1, 280, 114.02, 23.08),
    ("megatron-1t", 8, 64, 1, 1, 512, 131.25, 26.56),
]


@pytest.mark.parametrize("name, tp, pp, vpp, mbs, gbs, plain_gib, sp_sel_gib", FIGURE1)
def test_figure1_activation_gib(name, tp, pp, vpp, mbs, gbs, plain_gib, sp_sel_gib):
    sched = "interleaved-1f1b" if vpp > 1 else "1f1b"
    for sp, rec, expected in ((False, "none", plain_gib), (True, "selective", sp_sel_gib)):
        lay = Layout(tp=tp, pp=pp, vpp=vpp, mbs=mbs, gbs=gbs, sequence_parallel=sp, recompute=rec, schedule=sched)
        e = estimate(name, A100, lay)
        got = e.layer_activation.peak[0] / GIB
        assert round(got, 2) == round(expected, 2), (name, sp, got)
        # the in-flight count is the simulated schedule's: p device shares on device 0 under 1F1B,
        # p(1 + (p-1)/(p·v)) under interleaving (Korthikanti §4.2.3)
        per_device_share = e.plan.layer_activation_bytes[0] * vpp
        in_flight = pp if vpp == 1 else pp * (1 + (pp - 1) / (pp * vpp))
        assert e.layer_activation.peak[0] / per_device_share == pytest.approx(in_flight, rel=1e-12)


def test_figure1_22b_exact():
    e = estimate("megatron-22b", A100, Layout(tp=8, mbs=4, gbs=4))
    assert e.layer_activation.peak[0] / GIB == 59.25
    e = estimate("megatron-22b", A100, Layout(tp=8, mbs=4, gbs=4, sequence_parallel=True, recompute="selective"))
    assert e.layer_activation.peak[0] / GIB == 9.5625


def test_parameters_and_optimizer_45_56_gib():
    """18 bytes × 12h² × (L/p) / t = 45.56 GiB for 22B (p 1) and 175B (p 8). ppviz also counts the
    biases and LayerNorms ((7h)/t split + 6h replicated per layer), 0.07% more."""
    for name, pp, vpp, gbs in (("megatron-22b", 1, 1, 4), ("gpt3-175b", 8, 3, 64)):
        sched = "interleaved-1f1b" if vpp > 1 else "1f1b"
        e = estimate(name, A100, Layout(tp=8, pp=pp, vpp=vpp, mbs=4 if pp == 1 else 1, gbs=gbs, schedule=sched))
        d = e.to_dict(ops=False)
        h = e.model.hidden
        assert d["bytes_per_param"] == 18
        assert d["params_per_layer"] == (12 * h * h + 7 * h) / 8 + 6 * h
        layers_per_device = e.model.layers // pp
        layers_gib = 18 * d["params_per_layer"] * layers_per_device / GIB
        assert layers_gib == pytest.approx(45.56, rel=1e-3)
        if pp > 1:  # a middle device holds layers only
            mid = 3
            static = d["weight_bytes"][mid] + d["grad_bytes"][mid] + d["optimizer_bytes"][mid]
            assert static / GIB == pytest.approx(layers_gib, rel=1e-12)


# --- Table 4: per-layer times of the 22B model (t 8, b 4), forward / backward ms -------------

TABLE4 = [
    ("none", False, 7.7, 11.9),
    ("none", True, 7.2, 11.8),
    ("full", False, 7.7, 19.5),
    ("selective", False, 7.7, 13.2),
    ("selective", True, 7.2, 13.1),
]


@pytest.mark.parametrize("recompute, sp, fwd_ms, bwd_ms", TABLE4)
def test_table4_layer_times_within_10_percent(recompute, sp, fwd_ms, bwd_ms):
    e = estimate("megatron-22b", A100, Layout(tp=8, mbs=4, gbs=4, recompute=recompute, sequence_parallel=sp))
    ms = e.to_dict(ops=False)["layer_ms"]
    assert ms["f"] == pytest.approx(fwd_ms, rel=0.10)
    assert ms["b"] + ms["w"] == pytest.approx(bwd_ms, rel=0.10)


# --- Table 5: iteration times, full recompute → SP + selective ------------------------------

TABLE5 = [
    ("megatron-22b", 8, 1, 1, 4, 4, 1.42, 1.10),
    ("gpt3-175b", 8, 8, 3, 1, 64, 18.13, 13.75),
    ("megatron-530b", 8, 35, 3, 1, 280, 49.05, 37.83),
    ("megatron-1t", 8, 64, 1, 1, 512, 94.42, 71.49),
]


@pytest.mark.parametrize("name, tp, pp, vpp, mbs, gbs, full_s, sp_sel_s", TABLE5)
def test_table5_iteration_within_10_percent(name, tp, pp, vpp, mbs, gbs, full_s, sp_sel_s):
    sched = "interleaved-1f1b" if vpp > 1 else "1f1b"
    for rec, sp, expected in (("full", False, full_s), ("selective", True, sp_sel_s)):
        lay = Layout(tp=tp, pp=pp, vpp=vpp, mbs=mbs, gbs=gbs, recompute=rec, sequence_parallel=sp, schedule=sched)
        e = estimate(name, A100, lay)
        assert e.iteration_s == pytest.approx(expected, rel=0.10), (name, rec, e.iteration_s)
        assert e.run.schedule.stages == pp * vpp
        # model FLOPs are eq. 7's 72·B·L·s·h²·(1 + s/(6h) + V/(12hL)); selective recompute runs the
        # attention core's forward (4·b·s²·h a layer) again, which HFU counts
        m = e.model
        eq7 = (
            72
            * gbs
            * m.layers
            * m.seq
            * m.hidden**2
            * (1 + m.seq / (6 * m.hidden) + m.vocab / (12 * m.hidden * m.layers))
        )
        assert e.model_flops == pytest.approx(eq7, rel=1e-12)
        if rec == "selective":
            extra = 4 * gbs * m.seq**2 * m.hidden * m.layers
            assert e.hfu / e.mfu == pytest.approx(1 + extra / eq7, rel=1e-12)


# --- H100: the matmul efficiency fitted on NVIDIA's published BF16 step times, checked on held-out runs ---


H100 = gpu("h100-sxm")


def test_h100_preset_is_the_fit_and_a100_keeps_its_own():
    """The preset's matmul efficiency is the least mean |error| over H100_FIT on the 0.01 grid (checked
    against its neighbours; `python -m ppviz.estimate.calibration --fit` scans the whole grid)."""
    x = H100.matmul_efficiency
    assert x in cal.FIT_GRID
    here = cal.mean_abs_error(x)
    assert here <= cal.mean_abs_error(round(x - 0.01, 2)) and here <= cal.mean_abs_error(round(x + 0.01, 2))
    assert gpu("h200").matmul_efficiency == x  # the same GH100 die
    assert A100.matmul_efficiency == 0.75  # the A100 fit (Tables 4 and 5 above) is untouched


@pytest.mark.parametrize("case", cal.H100_FIT, ids=lambda c: c.label)
def test_h100_fit_cases_within_10_percent(case):
    assert abs(case.error(H100)) <= 0.10, (case.label, case.ppviz(H100))


# Stated tolerances of the held-out runs: 10% (NVIDIA's recipes, the TP-8 405B one included now that
# their overlapped TP collectives are modelled, as their configs run them: +7.8%), except Llama 3's two
# Table 4 rows (TFLOP/s per GPU as ppviz counts FLOPs), 12%: the paper does not say whether its TP
# collectives overlap the GEMMs, ppviz takes them as serial, and the two readings bracket the published
# figures (-6% / -11% serial, +10% / +4% overlapped; tested below).
def held_out_tolerance(case) -> float:
    return 0.12 if case.source == cal.LLAMA3 else 0.10


@pytest.mark.parametrize("case", cal.H100_HELD_OUT, ids=lambda c: c.label)
def test_h100_held_out_within_stated_tolerance(case):
    assert abs(case.error(H100)) <= held_out_tolerance(case), (case.label, case.ppviz(H100))


@pytest.mark.parametrize("case", cal.H100_HELD_OUT[:2], ids=lambda c: c.label)
def test_llama3_published_tflops_between_serial_and_overlapped_tp(case):
    """Meta does not publish whether its TP collectives overlap the GEMMs: serial TP (the table's
    assumption) gives fewer TFLOP/s than published, the recipes' overlap more."""
    assert not case.layout.tp_comm_overlap
    over = replace(case, layout=replace(case.layout, tp_comm_overlap=True))
    assert case.ppviz(H100) < case.published < over.ppviz(H100)


def test_recipes_run_under_their_own_overlap_flag():
    """ub_tp_comm_overlap is true in NVIDIA's GPT-3 175B, Llama 3.1 70B and 405B configs (TP 4 and 8,
    sequence parallel) and false in the 8B's (TP 1)."""
    for case in cal.H100_FIT + cal.H100_HELD_OUT[2:]:
        assert case.layout.tp_comm_overlap == (case.layout.tp > 1), case.label


def test_llama3_405b_published_layout_as_published():
    """TP 8, CP 1, PP 16, DP 64 / 128 on 8,192 / 16,384 GPUs, 2,048 sequences of 8,192 (16M tokens),
    one layer fewer on the first and last stage (arXiv:2407.21783 Table 4 and §3.3.2)."""
    for case, gpus in zip(cal.H100_HELD_OUT[:2], (8192, 16384)):
        lay = case.layout
        assert (lay.tp, lay.cp, lay.pp, lay.gpus, lay.global_batch * 8192) == (8, 1, 16, gpus, 16 * 2**20)
        e = estimate("llama3-405b", H100, lay)
        assert e.plan.layers[0] == e.plan.layers[-1] == min(e.plan.layers) < max(e.plan.layers)


@pytest.mark.parametrize("name, tp, pp, vpp, mbs, gbs, full_s, sp_sel_s", TABLE5)
def test_table5_mfu_and_hfu_within_10_percent(name, tp, pp, vpp, mbs, gbs, full_s, sp_sel_s):
    """Table 5's published MFU and HFU (SP + selective), each within 10% of its own value."""
    sched = "interleaved-1f1b" if vpp > 1 else "1f1b"
    lay = Layout(tp=tp, pp=pp, vpp=vpp, mbs=mbs, gbs=gbs, recompute="selective", sequence_parallel=True, schedule=sched)
    e = estimate(name, A100, lay)
    assert e.mfu * 100 == pytest.approx(cal.MFU[name], rel=0.10)
    assert e.hfu * 100 == pytest.approx(cal.HFU[name], rel=0.10)
