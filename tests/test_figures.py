"""Plotly figures: a fixed number of traces drawing the run's exact times, memory and overview."""

import json
import re

import numpy as np
import pytest

import ppviz
from ppviz import figures
from ppviz.figures import style
from ppviz.ir import BW, Action, Overlap, Placement, make_schedule
from ppviz.ir import F as FWD


def overlapped_run():
    """Two devices, four microbatches, 1F1B whose steady state runs F with BW as one pair."""
    a = Action
    d0 = [a(0, 0, FWD), a(0, 1, FWD), a(0, 2, FWD), Overlap(a(0, 3, FWD), a(0, 0, BW)),
          a(0, 1, BW), a(0, 2, BW), a(0, 3, BW)]  # fmt: skip
    d1 = [a(1, 0, FWD), Overlap(a(1, 1, FWD), a(1, 0, BW)), Overlap(a(1, 2, FWD), a(1, 1, BW)),
          Overlap(a(1, 3, FWD), a(1, 2, BW)), a(1, 3, BW)]  # fmt: skip
    return ppviz.evaluate(make_schedule(Placement.standard(2), 4, [d0, d1], "hand-overlap"))


def bars(fig):
    """The traces that draw the bars of ops (one filled SVG outline each; not the legend-only entries
    that name the chunks' patterns and the pairs' outline)."""
    return [t for t in fig.data if t.type == "scatter" and t.fill == "toself"]


def hovers(fig):
    """The invisible traces of hover points over the bars: one after each bar trace."""
    return [t for t in fig.data if t.type == "scatter" and t.mode == "none" and t.customdata is not None]


def legend_only(fig):
    return [t for t in fig.data if t.type == "bar" and t.customdata is None]


def columns(trace):
    """start, end, top edge and bottom edge of every bar a trace draws."""
    return figures.rects(trace)


def hovered_ops(trace):
    """The distinct (stage, microbatch, start, duration, end) rows its hover points name."""
    return sorted({tuple(row) for row in np.asarray(trace.customdata, dtype=float).tolist()})


def test_gantt_trace_count_does_not_grow_with_ops():
    """One bar trace (and its hover trace) per kind present, whether the run has 32 or 6,400 ops."""
    small = figures.to_plotly(figures.gantt(ppviz.simulate("1f1b", 4, 4)))
    large = figures.to_plotly(figures.gantt(ppviz.simulate("1f1b", 16, 200)))
    assert len(bars(small)) == len(bars(large)) == len(hovers(large)) == 2
    assert len(small.data) <= 5 and len(large.data) == 4  # plus one label trace where labels fit
    assert [t.name for t in bars(large)] == [figures.KIND_LABELS[ppviz.Kind.F], figures.KIND_LABELS[ppviz.Kind.BW]]
    assert [t.legendgroup for t in hovers(large)] == ["F", "BW"]  # a legend click hides a kind's hover too


def test_gantt_has_one_trace_per_kind_present():
    """zb-h1 splits the backward: F, B and W traces, no BW."""
    fig = figures.to_plotly(figures.gantt(ppviz.simulate("zb-h1", 4, 8)))
    assert sorted(t.legendgroup for t in bars(fig)) == ["B", "F", "W"]


def test_gantt_bars_are_the_runs_start_and_end_and_hover_names_each_op():
    """Every op is one rectangle from its exact start to its end on its device's row, and its hover
    names its stage, microbatch, start, duration and end. Bars of one trace that touch are kept apart
    by a nominal pixel taken off the earlier one's end (f = 1 here, b = 2, w = 0.5)."""
    run = ppviz.simulate("interleaved-1f1b", 4, 8, chunks=2, f=1.0, b=2.0, w=0.5)
    r = run.result
    fig = figures.to_plotly(figures.gantt(run))
    x0, x1, top, bottom = (np.concatenate(c) for c in zip(*(columns(t) for t in bars(fig))))
    assert np.allclose(bottom - top, figures.BAR_WIDTH)
    got = sorted(zip(x0.tolist(), np.round(top + figures.BAR_WIDTH / 2, 6).tolist()))
    assert got == sorted(zip(r.start.tolist(), r.device.astype(float).tolist()))
    ends = dict(zip(zip(r.start.tolist(), r.device.tolist()), r.end.tolist()))
    exact = np.array([ends[(a, int(round(t + 0.4)))] for a, t in zip(x0.tolist(), top.tolist())])
    pixel = run.metrics.makespan / figures.LABEL_PLOT_PX
    assert np.all((x1 <= exact) & (x1 >= exact - pixel - 1e-6))  # float32 times here
    assert (x1 < exact).any() and (x1 == exact).mean() > 0.5  # most bars keep their exact end
    want = sorted(zip(r.stage.tolist(), r.microbatch.tolist(), r.start.tolist(), (r.end - r.start).tolist(),
                      r.end.tolist()))  # fmt: skip
    assert sorted(sum((hovered_ops(t) for t in hovers(fig)), [])) == [tuple(map(float, w)) for w in want]


