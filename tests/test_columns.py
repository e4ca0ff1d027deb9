"""Schedules as columns: the columns and the order agree, and narrow integer types never overflow.

Generators build typed columns; ``Schedule.order`` is made from them on demand, and an order
given by hand is read into columns once. Both views must describe the same steps for every
registered schedule, and the narrow types must hold the largest sizes the command line allows.
"""

from __future__ import annotations

import numpy as np
import pytest
from checks import assert_valid

from ppviz import REGISTRY, build, cli_limits, evaluate, memory
from ppviz.costs import Costs
from ppviz.figures.overview import occupancy
from ppviz.ir import (
    BW,
    Action,
    B,
    Columns,
    F,
    Overlap,
    Placement,
    ScheduleError,
    W,
    columns_of_order,
    make_schedule,
    narrowest,
)
from ppviz.schedules import MAX_ACTIONS
from ppviz.simulator import _flatten, _prepare, dependencies

_SIZES = [(1, 1), (1, 4), (2, 2), (2, 5), (3, 6), (4, 4), (4, 8), (5, 10)]
_PARAMS = [{}, {"chunks": 3}, {"iterations": 3}, {"chunks": 2, "group_size": 5}]


def _grid():
    for name, spec in REGISTRY.items():
        takes = {q.name for q in spec.params}
        for p, m in _SIZES:
            for params in _PARAMS:
                if set(params) <= takes:
                    yield name, p, m, params


def _built(name, p, m, params):
    try:
        return build(name, p, m, **params)
    except ValueError:  # outside the schedule's constraints
        return None


@pytest.mark.parametrize("name", list(REGISTRY))
def test_columns_and_order_agree_for_every_registry_schedule(name):
    """Reading the on-demand order back gives the same columns; the actions agree one by one."""
    built = 0
    for _, p, m, params in (g for g in _grid() if g[0] == name):
        sched = _built(name, p, m, params)
        if sched is None:
            continue
        built += 1
        assert isinstance(sched.steps, Columns)  # generated as columns: no Action until asked for
        cols, order = sched.columns, sched.order
        assert cols.stage.dtype == narrowest(0, sched.stages - 1) and cols.kind.dtype == np.int8
        assert len(order) == p == cols.devices
        assert columns_of_order(order) == cols
        assert cols.rows() == order
        acts = [a for row in order for s in row if s is not None for a in (s if isinstance(s, Overlap) else (s,))]
        assert [a for _, a in sched.actions()] == acts == cols.actions()
        assert all(type(a) is Action for a in acts)
        assert [d for d, _ in sched.actions()] == cols.device().tolist()
        same = make_schedule(sched.placement, sched.microbatches, order, sched.name, directions=sched.directions,
                             param_versions=sched.param_versions)  # fmt: skip
        assert same == sched and hash(same) == hash(sched)
        assert sched.size == len(acts)
    assert built


def test_idle_slots_and_pairs_survive_the_round_trip():
    """An idle step (inner or trailing) and an overlapped pair come back where they were."""
    rows = (
        (Action(0, 0, F), None, Overlap(Action(0, 1, F), Action(0, 0, BW)), Action(0, 1, BW), None),
        (None, Action(1, 0, F), Action(1, 1, F), Action(1, 0, B), Action(1, 0, W), Action(1, 1, B), Action(1, 1, W)),
    )
    cols = columns_of_order(rows)
    assert cols.slot is not None and cols.widths == (5, 7)
    assert cols.slot.tolist() == [0, 2, 2, 3, 1, 2, 3, 4, 5, 6]
    assert cols.rows() == rows
    sched = make_schedule(Placement.standard(2), 2, rows)
    dev, _, _, _, slot, slot_device = _flatten(sched)
    assert slot.tolist() == [0, 1, 1, 2, 3, 4, 5, 6, 7, 8]  # idle steps are no slots; the pair shares one
    assert slot_device.tolist() == [0, 0, 0, 1, 1, 1, 1, 1, 1]
    assert dev.tolist() == [0] * 4 + [1] * 6


