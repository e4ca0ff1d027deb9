"""The search view through Dash's real dispatch: the search button and links start ``ppviz.search`` as a
background job whose table equals the search's own ranking; bad inputs get clear errors; a row opens
in the model & cluster view with that layout's estimate.
"""

from __future__ import annotations

import pytest
from web_dispatch import Page, answer, text_of

import app as page_app
import ppviz
from ppviz import figures
from ppviz.estimate import Layout, model
from ppviz.search import Options
from ppviz.units import duration
from ppviz.web.common import cluster
from ppviz.web.pages.model import render as model_render
from ppviz.web.pages.search import render as search_render
from ppviz.web.pages.search import state as search_state
from ppviz.web.pages.search.ids import cid
from ppviz.web.pages.search.layout import CONTROLS

SERVER = page_app.server
URL, MODEL_URL = "url-search", "url-model"  # the pages' locations
SYNC = "ran-search.data"
JOB = "error-search.children"
SMALL = {"model": "llama3-8b", "gpus": 16, "gbs": 32, "seq": 4096, "schedules": ["1f1b", "zb-v"], "headroom": 10}
SMALL_LINK = "#model=llama3-8b&gpu=h100-sxm&gpus=16&gbs=32&seq=4096&schedules=1f1b,zb-v&headroom=10&top=20"


@pytest.fixture
def page() -> Page:
    model_render.clear_cache()
    p = Page.open(SERVER, "/search")
    p.load()
    return p


def follow(page: Page, out: dict) -> tuple[dict, str]:
    """A row's link followed as the browser does: the router draws the model page at its path, whose
    view draws the hash's state on its first call. Returns that call's answer and the hash."""
    path, _, hash_ = out[URL]["href"].partition("#")
    assert path == cluster.MODEL_PATH
    page.go(path, "#" + hash_)
    return answer(page.fire(page.callback("drawn-model.data"))), "#" + hash_


@pytest.fixture(scope="module")
def expected():
    """The search itself, with the same inputs as SMALL (what the page must show)."""
    return ppviz.search(
        model("llama3-8b", seq=4096), "h100-sxm", 16, 32, top=20, schedules=["1f1b", "zb-v"], headroom=0.1
    )


def unchanged(response) -> bool:
    return response.status_code == 204 or (response.status_code == 200 and not response.get_json().get("response"))


def press_search(page: Page, inputs: dict) -> dict:
    values = {(cid(k), "value"): v for k, v in inputs.items()}
    values[("run-search", "n_clicks")] = (page.value("run-search", "n_clicks") or 0) + 1
    return answer(page.fire(page.callback(SYNC), [("run-search", "n_clicks")], values))


def run_job(page: Page):
    first, final, _ = page.run_background(page.callback(JOB), [("request-search", "data")], timeout_s=120)
    assert set(first.get_json()) >= {"cacheKey", "job"}
    return final


def open_row_callback(page: Page) -> dict:
    (dep,) = [d for d in page.server_callbacks() if any(i["id"] == "grid-search" for i in d["inputs"])]
    return dep


def test_nothing_runs_on_page_load(page):
    assert unchanged(page.fire(page.callback(SYNC)))
    assert page.value("grid-search", "rowData") == []


