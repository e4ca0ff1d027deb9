"""The optimizer step between iterations: exact closed forms in the core (``Costs.optimizer_step``),
where each step sits, the estimate filling it in (seconds), and the abstract view left unchanged."""

import dataclasses
import json

import numpy as np
import pytest

import ppviz
from ppviz import figures, formats, memory
from ppviz.__main__ import main
from ppviz.estimate import Layout, cli, estimate
from ppviz.ir import Action, Kind, Overlap
from ppviz.iterations import iteration_ends, optimizer_steps
from ppviz.units import duration

FLUSHED = ["gpipe", "1f1b", "eager-1f1b"]
NO_FLUSH = ["1f1b-2bw", "eager-1f1b-2bw"]


# --- the core: closed forms ------------------------------------------------------------------


@pytest.mark.parametrize("name", FLUSHED)
@pytest.mark.parametrize(("p", "m", "k"), [(4, 8, 3), (3, 3, 2), (5, 7, 4)])
def test_flush_with_equal_steps_adds_one_step_per_boundary(name, p, m, k):
    """k(m+p−1)(f+b+w) + (k−1)·s at latency 0: the last iteration's step is not in the run."""
    f, b, w, s = 1.0, 2.0, 0.5, 7.25
    run = ppviz.evaluate(ppviz.build(name, p, m, iterations=k), ppviz.Costs(f, b, w, optimizer_step=[s] * p))
    assert run.metrics.makespan == k * (m + p - 1) * (f + b + w) + (k - 1) * s


@pytest.mark.parametrize("name", FLUSHED)
def test_flush_with_unequal_steps_waits_for_the_latest_one(name):
    """Device d ends its last backward d(f+b+w) before device 0 and the next forward reaches it
    d·f later... so the next iteration starts max_d(s_d − d(f+b+w)) after the flush."""
    p, m, k, f, b, w = 4, 6, 3, 1.0, 1.0, 1.0
    steps = [1.0, 2.0, 30.0, 4.0]
    run = ppviz.evaluate(ppviz.build(name, p, m, iterations=k), ppviz.Costs(f, b, w, optimizer_step=steps))
    delay = max(s - d * (f + b + w) for d, s in enumerate(steps))
    assert delay == 24.0
    assert run.metrics.makespan == k * (m + p - 1) * (f + b + w) + (k - 1) * delay


@pytest.mark.parametrize(("name", "p", "m"), [("1f1b-2bw", 4, 4), ("1f1b-2bw", 3, 7), ("eager-1f1b-2bw", 4, 6)])
def test_no_flush_with_equal_steps_adds_one_step_per_boundary(name, p, m):
    """(k·m+p−1)(f+b+w) + (k−1)·s: every device's ops after its step shift by s."""
    k, s = 3, 2.5
    run = ppviz.evaluate(ppviz.build(name, p, m, iterations=k), ppviz.Costs(1.0, 2.0, 1.0, optimizer_step=[s] * p))
    assert run.metrics.makespan == (k * m + p - 1) * 4.0 + (k - 1) * s


def test_1f1b_2bw_with_unequal_steps_waits_for_the_longest():
    p, m, k = 4, 5, 3
    steps = [1.0, 9.0, 3.0, 0.0]
    run = ppviz.evaluate(ppviz.build("1f1b-2bw", p, m, iterations=k), ppviz.Costs(optimizer_step=steps))
    assert run.metrics.makespan == (k * m + p - 1) * 3.0 + (k - 1) * 9.0


def test_closed_forms_hold_for_random_sizes_times_and_steps():
    """100 seeded draws of p, m, k, f, b, w and per-device steps: the flush form and 1F1B-2BW's."""
    rng = np.random.default_rng(11)
    for _ in range(100):
        p = int(rng.integers(2, 7))
        m, k = int(rng.integers(p, 13)), int(rng.integers(2, 5))
        f, b, w = (float(x) for x in rng.choice([0.5, 1.0, 2.0, 3.0], 3))
        steps = [float(x) for x in rng.choice([0.0, 0.5, 1.0, 3.0, 7.0, 20.0], p)]
        work = f + b + w
        costs = ppviz.Costs(f, b, w, optimizer_step=steps)
        for name in FLUSHED:
            run = ppviz.evaluate(ppviz.build(name, p, m, iterations=k), costs)
            delay = max(s - d * work for d, s in enumerate(steps))
            assert run.metrics.makespan == pytest.approx(k * (m + p - 1) * work + (k - 1) * delay, rel=1e-12)
        run = ppviz.evaluate(ppviz.build("1f1b-2bw", p, m, iterations=k), costs)
        assert run.metrics.makespan == pytest.approx((k * m + p - 1) * work + (k - 1) * max(steps), rel=1e-12)


