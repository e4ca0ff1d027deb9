"""Every server callback of the page, for every trigger, through Dash's real dispatch.

Requests are built from the app's own callback map (``/_dash-dependencies``) and the page's props
(``/_dash-layout``, then each answer), posted to ``/_dash-update-component`` as the renderer does,
so Dash validates every return shape (a bare ``no_update`` for a wildcard output is a 500 here).
"""

from __future__ import annotations

import base64
import json
import logging
import time
from dataclasses import replace

import malformed
import psutil
import pytest
from web_dispatch import Page, answer, id_key, text_of

import app as page_app
import ppviz
from ppviz import figures
from ppviz.web import protocol
from ppviz.web.common import limits
from ppviz.web.pages.abstract import budget, callbacks, render
from ppviz.web.pages.abstract.state import parse

SERVER = page_app.server
PAGE = "gantt.figure...memory.figure"
# The callbacks of this page (ppviz/web/pages/abstract/callbacks.py); other views register their own.
OWN = {
    k
    for k, v in page_app.app.callback_map.items()
    if getattr(v.get("callback"), "__module__", "") == callbacks.__name__
}


@pytest.fixture
def page() -> Page:
    render.clear_run_cache()
    p = Page.open(SERVER)
    p.load()
    return p


def notes(page: Page) -> str:
    return text_of(page.value("link-notes", "children"))


def message(page: Page, name: str) -> str:
    return text_of(page.value({"type": "control-msg", "name": name}, "children"))


def test_page_load_draws_the_default_view(page):
    assert parse(page.value("url", "hash") or "").state.schedule == "1f1b"
    figure = page.value("gantt", "figure")
    assert figure["layout"]["title"]["text"].startswith("1f1b · 4 devices · 8 microbatches")
    cards = text_of(page.value("cards", "children"))
    assert "makespan 33 closed form 33" in cards  # (m + p − 1)(f + b + w) = 11 · 3


@pytest.mark.parametrize(
    "trigger",
    ["mode", "schedule", "compare", "devices", "microbatches", "f", "b", "w", "p2p", "overlap", "b_frees", "limit"]
    + ["gbs", "mbs", "lines", "baseline", "compare_show", "sweep_axis"],
)
def test_every_control_of_the_page_callback_answers_with_valid_outputs(page, trigger):
    """Each trigger with an ordinary new value, then emptied: 200 both times (Dash checked the shapes)."""
    dep = page.callback(PAGE)
    new = {
        "mode": "compare",
        "schedule": "zb-h1",
        "compare": ["1f1b", "zb-h1"],
        "devices": 6,
        "microbatches": 12,
        "f": 2,
        "b": 1.5,
        "w": 0.5,
        "p2p": 0.2,
        "overlap": 0.8,
        "b_frees": 0.5,
        "limit": 3,
        "gbs": 64,
        "mbs": 4,
        "lines": [1, 2],
        "baseline": "zb-h1",
        "compare_show": "sweep",
        "sweep_axis": "p",
    }[trigger]
    answer(page.fire(dep, [(trigger, "value")], {(trigger, "value"): new}))
    answer(page.fire(dep, [(trigger, "value")], {(trigger, "value"): None}))


def test_a_slider_release_writes_the_url_and_redraws(page):
    out = answer(page.fire(page.callback(PAGE), [("devices", "value")], {("devices", "value"): 6}))
    assert parse(out["url"]["hash"]).state.devices == 6
    assert "6 devices" in out["gantt"]["figure"]["layout"]["title"]["text"]
    assert "makespan 39 closed form 39" in text_of(out["cards"]["children"])  # (m + p − 1)(f + b + w) = 13 · 3


def test_a_global_batch_and_micro_batch_size_give_the_microbatches(page):
    """gbs ÷ mbs sets the slider and the URL; a pair that does not divide is refused beside the boxes;
    moving the slider clears the global batch; a link past the bounds is clamped with a note."""
    dep = page.callback(PAGE)
    answer(page.fire(dep, [("gbs", "value")], {("gbs", "value"): 96}))
    assert "give both" in message(page, "gbs") and page.value("microbatches", "value") == 8
    out = answer(page.fire(dep, [("mbs", "value")], {("mbs", "value"): 8}))
    state = parse(out["url"]["hash"]).state
    assert (state.gbs, state.mbs, state.microbatches) == (96, 8, 12)
    assert out["microbatches"]["value"] == 12  # the slider shows the count
    assert "12 microbatches" in page.value("gantt", "figure")["layout"]["title"]["text"]
    assert "96 ÷ 8 = 12 microbatches" in message(page, "gbs")
    assert "makespan 45 closed form 45" in text_of(page.value("cards", "children"))  # (12 + 4 − 1) · 3

    out = answer(page.fire(dep, [("gbs", "value")], {("gbs", "value"): 100}))
    assert "global batch 100 is not a multiple of micro-batch size 8" in message(page, "gbs")
    assert "Nothing to draw" in out["gantt"]["figure"]["layout"]["annotations"][0]["text"]
    assert out["memory-box"]["style"] == {"display": "none"}  # one empty state, not two empty charts
    assert "gbs=100" in out["url"]["hash"]  # the link keeps what was typed

    out = answer(page.fire(dep, [("microbatches", "value")], {("microbatches", "value"): 16}))
    assert out["gbs"]["value"] is None and parse(out["url"]["hash"]).state.gbs is None
    assert message(page, "gbs") == "give both to set the microbatches (global batch ÷ micro-batch size)"
    assert "16 microbatches" in page.value("gantt", "figure")["layout"]["title"]["text"]

    out = answer(page.fire(dep, [("url", "hash")], {("url", "hash"): "#schedule=1f1b&gbs=99999999&mbs=2"}))
    assert "global batch 1e+08 is outside 1–1024; using 1024" in notes(page)
    assert out["gbs"]["value"] == 1024 and out["microbatches"]["value"] == 512