def test_hover_points_lie_on_their_bar_at_most_a_step_apart():
    """Hover finds the nearest point within 20 px: one in the middle of a narrow bar, more along a
    wide one, never farther apart than HOVER_STEP_PX at the nominal width."""
    run = ppviz.simulate("1f1b", 2, 4, f=1.0, b=2.0)
    fig = figures.to_plotly(figures.gantt(run))
    px = figures.LABEL_PLOT_PX / run.metrics.makespan
    for trace in hovers(fig):
        x, y = np.asarray(trace.x, dtype=float), np.asarray(trace.y, dtype=float)
        start, end = np.asarray(trace.customdata)[:, 2], np.asarray(trace.customdata)[:, 4]
        assert np.all((start < x) & (x < end)) and set(y) <= {0.0, 1.0}
        for op in set(zip(start.tolist(), y.tolist())):
            on = np.flatnonzero((start == op[0]) & (y == op[1]))
            width_px = (end[on[0]] - start[on[0]]) * px
            assert len(on) == max(1, int(np.ceil(width_px / figures.HOVER_STEP_PX)))
            edges = np.concatenate([[start[on[0]]], np.sort(x[on]), [end[on[0]]]])
            assert np.diff(edges).max() * px <= figures.HOVER_STEP_PX


def test_gantt_keeps_float64_times_when_float32_would_misplace_short_bars():
    """Bars 0.001 long at times near 10^6: float32 cannot place them, so the exact times are sent."""
    run = ppviz.simulate("1f1b", 2, 2, f=1e-3, b=1e-3, w=1e-3, p2p=1e6)
    trace = bars(figures.to_plotly(figures.gantt(run)))[0]
    start, end, *_ = columns(trace)
    fwd = run.result.kind == 0
    assert figures.decode_typed_array(trace.x).dtype == np.float64
    assert sorted(start) == sorted(run.result.start[fwd]) and run.result.start[fwd].max() > 1e6
    # each device's two forwards touch: the first ends a quarter early (a pixel is far more than 0.001 here)
    assert np.allclose(np.sort(end - start), [0.75e-3, 0.75e-3, 1e-3, 1e-3], rtol=1e-6)


def test_gantt_shows_the_chunk_by_pattern_with_one_colour_per_kind_and_a_legend_of_both():
    """Two chunks per device: chunk 0 (stages 0-3) solid, chunk 1 hatched, both in F's one colour; the
    legend names each kind once and each chunk's pattern once."""
    run = ppviz.simulate("interleaved-1f1b", 4, 8, chunks=2)
    fig = figures.to_plotly(figures.gantt(run))
    solid, hatched = [t for t in bars(fig) if t.legendgroup == "F"]
    solid_hover, hatched_hover = [t for t in hovers(fig) if t.legendgroup == "F"]
    assert set(np.asarray(solid_hover.customdata)[:, 0]) == {0, 1, 2, 3}
    assert set(np.asarray(hatched_hover.customdata)[:, 0]) == {4, 5, 6, 7}
    assert solid.fillcolor == hatched.fillcolor == figures.KIND_COLORS[ppviz.Kind.F]
    assert not solid.fillpattern.shape and hatched.fillpattern.shape == "/"
    assert [t.name for t in fig.data if t.showlegend is not False] == [
        "F forward", "BW backward", "chunk 0: solid", "chunk 1: hatched /",
    ]  # fmt: skip
    assert "(chunk 1)" in hatched_hover.hovertemplate
    ranks = {t.name: t.legendrank for t in fig.data if t.showlegend is not False}
    assert sorted(ranks, key=ranks.get) == ["F forward", "BW backward", "chunk 0: solid", "chunk 1: hatched /"]
    one = figures.to_plotly(figures.gantt(ppviz.simulate("1f1b", 4, 8)))  # the same blue for F in a 1-chunk schedule
    assert bars(one)[0].fillcolor == figures.KIND_COLORS[ppviz.Kind.F] and not legend_only(one)


def test_every_kind_has_its_own_colour_and_b_is_not_next_to_bw():
    colors = figures.KIND_COLORS
    assert len(set(colors.values())) == 4

    def rgb(c):
        return np.array([int(c[i : i + 2], 16) for i in (1, 3, 5)], dtype=float)

    distance = np.linalg.norm(rgb(colors[ppviz.Kind.B]) - rgb(colors[ppviz.Kind.BW]))
    assert distance > 120  # was 63 between the two oranges (#E69F00, #D55E00)


def test_hover_names_start_end_and_duration_with_their_unit():
    trace = hovers(figures.to_plotly(figures.gantt(ppviz.simulate("1f1b", 2, 2))))[0]
    assert "start %{customdata[2]:.7~g} units · end %{customdata[4]:.7~g} units" in trace.hovertemplate
    assert "duration %{customdata[3]:.7~g} units" in trace.hovertemplate
    custom = np.asarray(trace.customdata)
    assert np.allclose(custom[:, 3], custom[:, 4] - custom[:, 2]) and (custom[:, 3] > 0).all()
    ms = hovers(figures.to_plotly(figures.gantt(ppviz.simulate("1f1b", 2, 2), time_unit="ms")))[0]
    assert "duration %{customdata[3]:.7~g} ms" in ms.hovertemplate


def test_gantt_device_zero_is_the_top_row_and_height_grows_with_devices():
    fig = figures.to_plotly(figures.gantt(ppviz.simulate("1f1b", 8, 8)))
    assert fig.layout.yaxis.range == (7.5, -0.5)
    assert fig.layout.xaxis.title.text == "time (units)"
    assert fig.layout.height < figures.to_plotly(figures.gantt(ppviz.simulate("1f1b", 16, 16))).layout.height
    assert figures.to_plotly(figures.gantt(ppviz.simulate("1f1b", 2, 2), height=500)).layout.height == 500


