"""ppviz.sweep: the compared schedules at each value of m, v or p, with gaps that say why."""

import pytest

import ppviz
from ppviz import sweep
from ppviz.estimate import specs


def test_1f1b_along_m_follows_its_closed_form():
    """1F1B's makespan is (m + p − 1)(f + b + w) and its peak min(p, m) at every m."""
    f, b, w, p = 1.0, 2.0, 0.5, 4
    costs = ppviz.make_costs(f=f, b=b, w=w)
    rows = sweep.sweep(["1f1b"], "m", [1, 2, 4, 8, 16], devices=p, microbatches=8, costs=costs)
    assert [r["value"] for r in rows] == [1, 2, 4, 8, 16]
    assert [r["makespan"] for r in rows] == [(m + p - 1) * (f + b + w) for m in (1, 2, 4, 8, 16)]
    assert [r["peak_activation"] for r in rows] == [min(p, m) for m in (1, 2, 4, 8, 16)]
    assert [r["bubble_fraction"] for r in rows] == pytest.approx([(p - 1) / (m + p - 1) for m in (1, 2, 4, 8, 16)])
    assert all(r["reason"] is None for r in rows)


def test_gpipe_along_p_follows_its_closed_form():
    rows = sweep.sweep(["gpipe"], "p", [1, 2, 4, 8], devices=4, microbatches=8)
    assert [r["makespan"] for r in rows] == [(8 + p - 1) * 3 for p in (1, 2, 4, 8)]


def test_a_refused_value_is_a_gap_with_the_core_reason():
    """Interleaved 1F1B needs m ≥ p: below it the row has no numbers and the core's message."""
    rows = sweep.sweep(["interleaved-1f1b"], "m", [2, 4, 8], devices=4, microbatches=8)
    refused, *kept = rows
    assert refused["makespan"] is None and refused["peak_activation"] is None
    with pytest.raises(ValueError) as core:
        ppviz.simulate("interleaved-1f1b", 4, 2)
    assert refused["reason"] == str(core.value)
    # m(f+b+w) + (p−1)(f+b+w)/v at v = 2
    assert [r["makespan"] for r in kept] == [4 * 3 + 3 * 3 / 2, 8 * 3 + 3 * 3 / 2]


def test_along_v_chunks_change_and_schedules_without_chunks_are_noted():
    rows = sweep.sweep(["interleaved-1f1b", "1f1b"], "v", [1, 2, 4], devices=4, microbatches=8)
    inter = [r["makespan"] for r in rows if r["schedule"] == "interleaved-1f1b"]
    assert inter == [8 * 3 + 3 * 3 / v for v in (1, 2, 4)]
    flat = [r for r in rows if r["schedule"] == "1f1b"]
    assert {r["makespan"] for r in flat} == {(8 + 3) * 3} and all("no chunks" in r["note"] for r in flat)


def test_a_guard_skips_points_with_its_reason():
    def guard(name, p, m, params):
        return "too big for the page" if m > 4 else None

    rows = sweep.sweep(["1f1b"], "m", [4, 8], devices=2, microbatches=4, guard=guard)
    assert rows[0]["makespan"] == (4 + 1) * 3 and rows[1] == dict(rows[1], makespan=None, reason="too big for the page")


def test_values_around_are_powers_of_two_within_bounds_and_keep_the_current_value():
    assert sweep.values_around(8, 1, 512) == [1, 2, 4, 8, 16, 32, 64]
    assert sweep.values_around(6, 1, 64) == [1, 2, 4, 6, 8, 16, 32]
    assert sweep.values_around(64, 1, 64) == [8, 16, 32, 64]
    with pytest.raises(ValueError, match="outside"):
        sweep.values_around(0, 1, 64)


def test_an_unknown_axis_is_refused():
    with pytest.raises(ValueError, match="m, v or p"):
        sweep.sweep(["1f1b"], "x", [1], devices=2, microbatches=2)


def test_the_estimate_sweep_is_in_seconds_and_bytes_with_gaps_for_splits_that_fail():
    """Along v, Llama-3 70B's 80 layers split into 8·v stages for v = 1, 2 but not 4: a gap saying so."""
    layout = specs.Layout(tp=8, pp=8, gbs=64, schedule="1f1b")
    names = ["interleaved-1f1b", "1f1b"]
    rows = sweep.sweep_estimate(names, "v", [1, 2, 4], model="llama3-70b", gpu="h100-sxm", layout=layout)
    inter = [r for r in rows if r["schedule"] == "interleaved-1f1b"]
    direct = ppviz.estimate(
        "llama3-70b", "h100-sxm", specs.Layout(tp=8, pp=8, gbs=64, vpp=2, schedule="interleaved-1f1b")
    )
    assert inter[1]["iteration_s"] == direct.iteration_s and inter[1]["peak_bytes"] == float(direct.peak_bytes.max())
    assert inter[1]["bubble_s"] == direct.breakdown["bubble_s"]
    assert inter[2]["iteration_s"] is None and "do not split evenly into 32 stages" in inter[2]["reason"]
    flat = [r["iteration_s"] for r in rows if r["schedule"] == "1f1b"]
    assert len(set(flat)) == 1 and flat[0] is not None


def test_the_estimate_sweep_along_m_sets_the_global_batch():
    layout = specs.Layout(tp=8, pp=8, dp=2, mbs=2, gbs=64, schedule="1f1b")
    rows = sweep.sweep_estimate(["1f1b"], "m", [8, 16], model="llama3-70b", gpu="h100-sxm", layout=layout)
    direct = ppviz.estimate(
        "llama3-70b", "h100-sxm", specs.Layout(tp=8, pp=8, dp=2, mbs=2, gbs=16 * 4, schedule="1f1b")
    )
    assert rows[1]["iteration_s"] == direct.iteration_s and direct.microbatches == 16


def test_known_runs_are_used_instead_of_simulating_again():
    """A run at hand (the view's own) stands for its point: here a 1F1B run at m = 8 given for m = 4."""
    at_8 = ppviz.simulate("1f1b", 2, 8)
    rows = sweep.sweep(["1f1b"], "m", [4, 16], devices=2, microbatches=8, known={("1f1b", 4): at_8})
    assert [r["makespan"] for r in rows] == [at_8.metrics.makespan, (16 + 1) * 3]