# --- the core: where the steps sit ---------------------------------------------------------


@pytest.mark.parametrize("name", FLUSHED + NO_FLUSH)
def test_each_step_follows_its_devices_iteration_end_and_precedes_its_next_op(name):
    p, m, k = 4, 6, 3
    steps = [3.0, 1.0, 2.0, 5.0]
    run = ppviz.evaluate(ppviz.build(name, p, m, iterations=k), ppviz.Costs(optimizer_step=steps))
    r = run.result
    st = optimizer_steps(r)
    assert len(st.device) == (k - 1) * p
    ends = iteration_ends(r)
    for d, i, t0, t1 in zip(st.device, st.iteration, st.start, st.end):
        assert t0 == ends[i, d] and t1 == t0 + steps[d]
        later = (r.device == d) & (r.start >= t0) & ~((r.start == t0) & (r.end == t0))
        on_device = r.device == d
        assert r.start[later].min() >= t1  # the device's next op waits for the step
        assert not ((r.start[on_device] < t1) & (r.end[on_device] > t0)).any()  # nothing overlaps it


def test_flush_next_forward_starts_when_device_0s_step_ends():
    p, m = 4, 4
    run = ppviz.evaluate(ppviz.build("1f1b", p, m, iterations=2), ppviz.Costs(optimizer_step=[5.0] * p))
    r = run.result
    st = optimizer_steps(r)
    zero = st.end[st.device == 0][0]
    assert zero == 21 + 5.0
    assert r.start[r.microbatch >= m].min() == zero


def test_no_steps_means_the_run_of_today():
    """The abstract view has no step: zero steps or a single iteration time exactly as without."""
    sched = ppviz.build("1f1b", 4, 8, iterations=3)
    base = ppviz.evaluate(sched).result
    zeros = ppviz.evaluate(sched, ppviz.Costs(optimizer_step=[0.0] * 4)).result
    assert np.array_equal(base.start, zeros.start) and np.array_equal(base.end, zeros.end)
    assert len(optimizer_steps(base).device) == 0 and len(optimizer_steps(zeros).device) == 0
    one = ppviz.build("1f1b", 4, 8)
    assert np.array_equal(
        ppviz.evaluate(one).result.end, ppviz.evaluate(one, ppviz.Costs(optimizer_step=[9.0] * 4)).result.end
    )


def test_steps_stay_out_of_busy_time_and_out_of_closed_forms():
    sched = ppviz.build("gpipe", 3, 3, iterations=2)
    run = ppviz.evaluate(sched, ppviz.Costs(optimizer_step=[4.0, 4.0, 4.0]))
    assert run.metrics.busy == ppviz.evaluate(sched).metrics.busy
    assert run.metrics.formula_makespan is None  # the registry's forms have no step
    assert ppviz.Costs(optimizer_step=[1.0]).as_dict()["optimizer_step"] == [1.0]
    assert not ppviz.Costs(optimizer_step=[1.0]).uniform and ppviz.Costs(optimizer_step=[0.0]).uniform


def test_a_step_after_an_overlapped_pair():
    """2BW, p = 2, m = 2, device 0 running (F2;BW1) as one pair: BW1 ends iteration 0 there, so the
    step follows the pair (7–10, step 10–15) and F3 waits for it; device 1's step follows its BW1."""
    sched = ppviz.build("1f1b-2bw", 2, 2, iterations=2)
    row = list(sched.order[0])
    i = row.index(Action(0, 2, Kind.F))
    row[i : i + 2] = [Overlap(row[i], row[i + 1])]
    paired = dataclasses.replace(sched, steps=(tuple(row), sched.order[1]))
    r = ppviz.evaluate(paired, ppviz.Costs(optimizer_step=[5.0, 5.0])).result
    st = optimizer_steps(r)
    assert st.device.tolist() == [0, 1] and st.start.tolist() == [10.0, 7.0] and st.end.tolist() == [15.0, 12.0]
    assert r.start[(r.device == 0) & (r.microbatch == 3) & (r.kind == 0)].tolist() == [15.0]
    assert r.start[(r.device == 1) & (r.microbatch == 2) & (r.kind == 0)].tolist() == [12.0]


@pytest.mark.parametrize(
    ("steps", "words"),
    [([1.0, -1.0], r"optimizer_step\[1\] must be"), ([float("nan")], "finite"), (5, "one time per device")],
)
def test_bad_steps_are_refused(steps, words):
    with pytest.raises(ValueError, match=words):
        ppviz.Costs(optimizer_step=steps)


