"""Metrics: makespan, spans, busy time, bubbles and the closed-form columns, and the Run summary."""

from __future__ import annotations

import json

import numpy as np
import pytest

import ppviz
from ppviz import Costs
from ppviz.ir import BW, Action, F, Overlap, Placement, make_schedule

CASES = [
    ("1f1b", 4, 8, {}),
    ("zb-h1", 3, 5, {}),
    ("interleaved-1f1b", 2, 4, {"chunks": 3}),
    ("looped-bfs", 3, 2, {"chunks": 2}),
    ("eager-1f1b", 4, 3, {}),
]


@pytest.mark.parametrize(("name", "p", "m", "params"), CASES)
def test_metrics_follow_their_definitions_from_the_ops(name, p, m, params):
    """makespan, span, busy and both bubbles recomputed here from the op columns agree."""
    run = ppviz.simulate(name, p, m, f=1.0, b=1.5, w=0.75, p2p=0.2, **params)
    r, got = run.result, run.metrics
    span = [r.end[r.device == d].max() - r.start[r.device == d].min() for d in range(p)]
    slots = {(int(d), float(a), float(b)) for d, a, b in zip(r.device, r.start, r.end)}  # a pair counts once
    busy = [sum(b - a for dd, a, b in slots if dd == d) for d in range(p)]
    makespan = r.end.max() - r.start.min()
    assert got.makespan == pytest.approx(makespan)
    assert got.span == pytest.approx(span)
    assert got.busy == pytest.approx(busy)
    assert got.bubble_fraction == pytest.approx(1 - sum(busy) / (p * makespan))
    longest = int(np.argmax(span))
    assert got.span_bubble_fraction == pytest.approx(1 - busy[longest] / span[longest])


@pytest.mark.parametrize(("p", "m"), [(2, 2), (4, 8), (8, 3)])
def test_1f1b_bubble_fraction_is_p_minus_1_over_m_plus_p_minus_1(p, m):
    """Each device computes m(f+b+w) of the (m+p−1)(f+b+w) makespan."""
    got = ppviz.simulate("1f1b", p, m, f=1, b=2, w=1).metrics
    assert got.bubble_fraction == pytest.approx((p - 1) / (m + p - 1))
    assert got.formula_bubble_fraction == pytest.approx((p - 1) / (m + p - 1))


def test_busy_is_the_same_work_per_device_for_every_schedule():
    """The cost convention: every schedule gives each device m(f+b+w) of work."""
    for name, p, m, params in CASES:
        busy = ppviz.simulate(name, p, m, f=1.0, b=1.5, w=0.75, **params).metrics.busy
        assert busy == pytest.approx([m * 3.25] * p), name


def test_formula_bubble_uses_the_closed_form_makespan():
    """formula_bubble_fraction = 1 − Σbusy / (p × formula_makespan), beside the simulated one."""
    got = ppviz.simulate("zb-h1", 4, 8, f=1, b=1, w=1).metrics
    formula = 8 * 3 + 3 * (1 + 1 - 1)
    assert got.formula_makespan == pytest.approx(formula)
    assert got.formula_bubble_fraction == pytest.approx(1 - 4 * 8 * 3 / (4 * formula))
    assert got.formula_bubble_fraction == pytest.approx(got.bubble_fraction)


@pytest.mark.parametrize(
    "costs", [{"p2p": 0.5}, {"stage_times": {1: (2.0, 1.0, 1.0)}}], ids=["latency", "heterogeneous"]
)
def test_no_closed_form_with_latency_or_uneven_stages(costs):
    """Closed forms assume latency 0 and uniform stages; otherwise the metrics do not claim one."""
    got = ppviz.simulate("1f1b", 4, 8, **costs).metrics
    assert got.formula_makespan is None
    assert got.formula_bubble_fraction is None


def test_uniform_overrides_keep_the_closed_form():
    """Per-stage times equal to the common ones are still uniform."""
    got = ppviz.simulate("1f1b", 2, 2, stage_times={0: (1.0, 1.0, 1.0)}).metrics
    assert got.formula_makespan == pytest.approx(9.0)


def test_a_pair_counts_once_in_busy_time():
    """[F0, (F1; BW0), BW1] with overlap 0.5: busy = 1 + 1.5 + 2 on the one device."""
    pair = Overlap(Action(0, 1, F), Action(0, 0, BW))
    sched = make_schedule(Placement.standard(1), 2, [[Action(0, 0, F), pair, Action(0, 1, BW)]])
    got = ppviz.evaluate(sched, Costs(overlap=0.5)).metrics
    assert got.busy == [4.5]
    assert got.makespan == 4.5
    assert got.bubble_fraction == 0.0


def test_an_idle_device_has_zero_span_and_busy_time():
    """A device that holds no stage is counted in the bubble but has no span."""
    sched = make_schedule(Placement(2, 1, ((0,),)), 1, [[Action(0, 0, F), Action(0, 0, BW)], []])
    got = ppviz.evaluate(sched).metrics
    # One stage for two devices: each action takes p/S = 2 times its device-share time.
    assert (got.makespan, got.span, got.busy) == (6.0, [6.0, 0.0], [6.0, 0.0])
    assert got.bubble_fraction == pytest.approx(0.5)
    assert got.chunks == [1, 0]


def test_summary_holds_the_contract_fields_and_is_json():
    """The CLI's --json contract: stable field names, plain values, ops as dicts."""
    run = ppviz.simulate("interleaved-1f1b", 2, 4, chunks=2)
    data = run.to_dict()
    for key in (
        "schedule",
        "devices",
        "stages",
        "microbatches",
        "chunks",
        "makespan",
        "span",
        "busy",
        "bubble_fraction",
        "peak_activation",
        "ops",
    ):
        assert key in data, key
    assert (data["schedule"], data["devices"], data["stages"], data["microbatches"], data["chunks"]) == (
        "interleaved-1f1b",
        2,
        4,
        4,
        2,
    )
    assert len(data["ops"]) == 2 * 4 * 2 * 2
    assert json.loads(json.dumps(data)) == data
    assert {op["kind"] for op in data["ops"]} == {"F", "BW"}


def test_summary_reports_the_params_used():
    """Derived defaults are reported too, e.g. the group size left at None."""
    params = ppviz.simulate("interleaved-1f1b", 2, 4, chunks=3).summary()["params"]
    assert params["chunks"] == 3
    assert "group_size" in params