def test_the_search_button_runs_the_search_in_the_background_and_ranks_like_ppviz_search(page, expected):
    out = press_search(page, SMALL)
    hash_ = out[URL]["hash"]
    assert hash_.startswith("#model=") and "gpus=16" in hash_ and "schedules=1f1b,zb-v" in hash_
    assert out["request-search"]["data"]["search"] == search_state.key_of(search_state.parse(hash_).state)
    run_job(page)
    rows = page.value("grid-search", "rowData")
    assert [r["command"] for r in rows] == [r["command"] for r in expected.layouts]
    assert [r["iteration_s"] for r in rows] == [round(r["iteration_s"], 4) for r in expected.layouts]
    usable = (81_559 / 1024 - 3) - 0.1 * 81_559 / 1024  # 79.65 GiB less the 3 GiB reserve and 10% headroom
    assert all(r["peak_gib"] <= usable for r in rows)
    assert [r["rank"] for r in rows] == list(range(1, len(rows) + 1))
    fig = page.value("scatter-search", "figure")
    (front,) = [t for t in fig["data"] if t["name"] == "Pareto front"]
    assert len(figures.decode_typed_array(front["x"])) == len(expected.pareto)
    (capacity,) = [t for t in fig["data"] if t["name"].startswith("usable")]
    assert capacity["y"] == [pytest.approx(usable), pytest.approx(usable)]
    assert fig["layout"]["xaxis"]["title"]["text"] == "iteration time (s)"
    assert fig["layout"]["yaxis"]["title"]["text"] == "peak memory (GiB)"
    assert f"{expected.searched:,} layouts in the space" in text_of(page.value("summary-search", "children"))


def test_a_link_with_search_inputs_sets_them_and_reruns_once(page):
    out = answer(page.fire(page.callback(SYNC), [(URL, "hash")], {(URL, "hash"): SMALL_LINK}))
    assert out[cid("model")]["value"] == "llama3-8b" and out[cid("gpus")]["value"] == 16
    assert out[cid("schedules")]["value"] == ["1f1b", "zb-v"] and out[cid("headroom")]["value"] == 10
    assert out["request-search"]["data"]["search"].startswith("model=llama3-8b")
    reordered = "#" + "&".join(reversed(SMALL_LINK.lstrip("#").split("&")))
    again = page.fire(page.callback(SYNC), [(URL, "hash")], {(URL, "hash"): reordered})
    assert unchanged(again)  # the same search, written otherwise: not run again
    assert unchanged(page.fire(page.callback(SYNC), [(URL, "hash")], {(URL, "hash"): ""}))  # no inputs: none


@pytest.mark.parametrize("name", CONTROLS)
def test_every_input_is_bounded_before_the_search(page, name):
    junk = {"model": {"x": 1}, "gpu": "tpu-v9", "schedules": ["nope"], "gpus": 10**9, "gbs": -5, "seq": "long"}
    junk |= {"headroom": 150, "top": 2.5, "tp_mode": ["3d"]}
    out = press_search(page, {**SMALL, name: junk[name]})
    notes = text_of(out["notes-search"]["children"])
    assert notes, f"{name}={junk[name]!r} passed without a note"
    state = search_state.parse(out[URL]["hash"]).state
    assert state == search_state.bounded({**SMALL, name: junk[name]})[0]
    if name == "gpus":
        assert out[cid("gpus")]["value"] == 16_384 and "outside 1–16384" in notes


def test_a_search_that_cannot_divide_says_what_to_change(page):
    press_search(page, {**SMALL, "gpus": 97, "schedules": ["1f1b"]})
    run_job(page)
    error = text_of(page.value("error-search", "children"))
    assert "no layout of 97 GPUs divides" in error  # the search says what to change
    assert page.value("grid-search", "rowData") == []


def test_a_search_where_nothing_fits_says_how_close_it_came(page):
    press_search(page, {"model": "llama3-405b", "gpu": "a100-40gb", "gpus": 8, "gbs": 8, "seq": 8192})
    run_job(page)
    error = text_of(page.value("error-search", "children"))
    assert "fit" in error and "GiB" in error


