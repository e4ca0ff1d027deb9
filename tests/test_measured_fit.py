"""Round trip: simulate with known costs → per-rank Kineto-shaped traces → import → the fit recovers them."""

from __future__ import annotations

import gzip
import json

import pytest

import ppviz
from ppviz.ir import Kind
from ppviz.measured.compare import compare, to_dict
from ppviz.measured.fit import fit
from ppviz.measured.kineto import read_traces
from ppviz.measured.synthetic import rank_traces

MS = 1e-3


def _write(tmp_path, run, gz=True, **kw) -> list[str]:
    paths = []
    for r, trace in enumerate(rank_traces(run, **kw)):
        path = tmp_path / f"rank{r}.json{'.gz' if gz and r % 2 == 0 else ''}"  # some gzipped, some not
        data = json.dumps(trace).encode()
        path.write_bytes(gzip.compress(data) if path.suffix == ".gz" else data)
        paths.append(str(path))
    return paths[::-1]  # any order: the rank comes from distributedInfo


CASES = [
    ("1f1b", 4, 8, {}, dict(f=1.0, b=2.0, w=0.0, p2p=0.0)),
    ("gpipe", 2, 4, {}, dict(f=1.5, b=2.5, w=0.0, p2p=0.25)),
    ("interleaved-1f1b", 2, 4, {"chunks": 2}, dict(f=1.0, b=1.5, w=0.5, p2p=0.1)),
    ("zb-h1", 3, 6, {}, dict(f=1.0, b=1.0, w=0.75, p2p=0.2)),  # split backward
    ("zb-v", 2, 6, {}, dict(f=1.0, b=1.25, w=0.5, p2p=0.3)),  # split backward, V placement
    # each rank's host between its ops, as a real run's: different per rank, some above the latency
    ("1f1b", 4, 8, {}, dict(f=1.0, b=2.0, w=0.0, p2p=0.2, host_overhead=[0.05, 0.4, 0.3, 0.1])),
    ("interleaved-zb", 2, 8, {}, dict(f=1.0, b=1.0, w=1.0, p2p=0.1, host_overhead=[0.25, 0.5])),
    ("zb-v", 4, 8, {}, dict(f=1.0, b=1.25, w=0.5, p2p=0.3, host_overhead=[0.6, 0.1, 0.2, 0.05])),
]


@pytest.mark.parametrize("name, p, m, params, costs", CASES,
                         ids=[c[0] + ("+host" if "host_overhead" in c[4] else "") for c in CASES])  # fmt: skip
def test_the_fit_recovers_known_costs_exactly(tmp_path, name, p, m, params, costs):
    uneven = {0: (costs["f"] * 1.5, costs["b"], costs["w"])}  # one slower device share
    run = ppviz.simulate(name, p, m, stage_times=uneven, **params, **costs)
    measured = read_traces(_write(tmp_path, run))
    assert measured.schedule().order == tuple(tuple(a for a in row if a is not None) for row in run.schedule.order)
    fitted = fit(measured)
    durations = run.costs.durations(run.schedule.stages, p)  # [kind, stage] in units; a unit is 1 ms here
    split = any(a.kind == Kind.W for _, a in run.schedule.actions())
    for s in fitted.stages:
        assert s.f.time == pytest.approx(durations[0, s.stage] * MS, abs=1e-12)
        assert s.f.samples == m and s.f.low == pytest.approx(s.f.high, abs=1e-12)
        if split:
            assert s.b.time == pytest.approx(durations[1, s.stage] * MS, abs=1e-12)
            assert s.w.time == pytest.approx(durations[2, s.stage] * MS, abs=1e-12)
        else:
            assert s.w is None and s.b.time == pytest.approx(durations[3, s.stage] * MS, abs=1e-12)
    assert fitted.p2p.time == pytest.approx(costs["p2p"] * MS, abs=1e-12) and fitted.p2p.samples > 0
    for given, got in zip(costs.get("host_overhead", [0.0] * p), fitted.host_overhead, strict=True):
        # a rank whose every op waited for its input never shows its overhead, and it never mattered there
        assert got is None or got.time == pytest.approx(given * MS, abs=1e-12)
    assert sum(h is not None and h.time > 0 for h in fitted.host_overhead) == sum(
        g > 0 for g in costs.get("host_overhead", [])
    )
    c = compare(measured)
    assert c.simulated_makespan_s == pytest.approx(run.metrics.makespan * MS, rel=1e-9)
    assert c.measured_makespan_s == pytest.approx(run.metrics.makespan * MS, rel=1e-9)
    assert c.excess_idle_s == pytest.approx([0.0] * p, abs=1e-9) and not c.late_ops
    # the simulated idle splits into each rank's host overhead, one after each op but its last, and the bubble
    ops = [len(row) for row in measured.ops]
    assert c.simulated_host_s == pytest.approx([h * (n - 1) for h, n in zip(fitted.host_overhead_s, ops)], abs=1e-12)
    assert [b + h for b, h in zip(c.bubble_s, c.simulated_host_s)] == pytest.approx(c.simulated_idle_s, abs=1e-12)
    assert min(c.bubble_s) >= -1e-12


