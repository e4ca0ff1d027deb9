"""Every registered schedule on a grid, then the closed forms of issue 2's classic and looped schedules.

Expected numbers are computed here from the published formulas, never copied from a run.
"""

from __future__ import annotations

import pytest
from checks import assert_valid, schedule_kwargs

import ppviz
from ppviz import ScheduleError

DEVICES = (1, 2, 3, 4, 8)
MICROBATCHES = (1, 2, 3, 4, 8, 16)
CHUNKS = (1, 2, 3)
COSTS = {
    "uniform": {},
    "slow-b": {"b": 2.0},
    "latency": {"p2p": 0.5},
    "heavy-last": "heavy",  # the last device share of the model does (2, 3, 2) instead of (1, 1, 1)
}


def _grid_run(name: str, p: int, m: int, v: int, setting):
    """Build once, then simulate under the setting (the heavy share is the model's last 1/p)."""
    schedule = ppviz.build(name, p, m, **schedule_kwargs(ppviz.REGISTRY[name], v))
    if setting == "heavy":
        setting = {"stage_times": {schedule.devices - 1: (2.0, 3.0, 2.0)}}
    return ppviz.evaluate(schedule, ppviz.make_costs(**setting))


@pytest.mark.parametrize("setting", list(COSTS))
@pytest.mark.parametrize("name", list(ppviz.REGISTRY))
def test_every_schedule_is_valid_or_refused_cleanly_on_the_grid(name, setting):
    """Each (p, m, v) is a valid timed schedule, or a ValueError naming the parameter to change.

    A ScheduleError would mean the generator built a bad order, so it fails the test. Where the
    registry has a closed form for these sizes, it equals the simulated makespan.
    """
    spec = ppviz.REGISTRY[name]
    words = {"devices", "microbatches", "chunks", *(q.name for q in spec.params)}
    valid = 0
    for p in DEVICES:
        for m in MICROBATCHES:
            for v in CHUNKS if spec.param("chunks") is not None else (1,):
                where = f"{name} p={p} m={m} v={v} {setting}"
                try:
                    run = _grid_run(name, p, m, v, COSTS[setting])
                except ScheduleError as e:
                    pytest.fail(f"{where}: the generator built an invalid order: {e}")
                except ValueError as e:
                    assert any(word in str(e) for word in words), f"{where}: {e} names no parameter"
                    continue
                try:
                    assert_valid(run)
                except AssertionError as e:
                    raise AssertionError(f"{where}: {e}") from None
                formula = run.metrics.formula_makespan
                if formula is not None:
                    assert formula == pytest.approx(run.metrics.makespan), f"{where}: closed form"
                valid += 1
    assert valid, f"{name}: no size of the grid is valid"


# --- GPipe and 1F1B -------------------------------------------------------------------------

MIXES = [(1.0, 1.0, 1.0), (1.0, 2.0, 1.0), (2.0, 3.0, 1.0), (1.0, 1.0, 0.0), (0.5, 1.0, 1.5), (3.0, 1.0, 2.0)]
SIZES = [(1, 1), (1, 5), (2, 1), (3, 2), (4, 3), (4, 4), (4, 9), (8, 3), (8, 16), (5, 7)]


@pytest.mark.parametrize("fbw", MIXES)
@pytest.mark.parametrize(("p", "m"), SIZES)
@pytest.mark.parametrize("name", ["gpipe", "1f1b"])
def test_gpipe_and_1f1b_makespan_is_m_plus_p_minus_1_slots(name, p, m, fbw):
    """(m+p−1)(f+b+w) at latency 0, also when m < p; the registry's closed form agrees."""
    f, b, w = fbw
    run = ppviz.simulate(name, p, m, f=f, b=b, w=w)
    assert_valid(run)
    expected = (m + p - 1) * (f + b + w)
    assert run.metrics.makespan == pytest.approx(expected)
    assert run.metrics.formula_makespan == pytest.approx(expected)


@pytest.mark.parametrize(("p", "m"), SIZES)
def test_1f1b_peak_on_device_i_is_min_p_minus_i_and_m(p, m):
    """1F1B keeps at most p−i microbatches in flight on device i (fewer if m is smaller)."""
    run = ppviz.simulate("1f1b", p, m, f=1, b=2, w=1)
    assert run.metrics.peak_activation == [min(p - i, m) for i in range(p)]