def test_overlapped_pairs_are_two_half_height_bars_forward_on_top():
    run = overlapped_run()
    fig = figures.to_plotly(figures.gantt(run))
    pairs = [t for t in bars(fig) if t.mode == "lines" and t.line.width]
    assert len(pairs) == 2 and all(t.line.width == figures.PAIR_OUTLINE["width"] for t in pairs)
    top, bottom = pairs  # each half in its own kind's colour, outlined, named in the legend once
    assert top.fillcolor == figures.KIND_COLORS[ppviz.Kind.F]
    assert bottom.fillcolor == figures.KIND_COLORS[ppviz.Kind.BW]
    (named,) = [t for t in legend_only(fig) if t.legendgroup == "overlapped"]
    assert named.name == figures.PAIR_LABEL and "F on top" in named.name
    top_hover, bottom_hover = [t for t in hovers(fig) if "half of an overlapped" in t.hovertemplate]
    assert "<b>F</b> (half of an overlapped" in top_hover.hovertemplate
    assert "<b>BW</b>" in bottom_hover.hovertemplate
    # the y axis is reversed, so the bar spanning [y - 0.4, y] is the upper half
    (top_start, _, top_y0, top_y1), (bottom_start, _, bottom_y0, bottom_y1) = columns(top), columns(bottom)
    assert np.allclose(top_y1 - top_y0, figures.BAR_WIDTH / 2) and np.allclose(
        bottom_y1 - bottom_y0, figures.BAR_WIDTH / 2
    )
    assert np.allclose(top_y1, bottom_y0) and np.allclose(top_y0 % 1, 1 - figures.BAR_WIDTH / 2)
    assert np.array_equal(np.sort(top_start), np.sort(bottom_start))  # same slot: same start
    assert len(top_start) == int(run.result.paired.sum()) // 2
    plain = [t for t in bars(fig) if t not in pairs]
    assert all(np.allclose(np.subtract(*columns(t)[3:1:-1]), figures.BAR_WIDTH) for t in plain)
    assert fig.layout.height == figures.gantt_height(2, pairs=True) > figures.gantt_height(2)  # room for labels


def labels(fig):
    return [t for t in fig.data if t.type == "scatter" and t.mode == "text"]


def test_labels_are_microbatch_numbers_at_bar_centres_and_dropped_for_huge_runs():
    """One text trace (not text inside bars, which Chromium measures per bar at every redraw)."""
    run = ppviz.simulate("1f1b", 4, 4)
    fig = figures.to_plotly(figures.gantt(run))
    assert all(t.text is None for t in bars(fig) + hovers(fig))
    (label,) = labels(fig)
    r = run.result
    assert list(label.text) == [str(m) for m in r.microbatch]  # every bar is wide enough here
    assert np.allclose(np.asarray(label.x, dtype=float), (r.start + r.end) / 2)
    assert np.allclose(np.asarray(label.y, dtype=float), r.device)
    assert label.hoverinfo == "skip" and label.showlegend is False
    big = figures.to_plotly(figures.gantt(ppviz.simulate("1f1b", 16, 64)))  # 2,048 ops
    assert not labels(big)


def test_labels_skip_bars_too_narrow_for_their_number():
    """A microbatch number is drawn only where its bar is wide enough at the nominal width."""
    run = ppviz.simulate("gpipe", 2, 20, f=1, b=0.01, w=0.01)
    (label,) = labels(figures.to_plotly(figures.gantt(run)))
    shown = {(float(x), t) for x, t in zip(np.asarray(label.x, dtype=float), label.text)}
    r = run.result
    forwards = int((r.kind == 0).sum())
    assert len(shown) == len(label.text) == forwards  # the thin backward bars carry no label


def test_labels_of_10_and_up_show_on_bars_as_wide_as_those_of_0_to_9():
    """1F1B 4 × 24: every bar has the same width; numbers of two digits get a smaller font, not dropped."""
    run = ppviz.simulate("1f1b", 4, 24)
    (label,) = labels(figures.to_plotly(figures.gantt(run)))
    assert sorted(set(map(int, label.text))) == list(range(24))
    assert len(label.text) == len(run.result)
    smallest = {}
    for text, size in zip(label.text, label.textfont.size):
        smallest[text] = min(size, smallest.get(text, 9))
    assert figures.LABEL_MIN_PX <= smallest["23"] < smallest["7"] <= 9  # on the 1-unit forward bars


def test_overlapped_halves_have_their_labels_in_their_own_half():
    run = ppviz.simulate("dualpipe", 4, 8)
    (label,) = labels(figures.to_plotly(figures.gantt(run)))
    ys = np.asarray(label.y, dtype=float)
    offsets = np.round(ys - np.round(ys), 3)
    assert set(offsets.tolist()) <= {0.0, -figures.BAR_WIDTH / 4, figures.BAR_WIDTH / 4}
    assert -figures.BAR_WIDTH / 4 in offsets and figures.BAR_WIDTH / 4 in offsets


def test_gantt_json_is_compact():
    """Arrays travel base64-encoded: under 64 bytes of JSON per op. An op costs 16 bytes of outline
    (start and end, the two edges' y, float32) and 25 of hover point (x, device, 5 hover numbers),
    base64 adding a third: 55. (Bar traces took 35 but drew about three times slower.)"""
    run = ppviz.simulate("interleaved-1f1b", 8, 64, chunks=2)
    text = json.dumps(figures.encode(figures.gantt(run)), separators=(",", ":"))
    assert len(text) / len(run.result) < 64
    assert '"bdata"' in text


