"""Zero-bubble, V-shape and DualPipe schedules: validity on a grid, and their memory and bubble
against the bounds and closed forms of issue 4 (f = b = w = 1, p2p 0 unless a test says so)."""

from __future__ import annotations

import pytest
from checks import assert_valid

import ppviz
from ppviz.schedules import REGISTRY

GRID = [(p, m) for p in (2, 3, 4, 6, 8) for m in range(1, 4 * p + 1)]


def run_or_refuse(name: str, p: int, m: int, **params):
    """Simulate, or return None when a constraint refuses the sizes with a ValueError."""
    try:
        return ppviz.simulate(name, p, m, **params)
    except ValueError as e:
        assert str(e) and "\n" not in str(e)
        return None


def sweep(name: str, **params) -> int:
    """Every grid point is a valid schedule or a clean refusal; returns how many ran."""
    ran = 0
    for p, m in GRID:
        run = run_or_refuse(name, p, m, **params)
        if run is not None:
            assert_valid(run)
            ran += 1
    return ran


# --- zb-h2 ------------------------------------------------------------------------------------


def test_zb_h2_is_valid_on_the_whole_grid():
    """ZB-H2 has no constraint: every size simulates."""
    assert sweep("zb-h2") == len(GRID)


@pytest.mark.parametrize("p", [2, 3, 4, 6, 8])
def test_zb_h2_peak_is_at_most_2p_minus_1(p):
    """Device 0 holds its 2(p−1) warm-up forwards plus one: 2p−1 units, never more."""
    for m in range(1, 4 * p + 1):
        peaks = ppviz.simulate("zb-h2", p, m).metrics.peak_activation
        assert max(peaks) == min(2 * p - 1, m)


@pytest.mark.parametrize("p", [2, 3, 4, 6, 8])
def test_zb_h2_has_zero_bubble_on_the_span_once_m_reaches_2p(p):
    """f = b = w, m ≥ 2p: every device's span is m(f+b+w); the makespan adds (p−1)f."""
    for m in (2 * p, 3 * p, 4 * p):
        met = ppviz.simulate("zb-h2", p, m).metrics
        assert met.span == [3.0 * m] * p
        assert met.makespan == 3 * m + (p - 1) == met.formula_makespan


# --- zb-v -------------------------------------------------------------------------------------


def test_zb_v_is_valid_on_the_whole_grid():
    assert sweep("zb-v") == len(GRID)


def test_zb_v_uses_the_v_placement():
    """Device d holds stages d and 2p−1−d, two half-size chunks."""
    run = ppviz.simulate("zb-v", 4, 8)
    assert run.schedule.placement.devices_of == ((0, 1, 2, 3, 3, 2, 1, 0),)
    assert run.metrics.chunks == [2] * 4
    assert run.metrics.parameters == [1.0] * 4


@pytest.mark.parametrize("p", [2, 3, 4, 6, 8])
def test_zb_v_peak_is_p_and_span_is_zero_bubble(p):
    """Peak ≤ p (a V chunk's forward adds 1/2); with m ≥ 2p each span is m(f+b+w)."""
    for m in range(1, 4 * p + 1):
        met = ppviz.simulate("zb-v", p, m).metrics
        assert max(met.peak_activation) <= p
        if m >= 2 * p:
            assert max(met.peak_activation) == p
            assert met.span == [3.0 * m] * p
            assert met.makespan == 3 * m + (p - 1) / 2 == met.formula_makespan


def test_every_schedule_of_issue_4_is_registered():
    names = {
        "zb-h2",
        "zb-auto",
        "zb-v",
        "v-min",
        "v-half",
        "v-zb",
        "v-auto",
        "interleaved-zb",
        "dualpipe",
        "dualpipe-v",
        "1f1b-overlap",
        "interleaved-1f1b-overlap",
    }
    assert names <= set(REGISTRY)


# --- dualpipe and dualpipe-v -------------------------------------------------------------------


