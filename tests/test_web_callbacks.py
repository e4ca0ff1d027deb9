"""The page's logic without a browser: URL state, control sync, what is drawn, errors, exports, uploads.

The callbacks are thin wrappers over these plain functions; tests/test_web_dispatch.py drives the
callbacks themselves through Dash's real dispatch.
"""

from __future__ import annotations

import base64
import json

import pytest

import ppviz
from ppviz import figures
from ppviz.errors import InputError
from ppviz.web.common import caches, charts, limits, validation
from ppviz.web.pages.abstract import budget, render, sync
from ppviz.web.pages.abstract.state import CUSTOM, ViewState, encode, pack_order, parse, unpack_order

pytestmark = pytest.mark.usefixtures("fresh_run_cache")  # each test simulates its views itself


def state(query: str) -> ViewState:
    return parse(query).state


def upload_of(text: str) -> str:
    return "data:text/csv;base64," + base64.b64encode(text.encode()).decode()


# --- URL state -------------------------------------------------------------------------------


def test_a_full_view_survives_the_round_trip_through_its_link():
    """Every field, including parameters, per-stage times and a memory limit, is restored exactly."""
    original = ViewState(
        schedule="interleaved-1f1b",
        devices=8,
        microbatches=24,
        f=1.5,
        b=2.25,
        w=0.75,
        p2p=0.1,
        overlap=0.8,
        b_frees=0.35,
        limit=6.5,
        gbs=48,
        mbs=2,
        params={"interleaved-1f1b": {"chunks": 3, "group_size": 8}},
        stage_times={2: (3.0, 1.0, 1.0), 7: (1.0, 2.5, 0.5)},
        host_overhead=(0.5, 0.0, 0.25, 0.0, 0.0, 0.0, 0.0, 1.0),
    )
    parsed = parse(encode(original))
    assert parsed.notes == []
    assert parsed.state == original


def test_compare_mode_keeps_its_schedules_and_their_parameters():
    original = ViewState(mode="compare", compare=("1f1b", "looped-bfs", "zb-h1"), params={"looped-bfs": {"chunks": 4}})
    assert parse(encode(original)).state == original


def test_an_uploaded_order_travels_in_the_link():
    order = ppviz.to_torch_csv(ppviz.build("zb-h1", 3, 6))
    original = ViewState(schedule=CUSTOM, order=order)
    assert parse(encode(original)).state.order == order
    assert unpack_order(pack_order(order)) == order


def test_a_damaged_link_falls_back_to_defaults_with_notes():
    """Bad values never break the page: each is replaced by its default and said so."""
    parsed = parse("#devices=abc&microbatches=2.5&f=-1&schedule=nope&foo=3&stage_times=1:2:2:2,x&order=@@")
    s = parsed.state
    assert (s.devices, s.microbatches, s.f, s.schedule) == (4, 8, 0.0, "1f1b")
    assert s.stage_times == {1: (2.0, 2.0, 2.0)}
    assert len(parsed.notes) == 7


def test_values_past_a_slider_are_clamped_to_it():
    parsed = parse("#devices=100")
    assert parsed.state.devices == 64
    assert "outside 1–64" in parsed.notes[0]


def test_a_compressed_order_that_inflates_too_far_is_refused():
    with pytest.raises(ValueError, match="too large"):
        unpack_order(pack_order("0F0," * 10_000), max_chars=1000)


# --- sync of controls and URL -----------------------------------------------------------------

CONTROL_VALUES = sync.control_values(ViewState())
PARAM_IDS = [{"type": "param", "schedule": "interleaved-1f1b", "name": n} for n in ("chunks", "group_size")]


def test_opening_a_link_sets_every_control_from_it():
    link = "#schedule=interleaved-1f1b&devices=8&microbatches=16&f=2&interleaved-1f1b.chunks=4&stage_times=1:3:1:1"
    out = sync.sync(None, link, CONTROL_VALUES, [(i, None) for i in PARAM_IDS], [], None)
    assert out.hash is None  # the URL stays as it is
    assert out.controls["schedule"] == "interleaved-1f1b"
    assert (out.controls["devices"], out.controls["microbatches"], out.controls["f"]) == (8, 16, 2.0)
    assert out.params == [4, None]
    assert out.rows[1] == {"stage": 1, "f": 3.0, "b": 1.0, "w": 1.0, "host_overhead": 0.0}
    assert out.rows[0] == {"stage": 0, "f": 2.0, "b": 1.0, "w": 1.0, "host_overhead": 0.0}
    assert len(out.rows) == 8