def test_memory_has_one_line_per_device_and_marks_each_peak():
    run = ppviz.simulate("1f1b", 4, 8)
    fig = figures.to_plotly(figures.memory(run))
    lines = [t for t in fig.data if t.name.startswith("device")]
    assert len(lines) == 4 and all(t.line.shape == "hv" for t in lines)
    (peak,) = [t for t in fig.data if t.name == "peak"]
    assert list(peak.y) == run.metrics.peak_activation == [4.0, 3.0, 2.0, 1.0]
    assert fig.layout.yaxis.title.text == "activation (units)"
    assert not [t for t in fig.data if t.name.startswith("limit")]


def test_memory_lines_can_go_without_legend_entries():
    run = ppviz.simulate("1f1b", 4, 8)
    each, none = figures.memory(run), figures.memory(run, device_legend=False)
    shown = [[t["name"] for t in f["data"] if t.get("showlegend", True)] for f in (each, none)]
    assert shown == [["device 0", "device 1", "device 2", "device 3", "peak"], ["peak"]]
    big = ppviz.simulate("1f1b", 16, 32)  # past band_over the band and its lines keep theirs
    band = figures.memory(big, band_over=8, device_legend=False)
    named = [t["name"] for t in band["data"] if t.get("showlegend", True)]
    assert named == ["min–max of 16 devices", "device 0 (highest peak)", "device 15 (lowest peak)", "peak"]


def test_memory_limit_line_is_drawn_when_asked():
    run = ppviz.simulate("1f1b", 4, 8)
    (limit,) = [t for t in figures.to_plotly(figures.memory(run, limit=3)).data if t.name.startswith("limit")]
    assert list(limit.y) == [3, 3] and limit.line.dash == "dash"
    assert list(limit.x) == [0.0, run.metrics.makespan]


def test_gantt_and_memory_share_the_time_axis():
    run = ppviz.simulate("zb-h1", 4, 8)
    assert (
        figures.to_plotly(figures.gantt(run)).layout.xaxis.range
        == figures.to_plotly(figures.memory(run)).layout.xaxis.range
        == (0, run.metrics.makespan)
    )


def test_stacked_puts_the_memory_chart_under_the_gantt_on_one_time_axis():
    """One figure: the Gantt's traces on x/y, the memory chart's on x2/y2 (matching x) with its own
    legend and title, each plot as tall as it was alone, and the Gantt's title kept."""
    run = ppviz.simulate("zb-v", 4, 8)
    top, bottom = figures.gantt(run), figures.memory(run, capacity=5.0)
    fig = figures.stacked(top, bottom)
    layout = fig["layout"]
    assert fig["data"][: len(top["data"])] == top["data"]
    rest = fig["data"][len(top["data"]) :]
    assert [t["name"] for t in rest] == [t["name"] for t in bottom["data"]]
    assert all(t["xaxis"] == "x2" and t["yaxis"] == "y2" and t["legend"] == "legend2" for t in rest)
    assert layout["xaxis2"]["matches"] == "x" and layout["xaxis2"]["title"]["text"] == "time (units)"
    assert layout["xaxis"]["title"] is None and layout["xaxis"]["range"] == [0.0, run.metrics.makespan]
    assert layout["title"]["text"] == top["layout"]["title"]["text"]
    assert layout["annotations"][0]["text"] == bottom["layout"]["title"]["text"]
    (low, split), (start, end) = layout["yaxis2"]["domain"], layout["yaxis"]["domain"]
    assert low == 0.0 and split < start < end == 1.0
    plot = layout["height"] - figures.TITLE_BAND_PX - style.legend_px(top["data"]) - layout["margin"]["b"]
    assert (end - start) * plot == pytest.approx(style.plot_px(top))  # each plot keeps its height
    assert split * plot == pytest.approx(style.plot_px(bottom))


def test_stacked_keeps_an_overviews_colour_bar_beside_the_top_chart():
    run = ppviz.simulate("1f1b", 4, 64)
    fig = figures.stacked(figures.overview(run), figures.memory(run))
    (heat,) = [t for t in fig["data"] if t["type"] == "heatmap"]
    start, end = fig["layout"]["yaxis"]["domain"]
    assert heat["colorbar"]["y"] == pytest.approx(start) and heat["colorbar"]["len"] == pytest.approx(end - start)
    assert heat["yaxis"] == "y" and fig["layout"]["margin"]["t"] == figures.TITLE_BAND_PX  # no legend over it


def test_overview_is_devices_by_bins_and_keeps_busy_time():
    """Each row's busy fraction, summed over bins, is the device's busy time."""
    run = ppviz.simulate("1f1b", 4, 8, f=1.0, b=2.0, w=0.0)
    fig = figures.to_plotly(figures.overview(run, bins=60))
    (heat,) = fig.data
    z = np.asarray(heat.z)
    assert z.shape == (4, 60)
    occ, t0, width = figures.occupancy(run, 60)
    busy = (1 - occ[:, 0, :]).sum(axis=1) * width
    assert np.allclose(busy, run.metrics.busy)
    # 1F1B device 0 starts with a forward and ends with a backward
    classes = heat.colorbar.ticktext  # only the classes present: no B, W or overlapped in 1F1B
    assert list(classes) == ["idle", "F", "BW"] and len(heat.colorscale) == 2 * 3
    assert classes[z[0, 0]] == "F" and classes[z[0, -1]] == "BW"