def test_a_microbatch_quick_pick_sets_the_slider_which_redraws(page):
    """A pick button sets microbatches.value; the renderer then fires the page callback for that change."""
    pick = page.callback("microbatches.value@")
    button = id_key({"type": "mb-pick", "value": 32})
    out = answer(page.fire(pick, [(button, "n_clicks")], {(button, "n_clicks"): 1}))
    assert out == {"microbatches": {"value": 32}}
    out = answer(page.fire(page.callback(PAGE), [("microbatches", "value")]))
    assert parse(out["url"]["hash"]).state.microbatches == 32
    assert "32 microbatches" in out["gantt"]["figure"]["layout"]["title"]["text"]
    assert "makespan 105 closed form 105" in text_of(out["cards"]["children"])  # (32 + 4 − 1) · 3
    # a request naming a pick the page does not have changes nothing
    body = page.body(pick, [])
    body["changedPropIds"] = ['{"type":"mb-pick","value":5}.n_clicks']
    response = page.post(body)
    assert response.status_code == 204 or "microbatches" not in response.get_json().get("response", {})


def test_the_limit_box_in_single_mode_patches_only_the_limit_line(page):
    """A Patch of the memory chart's limit line (added, moved, removed): the chart then equals a full redraw."""
    dep = page.callback(PAGE)
    for limit in (3, 5, None):
        out = answer(page.fire(dep, [("limit", "value")], {("limit", "value"): limit}))
        assert set(out) <= {"url", "link-notes", "memory"}  # the Gantt chart, cards and the rest stay
        assert "__dash_patch_update" in out["memory"]["figure"]
        full = render.render(parse(page.value("url", "hash")).state).memory
        assert page.value("memory", "figure")["data"] == json.loads(json.dumps(full["data"]))
        names = [t.get("name") for t in page.value("memory", "figure")["data"]]
        assert (f"limit {limit}" in names) == (limit is not None)


def test_at_16_devices_memory_is_a_band_and_the_limit_patch_lands_after_it(page):
    dep = page.callback(PAGE)
    answer(page.fire(dep, [("devices", "value")], {("devices", "value"): 16}))
    names = [t.get("name") for t in page.value("memory", "figure")["data"]]
    assert names[:2] == ["min", "min–max of 16 devices"] and "device 0 (highest peak)" in names
    for limit in (3, 5, None):
        out = answer(page.fire(dep, [("limit", "value")], {("limit", "value"): limit}))
        assert "__dash_patch_update" in out["memory"]["figure"]
        full = render.render(parse(page.value("url", "hash")).state).memory
        assert page.value("memory", "figure")["data"] == json.loads(json.dumps(full["data"]))