def test_steps_for_the_wrong_number_of_devices_are_refused():
    with pytest.raises(ValueError, match="optimizer_step gives times for 2 devices, but there are 4"):
        ppviz.evaluate(ppviz.build("1f1b", 4, 4, iterations=2), ppviz.Costs(optimizer_step=[1.0, 1.0]))


# --- the estimate ----------------------------------------------------------------------------

LAYOUT = dict(tp=2, pp=4, dp=8, gbs=64, zero=1)


def _pair(schedule: str, k: int, **over):
    one = estimate("llama3-8b", "h100-sxm", Layout(schedule=schedule, **LAYOUT, **over))
    many = estimate(
        "llama3-8b", "h100-sxm", Layout(schedule=schedule, schedule_params={"iterations": k}, **LAYOUT, **over)
    )
    return one, many


@pytest.mark.parametrize("name", FLUSHED)
@pytest.mark.parametrize("overlap", [True, False])
def test_estimate_flush_places_each_devices_sync_and_step_between_iterations(name, overlap):
    """Device 0 ends every iteration last and starts the next, and here the other devices' steps end
    in their slack, so the run is k single iterations M apart by device 0's step s0:
    makespan = k·M + (k−1)·s0, and the average iteration = (makespan + last sync + step) / k."""
    k = 3
    one, many = _pair(name, k, dp_overlap=overlap)
    steps = many.costs.optimizer_step
    assert steps == tuple(one.optimizer_step_s.tolist())
    assert many.makespan_s == pytest.approx(k * one.makespan_s + (k - 1) * steps[0], rel=1e-12)
    assert many.run_s == many.makespan_s + many.dp_sync_s + many.optimizer_s
    assert many.iteration_s == pytest.approx(many.run_s / k, rel=1e-15)
    assert many.iteration_s == pytest.approx(
        one.iteration_s + (k - 1) / k * (steps[0] - one.dp_sync_s - one.optimizer_s)
    )
    assert sum(many.breakdown.values()) == pytest.approx(many.iteration_s, rel=1e-12)
    assert many.microbatches == one.microbatches == 64 // 8
    assert many.tokens_per_s == pytest.approx(64 * many.model.seq / many.iteration_s, rel=1e-12)
    assert many.model_flops == one.model_flops  # per iteration
    assert many.mfu == pytest.approx(one.mfu * one.iteration_s / many.iteration_s, rel=1e-12)


@pytest.mark.parametrize("name", NO_FLUSH)
def test_estimate_2bw_steps_add_the_longest_step_per_boundary(name):
    k = 3
    one, many = _pair(name, k, dp_overlap=False)
    steps = many.costs.optimizer_step
    without = ppviz.evaluate(many.run.schedule, dataclasses.replace(many.costs, optimizer_step=())).metrics.makespan
    assert many.makespan_s == pytest.approx(without + (k - 1) * max(steps), rel=1e-12)
    assert many.iteration_s < one.iteration_s  # no flush: the fill and drain are paid once
    assert sum(many.breakdown.values()) == pytest.approx(many.iteration_s, rel=1e-12)


def test_estimate_of_one_iteration_has_no_step_inside():
    one, _ = _pair("1f1b", 2)
    assert one.costs.optimizer_step == () and one.iterations == 1
    assert one.iteration_s == one.makespan_s + one.dp_sync_s + one.optimizer_s


