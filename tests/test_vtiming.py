"""``vtiming`` times V letter rows at numpy speed; it must agree with the simulator exactly."""

import numpy as np
import pytest

import ppviz
from ppviz.ir import Placement, Schedule
from ppviz.schedules import vfamily, vshape, vtiming


def simulated(rows: list[str], m: int, costs) -> tuple[float, float]:
    run = ppviz.evaluate(Schedule(Placement.vshape(len(rows)), m, vfamily.to_columns(rows)), costs)
    return max(run.metrics.span), run.metrics.makespan


def candidates(p: int, m: int) -> list[list[str]]:
    """Some of the authors' orders (repaired where a W runs ahead of its B) and ppviz's own."""
    out = []
    for block in vfamily.blocks(p)[::11]:
        built = vfamily.build_rows(p, m, block)
        if built is not None:
            rows = built[0] if vfamily.runs_in_order(built[0]) else vfamily.defer_early_w(built[0])
            if rows is not None:
                out.append(rows)
    own = [vshape.repeat_block(p, m, vshape.v_block(p, s)) for s in (1, 2)] + [vshape.zb_v(p, m).columns]
    return out + [vfamily.to_letters(order) for order in own]


@pytest.mark.parametrize(("p", "m"), [(4, 8), (6, 13), (16, 32)])
@pytest.mark.parametrize("cost", [dict(f=2, b=2, w=2), dict(f=2, b=3, w=1, p2p=0.5), dict(f=1, b=4, w=2, p2p=0.25)])
def test_spans_are_the_simulators(p, m, cost):
    costs = ppviz.make_costs(**cost)
    group = candidates(p, m)
    got = vtiming.spans(group, *vshape._letter_times(p, costs))
    assert len(got) == len(group)
    for rows, timed in zip(group, got):
        assert timed == pytest.approx(simulated(rows, m, costs))


def test_own_orders_read_back_as_letters():
    """``to_letters`` is ``to_columns``' inverse on ppviz's own V orders."""
    p, m = 6, 14
    for order in [vshape.repeat_block(p, m, vshape.v_block(p, s)) for s in (1, 2, 3)] + [vshape.zb_v(p, m).columns]:
        assert vfamily.to_columns(vfamily.to_letters(order)) == order


def test_rows_that_cannot_run_have_no_span():
    """A missing input, or two devices each waiting for the other, gives None (and the others
    in the same call are still timed)."""
    times, lag = np.ones((2, 6)), np.zeros((2, 6))
    fine = ["FfBbWw", "FfBbWw"]
    missing = ["FfBbWw", "FBbWw"]  # device 0's f waits for device 1's, which it does not run
    stuck = ["fFBbWw", "FfBbWw"]  # device 0's f waits for device 1's f, behind its F, which waits for device 0's F
    got = vtiming.spans([fine, missing, stuck, fine], times, lag)
    assert got[1] is None and got[2] is None
    assert got[0] == got[3] == pytest.approx(simulated(fine, 1, ppviz.make_costs(f=2, b=2, w=2)))