def test_moving_a_slider_writes_the_url_and_leaves_the_controls():
    values = {**CONTROL_VALUES, "microbatches": 12}
    out = sync.sync("microbatches", encode(ViewState()), values, [], [], None)
    assert out.controls is None
    assert parse(out.hash).state == ViewState(microbatches=12)
    assert out.state.microbatches == 12


def test_editing_the_stage_table_records_only_rows_that_differ():
    rows = sync.table_rows(ViewState())
    rows[3]["b"] = 2.5
    out = sync.sync("stage-table", encode(ViewState()), CONTROL_VALUES, [], rows, None)
    assert out.state.stage_times == {3: (1.0, 2.5, 1.0)}
    assert "stage_times=3:1:2.5:1" in out.hash


def test_fewer_devices_drop_the_stage_rows_past_them_and_reset_clears_the_rest():
    before = encode(ViewState(devices=8, stage_times={1: (2.0, 1.0, 1.0), 6: (2.0, 1.0, 1.0)}))
    out = sync.sync("devices", before, {**CONTROL_VALUES, "devices": 4}, [], None, None)
    assert out.state.stage_times == {1: (2.0, 1.0, 1.0)}
    assert [r["f"] for r in out.rows] == [1.0, 2.0, 1.0, 1.0]
    reset = sync.sync("stage-reset", out.hash, {**CONTROL_VALUES, "devices": 4}, [], out.rows, None)
    assert reset.state.stage_times == {}


def test_the_sliders_move_the_rows_that_are_not_overridden():
    before = encode(ViewState(stage_times={0: (3.0, 1.0, 1.0)}))
    out = sync.sync("f", before, {**CONTROL_VALUES, "f": 2.0}, [], None, None)
    assert [r["f"] for r in out.rows] == [3.0, 2.0, 2.0, 2.0]


def test_compare_takes_at_most_four_schedules():
    names = list(ppviz.REGISTRY)[:5]
    values = {**CONTROL_VALUES, "mode": "compare", "compare": names}
    out = sync.sync("compare", encode(ViewState()), values, [], None, None)
    assert out.controls["compare"] == names[:4]
    assert out.state.compare == tuple(names[:4])
    assert out.notes


def test_an_upload_switches_to_the_custom_schedule():
    order = ppviz.to_torch_csv(ppviz.build("1f1b", 3, 4))
    out = sync.sync("upload-store", encode(ViewState()), CONTROL_VALUES, [], None, order)
    assert out.controls == {"mode": "single", "schedule": CUSTOM}
    assert out.state.schedule == CUSTOM and out.state.order == order


# --- what is drawn ------------------------------------------------------------------------------


def test_1f1b_cards_match_the_closed_form():
    """1F1B at p=4, m=8, f=b=w=1: makespan (m+p−1)(f+b+w) = 33 and bubble 1 − 8·3/33."""
    view = render.render(state("#schedule=1f1b&devices=4&microbatches=8"))
    cards = {label: (value, detail) for label, value, detail in view.cards}
    assert cards["makespan"] == ("33", "closed form 33")
    assert cards["bubble fraction"][0] == f"{1 - 24 / 33:.1%}"
    assert cards["peak activation"][0] == "4"
    assert view.drawn_as == "bars"
    assert view.messages["b_frees"][0] == "reason" and view.disabled["b_frees"]


def test_both_charts_share_the_time_axis():
    view = render.render(state("#schedule=zb-h1&devices=4&microbatches=8&p2p=0.3"))
    assert view.gantt["layout"]["xaxis"]["range"] == view.memory["layout"]["xaxis"]["range"]


def test_the_memory_limit_line_is_drawn():
    view = render.render(state("#schedule=1f1b&devices=4&microbatches=8&limit=3"))
    assert any(trace.get("name") == "limit 3" for trace in view.memory["data"])


def test_big_schedules_are_drawn_as_an_overview():
    ops = 2 * 8 * 512
    assert ops > charts.BARS_MAX_OPS
    view = render.render(state("#schedule=1f1b&devices=8&microbatches=512"))
    assert view.drawn_as == "overview"
    assert view.gantt["data"][0]["type"] == "heatmap"


def test_compare_ranks_by_makespan_under_the_same_costs():
    view = render.render(state("#mode=compare&compare=1f1b,zb-h1,gpipe&devices=4&microbatches=8"))
    assert view.memory is None
    assert [row["schedule"] for row in view.ranking][0] == "zb-h1"
    assert [row["rank"] for row in view.ranking] == [1, 2, 3]
    makespans = [row["makespan"] for row in view.ranking]
    assert makespans == sorted(makespans)


