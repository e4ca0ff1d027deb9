"""The simulator: exact times by hand, latency, heterogeneous stages, pairs, deadlocks and validation."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from checks import assert_valid

import ppviz
from ppviz import Costs, DeadlockError, ScheduleError
from ppviz.ir import BW, Action, B, F, Overlap, Placement, W, make_schedule
from ppviz.simulator import Result, simulate


def _times(result) -> dict[str, tuple[float, float]]:
    """Start and end of each action, by its PyTorch label (e.g. ``1B0``)."""
    return {
        str(Action(s, m, ppviz.ir.KINDS[k])): (a, b)
        for s, m, k, a, b in zip(
            result.stage.tolist(), result.microbatch.tolist(), result.kind.tolist(), result.start, result.end
        )
    }


# --- hand-computed timings -----------------------------------------------------------------


def test_1f1b_two_devices_one_microbatch_pays_latency_twice():
    """p=2, m=1: F, F, BW, BW in a chain with two device crossings: 2(f+b+w) + 2L."""
    f, b, w, lat = 1.0, 2.0, 0.5, 0.25
    run = ppviz.simulate("1f1b", 2, 1, f=f, b=b, w=w, p2p=lat)
    assert_valid(run)
    assert run.metrics.makespan == pytest.approx(2 * (f + b + w) + 2 * lat)
    t = _times(run.result)
    assert t["1F0"] == pytest.approx((f + lat, 2 * f + lat))
    assert t["0B0"] == pytest.approx((2 * f + b + w + 2 * lat, 2 * (f + b + w) + 2 * lat))


def test_1f1b_two_devices_two_microbatches_by_hand():
    """p=2, m=2: device 1's second forward waits for its first backward, so 3(f+b+w) + 2L."""
    f, b, w, lat = 1.5, 1.0, 0.75, 0.5
    run = ppviz.simulate("1f1b", 2, 2, f=f, b=b, w=w, p2p=lat)
    assert_valid(run)
    c = b + w
    t = _times(run.result)
    assert t["1F1"] == pytest.approx((2 * f + lat + c, 3 * f + lat + c))
    assert t["0B0"] == pytest.approx((2 * f + 2 * lat + c, 2 * f + 2 * lat + 2 * c))
    assert run.metrics.makespan == pytest.approx(3 * (f + c) + 2 * lat)


@pytest.mark.parametrize(("p", "m"), [(2, 1), (3, 4), (4, 2), (5, 8)])
@pytest.mark.parametrize("lat", [0.0, 0.3, 2.0])
def test_gpipe_with_latency_adds_two_crossings_per_hop(p, m, lat):
    """GPipe: (m+p-1)(f+b+w) + 2(p-1)L; the forward and the backward wave each cross p-1 links."""
    f, b, w = 1.0, 1.5, 0.5
    run = ppviz.simulate("gpipe", p, m, f=f, b=b, w=w, p2p=lat)
    assert_valid(run)
    assert run.metrics.makespan == pytest.approx((m + p - 1) * (f + b + w) + 2 * (p - 1) * lat)


@pytest.mark.parametrize(("p", "m"), [(2, 2), (3, 5), (4, 8)])
def test_gpipe_heavier_last_stage_shifts_makespan_by_m_times_the_extra(p, m):
    """With the last stage slower in F and in B+W, it paces both waves: + m·(extra work)."""
    f, b, w = 1.0, 1.0, 1.0
    heavy = (1.5, 2.0, 1.25)
    run = ppviz.simulate("gpipe", p, m, f=f, b=b, w=w, stage_times={p - 1: heavy})
    assert_valid(run)
    extra = sum(heavy) - (f + b + w)
    assert run.metrics.makespan == pytest.approx((m + p - 1) * (f + b + w) + m * extra)
    assert run.metrics.formula_makespan is None  # no closed form for heterogeneous stages


def test_looped_actions_take_p_over_s_of_the_device_time():
    """looped-bfs p=2, v=2, m=1: four stages of half time each, three crossings per wave."""
    f, b, w, lat = 2.0, 1.0, 3.0, 0.5
    run = ppviz.simulate("looped-bfs", 2, 1, chunks=2, f=f, b=b, w=w, p2p=lat)
    assert_valid(run)
    assert run.result.end[0] - run.result.start[0] == pytest.approx(f / 2)
    assert run.metrics.makespan == pytest.approx(4 * f / 2 + 4 * (b + w) / 2 + 6 * lat)