def test_dualpipe_family_is_valid_or_refused_on_the_grid():
    """DualPipe runs exactly when p and m are even and m ≥ 2p; DualPipeV when m ≥ 2p."""
    assert sweep("dualpipe") == sum(1 for p, m in GRID if p % 2 == 0 and m % 2 == 0 and m >= 2 * p)
    assert sweep("dualpipe-v") == sum(1 for p, m in GRID if m >= 2 * p)


@pytest.mark.parametrize(
    ("name", "p", "m", "match"),
    [
        ("dualpipe", 3, 12, "even number of devices"),
        ("dualpipe", 4, 9, "even number of microbatches"),
        ("dualpipe", 4, 6, "microbatches ≥ 2 × devices = 8"),
        ("dualpipe-v", 4, 7, "microbatches ≥ 2 × devices = 8"),
    ],
)
def test_dualpipe_constraints_say_what_to_change(name, p, m, match):
    with pytest.raises(ValueError, match=match):
        ppviz.simulate(name, p, m)


def test_dualpipe_sends_half_the_microbatches_up_the_opposite_pipe():
    """Microbatch j < m/2 enters at device 0; the others enter at device p−1 (their stage 0)."""
    run = ppviz.simulate("dualpipe", 4, 8)
    assert run.schedule.directions == (0, 0, 0, 0, 1, 1, 1, 1)
    first = {}
    for d, s, mb, k in zip(run.result.device, run.result.stage, run.result.microbatch, run.result.kind):
        if s == 0 and k == 0:
            first[int(mb)] = int(d)
    assert first == {0: 0, 1: 0, 2: 0, 3: 0, 4: 3, 5: 3, 6: 3, 7: 3}


def test_dualpipe_steady_state_runs_overlapped_pairs():
    """Phase 4 pairs a forward of one chunk with the full backward of the other."""
    run = ppviz.simulate("dualpipe-v", 4, 16)
    paired = run.result.paired
    assert paired.sum() > 0
    kinds = {(int(k)) for k in run.result.kind[paired]}
    assert kinds == {0, 3}  # F and BW


@pytest.mark.parametrize("p", [2, 4, 6, 8])
def test_dualpipe_bubble_matches_deepseeks_table_in_the_symmetric_case(p):
    """f = b = w = 1, factor 1, chunk = 1/p: F = 1, B (full) = 2, W = 1, F&B = 3, so the table's
    (p/2−1)(F&B + B − 3W) = p−2 is exactly makespan − m(f+b+w), and the longest span is the makespan."""
    for m in (2 * p, 2 * p + 2, 4 * p):
        met = ppviz.simulate("dualpipe", p, m).metrics
        assert met.makespan == 3 * m + (p - 2) == met.formula_makespan
        assert max(met.span) == met.makespan


@pytest.mark.parametrize("p", [2, 3, 4, 6, 8])
def test_dualpipe_v_bubble_matches_deepseeks_table_with_pp_2p(p):
    """DualPipeV on p devices is the table's PP = 2p with chunks of 1/(2p): F = 1/2, B = 1,
    W = 1/2, F&B = 3/2, so (PP/2−1)(F&B + B − 3W) = p−1."""
    for m in (2 * p, 2 * p + 1, 4 * p):
        met = ppviz.simulate("dualpipe-v", p, m).metrics
        assert met.makespan == 3 * m + (p - 1) == met.formula_makespan
        assert max(met.span) == met.makespan


def test_dualpipe_formula_is_only_claimed_without_overlap_gain():
    assert ppviz.simulate("dualpipe", 4, 8, overlap=0.5).metrics.formula_makespan is None
    assert ppviz.simulate("dualpipe-v", 4, 8, b=2).metrics.formula_makespan is None


@pytest.mark.parametrize("p", [2, 4, 6, 8])
def test_dualpipe_memory_is_pp_plus_1_chunks_and_twice_the_parameters(p):
    """A chunk is 1/p of the model (1 unit): peak p+1 on the middle devices; every device holds
    two stages, 2 device shares of parameters."""
    met = ppviz.simulate("dualpipe", p, 4 * p).metrics
    assert max(met.peak_activation) == p + 1
    assert met.parameters == [2.0] * p
    assert met.chunks == [2] * p