def test_the_memory_lines_picker_chooses_the_devices_over_the_band_and_lives_in_the_link(page):
    """Past 8 devices: empty draws the highest and lowest peak (said beside the picker); picked devices are
    drawn instead, in the link, with the Gantt chart and cards left alone; a link sets the picker; up to 8
    devices the picker is disabled, every device being a line already."""
    dep = page.callback(PAGE)
    answer(page.fire(dep, [("devices", "value")], {("devices", "value"): 16}))
    assert page.value("lines", "disabled") is False and page.value("lines", "value") == []
    assert "automatic: device 0 (highest peak) and device 15 (lowest)" in message(page, "lines")
    assert page.value("lines", "options") == [{"label": f"device {d}", "value": d} for d in range(16)]

    out = answer(page.fire(dep, [("lines", "value")], {("lines", "value"): [9, 3]}))
    assert "gantt" not in out and "cards" not in out  # only the memory chart is drawn again
    assert parse(out["url"]["hash"]).state.lines == (3, 9) and "lines=3,9" in out["url"]["hash"]
    names = [t.get("name") for t in out["memory"]["figure"]["data"]]
    assert names == ["min", "min–max of 16 devices", "device 3", "device 9", "peak"]
    assert "over the min–max band of all 16 devices" in message(page, "lines")
    out = answer(page.fire(dep, [("limit", "value")], {("limit", "value"): 4}))  # the patch lands after them
    full = render.render(parse(page.value("url", "hash")).state).memory
    assert page.value("memory", "figure")["data"] == json.loads(json.dumps(full["data"]))

    link = "#schedule=1f1b&devices=32&microbatches=8&lines=31,5,99,x"
    out = answer(page.fire(dep, [("url", "hash")], {("url", "hash"): link}))
    assert out["lines"]["value"] == [5, 31]  # 99 stays in the link, but there is no device 99 to pick or draw
    assert len(out["lines"]["options"]) == 32  # with the value: the picker would drop a device it does not offer
    assert "'x' is not a device number" in text_of(out["link-notes"]["children"])
    names = [t.get("name") for t in out["memory"]["figure"]["data"]]
    assert names == ["min", "min–max of 32 devices", "device 5", "device 31 (lowest peak)", "peak"]

    out = answer(page.fire(dep, [("lines", "value")], {("lines", "value"): list(range(12))}))
    assert parse(out["url"]["hash"]).state.lines == tuple(range(8)) and "at most 8" in notes(page)
    answer(page.fire(dep, [("devices", "value")], {("devices", "value"): 8}))
    assert page.value("lines", "disabled") is True and "every device is drawn as a line" in message(page, "lines")


def test_the_page_left_leaves_the_next_page_s_hash_alone(page):
    """A header link to the model page: path and hash change at once while this page is still drawn;
    its callbacks see the other page's hash and send nothing (nothing drawn, no hash written)."""
    values = {("url", "pathname"): "/model", ("url", "hash"): "#model=llama3-8b&tp=2"}
    response = page.fire(page.callback(PAGE), [("url", "hash")], values)
    assert response.status_code == 204 or not response.get_json().get("response")


def test_clearing_the_compare_picker_says_what_to_do(page):
    dep = page.callback(PAGE)
    answer(page.fire(dep, [("mode", "value")], {("mode", "value"): "compare"}))
    answer(page.fire(dep, [("compare", "value")], {("compare", "value"): []}))
    assert "pick 2–4 schedules" in message(page, "compare")
    assert "pick 2–4" in page.value("gantt", "figure")["layout"]["annotations"][0]["text"]


def test_the_compare_ranking_is_rounded_like_the_cards(page):
    dep = page.callback(PAGE)
    answer(page.fire(dep, [("mode", "value")], {("mode", "value"): "compare"}))
    values = {("compare", "value"): ["1f1b", "zb-h1"], ("f", "value"): 1.1, ("b", "value"): 0.7, ("w", "value"): 1.3}
    answer(page.fire(dep, [("compare", "value")], values))
    rows = page.value("ranking", "rowData")
    assert len(rows) == 2 and {r["schedule"] for r in rows} == {"1f1b", "zb-h1"}  # not "1f1b (iterations=1)"
    for row in rows:
        for key in ("makespan", "span", "peak activation"):
            assert row[key] == float(f"{row[key]:g}")


def open_compare(page: Page, link: str) -> dict:
    return answer(page.fire(page.callback(PAGE), [("url", "hash")], {("url", "hash"): link}))


def test_compare_draws_each_schedule_s_gantt_and_memory_on_one_time_axis(page):
    out = open_compare(page, "#mode=compare&compare=1f1b,zb-h1&devices=4&microbatches=8")
    fig = out["gantt"]["figure"]
    runs = [ppviz.simulate(n, 4, 8) for n in ("1f1b", "zb-h1")]
    peaks = [t for t in fig["data"] if t["name"] == "peak"]
    assert [t["yaxis"] for t in peaks] == ["y2", "y4"]  # a memory plot under each Gantt
    assert [list(figures.decode_typed_array(t["y"])) for t in peaks] == [r.metrics.peak_activation for r in runs]
    assert fig["layout"]["xaxis4"]["title"]["text"] == "time (units)" and fig["layout"]["xaxis4"]["matches"] == "x"
    assert fig["layout"]["xaxis"]["range"] == [0, 33]  # 1F1B's (m + p − 1)(f + b + w), the longer of the two
    assert out["memory-box"]["style"] == {"display": "none"}  # the memory is in the comparison itself
    shown = answer(page.fire(page.callback("row-compare.style"), [("mode", "value")]))
    assert shown["compare-bar"]["style"]["display"] == "flex" and shown["baseline"]["options"] == ["1f1b", "zb-h1"]