def test_a_late_op_is_named_with_its_lateness(tmp_path):
    """Rank 1 stalls 5 ms before its last backward (and rank 0's last backward, which needs its gradient,
    starts 5 ms later too). The median fit sees no overhead, so 1B3 is 5 ms late against the model; the
    mean fit counts the stall as rank 1's host overhead, 5 ms over its 7 gaps: spread over every op of
    the rank, it ends the simulation with the run, and no op is late."""
    run = ppviz.simulate("1f1b", 2, 4, f=1.0, b=2.0)
    traces = rank_traces(run)
    for e in traces[0]["traceEvents"] + traces[1]["traceEvents"]:
        if e["name"] in ("PP:1B3", "PP:0B3"):
            e["ts"] += 5000.0
        elif e["name"].startswith("ProfilerStep#"):
            e["dur"] += 5000.0
    paths = []
    for r, t in enumerate(traces):
        (tmp_path / f"r{r}.json").write_text(json.dumps(t))
        paths.append(str(tmp_path / f"r{r}.json"))
    measured = read_traces(paths)
    c = compare(measured, "median")
    assert c.late_ops[0].name == "1B3" and c.late_ops[0].late_s == pytest.approx(5 * MS)
    assert c.excess_idle_s[1] > 0 and c.fit.host_overhead_s == (0.0, 0.0)
    mean = compare(measured)
    assert mean.fit.host_overhead_s == pytest.approx((0.0, 5 * MS / 7))
    assert mean.simulated_makespan_s == pytest.approx(mean.measured_makespan_s) and not mean.late_ops


def _dump(tmp_path, traces) -> list[str]:
    paths = []
    for r, t in enumerate(traces):
        paths.append(str(tmp_path / f"t{r}.json"))
        (tmp_path / f"t{r}.json").write_text(json.dumps(t))
    return paths


def test_ranks_are_aligned_by_their_clock_base(tmp_path):
    run = ppviz.simulate("1f1b", 2, 4, f=1.0, b=2.0, p2p=0.5)
    same = read_traces(_dump(tmp_path, rank_traces(run)))
    traces = rank_traces(run)
    traces[1]["baseTimeNanoseconds"] += 7_000_000  # rank 1's clock starts 7 ms later: its ts are 7,000 µs less
    for e in traces[1]["traceEvents"]:
        e["ts"] -= 7000.0
    shifted = read_traces(_dump(tmp_path, traces))
    for a, b in zip(same.ops, shifted.ops):
        assert [t for o in a for t in (o.start, o.end)] == pytest.approx(
            [t for o in b for t in (o.start, o.end)], abs=1e-12
        )
    assert fit(shifted).p2p.time == pytest.approx(0.5 * MS, abs=1e-12)


def test_the_last_complete_iteration_is_taken_unless_one_is_asked(tmp_path):
    run = ppviz.simulate("gpipe", 2, 2)
    traces = rank_traces(run, step=1)
    for r, t in enumerate(traces):  # a second step, cut short: rank 1 never ran its ops
        extra = [dict(e, ts=e["ts"] + 1e5) for e in t["traceEvents"]]
        for e in extra:
            if e["name"].startswith("ProfilerStep#"):
                e["name"] = "ProfilerStep#2"
        t["traceEvents"] += [e for e in extra if r == 0 or not e["name"].startswith("PP:")]
    paths = _dump(tmp_path, traces)
    default = read_traces(paths)
    assert default.iteration == 1 and any("the last complete one of ProfilerStep#1, ProfilerStep#2" in n
                                          for n in default.notes)  # fmt: skip
    asked = read_traces(paths, iteration=2)
    assert asked.iteration == 2 and len(asked.ops[0]) == 4 and not asked.ops[1]


def test_stages_with_a_full_backward_and_stages_with_split_ones_fit_each_their_way(tmp_path):
    """torch's older _merge_bw order: rank 0 runs F and BW, rank 1 separate B and W."""
    from pathlib import Path

    from ppviz import formats

    path = Path(__file__).parent / "data/measured/torch-older-naming/zb-interleaved-2r.order_compute_bw.csv"
    schedule = formats.read_torch_csv(path.read_text())
    times = [(1.0, 1.5, 0.5), (1.25, 1.0, 0.75), (1.0, 2.0, 1.0), (0.5, 1.0, 0.25)]
    run = ppviz.evaluate(schedule, ppviz.make_costs(exact_stage_times=times, p2p=0.2))
    fitted = fit(read_traces(_dump(tmp_path, rank_traces(run))))
    for s, (f, b, w) in zip(fitted.stages, times):
        assert s.f.time == pytest.approx(f * MS)
        if s.stage in (0, 2):  # rank 0: full backwards only
            assert s.w is None and s.b.time == pytest.approx((b + w) * MS)
        else:
            assert (s.b.time, s.w.time) == pytest.approx((b * MS, w * MS))
    assert fitted.p2p.time == pytest.approx(0.2 * MS)


def test_a_ranks_step_ends_when_its_last_send_is_received(tmp_path):
    """GPipe on 2 ranks, F 1 ms, full backward 4 ms on rank 0 and 2 ms on rank 1: rank 1 runs 1BW0 3–5 and
    1BW1 5–7, but rank 0 is busy with 0BW0 5–9 and takes 1BW1's gradient only when 0BW1 starts, at 9. So
    rank 1's step ends at 9 (its last op at 7), rank 0's at its last op's end, 13: measured and simulated."""
    costs = ppviz.make_costs(exact_stage_times=[(1.0, 4.0, 0.0), (1.0, 2.0, 0.0)])
    run = ppviz.evaluate(ppviz.simulate("gpipe", 2, 2).schedule, costs)
    c = compare(read_traces(_write(tmp_path, run)))
    r = c.simulated.result
    assert [float(r.end[r.device == d].max()) for d in range(2)] == pytest.approx([13 * MS, 7 * MS])
    assert c.simulated_step_s == pytest.approx((13 * MS, 9 * MS), abs=1e-12)
    assert c.measured_step_s == pytest.approx((13 * MS, 9 * MS), abs=1e-12)
    d = to_dict(c)
    assert d["measured"]["step_s"] == pytest.approx([13 * MS, 9 * MS]) == d["simulated"]["step_s"]
