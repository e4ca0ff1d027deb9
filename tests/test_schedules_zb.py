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
    names = {"zb-h2", "zb-v"}
    assert names <= set(REGISTRY)