def test_cli_iterations_in_real_units(capsys):
    argv = ["estimate", "--model", "llama3-8b", "--gpu", "h100-sxm", "--tp", 2, "--pp", 4, "--dp", 8, "--gbs", 64,
            "--zero", 1, "--schedule", "1f1b", "--iterations", 3, "--no-dp-overlap"]  # fmt: skip
    assert main([str(a) for a in argv] + ["--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["iterations"] == 3 and d["microbatches"] == 8 and d["run"]["microbatches"] == 24
    assert d["iteration_s"] == pytest.approx(d["run_s"] / 3, rel=1e-15)
    assert d["run"]["makespan"] == d["makespan_s"] and len(d["optimizer_step_s"]) == 4
    assert d["run"]["costs"]["optimizer_step"] == d["optimizer_step_s"]
    assert d["tokens_per_s"] == pytest.approx(64 * 8192 / d["iteration_s"], rel=1e-12)
    assert main([str(a) for a in argv]) == 0
    assert "on average over 3 iterations" in capsys.readouterr().out
    _, many = _pair("1f1b", 3)
    facts = dict(cli.facts(many))
    assert facts["iteration"] == duration(many.iteration_s) and "8 microbatches × 3 iterations" in facts["layout"]


# --- drawing and exports ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def three():
    """1F1B on 4 devices, 3 iterations of 2 microbatches, the DP sync fully exposed (big steps)."""
    return estimate(
        "llama3-8b", "h100-sxm",
        Layout(tp=2, pp=4, dp=32, gbs=64, zero=1, schedule="1f1b", schedule_params={"iterations": 3}, dp_overlap=False),
    )  # fmt: skip


def _named(fig, name):
    return [t for t in figures.to_plotly(fig).data if t.name == name]


def test_gantt_draws_each_step_as_a_grey_bar_after_its_iteration_line(three):
    fig = figures.to_plotly(figures.gantt(three.run, **figures.gantt_kwargs(three)))
    (bars,) = _named(fig, figures.OPTIMIZER_LABEL)
    st = optimizer_steps(three.run.result)
    assert len(st.device) == 2 * 4
    assert list(bars.y) == st.device.tolist()
    assert np.allclose(bars.base, st.start * 1e3, rtol=1e-15) and np.allclose(bars.x, (st.end - st.start) * 1e3)
    assert bars.marker.color == figures.OPTIMIZER_COLOR and bars.showlegend is not False
    assert "optimizer step" in bars.hovertemplate and "ms" in bars.hovertemplate
    (ends,) = [t for t in fig.data if t.legendgroup == "iterations"]
    line_x = sorted({x for x in ends.x if x is not None})
    assert line_x == sorted({float(t) for t in st.start * 1e3})  # each line at its device's step start
    t0, t1 = float(st.start[0]), float(st.end[0])
    window = figures.gantt(three.run, window=(t0, t1), **figures.gantt_kwargs(three))
    (part,) = _named(window, figures.OPTIMIZER_LABEL)
    assert len(part.y) == int(((st.end > t0) & (st.start < t1)).sum()) < len(st.device)


def test_the_abstract_view_draws_no_step_and_is_unchanged():
    run = ppviz.simulate("1f1b", 4, 4, iterations=3)
    for fig in (figures.gantt(run), figures.overview(run), figures.compare([run, run])):
        assert not _named(fig, figures.OPTIMIZER_LABEL)
    assert '"optimizer"' not in formats.chrome_trace(run)


def test_overview_and_compare_show_the_steps_once_in_the_legend(three):
    assert len(_named(figures.overview(three.run, **figures.gantt_kwargs(three)), figures.OPTIMIZER_LABEL)) == 1
    both = _named(figures.compare([three.run, three.run], **figures.gantt_kwargs(three)), figures.OPTIMIZER_LABEL)
    assert [t.showlegend for t in both] == [True, False] and both[1].xaxis == "x2"


def test_memory_is_unaffected_by_the_steps(three):
    """Activations are zero at a flush, so the peaks stay and the curve is 0 during every step."""
    without = ppviz.evaluate(three.run.schedule, dataclasses.replace(three.costs, optimizer_step=()))
    a = memory.activation(three.run.result, three.plan.activation_bytes)
    b = memory.activation(without.result, three.plan.activation_bytes)
    assert np.array_equal(a.peak, b.peak)
    st = optimizer_steps(three.run.result)
    for d, t0, t1 in zip(st.device, st.start, st.end):
        at = np.searchsorted(a.times[d], (t0 + t1) / 2, side="right") - 1
        assert a.values[d][at] == 0


def test_the_trace_has_a_slice_per_step(capsys, three):
    events = json.loads(formats.chrome_trace(three.run, **formats.trace_kwargs(three)))["traceEvents"]
    steps = [e for e in events if e.get("cat") == "optimizer"]
    st = optimizer_steps(three.run.result)
    assert sorted((e["tid"], e["args"]["iteration"], e["ts"], e["dur"]) for e in steps) == sorted(
        (int(d), int(i), round(float(a) * 1e6, 6), round(float(b - a) * 1e6, 6))
        for d, i, a, b in zip(st.device, st.iteration, st.start, st.end)
    )
    argv = [
        "estimate",
        "--model",
        "llama3-8b",
        "--gpu",
        "h100-sxm",
        "--tp",
        2,
        "--pp",
        4,
        "--dp",
        32,
        "--gbs",
        64,
        "--zero",
        1,
        "--schedule",
        "1f1b",
        "--iterations",
        3,
        "--no-dp-overlap",
        "--trace",
        "--recompute",
        "none",
        "--no-sequence-parallel",
    ]  # fmt: skip (the fixture's bare Layout, not the defaults)
    assert main([str(a) for a in argv]) == 0
    cli_events = json.loads(capsys.readouterr().out)["traceEvents"]
    assert [e for e in cli_events if e.get("cat") == "optimizer"] == steps