def test_gantt_window_draws_exactly_the_ops_overlapping_it():
    """A zoomed-in window: the bars are the ops that overlap it, on its time range, counted in the title."""
    run = ppviz.simulate("interleaved-1f1b", 4, 8, chunks=2, f=1.0, b=2.0, w=0.5)
    r = run.result
    t0, t1 = 10.0, 17.5
    fig = figures.to_plotly(figures.gantt(run, window=(t0, t1)))
    rows = [np.concatenate(c) for c in zip(*(columns(t) for t in bars(fig)))]
    got = sorted(zip(rows[0].tolist(), np.round(rows[2] + figures.BAR_WIDTH / 2, 6).tolist()))
    inside = (r.end > t0) & (r.start < t1)
    assert 0 < inside.sum() < len(r)
    assert got == sorted(zip(r.start[inside].tolist(), r.device[inside].astype(float).tolist()))
    assert list(fig.layout.xaxis.range) == [t0, t1]
    assert f"{int(inside.sum())} ops in view" in fig.layout.title.text
    shown = labels(fig)
    assert shown and all(t0 - 3 <= x <= t1 + 3 for x in np.asarray(shown[0].x))


def test_gantt_window_must_be_a_finite_forward_range():
    run = ppviz.simulate("1f1b", 2, 2)
    for bad in [(3.0, 3.0), (5.0, 1.0), (0.0, float("nan")), (0.0, float("inf"))]:
        with pytest.raises(ValueError, match="time window"):
            figures.gantt(run, window=bad)


def test_overview_window_bins_only_that_range():
    """Binned over a window, the busy time per device is its busy time clipped to the window."""
    run = ppviz.simulate("1f1b", 4, 8, f=1.0, b=2.0, w=0.0)
    r = run.result
    t0, t1 = 5.0, 20.0
    occ, first, width = figures.occupancy(run, 30, window=(t0, t1))
    assert first == t0 and width == pytest.approx(0.5)
    clipped = np.clip(r.end, t0, t1) - np.clip(r.start, t0, t1)
    want = np.bincount(r.device, weights=clipped, minlength=4)
    assert np.allclose((1 - occ[:, 0, :]).sum(axis=1) * width, want)
    fig = figures.to_plotly(figures.overview(run, window=(t0, t1), note=" · zoom in"))
    assert list(fig.layout.xaxis.range) == [t0, t1] and fig.layout.title.text.endswith("overview · zoom in")


def test_overview_marks_overlapped_pairs():
    run = overlapped_run()
    occ, _, _ = figures.occupancy(run, 15)  # makespan 15: one bin per time unit
    pair = figures.OVERVIEW_CLASSES.index("overlapped")
    assert np.allclose(occ[:, pair, :].sum(axis=1), [3.0, 9.0])  # device 0: one pair of 3; device 1: three


def test_overview_rejects_zero_bins():
    with pytest.raises(ValueError, match="at least one time bin"):
        figures.overview(ppviz.simulate("1f1b", 2, 2), bins=0)


def test_compare_stacks_runs_on_one_shared_time_axis():
    runs = [ppviz.simulate("1f1b", 4, 8), ppviz.simulate("zb-h1", 4, 8), ppviz.simulate("gpipe", 2, 8)]
    fig = figures.to_plotly(figures.compare(runs))
    assert {t.yaxis for t in fig.data} == {"y", "y2", "y3"}
    assert fig.layout.xaxis.matches == fig.layout.xaxis2.matches == "x3"
    assert fig.layout.xaxis3.range == (0, max(r.metrics.makespan for r in runs))
    assert fig.layout.yaxis3.range == (1.5, -0.5)
    shown = [t.legendgroup for t in fig.data if t.showlegend]
    assert sorted(shown) == ["B", "BW", "F", "W"]  # one legend entry per kind across the subplots
    assert [a.text for a in fig.layout.annotations][0].startswith("1f1b")


def test_compare_draws_runs_past_max_bars_as_overviews():
    runs = [ppviz.simulate("1f1b", 4, 8), ppviz.simulate("1f1b", 4, 64)]
    fig = figures.to_plotly(figures.compare(runs, max_bars=100))
    assert [t.type for t in fig.data if t not in labels(fig)] == ["scatter"] * 4 + ["heatmap"]
    assert len(bars(fig)) == len(hovers(fig)) == 2
    assert fig.data[-1].yaxis == "y2" and np.asarray(fig.data[-1].z).shape == (4, figures.OVERVIEW_BINS)


def test_compare_refuses_too_many_runs_and_mismatched_titles():
    run = ppviz.simulate("1f1b", 2, 2)
    with pytest.raises(ValueError, match="1 to 4 runs"):
        figures.compare([run] * 5)
    with pytest.raises(ValueError, match="titles"):
        figures.compare([run, run], titles=["only one"])


def test_to_html_is_self_contained():
    html = figures.to_html(ppviz.simulate("1f1b", 4, 8), limit=3)
    scripts = re.findall(r"<script[^>]*>", html)
    assert scripts and not [s for s in scripts if "src=" in s]  # nothing fetched: no cdn.plot.ly, no https://
    assert html.count('class="plotly-graph-div"') == 1  # the Gantt over the memory chart, one time axis
    assert '"xaxis2":{' in html and '"matches":"x"' in html
    assert html.count("plotly.js v") >= 1  # the library itself is inlined once
    assert "limit 3" in html