def test_a_row_opens_in_the_model_view_with_its_own_estimate(page, expected):
    answer(page.fire(page.callback(SYNC), [(URL, "hash")], {(URL, "hash"): SMALL_LINK}))
    row = search_render.rows(expected)[1]
    out = answer(page.fire(open_row_callback(page), [("grid-search", "selectedRows")], {
        ("grid-search", "selectedRows"): [row]}))  # fmt: skip
    view, hash_ = follow(page, out)  # the search's own hash stays behind, for the header's link back
    assert "gpus=" not in hash_
    assert view["schedule-model"]["value"] == row["schedule"] and view["tp-model"]["value"] == row["tp"]
    lay = Layout(**{k: row[k] for k in ("tp", "pp", "dp", "cp", "ep", "vpp", "mbs", "gbs", "recompute", "zero")},
                 sequence_parallel=row["sequence_parallel"], tp_comm_overlap=row["tp_comm_overlap"],
                 schedule=row["schedule"])  # fmt: skip
    est = ppviz.estimate(model("llama3-8b", seq=4096), "h100-sxm", lay)
    assert est.iteration_s == pytest.approx(expected.layouts[1]["iteration_s"])
    assert duration(est.iteration_s) in page.text("cards-model")
    layout = view["gantt-model"]["figure"]["layout"]  # the Gantt with its memory chart under it
    assert layout["xaxis2"]["title"]["text"] == "time (ms)" and layout["yaxis2"]["title"]["text"] == "memory (GiB)"


def test_the_page_left_leaves_the_next_page_s_hash_alone(page, expected):
    """A row opened: path and hash change at once while the search page is still drawn; its callback
    sees the model page's hash (which reads as search inputs too) and neither runs a search nor writes."""
    answer(page.fire(page.callback(SYNC), [(URL, "hash")], {(URL, "hash"): SMALL_LINK}))
    row = search_render.rows(expected)[0]
    out = answer(page.fire(open_row_callback(page), [("grid-search", "selectedRows")], {
        ("grid-search", "selectedRows"): [row]}))  # fmt: skip
    path, _, hash_ = out[URL]["href"].partition("#")
    values = {(URL, "pathname"): path, (URL, "hash"): "#" + hash_}
    assert unchanged(page.fire(page.callback(SYNC), [(URL, "hash")], values))


@pytest.mark.parametrize("junk", [None, [], [1], ["x"], [{"tp": "a"}], {"rank": 1}, [{}]])
def test_a_junk_selection_opens_nothing(page, junk):
    response = page.fire(open_row_callback(page), [("grid-search", "selectedRows")], {
        ("grid-search", "selectedRows"): junk})  # fmt: skip
    assert unchanged(response)


def test_the_search_stops_itself_at_its_deadline_with_what_it_has():
    state = search_state.bounded(SMALL)[0]
    result = search_render.run(state, deadline_s=0.0)
    assert result.cancelled and any("cancelled" in n for n in result.notes)


@pytest.fixture(scope="module")
def expected_2d():
    """The 2D (SUMMA) search of SMALL: its rows carry grids and NVLink placements."""
    return ppviz.search(
        model("llama3-8b", seq=4096), "h100-sxm", 16, 32, top=20, schedules=["1f1b", "zb-v"], headroom=0.1,
        tp_mode=["2d"],
    )  # fmt: skip


def test_2d_tensor_parallelism_is_searched_when_ticked(page, expected_2d):
    out = press_search(page, {**SMALL, "tp_mode": ["2d"]})
    assert "tp_mode=2d" in out[URL]["hash"]
    run_job(page)
    rows = page.value("grid-search", "rowData")
    assert [r["command"] for r in rows] == [r["command"] for r in expected_2d.layouts]
    assert all(r["tp_mode"] == "2d" and r["tp_text"] == f"2D {r['tp2d'][0]}×{r['tp2d'][1]}" for r in rows)
    link = answer(page.fire(page.callback(SYNC), [(URL, "hash")], {(URL, "hash"): SMALL_LINK + "&tp_mode=1d,2d"}))
    assert link[cid("tp_mode")]["value"] == ["1d", "2d"]