def _v_schedule(split: bool):
    """A hand-built V on 2 devices with one microbatch: stages 0,3 on device 0 and 1,2 on device 1."""
    pl = Placement.vshape(2)

    def back(s):
        return [Action(s, 0, B), Action(s, 0, W)] if split else [Action(s, 0, BW)]

    d0 = [Action(0, 0, F), Action(3, 0, F), *back(3), *back(0)]
    d1 = [Action(1, 0, F), Action(2, 0, F), *back(2), *back(1)]
    return make_schedule(pl, 1, [d0, d1])


def test_v_turn_crosses_no_device_so_gets_no_latency():
    """Stages 1 and 2 share device 1: F2 starts when F1 ends; only 4 of the 7 hops pay L."""
    f, b, w, lat = 1.0, 2.0, 1.0, 0.75
    result = simulate(_v_schedule(split=False), Costs(f, b, w, p2p=lat))
    assert_valid(result)
    t = _times(result)
    assert t["2F0"][0] == t["1F0"][1]
    assert t["1B0"][0] == t["2B0"][1]
    assert t["2F0"][0] == pytest.approx(f / 2 + lat + f / 2)
    assert max(result.end) == pytest.approx(2 * f + 2 * (b + w) + 4 * lat)


def test_w_after_b_on_the_same_device_gets_no_latency():
    """Split backward on the V: each W follows its own B at once, never paying the p2p latency."""
    f, b, w, lat = 1.0, 2.0, 1.0, 0.75
    result = simulate(_v_schedule(split=True), Costs(f, b, w, p2p=lat))
    assert_valid(result)
    t = _times(result)
    for s in range(4):
        assert t[f"{s}W0"][0] == t[f"{s}I0"][1]
    # B chain: 3 → 2 crosses, 2 → 1 does not, but 1's B waits for 2's W on device 1.
    assert t["1I0"][0] == pytest.approx(t["2W0"][1])


def test_idle_slot_takes_no_time():
    """``None`` in an order is a marker for the CSV, not a delay."""
    a = make_schedule(Placement.standard(1), 1, [[Action(0, 0, F), None, Action(0, 0, BW)]])
    b = make_schedule(Placement.standard(1), 1, [[Action(0, 0, F), Action(0, 0, BW)]])
    assert simulate(a).end.tolist() == simulate(b).end.tolist() == [1.0, 3.0]


# --- overlapped pairs -----------------------------------------------------------------------


def _pair_schedule(second_first: bool):
    pair = (Action(1, 1, F), Action(1, 0, BW))
    pair = Overlap(*reversed(pair)) if second_first else Overlap(*pair)
    d0 = [Action(0, 0, F), Action(0, 1, F), Action(0, 0, BW), Action(0, 1, BW)]
    d1 = [Action(1, 0, F), pair, Action(1, 1, BW)]
    return make_schedule(Placement.standard(2), 2, [d0, d1])


@pytest.mark.parametrize("second_first", [False, True])
def test_pair_takes_sum_times_overlap_and_waits_for_both_halves(second_first):
    """The pair (F(1,1), BW(1,0)) starts when F(0,1) ends (a slow stage 0) and lasts (f+b+w)·0.5."""
    costs = Costs(1.0, 1.0, 1.0, overlap=0.5, stage_times={0: (3.0, 1.0, 1.0)})
    result = simulate(_pair_schedule(second_first), costs)
    assert_valid(result)
    t = _times(result)
    assert t["1F1"] == t["1B0"] == pytest.approx((6.0, 7.5))
    assert t["1B1"] == pytest.approx((7.5, 9.5))
    assert t["0B1"] == pytest.approx((9.5, 11.5))
    assert result.paired.sum() == 2
    assert sorted(result.slot[result.paired].tolist()) == [result.slot[result.paired][0]] * 2


def test_pair_halves_appear_as_two_ops_with_the_same_times():
    """The CLI contract lists a pair as two ops with equal start and end."""
    result = simulate(_pair_schedule(False), Costs(overlap=0.8))
    ops = [o for o in result.ops() if o["device"] == 1 and o["start"] == 2.0]
    assert {(o["stage"], o["microbatch"], o["kind"]) for o in ops} == {(1, 1, "F"), (1, 0, "BW")}
    assert {o["end"] for o in ops} == {2.0 + 3.0 * 0.8}


def test_ops_rows_carry_the_contract_fields():
    """ops() gives device, stage, microbatch, kind, start, end with plain Python values."""
    op = ppviz.simulate("1f1b", 2, 1).result.ops()[0]
    assert op == {"device": 0, "stage": 0, "microbatch": 0, "kind": "F", "start": 0.0, "end": 1.0}


