"""ZeRO-3 is timed: each layer's bf16 parameters are all-gathered over the DP group before F and
again before B, its fp32 gradients reduce-scattered after W, every microbatch, prefetched behind
the layer's own op so only the excess is exposed (closed forms below)."""

import numpy as np
import pytest

from ppviz.estimate import Layout, estimate, gpu, model
from ppviz.estimate import layer as L
from ppviz.estimate.iteration import GRAD_B, WEIGHT_B, shape_of

M = model("llama3-8b", seq=2048)
H100 = gpu("h100-sxm")


def lay(**kw):
    base = dict(tp=8, pp=2, dp=2, mbs=1, gbs=8, schedule="1f1b", sequence_parallel=True, recompute="selective")
    return Layout(**{**base, **kw})


def test_gather_and_reduce_scatter_closed_form():
    """tp 8 fills the 8-GPU NVLink domain, so the dp-2 group crosses the network once:
    all-gather of S bytes = S/2 / (network × efficiency) + one network latency; the same for the
    reduce-scatter. F and B carry the gather, W the reduce-scatter, beyond the layer's own op."""
    e0, e3 = estimate(M, H100, lay(zero=1)), estimate(M, H100, lay(zero=3))
    part = L.layer(M, H100, shape_of(lay()), False)
    bnet = H100.network_bytes_per_s * H100.network_efficiency
    gather = WEIGHT_B * part.params / 2 / bnet + H100.network_latency_s
    scatter = GRAD_B * part.params / 2 / bnet + H100.network_latency_s
    n = 16  # layers per stage; stage 0 also holds the embedding, stage 1 the head (checked on their own below)
    per_layer = np.array([max(0, gather - part.f.s), max(0, gather - part.b.s), max(0, scatter - part.w.s)])
    assert per_layer.sum() > 0
    emb = L.embedding(M, H100, shape_of(lay()))
    g_emb = WEIGHT_B * emb.params / 2 / bnet + H100.network_latency_s
    s_emb = GRAD_B * emb.params / 2 / bnet + H100.network_latency_s
    stage0 = n * per_layer + [max(0, g_emb - emb.f.s), max(0, g_emb - emb.b.s), max(0, s_emb - emb.w.s)]
    assert e3.plan.zero3[:, 0] == pytest.approx(stage0, rel=1e-12)
    for k, times in enumerate(("f", "b", "w")):
        got = np.array(getattr(e3.plan, times)) - np.array(getattr(e0.plan, times))
        assert got == pytest.approx(e3.plan.zero3[k], rel=1e-9, abs=1e-15)
    assert e0.plan.zero3.sum() == 0


def test_no_end_of_iteration_sync_and_breakdown_sums():
    e1, e3 = estimate(M, H100, lay(zero=1)), estimate(M, H100, lay(zero=3))
    assert e1.dp_sync_s > 0 and e3.dp_sync_s == 0  # untied embeddings: nothing left after the last W
    assert e3.makespan_s > e1.makespan_s
    assert sum(e3.breakdown.values()) == pytest.approx(e3.iteration_s, rel=1e-9)
    assert e3.breakdown["zero3_comm_s"] > 0 and e1.breakdown["zero3_comm_s"] == 0
    assert e3.breakdown["compute_s"] == pytest.approx(e1.breakdown["compute_s"], rel=1e-9)


def test_hidden_when_the_network_is_fast_and_free_without_dp():
    fast = gpu("h100-sxm", network_bytes_per_s=1e16, network_latency_s=0.0)
    assert estimate(M, fast, lay(zero=3)).plan.zero3.sum() == 0  # every gather behind its layer's op
    assert estimate(M, fast, lay(zero=3)).makespan_s == estimate(M, fast, lay(zero=0)).makespan_s
    solo = lay(zero=3, dp=1, gbs=4)
    assert estimate(M, H100, solo).makespan_s == estimate(M, H100, lay(zero=0, dp=1, gbs=4)).makespan_s


def test_memory_still_divided():
    e3 = estimate(M, H100, lay(zero=3))
    e0 = estimate(M, H100, lay(zero=0))
    assert e3.static_bytes["weight"] == pytest.approx(e0.static_bytes["weight"] / 2)