@pytest.mark.parametrize("which", ["2d", "nvlink"])
def test_a_2d_or_placed_row_opens_in_the_model_view_with_its_own_estimate(page, expected_2d, which):
    answer(page.fire(page.callback(SYNC), [(URL, "hash")], {(URL, "hash"): SMALL_LINK + "&tp_mode=2d"}))
    rows = search_render.rows(expected_2d)
    row = next(r for r in rows if (r["nvlink_dp_pp"] is not None) == (which == "nvlink"))
    out = answer(page.fire(open_row_callback(page), [("grid-search", "selectedRows")], {
        ("grid-search", "selectedRows"): [row]}))  # fmt: skip
    view, hash_ = follow(page, out)
    assert f"tp2d={row['tp2d'][0]},{row['tp2d'][1]}" in hash_ and "tp_mode=2d" in hash_
    assert ("nvlink=" in hash_) == (which == "nvlink")
    want = next(r for r in expected_2d.layouts if r["command"] == row["command"])
    lay = Layout(**{k: row[k] for k in ("tp", "pp", "dp", "cp", "ep", "vpp", "mbs", "gbs", "recompute", "zero")},
                 schedule=row["schedule"], tp_mode="2d", tp2d=tuple(row["tp2d"]), summa_blocks=row["summa_blocks"],
                 nvlink_dp_pp=tuple(row["nvlink_dp_pp"]) if row["nvlink_dp_pp"] else None)  # fmt: skip
    est = ppviz.estimate(model("llama3-8b", seq=4096), "h100-sxm", lay)
    assert est.iteration_s == want["iteration_s"]
    assert duration(est.iteration_s) in page.text("cards-model")
    assert view["gantt-model"]["figure"]["layout"]["xaxis2"]["title"]["text"] == "time (ms)"
    state = cluster.parse(hash_).state
    shown = cluster.layout_of(state, row["schedule"])
    assert (shown.tp_mode, shown.tp2d, shown.summa_blocks, shown.nvlink_dp_pp) == (
        "2d", lay.tp2d, lay.summa_blocks, lay.nvlink_dp_pp)  # fmt: skip
    assert "--tp-mode 2d --tp2d" in cluster.cli_command(state, row["schedule"])
    # another control keeps the grid; a new tp that the grid does not fit goes back to 1D and says so
    zero = answer(page.fire(page.callback("drawn-model.data"), [("zero-model", "value")], {
        (MODEL_URL, "hash"): hash_, ("zero-model", "value"): 2}))  # fmt: skip
    assert "tp2d=" in zero[MODEL_URL]["hash"]
    tp = answer(page.fire(page.callback("drawn-model.data"), [("tp-model", "value")], {
        (MODEL_URL, "hash"): hash_, ("tp-model", "value"): row["tp"] * 2 if row["tp"] < 8 else 1}))  # fmt: skip
    assert "tp2d=" not in tp[MODEL_URL]["hash"] and "showing 1D" in text_of(tp["notes-model"]["children"])


@pytest.mark.parametrize(
    ("extra", "note"),
    [("&tp_mode=2d&tp2d=3,3", "showing 1D"), ("&tp_mode=2d&tp2d=x", "showing 1D"), ("&nvlink=9,9", "Megatron"),
     ("&nvlink=a", "Megatron")],
)  # fmt: skip
def test_a_junk_grid_or_placement_in_a_link_falls_back_with_a_note(extra, note):
    state, notes = cluster.parse("#model=llama3-8b&tp=2&pp=2&dp=4&sp=0" + extra)
    assert state.tp_mode == "1d" and state.nvlink_dp_pp is None
    assert any(note in n for n in notes)