@pytest.mark.parametrize(("p", "m"), SIZES)
def test_gpipe_peak_is_m_on_every_device(p, m):
    """GPipe stores every microbatch's activation before the first backward."""
    assert ppviz.simulate("gpipe", p, m).metrics.peak_activation == [m] * p


@pytest.mark.parametrize(("p", "m"), SIZES)
def test_eager_1f1b_peak_is_its_warm_up_plus_one(p, m):
    """Eager 1F1B warms up 2(p−i−1) forwards, so device i holds min(2(p−i−1)+1, m)."""
    run = ppviz.simulate("eager-1f1b", p, m)
    assert_valid(run)
    assert run.metrics.peak_activation == [min(2 * (p - i - 1) + 1, m) for i in range(p)]


def test_eager_1f1b_is_never_slower_than_1f1b_with_latency():
    """Its extra warm-up forwards exist to hide p2p latency."""
    for p, m in [(4, 8), (8, 16)]:
        eager = ppviz.simulate("eager-1f1b", p, m, p2p=0.5).metrics.makespan
        plain = ppviz.simulate("1f1b", p, m, p2p=0.5).metrics.makespan
        assert eager <= plain


# --- PipeDream-2BW --------------------------------------------------------------------------


@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize(("p", "m"), [(1, 2), (2, 2), (3, 4), (4, 8)])
@pytest.mark.parametrize("fbw", MIXES[:3])
def test_1f1b_2bw_runs_k_iterations_without_a_flush(p, m, k, fbw):
    """k iterations back to back: (k·m+p−1)(f+b+w), one fill and one drain in all."""
    f, b, w = fbw
    run = ppviz.simulate("1f1b-2bw", p, m, iterations=k, f=f, b=b, w=w)
    assert_valid(run)
    assert run.schedule.microbatches == k * m
    expected = (k * m + p - 1) * (f + b + w)
    assert run.metrics.makespan == pytest.approx(expected)
    assert run.metrics.formula_makespan == pytest.approx(expected)
    assert run.metrics.peak_activation == [p - i for i in range(p)]


def test_1f1b_2bw_needs_a_full_pipeline_per_iteration():
    """m < p is refused with a message naming microbatches and devices."""
    with pytest.raises(ValueError, match="microbatches ≥ devices"):
        ppviz.simulate("1f1b-2bw", 4, 3)


# --- iterations: flushes (GPipe, 1F1B, eager 1F1B) and no flush (2BW, eager 2BW) ----------------

FLUSHED = ["gpipe", "1f1b", "eager-1f1b"]