@pytest.mark.parametrize(
    ("query", "control"),
    [
        ("#schedule=interleaved-1f1b&devices=4&microbatches=6", "microbatches"),
        ("#schedule=interleaved-1f1b&devices=4&microbatches=8&interleaved-1f1b.group_size=2", None),
        ("#schedule=1f1b&devices=4&microbatches=8&stage_times=2:-1:1:1", "stage_times"),
        ("#schedule=1f1b-2bw&devices=8&microbatches=4", "microbatches"),
    ],
)
def test_an_invalid_combination_shows_the_core_message_next_to_its_control(query, control):
    """Never an exception: the message goes to the control it names, and the chart says why it is empty."""
    s = state(query)
    control = control or "interleaved-1f1b.group_size"
    view = render.render(s)
    kind, text = view.messages[control]
    assert kind == "error" and text
    assert view.drawn_as == "none"
    assert "Nothing to draw" in view.gantt["layout"]["annotations"][0]["text"]


def test_a_search_past_the_background_budget_is_refused_with_the_cli_command_at_devices():
    """v-auto at 64 × 512 (196,608 actions, each searched) is past what the page computes even in the background."""
    view = render.render(state("#schedule=v-auto&devices=64&microbatches=512"))
    kind, text = view.messages["devices"]
    assert kind == "error" and "use the CLI: ppviz simulate v-auto -p 64 -m 512" in text
    assert f"{limits.price('v-auto', 64, 512, 64 * 512 * 6):,} work units" in text
    assert view.drawn_as == "none" and view.runs == []


def test_work_past_the_synchronous_budget_is_queued_not_done(monkeypatch):
    """v-auto at 64 × 1 (384 actions, but its devices² term: it took 1.2 s) is left to a background job."""
    monkeypatch.setattr(render, "run_of", lambda *a: pytest.fail("simulated synchronously"))
    s = state("#schedule=v-auto&devices=64&microbatches=1")
    assert budget.work(s) == 384 * limits.factor("v-auto") + limits.SEARCH_PER_DEVICE2["v-auto"] * 64**2
    assert budget.work(s) > limits.SYNC_WORK
    view = render.render(s)
    assert view.drawn_as == "queued" and "in the background" in view.gantt["layout"]["annotations"][0]["text"]


def test_searching_schedules_are_built_under_the_page_op_times():
    """v-half repairs its order with the view's f, b, w and latency, as the CLI and the API do."""
    s = state("#schedule=v-half&devices=4&microbatches=8&f=1&b=2&w=0.5&p2p=0.2")
    (run,) = render.render(s).runs
    expected = ppviz.simulate("v-half", 4, 8, f=1, b=2, w=0.5, p2p=0.2)
    default = ppviz.build("v-half", 4, 8)  # searched under f = b = w = 1: a different order
    assert ppviz.to_torch_csv(run.schedule) == ppviz.to_torch_csv(expected.schedule)
    assert ppviz.to_torch_csv(run.schedule) != ppviz.to_torch_csv(default)
    assert run.metrics.makespan == expected.metrics.makespan


def test_an_error_without_a_field_goes_to_the_schedule_picker():
    """No field: the schedule picker, or compare's in compare mode; the message's words play no part."""
    error = ValueError("the schedule deadlocks: lower devices")
    assert render.control_for(error, ViewState(), "1f1b") == "schedule"
    assert render.control_for(error, ViewState(mode="compare"), "1f1b") == "compare"


def test_an_error_reaches_the_control_its_field_names():
    """A field of the sizes goes to its slider, a schedule's own parameter to that schedule's box."""
    assert render.control_for(InputError("any words", field="p2p"), ViewState(), "1f1b") == "p2p"
    assert render.control_for(InputError("any words", field="chunks"), ViewState(), "interleaved-1f1b") == (
        "interleaved-1f1b.chunks"
    )
    assert render.control_for(InputError("any words", field="order"), ViewState(), "1f1b") == "upload"
    assert render.control_for(InputError("any words", field="devices"), ViewState(), "custom") == "upload"


# --- exports and uploads ------------------------------------------------------------------------


def test_every_export_is_built_from_the_view():
    s = state("#schedule=zb-h1&devices=3&microbatches=6")
    ops = render.export(s, "ops-csv")
    assert ops["filename"] == "zb-h1_p3_m6_ops.csv"
    assert ops["content"].count("\n") >= 3 * 3 * 6
    assert len(json.loads(render.export(s, "run-json")["content"])["ops"]) == 3 * 3 * 6
    assert json.loads(render.export(s, "trace")["content"])["traceEvents"]
    order = render.export(s, "torch-csv")["content"]
    assert ppviz.from_torch_csv(order).order == ppviz.build("zb-h1", 3, 6).order


