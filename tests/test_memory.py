"""Activation curves and static memory, checked against hand-counted cases."""

from __future__ import annotations

import numpy as np
import pytest
from checks import assert_valid

import ppviz
from ppviz import Costs, memory
from ppviz.ir import BW, Action, F, Overlap, Placement, make_schedule
from ppviz.simulator import simulate


def _level(curves, device: int, t: float) -> float:
    """The step curve's value at time t (the last change at or before t wins)."""
    times, values = curves.times[device], curves.values[device]
    return float(values[np.searchsorted(times, t, side="right") - 1])


def test_a_free_and_an_add_at_the_same_instant_do_not_stack():
    """p=1, m=2 1F1B: BW0 ends when F1 starts, so memory stays at one microbatch, not two."""
    curves = memory.activation(ppviz.simulate("1f1b", 1, 2).result)
    assert [_level(curves, 0, t) for t in (0.5, 2.0, 3.0, 3.5, 6.0)] == [1.0, 1.0, 1.0, 1.0, 0.0]
    assert curves.peak.tolist() == [1.0]


@pytest.mark.parametrize("frees", [0.0, 0.25, 0.5, 1.0])
def test_b_frees_its_fraction_and_w_the_rest(frees):
    """ZB-H1 p=2, m=2, device 1 runs F0 B0 F1 B1 W0 W1: its peak is 2 − b_frees, device 0's stays 2."""
    run = ppviz.simulate("zb-h1", 2, 2, b_frees=frees)
    assert_valid(run)
    curves = memory.activation(run.result)
    assert curves.peak.tolist() == pytest.approx([2.0, 2.0 - frees])
    # Device 1 runs F0 [1,2], B0 [2,3], F1 [3,4], B1 [4,5], W0 [5,6], W1 [6,7].
    assert _level(curves, 1, 2.5) == pytest.approx(1.0)
    assert _level(curves, 1, 4.5) == pytest.approx(2.0 - frees)  # F1 added, B0 freed
    assert _level(curves, 1, 5.5) == pytest.approx(2.0 - 2 * frees)  # B1 freed too
    assert _level(curves, 1, 6.5) == pytest.approx(1.0 - frees)  # W0 freed the rest of 0
    assert curves.values[1][-1] == 0.0


def test_b_frees_out_of_range_is_a_value_error():
    """The fraction must lie in [0, 1]."""
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(ValueError, match="b_frees"):
            ppviz.simulate("zb-h1", 2, 2, b_frees=bad)


def test_a_chunk_of_a_looped_schedule_holds_p_over_s_units():
    """With v chunks, a forward stores 1/v of a device share: looped-bfs peaks at m·v·(1/v) = m."""
    curves = memory.activation(ppviz.simulate("looped-bfs", 2, 3, chunks=4).result)
    assert _level(curves, 0, 0.1) == pytest.approx(0.25)
    assert curves.peak.tolist() == pytest.approx([3.0, 3.0])


def test_pair_adds_its_forward_at_the_start_and_frees_its_backward_at_the_end():
    """[F0, (F1; BW0), BW1] on one device with overlap 0.5: 2 units from 1 to 2.5, then 1, then 0."""
    pair = Overlap(Action(0, 1, F), Action(0, 0, BW))
    sched = make_schedule(Placement.standard(1), 2, [[Action(0, 0, F), pair, Action(0, 1, BW)]])
    result = simulate(sched, Costs(overlap=0.5))
    assert_valid(result)
    curves = memory.activation(result)
    assert [_level(curves, 0, t) for t in (0.5, 1.0, 2.4, 2.5, 4.4, 4.5)] == [1, 2, 2, 1, 1, 0]
    assert (curves.peak[0], curves.peak_time[0]) == (2.0, 1.0)


def test_peak_time_is_the_first_time_the_peak_is_reached():
    """1F1B p=2, m=2, device 0 holds two microbatches from F1's start at 1."""
    curves = memory.activation(ppviz.simulate("1f1b", 2, 2).result)
    assert (curves.peak[0], curves.peak_time[0]) == (2.0, 1.0)


@pytest.mark.parametrize(
    ("name", "params", "chunks", "parameters"),
    [
        ("gpipe", {}, 1, 1.0),
        ("1f1b", {}, 1, 1.0),
        ("zb-h1", {}, 1, 1.0),
        ("interleaved-1f1b", {"chunks": 2}, 2, 1.0),
        ("interleaved-1f1b", {"chunks": 4}, 4, 1.0),
        ("looped-bfs", {"chunks": 3}, 3, 1.0),
        ("1f1b-2bw", {}, 1, 2.0),
        ("1f1b-2bw", {"iterations": 3}, 1, 2.0),
    ],
)
def test_static_memory_counts_chunks_and_weight_versions(name, params, chunks, parameters):
    """Each device holds 1/p of the model however it is chunked; PipeDream-2BW keeps two versions."""
    m = ppviz.simulate(name, 4, 8, **params).metrics
    assert m.chunks == [chunks] * 4
    assert m.parameters == [parameters] * 4


def test_v_placement_holds_two_half_chunks_per_device():
    """A V on 2 devices: two chunks of half a share each, so parameters stay at one share."""
    d0 = [Action(0, 0, F), Action(3, 0, F), Action(3, 0, BW), Action(0, 0, BW)]
    d1 = [Action(1, 0, F), Action(2, 0, F), Action(2, 0, BW), Action(1, 0, BW)]
    static = memory.static(simulate(make_schedule(Placement.vshape(2), 1, [d0, d1])))
    assert (static.chunks, static.parameters) == ([2, 2], [1.0, 1.0])


def _dualpipe(directions):
    d0 = [Action(0, 0, F), Action(1, 1, F), Action(1, 1, BW), Action(0, 0, BW)]
    d1 = [Action(1, 0, F), Action(0, 1, F), Action(0, 1, BW), Action(1, 0, BW)]
    if directions == (0, 0):
        d0 = [Action(0, 0, F), Action(0, 1, F), Action(0, 0, BW), Action(0, 1, BW)]
        d1 = [Action(1, 0, F), Action(1, 1, F), Action(1, 0, BW), Action(1, 1, BW)]
    return make_schedule(Placement.dualpipe(2), 2, [d0, d1], directions=directions)


def test_dualpipe_placement_holds_parameters_twice_when_both_pipes_carry_work():
    """Two opposite pipes: each device holds a stage of each, a full share each, so 2×."""
    static = memory.static(simulate(_dualpipe((0, 1))))
    assert (static.chunks, static.parameters) == ([2, 2], [2.0, 2.0])


def test_an_unused_pipe_holds_no_weights():
    """If every microbatch flows down, the up pipe's chunks are never loaded."""
    static = memory.static(simulate(_dualpipe((0, 0))))
    assert (static.chunks, static.parameters) == ([1, 1], [1.0, 1.0])


def test_curves_start_at_zero_and_end_at_zero_on_every_device():
    """Every activation stored is freed by the end."""
    curves = memory.activation(ppviz.simulate("interleaved-1f1b", 4, 8, chunks=2, b_frees=0.3).result)
    for times, values in zip(curves.times, curves.values):
        assert (times[0], values[0], values[-1]) == (0.0, 0.0, 0.0)
        assert np.all(np.diff(times) >= 0)