def test_to_html_draws_the_overview_past_the_bar_limit():
    run = ppviz.simulate("1f1b", 4, 8)
    assert '"type":"heatmap"' in figures.to_html(run, max_bars=10)
    assert '"type":"heatmap"' not in figures.to_html(run)


def test_typed_array_round_trips():
    a = np.array([0.25, 1.5, 3.0], dtype=np.float32)
    spec = figures.encode({"y": a})["y"]
    assert spec["dtype"] == "f4"
    assert np.array_equal(figures.decode_typed_array(json.loads(json.dumps(spec))), a)
    grid = np.arange(6, dtype=np.int64).reshape(2, 3)  # int64 travels as int32, with its shape
    spec = figures.encode({"z": grid, "range": np.array([0.0, 1.0])})
    assert spec["z"]["dtype"] == "i4" and spec["range"] == [0.0, 1.0]
    assert np.array_equal(figures.decode_typed_array(spec["z"]), grid)


def test_builders_return_plain_dicts_that_encode_to_json_and_convert_to_plotly():
    """One return type: a plain figure dict (numpy arrays in it) that ``encode`` makes JSON-ready
    and ``to_plotly`` a ``go.Figure``, the caller's dict left as it was."""
    run = ppviz.simulate("1f1b", 4, 8)
    for fig in (figures.gantt(run), figures.memory(run), figures.overview(run), figures.compare([run])):
        assert type(fig) is dict and set(fig) == {"data", "layout"}
        sent = figures.encode(fig)
        json.dumps(sent)
        assert not any(isinstance(v, np.ndarray) for t in sent["data"] for v in t.values())
        assert any(isinstance(v, np.ndarray) for t in fig["data"] for v in t.values())  # left as it was
        assert figures.to_plotly(fig).layout.height == fig["layout"]["height"]


def test_shades_go_from_light_to_dark_and_keep_the_base_for_one_chunk():
    assert figures.shades("#0072B2", 1) == ["#0072B2"]
    light, dark = figures.shades("#0072B2", 2)
    assert sum(int(light[i : i + 2], 16) for i in (1, 3, 5)) > sum(int(dark[i : i + 2], 16) for i in (1, 3, 5))


def test_iteration_ends_are_drawn_where_the_core_says_each_device_ends_each_iteration():
    """1F1B × 2 iterations with a flush; 2BW without: one line per device row at each iteration's end."""
    from ppviz.iterations import iteration_ends

    for name in ("1f1b", "1f1b-2bw"):
        run = ppviz.simulate(name, 4, 8, iterations=2)
        (line,) = [t for t in figures.to_plotly(figures.gantt(run)).data if t.legendgroup == "iterations"]
        assert line.showlegend is not False and line.name == "iteration end (2 iterations)"
        xs = [x for x in line.x if x is not None]
        assert xs[::2] == list(iteration_ends(run.result)[0])  # the first iteration's end, device by device
        ys = [y for y in line.y if y is not None]
        assert ys == [v for d in range(4) for v in (d - 0.5, d + 0.5)]
        assert "iteration 0 ends on device 3 at t" in line.text[-2]
    assert xs == [33.0, 33.0, 31.0, 31.0, 29.0, 29.0, 27.0, 27.0]  # 2BW: each device switches at its own end
    single = figures.to_plotly(figures.gantt(ppviz.simulate("1f1b", 4, 8)))
    assert not [t for t in single.data if t.legendgroup == "iterations"]
    big = figures.to_plotly(figures.overview(ppviz.simulate("gpipe", 4, 8, iterations=3)))
    assert len([t for t in big.data if t.legendgroup == "iterations"]) == 1
    both = figures.to_plotly(
        figures.compare([ppviz.simulate("gpipe", 4, 8, iterations=2), ppviz.simulate("1f1b", 4, 8, iterations=2)])
    )
    lines = [t for t in both.data if t.legendgroup == "iterations"]
    assert [t.showlegend for t in lines] == [True, False] and [t.yaxis for t in lines] == ["y", "y2"]