def test_compare_deltas_follow_the_chosen_baseline(page):
    """zb-h1's makespan m(f+b+w) + (p−1)(f+b−w) = 27 against 1F1B's (m+p−1)(f+b+w) = 33, both peaks p = 4."""
    open_compare(page, "#mode=compare&compare=1f1b,zb-h1&devices=4&microbatches=8")
    delta = {r["schedule"]: r["vs baseline"] for r in page.value("ranking", "rowData")}
    assert delta == {"1f1b": "baseline", "zb-h1": "−18.2% makespan, ±0 peak"}  # (27 − 33) / 33
    out = answer(page.fire(page.callback(PAGE), [("baseline", "value")], {("baseline", "value"): "zb-h1"}))
    assert parse(out["url"]["hash"]).state.baseline == "zb-h1" and "baseline=zb-h1" in out["url"]["hash"]
    delta = {r["schedule"]: r["vs baseline"] for r in page.value("ranking", "rowData")}
    assert delta == {"1f1b": "+22.2% makespan, ±0 peak", "zb-h1": "baseline"}  # (33 − 27) / 27
    # gpipe holds all m = 8 activations, 4 more than 1F1B's p = 4
    open_compare(page, "#mode=compare&compare=1f1b,gpipe&devices=4&microbatches=8")
    assert {r["schedule"]: r["vs baseline"] for r in page.value("ranking", "rowData")}[
        "gpipe"
    ] == "±0% makespan, +4 peak"


def test_dropping_the_baseline_from_the_comparison_shows_the_first_as_baseline(page):
    open_compare(page, "#mode=compare&compare=1f1b,zb-h1,gpipe&baseline=zb-h1")
    assert page.value("baseline", "value") == "zb-h1"
    out = answer(page.fire(page.callback(PAGE), [("compare", "value")], {("compare", "value"): ["gpipe", "1f1b"]}))
    assert out["baseline"]["value"] == "gpipe" and "baseline" not in out["url"]["hash"]
    assert {r["schedule"]: r["vs baseline"] for r in page.value("ranking", "rowData")}["gpipe"] == "baseline"


def test_a_link_with_a_baseline_not_compared_falls_back_to_the_first(page):
    out = open_compare(page, "#mode=compare&compare=1f1b,zb-h1&baseline=gpipe")
    assert out["baseline"]["value"] == "1f1b" and "baseline 'gpipe' is not a compared schedule" in notes(page)


def test_the_sweep_draws_a_line_per_schedule_along_m_and_p(page):
    """Along m, 1F1B's makespan is (m + p − 1)(f + b + w) at each power of two around m = 8; interleaved
    1F1B needs m ≥ p, so m = 1, 2 are a gap that says so. Along p, gpipe's is (m + p − 1)(f + b + w)."""
    open_compare(page, "#mode=compare&compare=1f1b,interleaved-1f1b&devices=4&microbatches=8")
    out = answer(page.fire(page.callback(PAGE), [("compare_show", "value")], {("compare_show", "value"): "sweep"}))
    assert "show=sweep" in out["url"]["hash"] and out["render-stamp"]["children"].startswith("sweep")
    fig = page.value("gantt", "figure")
    lines = {(t["name"], t["yaxis"]): t for t in fig["data"]}
    assert lines[("1f1b", "y")]["x"] == [1, 2, 4, 8, 16, 32, 64]
    assert lines[("1f1b", "y")]["y"] == [(m + 3) * 3 for m in (1, 2, 4, 8, 16, 32, 64)]
    assert lines[("interleaved-1f1b", "y")]["y"][:2] == [None, None]
    assert "no point for interleaved-1f1b at m 1, 2" in fig["layout"]["annotations"][0]["text"]
    assert fig["layout"]["yaxis2"]["title"]["text"] == "bubble (%)" and len(page.value("ranking", "rowData")) == 2
    out = answer(page.fire(page.callback(PAGE), [("sweep_axis", "value")], {("sweep_axis", "value"): "p"}))
    assert "sweep=p" in out["url"]["hash"]
    fig = page.value("gantt", "figure")
    (gpipe_like,) = [t for t in fig["data"] if t["name"] == "1f1b" and t["yaxis"] == "y"]
    assert gpipe_like["x"] == [1, 2, 4, 8, 16, 32] and gpipe_like["y"] == [
        (8 + p - 1) * 3 for p in (1, 2, 4, 8, 16, 32)
    ]
    assert fig["layout"]["xaxis3"]["title"]["text"] == "devices p"


def test_a_sweep_of_searching_schedules_is_priced_and_drawn_by_a_background_job(page):
    """zb-auto searches (20 units an action): its sweep along m = 4 … 256 at p = 8 is past a request's budget."""
    link = "#mode=compare&compare=zb-auto,1f1b&devices=8&microbatches=32&show=sweep"
    state = parse(link).state
    assert budget.work(replace(state, compare_show="charts")) <= limits.SYNC_WORK < budget.work(state)
    out = open_compare(page, link)
    assert "in the background" in out["gantt"]["figure"]["layout"]["annotations"][0]["text"]
    page.run_background(page.callback("job-error.children"), [("job-request", "data")])
    fig = page.value("gantt", "figure")
    (zb,) = [t for t in fig["data"] if t["name"] == "zb-auto" and t["yaxis"] == "y"]
    assert zb["x"] == [4, 8, 16, 32, 64, 128, 256]
    assert zb["y"][3] == ppviz.simulate("zb-auto", 8, 32).metrics.makespan
    assert page.value("render-stamp", "children").startswith("sweep")