@pytest.mark.parametrize("p", [2, 3, 4, 6, 8])
def test_dualpipe_v_memory_is_2p_plus_1_half_chunks_and_one_share_of_parameters(p):
    met = ppviz.simulate("dualpipe-v", p, 4 * p).metrics
    assert max(met.peak_activation) == p + 0.5
    assert met.parameters == [1.0] * p


# --- 1f1b-overlap and interleaved-1f1b-overlap ---------------------------------------------------


def test_overlap_variants_are_valid_or_refused_on_the_grid():
    assert sweep("1f1b-overlap") == len(GRID)
    assert sweep("interleaved-1f1b-overlap", chunks=2) > 0
    assert sweep("interleaved-1f1b-overlap", chunks=3) > 0


@pytest.mark.parametrize("p", [2, 3, 4, 6, 8])
def test_1f1b_overlap_warms_up_2_p_minus_i_minus_1_plus_1_forwards(p):
    """Device i runs 2(p−i−1)+1 forwards before its first pair; the pair's F adds one more."""
    m = 4 * p
    run = ppviz.simulate("1f1b-overlap", p, m)
    for i, row in enumerate(run.schedule.order):
        warm = next(k for k, step in enumerate(row) if isinstance(step, ppviz.Overlap))
        assert warm == 2 * (p - i - 1) + 1
    assert run.metrics.peak_activation == [min(2 * (p - i), m) for i in range(p)]


@pytest.mark.parametrize(("f", "b", "w"), [(1, 1, 1), (1, 2, 1), (2, 1, 0.5)])
def test_overlap_variants_keep_1f1b_makespans_at_factor_1(f, b, w):
    """Pairing without overlap gain moves no critical path: (m+p−1)(f+b+w) and interleaved's
    m(f+b+w) + (p−1)(f+b+w)/v."""
    for p in (2, 4, 8):
        for m in (p, 2 * p, 4 * p):
            t = f + b + w
            assert ppviz.simulate("1f1b-overlap", p, m, f=f, b=b, w=w).metrics.makespan == (m + p - 1) * t
            il = ppviz.simulate("interleaved-1f1b-overlap", p, m, chunks=2, f=f, b=b, w=w).metrics
            assert il.makespan == pytest.approx((m + (p - 1) / 2) * t)
            assert il.formula_makespan == pytest.approx(il.makespan)


def test_overlap_gain_shortens_1f1b_overlap():
    """Factor 0.5 halves each pair's time, so the schedule gets strictly shorter."""
    full = ppviz.simulate("1f1b-overlap", 4, 16).metrics.makespan
    assert ppviz.simulate("1f1b-overlap", 4, 16, overlap=0.5).metrics.makespan < full


# --- interleaved-zb ----------------------------------------------------------------------------


def test_interleaved_zb_is_valid_or_refused_on_the_grid():
    for v in (2, 3):
        assert sweep("interleaved-zb", chunks=v) == sweep("interleaved-1f1b", chunks=v)


@pytest.mark.parametrize(("f", "b", "w"), [(1, 1, 1), (1, 2, 1), (2, 1, 0.5)])
def test_interleaved_zb_bubble_is_zb_h1_bubble_over_v(f, b, w):
    """m(f+b+w) + (p−1)(f+b−w)/v whenever W ≤ B: the split backward removes W from the bubble."""
    for v in (2, 3):
        for p in (2, 4, 8):
            for m in (p, 2 * p, 4 * p):
                met = ppviz.simulate("interleaved-zb", p, m, chunks=v, f=f, b=b, w=w).metrics
                assert met.makespan == pytest.approx(m * (f + b + w) + (p - 1) * (f + b - w) / v)
                assert met.formula_makespan == pytest.approx(met.makespan)