def test_many_devices_memory_is_a_min_max_band_with_the_extreme_devices_as_lines():
    run = ppviz.simulate("1f1b", 16, 32)
    fig = figures.to_plotly(figures.memory(run, limit=3, band_over=8))
    names = [t.name for t in fig.data]
    assert names == [
        "min", "min–max of 16 devices", "device 0 (highest peak)", "device 15 (lowest peak)", "peak", "limit 3",
    ]  # fmt: skip
    low, high = (np.asarray(t.y, dtype=float) for t in fig.data[:2])
    assert high.max() == 16 and low.max() == 1  # 1F1B: device d peaks at min(p − d, m)
    assert fig.data[1].fill == "tonexty" and fig.data[0].showlegend is False
    from ppviz import memory

    curves = memory.activation(run.result)
    grid = np.asarray(fig.data[0].x, dtype=float)
    for i in (len(grid) // 3, len(grid) // 2):
        levels = [v[np.searchsorted(t, grid[i], side="right") - 1] for t, v in zip(curves.times, curves.values)]
        assert low[i] == min(levels) and high[i] == max(levels)
    assert figures.memory_traces(run, 8) == names.index("limit 3")
    assert (
        len(figures.to_plotly(figures.memory(run)).data) == 17 and figures.memory_traces(run) == 16 + 1
    )  # no band_over: lines


def test_the_devices_drawn_over_the_band_can_be_chosen():
    """1F1B: device d peaks at min(p − d, m), so with 16 devices device 3 peaks at 13; its line is its own curve."""
    run = ppviz.simulate("1f1b", 16, 32)
    fig = figures.to_plotly(figures.memory(run, limit=3, band_over=8, lines=[7, 3, 0, 3]))
    names = [t.name for t in fig.data]
    assert names == [
        "min",
        "min–max of 16 devices",
        "device 0 (highest peak)",
        "device 3",
        "device 7",
        "peak",
        "limit 3",
    ]
    assert max(np.asarray(fig.data[3].y, dtype=float)) == 13 and max(np.asarray(fig.data[4].y, dtype=float)) == 9
    assert figures.memory_traces(run, 8, [7, 3, 0]) == names.index("limit 3")
    only_band = figures.to_plotly(figures.memory(run, band_over=8, lines=[]))
    assert [t.name for t in only_band.data] == ["min", "min–max of 16 devices", "peak"]
    assert figures.band_lines(run.metrics.peak_activation) == [0, 15]
    with pytest.raises(ValueError, match="not all among the 16 devices"):
        figures.memory(run, band_over=8, lines=[16])
    assert len(figures.to_plotly(figures.memory(run, lines=[2])).data) == 17  # no band: every device is a line anyway


@pytest.mark.parametrize("draw", [figures.gantt, figures.memory])
def test_the_legend_starts_under_the_title_and_modebar_band(draw):
    """Placed from the figure's top, the legend's first row is TITLE_BAND_PX down, under the title and the
    modebar, however many rows it wraps to (plotly reserves its height above the plot; the browser layout
    tests check the drawn result at 1280 and 1920 px)."""
    fig = figures.to_plotly(draw(ppviz.simulate("dualpipe", 8, 16)))
    legend, height = fig.layout.legend, fig.layout.height
    assert legend.yref == "container" and legend.yanchor == "top" and fig.layout.title.yref == "container"
    assert (1 - legend.y) * height == pytest.approx(figures.TITLE_BAND_PX)
    assert fig.layout.margin.t == figures.TITLE_BAND_PX


def test_the_compare_and_sweep_legends_start_under_the_modebar_band():
    """Compare mode's charts too: the legend's first row TITLE_BAND_PX down, clear of the modebar (the
    compare Gantt's legend ran under it at 1280 px); the sweep keeps the room for its notes under it."""
    from ppviz import sweep

    runs = [ppviz.simulate("dualpipe", 8, 16), ppviz.simulate("interleaved-1f1b", 8, 16, chunks=4)]
    rows = sweep.sweep(["1f1b", "interleaved-1f1b"], "m", [2, 4, 8], devices=4, microbatches=4)
    charts = (
        figures.to_plotly(figures.compare_memory(runs)),
        figures.to_plotly(figures.sweep(rows, "m", [("makespan", "makespan (units)", 1)])),
    )
    for fig in (*charts, figures.to_plotly(figures.compare(runs))):  # and the former stacked Gantts
        legend, height = fig.layout.legend, fig.layout.height
        assert legend.yref == "container" and legend.yanchor == "top"
        assert (1 - legend.y) * height == pytest.approx(figures.TITLE_BAND_PX)
    # compare's plot blocks are sized in px, so its top margin holds the band and the legend's estimated rows
    assert charts[0].layout.margin.t >= figures.TITLE_BAND_PX + 2 * 19
    # the stacked Gantts' first title sits above its plot: the band, 3 legend rows (at 700 px), the title
    assert figures.to_plotly(figures.compare(runs)).layout.margin.t >= figures.TITLE_BAND_PX + 3 * 19 + 20
    assert charts[1].layout.title.yref == "container" and charts[1].layout.margin.t == figures.TITLE_BAND_PX
    assert charts[1].layout.margin.b == 70 + 16  # one note under the sweep: why interleaved has no m=2 point
    # the legend's rows are 19 px apart (no gap between its groups), as the room above the plot assumes
    assert charts[0].layout.legend.tracegroupgap == 0


def test_compare_memory_gives_each_schedule_a_gantt_and_a_memory_plot_on_one_time_axis():
    runs = [ppviz.simulate("1f1b", 8, 16), ppviz.simulate("zb-v", 8, 16)]
    fig = figures.to_plotly(figures.compare_memory(runs, titles=["1f1b", "zb-v"]))
    lay = fig.layout
    # Gantt on (x, y), (x3, y3); memory on (x2, y2), (x4, y4); every time axis matches the first
    assert {(t.xaxis, t.yaxis) for t in fig.data} == {("x", "y"), ("x2", "y2"), ("x3", "y3"), ("x4", "y4")}
    assert lay.xaxis2.matches == lay.xaxis3.matches == lay.xaxis4.matches == "x" and lay.yaxis4.matches == "y2"
    assert lay.xaxis2.showticklabels and lay.xaxis4.showticklabels  # the time axis under each schedule
    assert lay.xaxis4.title.text == "time (units)" and lay.yaxis2.title.text == "activation (units)"
    assert lay.xaxis.range == (0, max(r.metrics.makespan for r in runs))
    # each memory plot holds its schedule's curves: the peak markers are the metrics' peaks
    peaks = [t for t in fig.data if t.name == "peak"]
    assert [list(t.y) for t in peaks] == [r.metrics.peak_activation for r in runs]
    assert [t.yaxis for t in peaks] == ["y2", "y4"]
    # kind colours are the same in every block, one legend entry each
    colors = {(t.legendgroup, t.fillcolor) for t in bars(fig)}
    assert colors == {(k.value, c) for k, c in figures.KIND_COLORS.items() if k.value in {g for g, _ in colors}}
    assert sorted(t.legendgroup for t in bars(fig) if t.showlegend) == ["B", "BW", "F", "W"]
    assert [a.text for a in lay.annotations] == ["<b>1f1b</b>", "<b>zb-v</b>"]
    assert fig.layout.height <= 560  # two schedules at 8 devices fit a 1280×800 screen beside the ranking


def test_compare_memory_puts_an_overviews_colour_bar_beside_its_own_gantt():
    runs = [ppviz.simulate("1f1b", 8, 16), ppviz.simulate("zb-v", 8, 64)]
    fig = figures.to_plotly(figures.compare_memory(runs, max_bars=1000))  # ZB-V's 8 × 64 drawn as its overview
    (heat,) = [t for t in fig.data if t.type == "heatmap"]
    assert heat.yaxis == "y3" and heat.showscale
    bar = heat.colorbar
    assert (bar.y, bar.y + bar.len) == pytest.approx(fig.layout.yaxis3.domain) and bar.yanchor == "bottom"


def test_compare_memory_in_real_units_draws_gb_and_the_capacity_line():
    run = ppviz.simulate("1f1b", 4, 8)
    kw = dict(stage_sizes=[2e9] * 4, base=[10e9] * 4, scale=1e-9, unit="GB", capacity=80e9)
    fig = figures.to_plotly(figures.compare_memory([run, run], memory_kwargs=[kw, kw], time_scale=1e3, time_unit="ms"))
    assert fig.layout.yaxis2.title.text == "memory (GB)" and fig.layout.xaxis4.title.text == "time (ms)"
    capacity = [t for t in fig.data if t.name.startswith("capacity")]
    assert [list(t.y) for t in capacity] == [[80, 80], [80, 80]] and [t.showlegend for t in capacity] == [True, False]
    peaks = [t for t in fig.data if t.name == "peak"]
    assert list(peaks[0].y) == [10 + 2 * a for a in run.metrics.peak_activation]
    assert fig.layout.xaxis.range == (0, run.metrics.makespan * 1e3)
    assert fig.layout.yaxis2.range == pytest.approx((0, 1.08 * 80))  # every memory plot shows the capacity line
    assert fig.layout.yaxis4.matches == "y2"


def test_compare_memory_refuses_mismatched_settings():
    run = ppviz.simulate("1f1b", 2, 2)
    with pytest.raises(ValueError, match="1 to 4 runs"):
        figures.compare_memory([run] * 5)
    with pytest.raises(ValueError, match="memory settings"):
        figures.compare_memory([run, run], memory_kwargs=[{}])


def test_the_sweep_chart_has_one_line_per_schedule_in_panels_sharing_x_with_gaps():
    from ppviz import sweep

    rows = sweep.sweep(["1f1b", "interleaved-1f1b"], "m", [2, 4, 8], devices=4, microbatches=4)
    metrics = [("makespan", "makespan (units)", 1), ("bubble_fraction", "bubble (%)", 100)]
    fig = figures.to_plotly(figures.sweep(rows, "m", metrics, current=4))
    assert [(t.name, t.yaxis) for t in fig.data] == [
        ("1f1b", "y"), ("interleaved-1f1b", "y"), ("1f1b", "y2"), ("interleaved-1f1b", "y2")
    ]  # fmt: skip
    assert fig.layout.xaxis2.matches == "x" and fig.layout.xaxis2.title.text == "microbatches m"
    assert fig.layout.yaxis.title.text == "makespan (units)" and fig.layout.yaxis2.title.text == "bubble (%)"
    assert list(fig.data[0].y) == [(m + 3) * 3 for m in (2, 4, 8)]
    assert fig.data[1].y[0] is None and "microbatches" in fig.data[1].customdata[0]  # a gap saying why
    assert fig.data[0].line.color != fig.data[1].line.color  # a colour per schedule
    assert [s.x0 for s in fig.layout.shapes] == [4, 4]  # this view's m in each panel


def test_compare_memory_marks_iterations_and_optimizer_steps_in_each_gantt():
    runs = [ppviz.simulate("gpipe", 4, 8, iterations=2), ppviz.simulate("1f1b", 4, 8, iterations=2)]
    fig = figures.to_plotly(figures.compare_memory(runs))
    lines = [t for t in fig.data if t.legendgroup == "iterations"]
    assert [t.yaxis for t in lines] == ["y", "y3"] and [t.showlegend for t in lines] == [True, False]
    from ppviz.estimate import Layout

    lay = Layout(tp=8, pp=8, gbs=16, schedule="1f1b", schedule_params={"iterations": 3})
    est = ppviz.estimate("llama3-70b", "h100-sxm", lay)
    fig = figures.to_plotly(figures.compare_memory([est.run, est.run], time_scale=1e3, time_unit="ms"))
    steps = [t for t in fig.data if t.legendgroup == "optimizer"]
    assert [t.yaxis for t in steps] == ["y", "y3"] and [t.showlegend for t in steps] == [True, False]