def test_every_server_callback_of_the_model_and_search_views_is_tested():
    """A new callback in model_callbacks.py or search_callbacks.py must get its triggers tested here or in
    tests/test_web_model.py (then named below)."""
    from ppviz.web.pages.model import callbacks as model_callbacks
    from ppviz.web.pages.model import handoff_callbacks
    from ppviz.web.pages.search import callbacks as search_callbacks

    modules = {model_callbacks.__name__, search_callbacks.__name__, handoff_callbacks.__name__}
    names = {
        v["callback"].__name__
        for v in page_app.app.callback_map.values()
        if getattr(v.get("callback"), "__module__", "") in modules
    }
    tested = {"update_model_view", "estimate_in_background", "update_search", "search_in_background", "open_row"}
    tested |= {"list_baselines"}  # tests/test_web_model.py: the baseline picker
    tested |= {"upload_config", "show_plan", "show_command", "download_export"}  # tests/test_web_*_handoff.py
    tested |= {"show_advice", "apply_advice"}  # tests/test_web_advice.py: the advice card and its buttons
    tested |= {"upload_calibration"}  # both pages': tests/test_web_search_calibration.py, test_web_model_calibration.py
    assert names == tested


ALL_SCHEDULES = "1f1b,interleaved-1f1b,zb-h1,zb-v,zb-h2,v-half,v-min,v-zb,dualpipe-v,zb-auto"
HUGE = {"model": "deepseek-v3", "gpus": 16_384, "gbs": 1_048_576, "seq": 1_048_576, "top": 100,
        "schedules": ALL_SCHEDULES.split(","), "tp_mode": ["1d", "2d"]}  # fmt: skip


def test_a_search_past_the_pages_space_is_refused_before_it_starts_saying_what_to_change(page):
    """The issue's link (a job to 3 GB for 90 s, no rows): refused while its layouts are listed."""
    state = search_state.bounded(HUGE)[0]
    with pytest.raises(ValueError) as refused:
        search_render.groups(state)
    assert f"more than {search_state.MAX_SHAPES:,} layout shapes" in str(refused.value)
    press_search(page, HUGE)
    run_job(page)
    error = text_of(page.value("error-search", "children"))
    assert error == str(refused.value) and f"the page searches at most {search_state.MAX_GROUPS:,} groups" in error
    assert "lower GPUs, the global batch or the sequence length, search 1D tensor parallelism only" in error
    assert "use the CLI: ppviz search --model deepseek-v3 --gpu h100-sxm --gpus 16384 --gbs 1048576" in error
    assert page.value("grid-search", "rowData") == []


def test_a_search_of_too_many_layout_groups_is_refused_with_their_count():
    state = search_state.bounded({**HUGE, "gpus": 4096, "gbs": 4096, "seq": 8192})[0]
    with pytest.raises(ValueError, match=r"the search spans 2\d,\d{3} layout groups .* at most 20,000 groups"):
        search_render.run(state)


def test_the_page_searches_only_layouts_the_model_view_can_draw(page):
    """At most 256 microbatches per layout and 64 pipeline devices: each simulation's size is bounded."""
    inputs = {**SMALL, "gbs": 4096, "schedules": ["1f1b"]}
    state = search_state.bounded(inputs)[0]
    unbounded = ppviz.search(model("llama3-8b", seq=4096), "h100-sxm", 16, 4096, top=20, schedules=["1f1b"],
                             headroom=0.1, mbs=[1])  # fmt: skip
    top = search_state.MAX_MICROBATCHES
    assert any(r["gbs"] // (r["dp"] * r["mbs"]) > top for r in unbounded.layouts)  # the bound changes something
    press_search(page, inputs)
    run_job(page)
    rows = page.value("grid-search", "rowData")
    assert rows and all(r["gbs"] // (r["dp"] * r["mbs"]) <= top and r["pp"] <= 64 for r in rows)
    assert f"layouts of up to {top} microbatches, pp ≤ 64" in text_of(page.value("summary-search", "children"))
    assert search_render.groups(state) <= search_state.MAX_GROUPS


def test_the_bounds_of_the_search_space_are_checked():
    with pytest.raises(ValueError, match="max_microbatches wants a whole number"):
        Options(max_microbatches=0)
    with pytest.raises(ValueError, match="max_pp wants a whole number"):
        Options(max_pp=True)