def test_a_plain_order_reads_into_the_generators_columns():
    """Without pairs or idle steps an order's columns carry no slot column, as generated ones."""
    sched = build("1f1b", 3, 4)
    assert isinstance(sched.steps, Columns) and sched.columns.slot is None
    again = columns_of_order(sched.order)
    assert again.slot is None and again.widths is None and again == sched.columns


def test_schedules_compare_by_their_steps_not_by_how_they_are_held():
    sched = build("zb-h1", 3, 5)
    order = make_schedule(sched.placement, sched.microbatches, sched.order, sched.name)
    assert order == sched and {order, sched} == {sched}
    other = build("zb-h2", 3, 5)
    assert other != make_schedule(other.placement, 5, sched.order, other.name)
    assert build("1f1b", 3, 5) != build("gpipe", 3, 5)
    broken = make_schedule(Placement.standard(1), 1, [[(0, 0, "X")]])
    assert broken == make_schedule(Placement.standard(1), 1, [[(0, 0, "X")]])  # compared as given
    with pytest.raises(ScheduleError, match="cannot read step"):
        _ = broken.columns


def test_narrow_types_hold_the_largest_sizes_the_cli_allows():
    """Devices ≤ 1,024, stages ≤ 1,024 × 16 chunks, microbatches and actions ≤ MAX_ACTIONS."""
    chunks = REGISTRY["interleaved-1f1b"].param("chunks").high
    assert narrowest(0, cli_limits.DEVICES - 1) == np.int16
    assert narrowest(0, cli_limits.DEVICES * chunks - 1) == np.int16
    assert narrowest(0, MAX_ACTIONS) == np.int32
    # the most stages and devices at once: looped BFS on 1,024 devices × 16 chunks, about 2M actions
    m = MAX_ACTIONS // (cli_limits.DEVICES * chunks * 2)
    sched = build("looped-bfs", cli_limits.DEVICES, m, chunks=chunks)
    dev, stage, mb, kind, slot, _, key, pos = _prepare(sched)
    assert int(stage.max()) == cli_limits.DEVICES * chunks - 1 and int(dev.max()) == cli_limits.DEVICES - 1
    assert int(slot[-1]) == len(slot) - 1 == sched.size - 1
    wide = (kind.astype(np.int64) * sched.stages + stage.astype(np.int64)) * m + mb.astype(np.int64)
    assert np.array_equal(key, wide) and np.array_equal(pos[wide], np.arange(len(wide)))
    # the most microbatches: GPipe on one device, a million microbatches
    m = MAX_ACTIONS // 2
    sched = build("gpipe", 1, m)
    assert sched.columns.microbatch.dtype == np.int32 and int(sched.columns.microbatch.max()) == m - 1


@pytest.mark.parametrize(
    ("name", "p", "m", "params"),
    [
        ("interleaved-1f1b", 130, 130, {"chunks": 2}),  # devices and stages past int8
        ("1f1b", 2, 40_000, {}),  # microbatches past int16
        ("dualpipe-v", 130, 260, {}),  # pairs on 130 devices: slot columns of their own
    ],
)
def test_results_in_narrow_types_time_validate_and_measure_exactly(name, p, m, params):
    """Past each type's range the result is still exact, and what reads it computes in int64."""
    run = evaluate(build(name, p, m, **params), Costs(1.0, 2.0, 1.0, p2p=0.25))
    r = run.result
    assert r.device.dtype == (np.int16 if p > 127 else np.int8)
    assert r.microbatch.dtype == narrowest(0, m - 1) and r.start.dtype == np.float64
    assert_valid(run)
    key = (r.kind.astype(np.int64) * r.schedule.stages + r.stage) * m + r.microbatch
    assert len(np.unique(key)) == len(r) and (key >= 0).all()
    assert (dependencies(r) < len(r)).all()
    assert run.metrics.makespan == float(r.end.max() - r.start.min())
    assert memory.activation(r).peak.max() > 0
    occ, _, width = occupancy(run, 40)
    busy = np.bincount(r.slot_device, weights=r.slot_end - r.slot_start, minlength=p)
    assert np.allclose(occ[:, 1:, :].sum(axis=(1, 2)) * width, busy)  # each device's own row of bins