@pytest.mark.parametrize(
    ("sent", "used", "note"),
    [(1e308, 64, "devices 1e+308 is outside 1–64; using 64"), (100_000, 64, "outside 1–64"), (-3, 1, "using 1")],
)
def test_devices_past_the_slider_are_clamped_with_a_note_before_any_work(page, sent, used, note):
    out = answer(page.fire(page.callback(PAGE), [("devices", "value")], {("devices", "value"): sent}))
    assert parse(out["url"]["hash"]).state.devices == used
    assert out["devices"]["value"] == used  # the slider shows what is used
    assert note in notes(page)


def test_a_search_at_8192_by_1_is_clamped_then_queued_not_run_for_minutes(page):
    dep = page.callback(PAGE)
    values = {("schedule", "value"): "v-auto", ("devices", "value"): 8192, ("microbatches", "value"): 1}
    started = time.process_time()
    out = answer(page.fire(dep, [("devices", "value")], values))
    assert time.process_time() - started < 0.5  # v-auto at 64 × 1 takes 1.2 s: not here
    state = parse(out["url"]["hash"]).state
    assert (state.devices, state.microbatches) == (64, 1)
    assert "outside 1–64" in notes(page)
    assert out["job-request"]["data"]["hash"] == out["url"]["hash"]


def test_all_zero_op_times_are_refused_beside_the_f_slider(page):
    dep = page.callback(PAGE)
    for name in ("f", "b"):
        answer(page.fire(dep, [(name, "value")], {(name, "value"): 0}))
    out = answer(page.fire(dep, [("w", "value")], {("w", "value"): 0}))
    assert (
        "all 0" in message(page, "f")
        and "Nothing to draw" in out["gantt"]["figure"]["layout"]["annotations"][0]["text"]
    )
    answer(page.fire(dep, [("w", "value")], {("w", "value"): 1}))
    assert message(page, "f") == "" and "makespan" in text_of(page.value("cards", "children"))


def test_a_heavy_view_is_drawn_by_a_background_job_with_progress(page):
    """v-auto at 16 × 64 (6,144 actions, each searched) is past the synchronous budget."""
    link = "#schedule=v-auto&devices=16&microbatches=64"
    assert budget.in_background(parse(link).state)
    out = answer(page.fire(page.callback(PAGE), [("url", "hash")], {("url", "hash"): link}))
    assert "in the background" in out["gantt"]["figure"]["layout"]["annotations"][0]["text"]
    assert out["job-request"]["data"]["hash"] == link
    first, final, _ = page.run_background(page.callback("job-error.children"), [("job-request", "data")])
    assert set(first.get_json()) >= {"cacheKey", "job"}
    assert "response" in final.get_json()
    assert [p["job-progress.value"] for p in page.progress_seen][-1] == 2  # "drawing…", the last step
    expected = ppviz.simulate("v-auto", 16, 64).metrics.makespan
    assert f"makespan {expected:g}" in text_of(page.value("cards", "children"))
    assert page.value("render-stamp", "children") == f"bars:{16 * 64 * 6}"


def test_an_abandoned_background_job_stops_within_a_bounded_time(page, monkeypatch):
    """Nobody polls (the tab closed): the job process ends ABANDONED_S after the last poll, unfinished."""
    monkeypatch.setenv("PPVIZ_JOB_ABANDONED_S", "1")  # read by the worker when it starts the job
    # four searching schedules at 64 × 256: about 4 s of CPU, past the abandonment
    link = "#mode=compare&compare=v-auto,v-half,v-zb,zb-auto&devices=64&microbatches=256"
    page.fire(page.callback(PAGE), [("url", "hash")], {("url", "hash"): link})
    body = page.body(page.callback("job-error.children"), [("job-request", "data")])
    first = page.post(body).get_json()
    pid = int(first["job"].split("~")[0])
    assert stopped_within(pid, 1 + 2.0), "the abandoned job is still running"
    late = page.post(body, cacheKey=first["cacheKey"], job=first["job"])
    assert late.status_code == 204 or "gantt" not in late.get_json().get("response", {})  # stopped, unfinished


def stopped_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
            return True
        time.sleep(0.05)
    return False


