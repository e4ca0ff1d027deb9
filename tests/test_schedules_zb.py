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
    names = {"zb-h2", "zb-v", "interleaved-zb", "dualpipe", "dualpipe-v", "1f1b-overlap", "interleaved-1f1b-overlap"}
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
