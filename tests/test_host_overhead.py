"""A device's host overhead (``Costs.host_overhead``): an op starts at max(its device's previous op's end +
the overhead, its input's end + p2p), checked against closed forms and a small event loop written here."""

from __future__ import annotations

import json

import numpy as np
import pytest

import ppviz
from ppviz.__main__ import main
from ppviz.errors import InputError
from ppviz.ir import Kind

# overlapped F&B pairs (one slot, two ops) have their own test
SCHEDULES = [n for n in ppviz.REGISTRY if not ppviz.simulate(n, 4, 8).result.paired.any()]


def _oracle(run: ppviz.Run, gaps: list[float], p2p: float) -> dict:
    """Start times of every op by the rule, device by device in order, each op's input by the dependency
    rule of the IR (F after F of the stage before; B/BW after the next stage's backward or, on the last
    stage, its own F; W after its own B)."""
    r = run.result
    S = run.schedule.stages
    dur = {(s, m, k): e - b for s, m, k, b, e in zip(r.stage.tolist(), r.microbatch.tolist(),
                                                      r.kind.tolist(), r.start.tolist(), r.end.tolist())}  # fmt: skip
    dev = dict(zip(zip(r.stage.tolist(), r.microbatch.tolist(), r.kind.tolist()), r.device.tolist()))
    F, B, W, BW = (ppviz.ir.KIND_INDEX[k] for k in (Kind.F, Kind.B, Kind.W, Kind.BW))

    def source(s, m, k):
        if k == F:
            return (s - 1, m, F) if s > 0 else None
        if k == W:
            return (s, m, B)
        if s == S - 1:
            return (s, m, F)
        return (s + 1, m, B) if (s + 1, m, B) in dev else (s + 1, m, BW)

    rows = [[] for _ in range(run.schedule.devices)]
    for d, _, s, m, k in sorted(zip(r.device.tolist(), r.start.tolist(), r.stage.tolist(), r.microbatch.tolist(),
                                    r.kind.tolist())):  # fmt: skip
        rows[d].append((s, m, k))
    start, end = {}, {}
    pos, free = [0] * len(rows), [None] * len(rows)
    while any(p < len(row) for p, row in zip(pos, rows)):
        moved = False
        for d, row in enumerate(rows):
            while pos[d] < len(row):
                op = row[pos[d]]
                src = source(*op)
                if src is not None and src not in end:
                    break
                t = 0.0 if free[d] is None else free[d] + gaps[d]
                if src is not None:
                    t = max(t, end[src] + (p2p if dev[src] != d else 0.0))
                start[op], end[op] = t, t + dur[op]
                free[d], pos[d], moved = end[op], pos[d] + 1, True
        assert moved, "the oracle deadlocked"
    return start


@pytest.mark.parametrize("name", SCHEDULES)
def test_every_schedule_starts_each_op_by_the_rule(name):
    rng = np.random.default_rng(len(name))
    gaps = [float(g) for g in rng.uniform(0.0, 0.6, 4)]
    costs = dict(f=1.0, b=1.25, w=0.75, p2p=0.3)
    run = ppviz.simulate(name, 4, 8, host_overhead=gaps, **costs)
    want = _oracle(run, gaps, costs["p2p"])
    r = run.result
    got = dict(zip(zip(r.stage.tolist(), r.microbatch.tolist(), r.kind.tolist()), r.start.tolist()))
    assert got == pytest.approx(want, abs=1e-9)
    assert run.metrics.makespan > ppviz.simulate(name, 4, 8, **costs).metrics.makespan


def test_one_device_pays_the_overhead_between_each_pair_of_ops():
    run = ppviz.simulate("gpipe", 1, 6, f=1.0, b=2.0, w=0.0, host_overhead=[0.5])
    assert run.metrics.makespan == pytest.approx(6 * 3.0 + (12 - 1) * 0.5)


def test_overlapped_pairs_pay_it_once_per_slot():
    base = ppviz.simulate("dualpipe", 4, 8, f=1.0, b=1.0, w=1.0)
    run = ppviz.simulate("dualpipe", 4, 8, f=1.0, b=1.0, w=1.0, host_overhead=[0.25] * 4)
    slots = [len(np.unique(base.result.slot[base.result.device == d])) for d in range(4)]
    assert run.metrics.makespan > base.metrics.makespan
    assert run.metrics.makespan <= base.metrics.makespan + 0.25 * (max(slots) - 1) + 1e-9


def test_zero_overhead_changes_nothing():
    base = ppviz.simulate("zb-v", 4, 8, f=1.0, b=1.0, w=1.0, p2p=0.1)
    zero = ppviz.simulate("zb-v", 4, 8, f=1.0, b=1.0, w=1.0, p2p=0.1, host_overhead=[0.0] * 4)
    assert np.array_equal(base.result.start, zero.result.start)


def test_bad_overheads_are_refused_with_what_to_change(capsys):
    with pytest.raises(InputError, match="host_overhead gives times for 3 devices, but there are 4"):
        ppviz.simulate("1f1b", 4, 8, host_overhead=[0.1] * 3)
    with pytest.raises(InputError, match=r"host_overhead\[1\] must be ≥ 0"):
        ppviz.make_costs(host_overhead=[0.1, -1.0])
    assert main(["simulate", "1f1b", "-p", "4", "-m", "8", "--host-overhead", "0.1,0.2"]) == 2
    assert "gives 2 times for 4 devices: give one time, or one per device" in capsys.readouterr().err


def test_the_cli_takes_one_time_for_every_device_or_one_per_device(capsys):
    assert main(["simulate", "1f1b", "-p", "4", "-m", "8", "--host-overhead", "0.5", "--json"]) == 0
    one = capsys.readouterr().out
    assert main(["simulate", "1f1b", "-p", "4", "-m", "8", "--host-overhead", "0.5,0.5,0.5,0.5", "--json"]) == 0
    assert capsys.readouterr().out == one
    got = json.loads(one)
    assert got["makespan"] == ppviz.simulate("1f1b", 4, 8, host_overhead=[0.5] * 4).metrics.makespan
    assert got["costs"]["host_overhead"] == [0.5] * 4 and got["formula_makespan"] is None


def test_with_optimizer_steps_one_device_pays_both():
    """One device, two iterations of 4 microbatches: 16 ops with 15 gaps, and one optimizer step between."""
    run = ppviz.evaluate(ppviz.build("gpipe", 1, 4, iterations=2),
                         ppviz.Costs(1.0, 2.0, 0.5, optimizer_step=[3.0], host_overhead=[0.25]))  # fmt: skip
    assert run.metrics.makespan == pytest.approx(8 * 3.5 + 15 * 0.25 + 3.0)