def test_a_new_view_or_the_stop_button_ends_the_running_job(page):
    """As the renderer does: a new job request names the old job (oldJob), a newer drawing or the stop
    button posts Dash's cancel callback (cancelJob); either way the old job's process ends at once."""
    link = "#mode=compare&compare=v-auto,v-half,v-zb,zb-auto&devices=64&microbatches=256"
    page.fire(page.callback(PAGE), [("url", "hash")], {("url", "hash"): link})
    job_dep = page.callback("job-error.children")
    first = page.post(page.body(job_dep, [("job-request", "data")])).get_json()["job"]
    page.set("job-request", "data", {"hash": link, "at": 2})
    second = page.post(page.body(job_dep, [("job-request", "data")]), oldJob=first).get_json()["job"]
    assert stopped_within(int(first.split("~")[0]), 2.0)
    for cancel in ("render-stamp.id", "job-cancel.id"):
        (dep,) = [d for d in page.server_callbacks() if d["output"] == cancel]
        trigger = "render-stamp.children" if cancel.startswith("render") else "job-cancel.n_clicks"
        response = page.post({**page.body(dep, []), "changedPropIds": [trigger]}, cancelJob=second)
        assert response.status_code in (200, 204)
        assert stopped_within(int(second.split("~")[0]), 2.0)
        page.set("job-request", "data", {"hash": link, "at": 3})
        second = page.post(page.body(job_dep, [("job-request", "data")])).get_json()["job"]
    psutil.Process(int(second.split("~")[0])).kill()


def test_each_export_is_a_background_job_named_after_the_view(page):
    dep = page.callback(PAGE)
    answer(page.fire(dep, [("url", "hash")], {("url", "hash"): "#schedule=zb-v&devices=8&microbatches=32"}))
    export = page.callback("download.data")
    for key, name in [("ops-csv", "zb-v_p8_m32_ops.csv"), ("trace", "zb-v_p8_m32_trace.json")]:
        _, final, _ = page.run_background(export, [(f"export-{key}", "n_clicks")], {(f"export-{key}", "n_clicks"): 1})
        assert page.value("download", "data")["filename"] == name, final.get_data(as_text=True)[:500]
    ops = page.value("download", "data")["content"]
    assert ops.count('"ph": "X"') == 8 * 32 * 6  # one complete event per op


def test_an_export_past_its_op_bound_gives_the_cli_command(page):
    link = "#schedule=interleaved-1f1b&devices=64&microbatches=512&interleaved-1f1b.chunks=4"
    answer(page.fire(page.callback(PAGE), [("url", "hash")], {("url", "hash"): link}))
    export = page.callback("download.data")
    page.run_background(export, [("export-trace", "n_clicks")], {("export-trace", "n_clicks"): 1})
    text = text_of(page.value("export-error", "children"))
    assert "262,144 ops" in text and "use the CLI: ppviz simulate interleaved-1f1b -p 64 -m 512" in text


def upload_data(text: str | bytes) -> dict:
    raw = text if isinstance(text, bytes) else text.encode()
    return {"contents": "data:text/csv;base64," + base64.b64encode(raw).decode(), "filename": "o.csv", "at": 1}


def test_an_upload_becomes_the_custom_schedule_and_bad_ones_say_why(page):
    dep = page.callback("upload-store.data")
    order = ppviz.to_torch_csv(ppviz.build("1f1b", 3, 4))
    out = answer(page.fire(dep, [("upload-checked", "data")], {("upload-checked", "data"): upload_data(order)}))
    assert out["upload-store"]["data"] == order
    answer(page.fire(page.callback(PAGE), [("upload-store", "data")]))
    assert "3 devices" in page.value("gantt", "figure")["layout"]["title"]["text"]
    for bad, why in [
        (b"\x89PNG\r\n\x1a\n\x00", "not UTF-8 text"),
        ("0F0,0B0\n" + "\n" * 200 + "0F0", "at most 64"),
        ("0F0," * 100_000, "larger than 256 KB"),
        ("", "empty"),
    ]:
        out = answer(page.fire(dep, [("upload-checked", "data")], {("upload-checked", "data"): upload_data(bad)}))
        assert why in text_of(out["upload-error"]["children"])
    answer(page.fire(dep, [("upload-checked", "data")], {("upload-checked", "data"): "junk"}))


def test_the_stage_table_and_its_reset(page):
    """An edit of a cell (the grid's cellValueChanged) redraws from the grid's rows; junk rows are left out."""
    dep = page.callback(PAGE)
    rows = page.value("stage-table", "rowData")
    rows[2]["f"] = 3.0

    def edit(rows):
        changed = {"rowIndex": 2, "colId": "f", "newValue": 3.0}
        values = {("stage-table", "cellValueChanged"): [changed], ("stage-table", "rowData"): rows}
        return answer(page.fire(dep, [("stage-table", "cellValueChanged")], values))

    out = edit(rows)
    assert parse(out["url"]["hash"]).state.stage_times == {2: (3.0, 1.0, 1.0)}
    junk = [{"stage": 10**400, "f": "x"}, "x", None, {"stage": 1, "f": 1e308}]
    out = edit(junk)
    assert parse(out["url"]["hash"]).state.stage_times == {}
    assert "past ±1000" in notes(page)
    edit(rows)
    out = answer(page.fire(dep, [("stage-reset", "n_clicks")], {("stage-reset", "n_clicks"): 1}))
    assert parse(out["url"]["hash"]).state.stage_times == {}