@pytest.mark.parametrize("p", [2, 4, 8])
def test_interleaved_zb_beats_interleaved_1f1b_in_time_and_memory(p):
    """At p=8, m=32, v=2: 99.5 against 106.5, and peak p = 8 against 11.5."""
    for m in (2 * p, 4 * p):
        zb = ppviz.simulate("interleaved-zb", p, m, chunks=2).metrics
        il = ppviz.simulate("interleaved-1f1b", p, m, chunks=2).metrics
        assert zb.makespan < il.makespan
        assert max(zb.peak_activation) == p < max(il.peak_activation)


# --- v-min, v-half, v-zb, v-auto ----------------------------------------------------------------

V_PEAK = {"v-min": lambda p: (p + 4) // 3, "v-half": lambda p: (p + 2) // 2, "v-zb": lambda p: p}


@pytest.mark.parametrize("name", ["v-min", "v-half", "v-zb"])
def test_v_schedules_are_valid_on_the_grid_and_keep_their_peaks(name):
    """Every size runs; the peak never passes the reported (p+4)//3, (p+2)//2, p, and reaches it
    once m ≥ 2p (a V chunk's forward adds 1/2 unit; the block's lifetime sets the peak)."""
    for p, m in GRID:
        run = ppviz.simulate(name, p, m)
        assert_valid(run)
        peak = max(run.metrics.peak_activation)
        assert peak <= V_PEAK[name](p)
        if m >= 2 * p:
            assert peak == V_PEAK[name](p)


def test_v_auto_is_valid_on_small_grids():
    for p, m in GRID:
        if p <= 4:
            assert_valid(ppviz.simulate("v-auto", p, m))


def test_v_block_offsets_match_the_papers_building_blocks():
    """V-Min on device i: F at i, f at 2p−1−i, B at 2p+δ+i, b at 4p+δ−1−i (δ = 2 iff 3 | p);
    V-Half: F at 2i, f at 3p−2−i, B at 3p+δ+2i−1, b at 6p+δ−2−i (δ = 3 iff p even).
    (B here is the second chunk's backward, which runs first.)"""
    from ppviz.ir import B, F
    from ppviz.schedules.vshape import v_block

    for p in (2, 3, 4, 5, 6, 8, 9, 16):
        d = 2 if p % 3 == 0 else 0
        for i, slots in enumerate(v_block(p, 1)):
            s0, s1 = i, 2 * p - 1 - i
            assert (slots[s0, F], slots[s1, F], slots[s1, B], slots[s0, B]) == (
                i, 2 * p - 1 - i, 2 * p + d + i, 4 * p + d - 1 - i)  # fmt: skip
        d = 3 if p % 2 == 0 else 0
        for i, slots in enumerate(v_block(p, 2)):
            s0, s1 = i, 2 * p - 1 - i
            assert (slots[s0, F], slots[s1, F], slots[s1, B], slots[s0, B]) == (
                2 * i, 3 * p - 2 - i, 3 * p + d + 2 * i - 1, 6 * p + d - 2 - i)  # fmt: skip


def test_v_bubbles_against_1f1b_at_p8_m32():
    """1F1B's bubble is (p−1)(f+b+w) = 21. Measured makespan − m(f+b+w) (longest span − m(f+b+w)):
    V-Min 11.5 (11.5), about half of 1F1B's; V-Half 9.5 (8.5); V-ZB 3.5 (0). Each equals the
    authors' search at its memory (tests/test_vshape_reference.py)."""
    m, ideal = 32, 96
    got = {n: ppviz.simulate(n, 8, m).metrics for n in ("v-min", "v-half", "v-zb")}
    assert (got["v-min"].makespan - ideal, max(got["v-min"].span) - ideal) == (11.5, 11.5)
    assert (got["v-half"].makespan - ideal, max(got["v-half"].span) - ideal) == (9.5, 8.5)
    assert (got["v-zb"].makespan - ideal, max(got["v-zb"].span) - ideal) == (3.5, 0)
    assert 21 / 3 < 11.5 < 21 * 2 / 3  # V-Min: between a third and two thirds of 1F1B's
    assert 8.5 <= 21 / 2  # V-Half: at most half on the span


@pytest.mark.parametrize("p", [3, 4, 6, 8])
def test_v_schedules_trade_memory_for_bubble(p):
    """More memory, less bubble: V-Min ≥ V-Half ≥ V-ZB in makespan, and all beat 1F1B."""
    m = 4 * p
    mk = [ppviz.simulate(n, p, m).metrics.makespan for n in ("v-min", "v-half", "v-zb")]
    assert mk[0] >= mk[1] >= mk[2]
    assert mk[0] < (m + p - 1) * 3


def test_v_auto_takes_the_least_bubble_under_its_limit():
    """At p=8, m=32 the longest span − m(f+b+w) falls as the limit rises: 11.5 at 4, 8.5 at 5,
    5.5 at 6, 2.5 at 7, 0 at 8 (= V-ZB) and above; the peak never passes the limit."""
    expected = {4: 11.5, 5: 8.5, 6: 5.5, 7: 2.5, 8: 0, 12: 0}
    for limit, bubble in expected.items():
        met = ppviz.simulate("v-auto", 8, 32, max_memory=limit).metrics
        assert max(met.span) - 96 == bubble
        assert max(met.peak_activation) <= limit


def test_v_auto_below_v_min_says_how_much_memory_is_needed():
    with pytest.raises(ValueError, match="raise it to at least 4"):
        ppviz.simulate("v-auto", 8, 32, max_memory=3)


# --- zb-auto -----------------------------------------------------------------------------------


def test_zb_auto_is_valid_on_the_grid():
    for p, m in GRID:
        if p <= 6:
            assert_valid(ppviz.simulate("zb-auto", p, m))


@pytest.mark.parametrize("p", [2, 3, 4, 6, 8])
def test_zb_auto_is_never_worse_than_zb_h1_at_p_or_zb_h2_at_2p_minus_1(p):
    """The longest span (the ZB paper's bubble measure) at limit p is at most ZB-H1's, at 2p−1
    at most ZB-H2's, and the peak stays under the limit."""
    for m in (1, p, 2 * p, 3 * p):
        for limit, rival in ((p, "zb-h1"), (2 * p - 1, "zb-h2")):
            auto = ppviz.simulate("zb-auto", p, m, max_memory=limit).metrics
            hand = ppviz.simulate(rival, p, m).metrics
            assert max(auto.span) <= max(hand.span)
            assert max(auto.peak_activation) <= limit


def test_zb_auto_below_one_unit_is_refused():
    with pytest.raises(ValueError, match="max_memory"):
        ppviz.simulate("zb-auto", 4, 8, max_memory=0.5)


@pytest.mark.parametrize(("f", "b", "w", "p2p"), [(1, 2, 1, 0), (2, 1, 0.5, 0), (1, 1, 1, 0.25), (1, 2, 2, 0.1)])
def test_searched_schedules_use_the_real_op_times(f, b, w, p2p):
    """zb-auto and the V schedules are generated under the given f, b, w and p2p: valid, within
    their limits, and zb-auto no worse than ZB-H1 / ZB-H2 under those same times."""
    times = {"f": f, "b": b, "w": w, "p2p": p2p}
    for p in (3, 4):
        for m in (p, 3 * p):
            for limit, rival in ((p, "zb-h1"), (2 * p - 1, "zb-h2")):
                auto = ppviz.simulate("zb-auto", p, m, max_memory=limit, **times)
                assert_valid(auto)
                assert max(auto.metrics.span) <= max(ppviz.simulate(rival, p, m, **times).metrics.span)
            for name in ("v-min", "v-half", "v-zb"):
                run = ppviz.simulate(name, p, m, **times)
                assert_valid(run)
                assert max(run.metrics.peak_activation) <= V_PEAK[name](p)
            run = ppviz.simulate("v-auto", p, m, max_memory=p / 2 + 1, **times)
            assert_valid(run)
            assert max(run.metrics.peak_activation) <= p / 2 + 1