def test_chunk_index_follows_the_placement():
    """On a looped placement, stage s is chunk s // p of its device."""
    result = ppviz.simulate("looped-bfs", 2, 2, chunks=3).result
    assert np.array_equal(result.chunk, result.stage // 2)


# --- deadlocks ------------------------------------------------------------------------------


def test_two_devices_waiting_for_each_other_name_both_stuck_actions():
    """Device 0 starts with its backward, device 1 waits for device 0's forward: a cycle."""
    order = [[Action(0, 0, BW), Action(0, 0, F)], [Action(1, 0, F), Action(1, 0, BW)]]
    with pytest.raises(DeadlockError) as info:
        simulate(make_schedule(Placement.standard(2), 1, order))
    text = str(info.value)
    assert "device 0 is stuck at step 0 (0B0)" in text
    assert "device 1 is stuck at step 0 (1F0)" in text
    assert "waiting for 0F0" in text


def test_w_before_its_b_on_one_device_is_a_deadlock():
    """W waits for its B, which comes later on the same device."""
    order = [[Action(0, 0, F), Action(0, 0, W), Action(0, 0, B)]]
    with pytest.raises(DeadlockError, match=r"device 0 is stuck at step 1 \(0W0\), waiting for 0I0"):
        simulate(make_schedule(Placement.standard(1), 1, order))


def test_pair_whose_halves_depend_on_each_other_is_a_deadlock():
    """A forward and its own backward cannot run as one slot."""
    order = [[Overlap(Action(0, 0, F), Action(0, 0, BW))]]
    with pytest.raises(DeadlockError, match=r"\(0F0;0B0\)"):
        simulate(make_schedule(Placement.standard(1), 1, order))


def test_large_cyclic_order_is_reported_not_looped_on():
    """Reversing every row of a 1F1B with 4096 actions deadlocks at once and says so."""
    sched = ppviz.build("1f1b", 8, 256)
    reverse = dataclasses.replace(sched, steps=tuple(tuple(reversed(r)) for r in sched.order))
    with pytest.raises(DeadlockError, match="device 7 is stuck at step 0"):
        simulate(reverse)


def test_deadlock_is_a_schedule_error_and_a_value_error():
    """Callers that catch ValueError catch every bad order."""
    assert issubclass(DeadlockError, ScheduleError)
    assert issubclass(ScheduleError, ValueError)


# --- validation -----------------------------------------------------------------------------


def _std(p: int, m: int, rows):
    return make_schedule(Placement.standard(p), m, rows)


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        (
            [[Action(0, 0, F), Action(0, 0, F), Action(0, 0, BW)], [Action(1, 0, F), Action(1, 0, BW)]],
            "0F0 appears 2 times",
        ),
        ([[Action(0, 0, F)], [Action(1, 0, F), Action(1, 0, BW)]], "backward of stage 0 microbatch 0 never runs"),
        ([[Action(0, 0, BW)], [Action(1, 0, F), Action(1, 0, BW)]], "forward .*stage 0 microbatch 0 never runs"),
        (
            [[Action(0, 0, F), Action(1, 0, BW)], [Action(1, 0, F), Action(0, 0, BW)]],
            "1B0 is on device 0, but stage 1 of microbatch 0 belongs on device 1",
        ),
        (
            [[Action(0, 0, F), Action(0, 0, BW)], [Action(1, 0, F), Action(1, 0, BW), Action(2, 0, F)]],
            "runs 2F0, but the schedule has stages 0..1",
        ),
        (
            [[Action(0, 0, F), Action(0, 0, BW)], [Action(1, 0, F), Action(1, 0, BW), Action(1, 1, F)]],
            "microbatches 0..0",
        ),
        (
            [[Action(0, 0, F), Action(0, 0, B), Action(0, 0, BW)], [Action(1, 0, F), Action(1, 0, BW)]],
            "both a split backward",
        ),
        ([[Action(0, 0, F), Action(0, 0, B)], [Action(1, 0, F), Action(1, 0, BW)]], "has B but no W"),
        (
            [[Action(0, 0, F), Action(0, 0, BW)], [Action(1, 0, F), Action(1, 0, W), Action(1, 0, BW)]],
            "has W but no B",
        ),
        ([[Action(0, 0, F), Action(0, 0, BW)]], "1 device rows but the placement has 2 devices"),
        ([[Action(0, 0, F), Action(0, 0, BW)], [(1, 0, "X")]], "cannot read step"),
        ([[Action(0, 0, F), Action(0, 0, BW)], ["1F0"]], "cannot read step"),
        ([[Action(0.0, 0, F), Action(0, 0, BW)], [Action(1, 0, F), Action(1, 0, BW)]], "whole-number"),
        ([[Action(0, 0, F), Action(0, 0, BW)], [Action(1, 0.5, F), Action(1, 0, BW)]], "whole-number"),
        ([[Action(0, 0, F), Action(0, 0, BW)], [Action(2**70, 0, F), Action(1, 0, BW)]], "far out of range"),
    ],
)
def test_invalid_orders_are_schedule_errors_that_name_the_action(rows, message):
    """Duplicate, missing, misplaced, unknown and half-split actions are refused before timing."""
    with pytest.raises(ScheduleError, match=message):
        simulate(_std(2, 1, rows))
    with pytest.raises(ScheduleError, match=message):
        ppviz.validate(_std(2, 1, rows))