def test_schedule_parameters_and_their_blocks(page):
    dep = page.callback(PAGE)
    answer(page.fire(dep, [("schedule", "value")], {("schedule", "value"): "interleaved-1f1b"}))
    pid = id_key({"name": "chunks", "schedule": "interleaved-1f1b", "type": "param"})
    out = answer(page.fire(dep, [(pid, "value")], {(pid, "value"): 4}))
    assert parse(out["url"]["hash"]).state.params_of("interleaved-1f1b")["chunks"] == 4
    blocks = answer(page.fire(page.callback("row-compare.style"), [("schedule", "value")]))
    assert blocks['{"schedule":"interleaved-1f1b","type":"param-block"}']["style"] == {}
    assert blocks['{"schedule":"zb-auto","type":"param-block"}']["style"] == {"display": "none"}
    assert blocks["row-compare"]["style"] == {"display": "none"}


@pytest.mark.parametrize("compare", [5, "zb-h1", None, [["x"]], {"a": 1}])
def test_the_parameter_blocks_take_any_compare_value(page, compare):
    dep = page.callback("row-compare.style")
    out = answer(page.fire(dep, [("compare", "value")], {("mode", "value"): "compare", ("compare", "value"): compare}))
    assert out["row-compare"]["style"] == {}


def test_zooming_into_an_overview_draws_bars_once(page):
    dep = page.callback(PAGE)
    big = "#schedule=1f1b&devices=16&microbatches=512"
    answer(page.fire(dep, [("url", "hash")], {("url", "hash"): big}))
    assert page.value("render-stamp", "children") == "overview:16384"
    zoom = page.callback("zoom-job.data")
    event = {"xaxis.range[0]": 100.0, "xaxis.range[1]": 130.0}
    assert "16,384 ops, drawn as an overview" in text_of(page.value("cards", "children"))
    out = answer(page.fire(zoom, [("zoom-request", "data")], {("zoom-request", "data"): event}))
    assert any(t.get("fill") == "toself" for t in out["gantt"]["figure"]["data"])
    run = ppviz.simulate("1f1b", 16, 512)
    inside = int(((run.result.end > 100) & (run.result.start < 130)).sum())
    size = text_of(page.value("cards", "children")[4])  # the card says what is drawn now
    assert size == f"size 16×512 16,384 ops; {inside:,} in view, drawn as bars"
    again = page.fire(zoom, [("zoom-request", "data")], {("zoom-request", "data"): event})
    assert again.status_code == 204 or "gantt" not in again.get_json()["response"]  # already drawn so
    out = answer(page.fire(zoom, [("zoom-request", "data")], {("zoom-request", "data"): {"xaxis.autorange": True}}))
    assert out["gantt"]["figure"]["data"][0]["type"] == "heatmap"
    assert text_of(page.value("cards", "children")[4]) == "size 16×512 16,384 ops, drawn as an overview"


def test_zooming_into_a_run_drawn_in_the_background_is_a_background_job_too(page):
    """interleaved-1f1b 64 × 512 × 4 chunks (262,144 actions) is past the synchronous budget: drawn by
    a job, so no worker holds the run; a zoom hands the window to another job, which draws bars."""
    link = "#schedule=interleaved-1f1b&devices=64&microbatches=512&interleaved-1f1b.chunks=4"
    answer(page.fire(page.callback(PAGE), [("url", "hash")], {("url", "hash"): link}))
    page.run_background(page.callback("job-error.children"), [("job-request", "data")])
    assert page.value("render-stamp", "children") == "overview:262144"
    render.clear_run_cache()  # as in another worker
    event = {"xaxis.range[0]": 1000.0, "xaxis.range[1]": 1003.0}
    out = answer(
        page.fire(page.callback("zoom-job.data"), [("zoom-request", "data")], {("zoom-request", "data"): event})
    )
    assert "gantt" not in out and out["zoom-job"]["data"]["window"] == [1000.0, 1003.0]
    page.run_background(page.callback("zoom-stamp.children@"), [("zoom-job", "data")])
    figure = page.value("gantt", "figure")
    assert any(t.get("fill") == "toself" for t in figure["data"]) and figure["layout"]["xaxis"]["range"] == [
        1000.0,
        1003.0,
    ]
    assert page.value("zoom-stamp", "children").endswith("|bars")
    assert "in view, drawn as bars" in text_of(page.value("cards", "children")[4])


@pytest.fixture(scope="module")
def opened() -> Page:
    """The page as first served (no callback fired yet): enough to build crafted requests from."""
    return Page.open(SERVER)


@pytest.mark.parametrize("shape", list(malformed.SHAPES))
def test_a_crafted_request_gets_a_4xx_and_one_log_line_never_a_500(opened, shape, caplog):
    """Each shape an attacker would try (tests/malformed.py): the status it may get, and in the log at
    most one warning from the guard, nothing at ERROR level and no traceback."""
    request = malformed.SHAPES[shape](opened)
    with caplog.at_level(logging.INFO):
        response = malformed.send(opened.client, request)
    assert response.status_code in request.expect, response.get_data(as_text=True)[:500]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info], caplog.text[-3000:]
    assert len([r for r in caplog.records if r.name == protocol.__name__]) <= 1
    if response.status_code == 400 and request.path.startswith(malformed.UPDATE):
        assert response.get_json()["error"]  # says what is wrong