def test_a_valid_upload_is_read_and_a_bad_one_says_where():
    order = ppviz.to_torch_csv(ppviz.build("1f1b", 3, 4))
    assert render.read_upload(upload_of(order), "order.csv") == order
    with pytest.raises(ValueError, match="row 2"):
        render.read_upload(upload_of('0F0,0B0\n__import__("os")\n'), "bad.csv")
    with pytest.raises(ValueError, match="larger than"):
        render.read_upload(upload_of("0F0," * 100_000), "big.csv")
    with pytest.raises(ValueError, match="not UTF-8"):
        render.read_upload("data:text/csv;base64," + base64.b64encode(b"\xff\xfe").decode(), "bin.csv")


def test_an_uploaded_order_is_simulated_under_the_page_costs():
    order = ppviz.to_torch_csv(ppviz.build("1f1b", 3, 4))
    view = render.render(ViewState(schedule=CUSTOM, order=order, f=2.0))
    expected = ppviz.simulate("1f1b", 3, 4, f=2.0).metrics.makespan
    assert dict((c[0], c[1]) for c in view.cards)["makespan"] == f"{expected:g}"
    assert view.disabled["devices"] and view.messages["devices"] == ("reason", "set by the uploaded order")


# --- the Dash callbacks themselves ---------------------------------------------------------------


def test_chart_images_come_as_svg_or_png():
    assert charts.graph_config("png")["toImageButtonOptions"]["format"] == "png"
    assert charts.graph_config("gif")["toImageButtonOptions"]["format"] == "svg"


def test_a_bug_in_the_core_is_reported_on_the_page_not_as_a_500(monkeypatch):
    def broken(*args, **kwargs):
        raise IndexError("index 9 is out of bounds")

    monkeypatch.setattr(ppviz, "evaluate", broken)
    view = render.render(state("#schedule=1f1b"))
    kind, text = view.messages["schedule"]
    assert kind == "error" and "IndexError" in text and "please report" in text


# --- zooming into an overview ------------------------------------------------------------------

BIG = "#schedule=1f1b&devices=16&microbatches=512"  # 16,384 ops: past BARS_MAX_OPS, an overview


def test_relayout_events_name_the_time_window_or_a_reset():
    assert render.zoom_window({"xaxis.range[0]": 2, "xaxis.range[1]": 5.5}) == (2.0, 5.5)
    assert render.zoom_window({"xaxis.range": [1, 3]}) == (1.0, 3.0)
    assert render.zoom_window({"xaxis.autorange": True, "yaxis.autorange": True}) == "full"
    for untouched in [None, {}, {"autosize": True}, {"yaxis.range[0]": 0, "yaxis.range[1]": 2},
                      {"xaxis.range": [3, 3]}, {"xaxis.range": ["a", 1]}, {"xaxis.range[0]": 1}]:  # fmt: skip
        assert render.zoom_window(untouched) is None


def test_zooming_into_an_overview_gives_bars_once_few_enough_ops_are_in_view():
    s = state(BIG)
    view = render.render(s)
    assert view.drawn_as == "overview" and view.gantt["layout"]["title"]["text"].endswith(render.OVERVIEW_NOTE)
    run = view.runs[0]
    makespan = run.metrics.makespan
    wide, wide_as = render.zoomed(s, (0.0, makespan * 0.9))
    assert wide_as == "overview" and wide["layout"]["xaxis"]["range"] == [0.0, makespan * 0.9]
    window = (makespan / 2, makespan / 2 + 40)
    narrow, narrow_as = render.zoomed(s, window)
    r = run.result
    inside = int(((r.end > window[0]) & (r.start < window[1])).sum())
    drawn = sum(len(figures.rects(t)[0]) for t in narrow["data"] if t.get("fill") == "toself")
    assert narrow_as == "bars" and drawn == inside and 0 < inside <= charts.BARS_MAX_OPS
    full, full_as = render.zoomed(s, "full")
    assert full_as == "overview" and full["layout"]["xaxis"]["range"] == [0.0, makespan]


def test_a_zoom_reuses_the_run_the_page_just_drew(monkeypatch):
    s = state(BIG)
    render.render(s)

    def not_again(*args, **kwargs):
        raise AssertionError("simulated again")

    monkeypatch.setattr(render, "run_of", not_again)
    assert render.zoomed(s, (10.0, 20.0))[1] == "bars"