def _iteration_bounds(run, m: int, k: int) -> list[tuple[float, float, float]]:
    """Per iteration: (first forward start, last backward end, last op end) over all devices."""
    res = run.result
    out = []
    for i in range(k):
        mine = (res.microbatch // m) == i
        fwd = mine & (res.kind == 0)
        out.append(
            (float(res.start[fwd].min()), float(res.end[mine & (res.kind != 0)].max()), float(res.end[mine].max()))
        )
    return out


@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize(("p", "m"), [(1, 3), (2, 2), (3, 2), (4, 4), (4, 9), (5, 7)])
@pytest.mark.parametrize("fbw", MIXES[:4])
@pytest.mark.parametrize("name", FLUSHED)
def test_flushed_schedules_run_k_iterations_in_k_times_m_plus_p_minus_1_slots(name, p, m, k, fbw):
    """With a flush each iteration is a whole pipeline fill and drain: k·(m+p−1)(f+b+w)."""
    f, b, w = fbw
    run = ppviz.simulate(name, p, m, iterations=k, f=f, b=b, w=w)
    assert_valid(run)
    assert run.schedule.microbatches == k * m
    expected = k * (m + p - 1) * (f + b + w)
    assert run.metrics.makespan == pytest.approx(expected)
    assert run.metrics.formula_makespan == pytest.approx(expected)
    one = ppviz.simulate(name, p, m, f=f, b=b, w=w).metrics
    assert run.metrics.peak_activation == one.peak_activation  # a flush frees everything


@pytest.mark.parametrize("name", FLUSHED)
@pytest.mark.parametrize("p2p", [0.0, 0.5])
def test_the_next_iteration_starts_after_every_stages_last_backward(name, p2p):
    """The flush: the next iteration's first forward on any stage starts no earlier than the
    previous iteration's last backward on every stage ends; so with latency too, k iterations
    take exactly k times one iteration."""
    p, m, k = 4, 6, 3
    run = ppviz.simulate(name, p, m, iterations=k, b=2, p2p=p2p)
    bounds = _iteration_bounds(run, m, k)
    for (_, last_back, _), (next_first, _, _) in zip(bounds, bounds[1:]):
        assert next_first >= last_back
        assert next_first == pytest.approx(last_back)  # device 0 starts at once: its last BW ends last
    one = ppviz.simulate(name, p, m, b=2, p2p=p2p).metrics.makespan
    assert run.metrics.makespan == pytest.approx(k * one)


def test_a_1f1b_iteration_is_the_first_one_shifted():
    """Every op of iteration i starts i·T later than the same op of iteration 0 (T: one iteration)."""
    p, m, k = 4, 5, 3
    run = ppviz.simulate("1f1b", p, m, iterations=k, f=1, b=2, w=1)
    res, period = run.result, (m + p - 1) * 4
    base = {(d, s, mb, kd): t for d, s, mb, kd, t in zip(res.device, res.stage, res.microbatch, res.kind, res.start)}
    for d, s, mb, kd, t in zip(res.device, res.stage, res.microbatch, res.kind, res.start):
        assert t == base[d, s, mb % m, kd] + (mb // m) * period


@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize(("p", "m"), [(1, 2), (2, 3), (3, 4), (4, 6), (4, 8), (5, 9)])
@pytest.mark.parametrize("fbw", MIXES[:3])
def test_eager_1f1b_2bw_runs_k_iterations_without_a_flush(p, m, k, fbw):
    """(k·m+p−1)(f+b+w) once m ≥ 2(p−1); eager warm-up min(2(p−i−1), m), plus one in flight
    (at most all k·m); two weight versions."""
    f, b, w = fbw
    run = ppviz.simulate("eager-1f1b-2bw", p, m, iterations=k, f=f, b=b, w=w)
    assert_valid(run)
    assert run.schedule.microbatches == k * m
    expected = (k * m + p - 1) * (f + b + w)
    assert run.metrics.makespan == pytest.approx(expected)
    assert run.metrics.formula_makespan == pytest.approx(expected)
    assert run.metrics.peak_activation == [min(min(2 * (p - i - 1), m) + 1, k * m) for i in range(p)]
    assert run.metrics.parameters == [2.0] * p


def test_eager_1f1b_2bw_with_a_short_iteration_has_no_closed_form_but_stays_valid():
    """m < 2(p−1): the warm-up is capped at m on several devices, which then wait on each other."""
    run = ppviz.simulate("eager-1f1b-2bw", 5, 6, iterations=2)
    assert_valid(run)
    assert run.metrics.formula_makespan is None
    assert run.metrics.makespan > (2 * 6 + 5 - 1) * 3


@pytest.mark.parametrize("m", [1, 3, 4])
def test_eager_1f1b_2bw_needs_more_microbatches_than_devices(m):
    """The seed's assertion: no flush with an eager warm-up needs p < m per iteration."""
    with pytest.raises(ValueError, match=f"microbatches > devices per iteration.*got {m} microbatches with 4"):
        ppviz.simulate("eager-1f1b-2bw", 4, m, iterations=2)


@pytest.mark.parametrize("name", ["1f1b-2bw", "eager-1f1b-2bw"])
def test_no_flush_lets_the_next_iteration_start_before_the_last_backward(name):
    """Without a flush, iteration 1's forwards start while iteration 0 is still draining."""
    run = ppviz.simulate(name, 4, 8, iterations=2)
    (_, last_back, _), (next_first, _, _) = _iteration_bounds(run, 8, 2)
    assert next_first < last_back


# The seed notebook's own examples: 4 stages, 2 iterations, batch 64/32/16/8 with micro-batch 8
# (m = 8, 4, 2, 1), forward 1 and full backward 2 (b = 2, w = 0 here); its 2BW examples are
# 2 iterations of batch 64 and 4 iterations of batch 32; eager + 2BW: 2 and 4 iterations of 64.
SEED_FLUSHED = [(name, batch) for name in FLUSHED for batch in (64, 32, 16, 8)]


@pytest.mark.parametrize(("name", "batch"), SEED_FLUSHED)
def test_seed_notebook_flushed_examples(name, batch):
    p, k, m = 4, 2, batch // 8
    run = ppviz.simulate(name, p, m, iterations=k, f=1, b=2, w=0)
    assert_valid(run)
    assert run.metrics.makespan == k * (m + p - 1) * 3  # 66, 42, 30, 24
    bounds = _iteration_bounds(run, m, k)
    assert bounds[1][0] == bounds[0][1] == (m + p - 1) * 3


@pytest.mark.parametrize(
    ("name", "batch", "k", "makespan"),
    [("1f1b-2bw", 64, 2, 57), ("1f1b-2bw", 32, 4, 57), ("eager-1f1b-2bw", 64, 2, 57), ("eager-1f1b-2bw", 64, 4, 105)],
)
def test_seed_notebook_no_flush_examples(name, batch, k, makespan):
    """(k·m + p − 1)·3 with p = 4: one fill and one drain for all k iterations."""
    m = batch // 8
    run = ppviz.simulate(name, 4, m, iterations=k, f=1, b=2, w=0)
    assert_valid(run)
    assert run.metrics.makespan == makespan == (k * m + 4 - 1) * 3


# --- ZB-H1 ----------------------------------------------------------------------------------

# The closed form m(f+b+w) + (p−1)(f+b−w) is exact iff p = 1, or w = 0, or (m ≥ p and w ≤ min(f, b)):
# device i defers i W's, and they fill the bubbles only if a W fits in the gap a forward or a
# backward leaves. Found by sweeping p = 2..8, m = 1..3p, f, b, w ∈ {0, .5, 1, 1.5, 2, 3}
# (22,680 cases, no exception) and 3,000 random real-valued cases.
ZB_FITS = [(1.0, 1.0, 1.0), (1.0, 2.0, 1.0), (2.0, 1.0, 1.0), (2.0, 3.0, 1.5), (1.0, 1.0, 0.5), (3.0, 2.0, 2.0)]
ZB_SPILLS = [(0.5, 1.0, 1.0), (1.0, 0.5, 1.0), (1.0, 1.0, 2.0), (2.0, 1.0, 1.5), (1.0, 3.0, 1.5)]


def _zb_h1(p, m, f, b, w):
    return m * (f + b + w) + (p - 1) * (f + b - w)


@pytest.mark.parametrize("fbw", ZB_FITS)
@pytest.mark.parametrize(("p", "m"), [(2, 2), (2, 5), (3, 3), (4, 4), (4, 9), (8, 8), (8, 16), (5, 12)])
def test_zb_h1_makespan_when_m_at_least_p_and_w_at_most_f_and_b(p, m, fbw):
    """ZB-H1's published bubble (p−1)(f+b−w) holds exactly when the deferred W's fit."""
    run = ppviz.simulate("zb-h1", p, m, f=fbw[0], b=fbw[1], w=fbw[2])
    assert_valid(run)
    assert run.metrics.makespan == pytest.approx(_zb_h1(p, m, *fbw))
    assert run.metrics.formula_makespan == pytest.approx(_zb_h1(p, m, *fbw))


@pytest.mark.parametrize("fbw", ZB_SPILLS)
@pytest.mark.parametrize(("p", "m"), [(2, 2), (3, 6), (4, 4), (8, 16)])
def test_zb_h1_is_slower_than_its_formula_when_w_exceeds_f_or_b(p, m, fbw):
    """A W longer than a forward or a backward overflows its bubble: no closed form is claimed."""
    run = ppviz.simulate("zb-h1", p, m, f=fbw[0], b=fbw[1], w=fbw[2])
    assert run.metrics.makespan > _zb_h1(p, m, *fbw) + 1e-9
    assert run.metrics.formula_makespan is None


@pytest.mark.parametrize(("p", "m"), [(3, 2), (4, 1), (8, 5)])
def test_zb_h1_with_fewer_microbatches_than_devices_has_no_closed_form(p, m):
    """With m < p the pipeline never fills and the formula undercounts."""
    run = ppviz.simulate("zb-h1", p, m)
    assert run.metrics.makespan > _zb_h1(p, m, 1, 1, 1)
    assert run.metrics.formula_makespan is None


@pytest.mark.parametrize(("p", "m"), [(1, 4), (3, 2), (4, 6)])
def test_zb_h1_formula_is_exact_for_one_device_or_free_w(p, m):
    """The degenerate cases: one device has no bubble; with w = 0 it is 1F1B's (m+p−1)(f+b)."""
    for f, b, w in [(1.0, 2.0, 0.0)] + ([(1.0, 1.0, 3.0)] if p == 1 else []):
        run = ppviz.simulate("zb-h1", p, m, f=f, b=b, w=w)
        assert run.metrics.makespan == pytest.approx(_zb_h1(p, m, f, b, w))
        assert run.metrics.formula_makespan == pytest.approx(_zb_h1(p, m, f, b, w))


@pytest.mark.parametrize("fbw", ZB_FITS[:2] + ZB_SPILLS[:2])
@pytest.mark.parametrize(("p", "m"), [(1, 3), (2, 1), (3, 2), (4, 4), (4, 9), (8, 16)])
def test_zb_h1_peak_is_min_p_m_on_every_device(p, m, fbw):
    """Device i keeps p−i forwards in flight plus i deferred W's: memory min(p, m), like 1F1B's worst."""
    run = ppviz.simulate("zb-h1", p, m, f=fbw[0], b=fbw[1], w=fbw[2])
    assert run.metrics.peak_activation == [min(p, m)] * p


def test_zb_h1_beats_1f1b_by_p_minus_1_w_at_equal_times():
    """At f = b = w the bubble shrinks from 3(p−1) to (p−1) slots."""
    p, m = 4, 8
    gap = ppviz.simulate("1f1b", p, m).metrics.makespan - ppviz.simulate("zb-h1", p, m).metrics.makespan
    assert gap == pytest.approx(2 * (p - 1))


# --- interleaved 1F1B and looped BFS --------------------------------------------------------


def _looped(p, m, v, f, b, w):
    return m * (f + b + w) + (p - 1) * (f + b + w) / v


@pytest.mark.parametrize("fbw", MIXES[:4])
@pytest.mark.parametrize("v", [1, 2, 3, 4])
@pytest.mark.parametrize(("p", "m"), [(1, 3), (2, 2), (2, 6), (3, 6), (4, 4), (4, 8), (4, 16), (8, 16)])
def test_interleaved_makespan_when_m_is_a_multiple_of_p(p, m, v, fbw):
    """m(f+b+w) + (p−1)(f+b+w)/v: v chunks cut the fill-and-drain bubble by v."""
    run = ppviz.simulate("interleaved-1f1b", p, m, chunks=v, f=fbw[0], b=fbw[1], w=fbw[2])
    assert_valid(run)
    assert run.metrics.makespan == pytest.approx(_looped(p, m, v, *fbw))
    assert run.metrics.formula_makespan == pytest.approx(_looped(p, m, v, *fbw))


@pytest.mark.parametrize("v", [1, 2, 3])
@pytest.mark.parametrize(("p", "m"), [(2, 2), (3, 6), (4, 8), (3, 9), (8, 16)])
def test_interleaved_peak_is_its_warm_up_plus_one_chunk(p, m, v):
    """Device d warms up 2(p−d−1) + (v−1)p forwards of 1/v units: peak min(that + 1, m·v)/v."""
    run = ppviz.simulate("interleaved-1f1b", p, m, chunks=v)
    expected = [min(2 * (p - d - 1) + (v - 1) * p + 1, m * v) / v for d in range(p)]
    assert run.metrics.peak_activation == pytest.approx(expected)


@pytest.mark.parametrize(("p", "m", "group"), [(2, 8, 4), (2, 7, 5), (3, 10, 5), (3, 7, 4), (4, 12, 12), (2, 9, 3)])
@pytest.mark.parametrize("v", [2, 3])
def test_interleaved_makespan_holds_for_any_valid_group_size(p, m, group, v):
    """Megatron's group size N reorders the warm-up but keeps m(f+b+w) + (p−1)(f+b+w)/v."""
    f, b, w = 1.0, 2.0, 0.5
    run = ppviz.simulate("interleaved-1f1b", p, m, chunks=v, group_size=group, f=f, b=b, w=w)
    assert_valid(run)
    assert run.metrics.makespan == pytest.approx(_looped(p, m, v, f, b, w))
    assert run.metrics.formula_makespan == pytest.approx(_looped(p, m, v, f, b, w))


@pytest.mark.parametrize(
    ("p", "m", "params", "message"),
    [
        (4, 2, {}, "microbatches ≥ devices"),
        (4, 6, {}, "multiple of devices"),
        (3, 10, {"group_size": 4}, "multiple of the group size 4"),
        (2, 8, {"group_size": 9}, "group_size between devices"),
        (2, 4, {"chunks": 0}, "chunks must be between 1 and 16"),
    ],
)
def test_interleaved_constraints_say_what_to_change(p, m, params, message):
    """Megatron's constraints are checked up front with the values in the message."""
    with pytest.raises(ValueError, match=message):
        ppviz.simulate("interleaved-1f1b", p, m, **params)


@pytest.mark.parametrize("fbw", MIXES[:4])
@pytest.mark.parametrize("v", [1, 2, 3])
@pytest.mark.parametrize(("p", "m"), [(1, 1), (2, 2), (3, 4), (4, 8), (8, 8)])
def test_looped_bfs_makespan_when_m_at_least_p(p, m, v, fbw):
    """Breadth-first: m(f+b+w) + (p−1)(f+b+w)/v once every device has work, m ≥ p."""
    run = ppviz.simulate("looped-bfs", p, m, chunks=v, f=fbw[0], b=fbw[1], w=fbw[2])
    assert_valid(run)
    assert run.metrics.makespan == pytest.approx(_looped(p, m, v, *fbw))
    assert run.metrics.formula_makespan == pytest.approx(_looped(p, m, v, *fbw))


@pytest.mark.parametrize("fbw", MIXES[:3])
@pytest.mark.parametrize("v", [1, 2, 3])
@pytest.mark.parametrize(("p", "m"), [(2, 1), (4, 3), (8, 2), (8, 7)])
def test_looped_bfs_with_fewer_microbatches_than_devices(p, m, v, fbw):
    """m < p: each chunk's wave waits for microbatch 0 to come round, so p(f+b+w) + (m−1)(f+b+w)/v."""
    f, b, w = fbw
    run = ppviz.simulate("looped-bfs", p, m, chunks=v, f=f, b=b, w=w)
    assert_valid(run)
    expected = p * (f + b + w) + (m - 1) * (f + b + w) / v
    assert run.metrics.makespan == pytest.approx(expected)
    assert run.metrics.formula_makespan == pytest.approx(expected)


@pytest.mark.parametrize("v", [1, 2, 3])
@pytest.mark.parametrize(("p", "m"), [(4, 3), (2, 5)])
def test_looped_bfs_peak_is_m_on_every_device(p, m, v):
    """Every chunk's forward of every microbatch is stored: m·v chunks of 1/v units each."""
    run = ppviz.simulate("looped-bfs", p, m, chunks=v)
    assert run.metrics.peak_activation == pytest.approx([float(m)] * p)


# --- registry-level argument checks ----------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "p", "m", "params", "message"),
    [
        ("gpipe", 2, 2, {"chunks": 2}, "drop the chunks setting"),
        ("1f1b", 2, 2, {"warmup": 3}, "does not take warmup"),
        ("1f1b", 0, 2, {}, "devices must be ≥ 1"),
        ("1f1b", 2, 0, {}, "microbatches must be ≥ 1"),
        ("1f1b", 2.5, 2, {}, "devices must be a whole number"),
        ("nope", 2, 2, {}, "unknown schedule 'nope'"),
        ("1f1b-2bw", 2, 2, {"iterations": 0}, "iterations must be between 1 and 64"),
        ("interleaved-1f1b", 4, 12, {"group_size": 4, "microbatch_group_size_per_vp_stage": 6}, "give one"),
    ],
)
def test_bad_arguments_are_value_errors_that_name_them(name, p, m, params, message):
    """The registry refuses bad arguments before building anything."""
    with pytest.raises(ValueError, match=message):
        ppviz.simulate(name, p, m, **params)


def test_megatron_name_for_the_group_size_is_accepted():
    """``microbatch_group_size_per_vp_stage`` (Megatron's name) is the same parameter as group_size."""
    by_alias = ppviz.build("interleaved-1f1b", 4, 12, chunks=2, microbatch_group_size_per_vp_stage=6)
    assert by_alias.order == ppviz.build("interleaved-1f1b", 4, 12, chunks=2, group_size=6).order
    assert by_alias.order != ppviz.build("interleaved-1f1b", 4, 12, chunks=2).order
    assert by_alias.params["group_size"] == 6