def test_action_of_the_wrong_direction_is_misplaced():
    """On DualPipe's placement, a direction-1 microbatch's stage 0 belongs on the last device."""
    pl = Placement.dualpipe(2)
    rows = [[Action(0, 0, F), Action(0, 1, F)], [Action(1, 0, F), Action(1, 1, F)]]
    with pytest.raises(ScheduleError, match="0F1 is on device 0, but stage 0 of microbatch 1 belongs on device 1"):
        simulate(make_schedule(pl, 2, rows, directions=(0, 1)))


def test_directions_must_cover_every_microbatch():
    """A directions tuple of the wrong length is refused."""
    sched = make_schedule(Placement.dualpipe(2), 2, [[], []], directions=(0,))
    with pytest.raises(ScheduleError, match="directions has 1 entries for 2 microbatches"):
        simulate(sched)


def test_a_schedule_needs_a_microbatch():
    """Zero microbatches is refused with the count."""
    with pytest.raises(ScheduleError, match="at least one microbatch"):
        simulate(make_schedule(Placement.standard(1), 0, [[]]))


def test_plain_tuples_and_kind_strings_are_accepted():
    """Orders from outside (JSON) may use (stage, microbatch, "F") tuples."""
    rows = [[(0, 0, "F"), None, (0, 0, "BW")]]
    assert simulate(make_schedule(Placement.standard(1), 1, rows)).end.tolist() == [1.0, 3.0]


# --- the validator itself -------------------------------------------------------------------


def _tampered(result, **columns):
    """The result with some op columns replaced, its slot columns kept consistent with them."""
    for name in ("start", "end"):
        if name in columns:
            slot_col = np.zeros(len(result.slot_start))
            slot_col[result.slot] = columns[name]
            columns[f"slot_{name}"] = slot_col
    return _replaced(result, **columns)


def _replaced(result, **columns):
    """A new Result with ``columns`` in place of the result's own."""
    names = ("device", "stage", "microbatch", "kind", "slot", "start", "end", "slot_device", "slot_start", "slot_end")
    return Result(result.schedule, result.costs, **{n: columns.get(n, getattr(result, n)) for n in names})


def test_validator_accepts_the_simulators_result(tiny_1f1b):
    """The smallest steady-state order passes every check."""
    assert_valid(simulate(tiny_1f1b, Costs(1, 2, 1, p2p=0.5)))


def test_validator_catches_a_broken_dependency(tiny_1f1b):
    """Moving device 1's first forward before device 0's ends breaks F(1,0) after F(0,0)."""
    result = simulate(tiny_1f1b)
    start, end = result.start.copy(), result.end.copy()
    i = int(np.flatnonzero((result.stage == 1) & (result.microbatch == 0) & (result.kind == 0))[0])
    start[i] -= 0.5
    end[i] -= 0.5
    with pytest.raises(AssertionError, match=r"F\(stage 1, mb 0\) starts at 0.5 before"):
        assert_valid(_tampered(result, start=start, end=end), exact=False)


def test_validator_catches_a_wrong_duration(tiny_1f1b):
    """An op that ends late is not the cost convention."""
    result = simulate(tiny_1f1b)
    end = result.end.copy()
    end[-1] += 1.0
    with pytest.raises(AssertionError, match="lasts"):
        assert_valid(_tampered(result, end=end))


def test_validator_catches_a_needless_delay(tiny_1f1b):
    """Shifting device 0's last op (nothing depends on it) later keeps it valid but not exact."""
    result = simulate(tiny_1f1b)
    start, end = result.start + 0.0, result.end + 0.0
    i = np.flatnonzero(result.device == 0)[-1]
    start[i] += 1.0
    end[i] += 1.0
    assert_valid(_tampered(result, start=start, end=end), exact=False)
    with pytest.raises(AssertionError, match="could start at"):
        assert_valid(_tampered(result, start=start, end=end))