def test_the_run_cache_keeps_the_most_recent_runs_within_its_bytes(monkeypatch):
    small = state("#schedule=1f1b&devices=4&microbatches=8")
    first = render.cached_run(small, "1f1b")  # 64 actions
    size = render.run_bytes(first, render.run_key(small, "1f1b"))
    columns = sum(v.nbytes for v in vars(first.result).values() if hasattr(v, "nbytes"))
    assert size >= columns + 64 * render.ACTION_BYTES and render.run_cache_bytes() == size
    assert render.cached_run(small, "1f1b") is first
    monkeypatch.setattr(render, "RUNS", caches.Cache(int(size * 1.5), getsizeof=render.held_bytes))
    first = render.cached_run(small, "1f1b")
    render.cached_run(state("#schedule=1f1b&devices=4&microbatches=6"), "1f1b")  # together past 1.5 × size
    assert render.run_cache_bytes() <= int(size * 1.5)
    assert render.cached_run(small, "1f1b") is not first


def test_an_order_of_idle_ranks_is_refused_before_it_is_parsed():
    """250,000 blank rows fit in 256 KB and used to cost 133 s: now refused on their count, at once."""
    order = "0F0,0B0\n" + "\n" * 250_000 + "0F0\n"
    with pytest.raises(ValueError, match="250,002 rows .* at most 64"):
        validation.check_order(order)
    view = render.render(ViewState(schedule=CUSTOM, order=order))
    assert view.drawn_as == "none" and "at most 64" in view.messages["upload"][1]


def test_moving_the_limit_line_or_switching_mode_simulates_nothing_again(monkeypatch):
    """The run cache is keyed by what a run depends on: the limit line and the mode are not."""
    render.render(state("#schedule=v-auto&devices=4&microbatches=8&limit=3"))
    render.render(state("#mode=compare&compare=1f1b,zb-h1"))
    simulated = []
    real = render.run_of
    monkeypatch.setattr(render, "run_of", lambda s, name: simulated.append(name) or real(s, name))
    assert render.render(state("#schedule=v-auto&devices=4&microbatches=8&limit=5")).drawn_as == "bars"
    render.render(state("#schedule=zb-h1"))
    render.render(state("#mode=compare&compare=1f1b,v-auto&devices=4&microbatches=8"))
    assert simulated == []
    render.render(state("#schedule=v-auto&devices=4&microbatches=8&f=2"))
    render.render(state("#schedule=v-auto&devices=4&microbatches=8&v-auto.max_memory=3"))
    assert simulated == ["v-auto", "v-auto"]


def test_sweep_points_past_the_page_s_work_limit_are_gaps_naming_the_cli(monkeypatch):
    """The cheapest points first, the view's own (m = 8) free: at p = 4 a point costs 8·m units for 1F1B
    and 12·m for ZB-H1, so a budget of 300 takes m = 1, 2, 4 of both (140) and 1F1B's m = 16 (128),
    but not ZB-H1's 16 (192 more) nor anything larger."""
    render.clear_run_cache()
    monkeypatch.setattr(limits, "SWEEP_WORK", 300)
    rows = render.sweep_rows(state("#mode=compare&compare=1f1b,zb-h1&devices=4&microbatches=8&show=sweep"))
    one = {r["value"]: r for r in rows if r["schedule"] == "1f1b"}
    assert [m for m, r in one.items() if r["reason"] is None] == [1, 2, 4, 8, 16]
    assert one[32]["reason"].startswith("past the page's work limit: use the CLI: ppviz simulate 1f1b -p 4 -m 32")
    assert one[16]["makespan"] == (16 + 3) * 3
    zb = {r["value"]: r["reason"] is None for r in rows if r["schedule"] == "zb-h1"}
    assert [m for m, ran in zb.items() if ran] == [1, 2, 4, 8]


@pytest.mark.parametrize(
    ("s", "control"),
    [
        (
            ViewState(schedule="looped-bfs", devices=4, microbatches=8, params={"looped-bfs": {"chunks": 0}}),
            "looped-bfs.chunks",
        ),
        (ViewState(schedule="dualpipe", devices=3, microbatches=8), "devices"),
        (ViewState(schedule="dualpipe", devices=4, microbatches=6), "microbatches"),  # "…≥ 2 × devices": words mislead
        (ViewState(schedule="1f1b", f=0.0, b=0.0, w=0.0), "f"),
        (ViewState(mode="compare", compare=("1f1b", "dualpipe"), devices=3, microbatches=8), "devices"),
    ],
)
def test_a_core_error_lands_under_the_control_its_field_names(s, control):
    """The core's InputError.field picks the control (a bad chunks value under that schedule's chunks box)."""
    view = render.render(s)
    assert view.messages[control][0] == "error" and view.drawn_as == "none"