def test_the_hot_reload_hash_is_served_only_with_dash_s_hot_reload(opened, monkeypatch):
    """It lists the installed packages: not served by the shipped app (gunicorn or ``python app.py``)."""
    assert opened.client.get("/_reload-hash").status_code == 404
    monkeypatch.setitem(page_app.app._dev_tools, "hot_reload", True)  # as `app.run(debug=True)` sets it
    assert "packages" in opened.client.get("/_reload-hash").get_json()


def test_the_protocol_check_knows_the_page_s_own_requests(page):
    """Every request the page itself sends passes the check (no false 400), and a clientside callback's
    request is refused; ``nesting`` counts the body's depth without its strings."""
    for dep in page.deps:
        body = page.body(dep, [])
        why = protocol.problem(body, page_app.app.callback_map)
        assert (why is None) == (not dep.get("clientside_function")), (dep["output"], why)
        assert protocol.nesting(json.dumps(body).encode()) <= 6
    assert protocol.nesting(b'{"a": "[[[{{", "b": [["\\\\", "\\"]]"]]}') == 3


def test_an_upload_of_exactly_256_kib_is_taken_and_one_byte_more_is_refused(page):
    """The decoded size counts base64's padding out (the estimate from the length alone refused 256 KiB)."""
    dep = page.callback("upload-store.data")
    order = ppviz.to_torch_csv(ppviz.build("1f1b", 3, 4))
    limit = render.UPLOAD_MAX_BYTES
    assert limit == 256 * 1024
    exact = order + "\n" * (limit - len(order))  # trailing blank rows are not rows
    out = answer(page.fire(dep, [("upload-checked", "data")], {("upload-checked", "data"): upload_data(exact)}))
    assert out["upload-store"]["data"] == exact and "showing o.csv" in text_of(out["upload-error"]["children"])
    for size in (limit + 1, limit + 2, limit + 3):
        bigger = exact + "\n" * (size - limit)
        out = answer(page.fire(dep, [("upload-checked", "data")], {("upload-checked", "data"): upload_data(bigger)}))
        assert "upload-store" not in out and "larger than 256 KB" in text_of(out["upload-error"]["children"])


def test_every_server_callback_of_this_page_is_covered_here(page):
    """A new server callback in ppviz/web/pages/abstract/callbacks.py must get its triggers tested above."""
    covered = {"url.hash", "row-compare.style", "download.data", "upload-store.data", "job-error"}
    covered |= {"zoom-job.data", "zoom-stamp.children@"}  # zoom_detail, zoom_in_background
    covered |= {"microbatches.value@"}  # pick_microbatches
    mine = [dep for dep in page.server_callbacks() if dep["output"] in OWN]
    assert len(mine) == len(covered)
    for dep in mine:
        assert any(c in dep["output"] for c in covered), dep["output"]


def test_every_process_signs_job_handles_with_the_same_secret():
    """Workers must accept each other's job handles: the secret comes from one file in the jobs directory."""
    import subprocess
    import sys

    other = subprocess.run(
        [sys.executable, "-c", "from ppviz.web.common import jobs; print(jobs.secret_key().hex())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert other == SERVER.secret_key.hex() and len(SERVER.secret_key) == 32


@pytest.mark.parametrize(
    ("pathname", "search"), [(5, ""), ("/", 5), ("model", ""), ("", ""), ({"a": 1}, ""), ("/model", ["a"])]
)
def test_the_pages_router_refuses_a_path_or_query_it_cannot_read(opened, pathname, search):
    """Dash's router raised (a 500) on a path not under the app's prefix or not text: 400 instead."""
    dep = opened.callback("_pages_content.children")
    values = {("_pages_location", "pathname"): pathname, ("_pages_location", "search"): search}
    response = opened.post(opened.body(dep, [("_pages_location", "pathname")], values))
    assert response.status_code == 400
    assert "router" in response.get_json()["error"] or "path" in response.get_json()["error"]


@pytest.mark.parametrize("pathname", ["/", "/model", "/search", "/model/", "/nope"])
def test_the_pages_router_draws_each_page_and_a_404_for_others(opened, pathname):
    dep = opened.callback("_pages_content.children")
    values = {("_pages_location", "pathname"): pathname, ("_pages_location", "search"): "?old=1"}
    out = answer(opened.post(opened.body(dep, [("_pages_location", "pathname")], values)))
    text = json.dumps(out["_pages_content"]["children"])
    expected = {"/": "abstract-view", "/model": "model-view", "/model/": "model-view", "/search": "search-view"}
    assert expected.get(pathname, "404 - Page not found") in text