def test_validator_catches_two_ops_at_once(tiny_1f1b):
    """Pulling device 0's second forward back onto its first makes the device run two at once."""
    result = simulate(tiny_1f1b)
    start, end = result.start.copy(), result.end.copy()
    start[1], end[1] = start[0], end[0]
    with pytest.raises(AssertionError, match="before its device is free"):
        assert_valid(_tampered(result, start=start, end=end))


def test_validator_catches_a_misreported_device(tiny_1f1b):
    """An op reported on a device other than its order row is caught."""
    result = simulate(tiny_1f1b)
    device = result.device.copy()
    device[0] = 1
    with pytest.raises(AssertionError, match="another device"):
        assert_valid(_tampered(result, device=device))


def test_validator_catches_a_wrong_memory_curve(tiny_1f1b, monkeypatch):
    """A curve that drifts from what the ops imply (here: every level doubled) is caught."""
    from ppviz import memory

    real = memory.activation

    def doubled(result):
        c = real(result)
        return memory.MemoryCurves(c.times, [v * 2 for v in c.values], c.peak, c.peak_time)

    monkeypatch.setattr(memory, "activation", doubled)
    with pytest.raises(AssertionError, match="curve differs"):
        assert_valid(simulate(tiny_1f1b))


def test_validator_catches_slot_columns_that_disagree_with_the_ops(tiny_1f1b):
    """Metrics read slot_start/slot_end, so they must match the ops."""
    result = simulate(tiny_1f1b)
    with pytest.raises(AssertionError, match="slot columns"):
        assert_valid(_replaced(result, slot_end=result.slot_end + 1.0))


def test_a_direction_the_placement_does_not_have_is_a_schedule_error():
    """directions=(0, 1) on a one-direction placement should be refused, not crash or wrap."""
    rows = [
        [Action(0, 0, F), Action(0, 1, F), Action(0, 0, BW), Action(0, 1, BW)],
        [Action(1, 0, F), Action(1, 1, F), Action(1, 0, BW), Action(1, 1, BW)],
    ]
    for directions in [(0, 1), (0, -1)]:
        with pytest.raises(ScheduleError, match="direction"):
            simulate(make_schedule(Placement.standard(2), 2, rows, directions=directions))


def test_per_share_times_cover_every_stage_of_a_v_shape():
    """One meaning everywhere: share i of 4 is stages 2i and 2i+1 of a V (8 stages), each at half time."""
    costs = ppviz.make_costs(stage_times={1: (2.0, 4.0, 6.0)})
    v = costs.durations(8, 4)
    assert v[:3, 2].tolist() == v[:3, 3].tolist() == [1.0, 2.0, 3.0]
    assert v[:3, 1].tolist() == v[:3, 4].tolist() == [0.5, 0.5, 0.5]
    assert costs.durations(4, 4)[:3, 1].tolist() == [2.0, 4.0, 6.0]


def test_the_same_uneven_model_gives_1f1b_and_a_v_shape_the_same_work_per_device():
    """A heavy last share is as heavy under 1F1B (stage 3) as under ZB-V (stages 6 and 7, on device 0)."""
    heavy = {3: (2.0, 3.0, 2.0)}
    flat = ppviz.simulate("1f1b", 4, 8, stage_times=heavy)
    vee = ppviz.simulate("zb-v", 4, 8, stage_times=heavy)
    assert sum(flat.metrics.busy) == pytest.approx(sum(vee.metrics.busy)) == pytest.approx(8 * (3 * 3 + 7))


def test_exact_stage_times_are_used_unscaled_and_must_cover_every_stage():
    times = ((1.0, 2.0, 0.5), (1.5, 2.5, 0.5), (1.0, 2.0, 0.5), (2.0, 1.0, 1.0))
    run = ppviz.evaluate(ppviz.build("zb-v", 2, 4), ppviz.make_costs(exact_stage_times=times))
    d = run.result.end - run.result.start
    first_f = (run.result.kind == 0) & (run.result.stage == 3)
    assert set(d[first_f].tolist()) == {2.0}
    assert run.metrics.formula_makespan is None  # no closed form for uneven stages
    with pytest.raises(ValueError, match="exact per-stage times give 4 stages, but the schedule has 2"):
        ppviz.evaluate(ppviz.build("1f1b", 2, 4), ppviz.make_costs(exact_stage_times=times))


@pytest.mark.parametrize("kwargs", [{"f": 0, "b": 0, "w": 0}, {"exact_stage_times": ((0, 0, 0), (0, 0, 0))}])
def test_all_zero_times_are_refused(kwargs):
    with pytest.raises(ValueError, match="all 0"):
        ppviz.make_costs(**kwargs)
