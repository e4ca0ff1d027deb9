"""The model & cluster view through Dash's real dispatch: every trigger of its callbacks, what it shows
(ms and GiB from ``ppviz.estimate``), errors beside the control to change, and its link.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from web_dispatch import Page, answer, text_of

import app as page_app
import ppviz
from ppviz import figures
from ppviz.estimate import Layout, model
from ppviz.units import GIB, duration
from ppviz.web.common import cluster, limits, url_hash
from ppviz.web.pages.abstract import budget
from ppviz.web.pages.abstract.state import ViewState
from ppviz.web.pages.model import render as model_render
from ppviz.web.pages.model.ids import bar_id, card_id, cid, msg_id
from ppviz.web.pages.model.layout import CONTROLS, MESSAGE_NAMES

SERVER = page_app.server
URL = "url-model"  # the page's location
VIEW = "drawn-model.data"  # the view's callback (its last output names what it drew)
DEFAULT = "#model=llama3-70b"  # the default view


@pytest.fixture
def page() -> Page:
    """The model page as the router drew it, before its callbacks' first calls (``open_hash`` makes them)."""
    model_render.clear_cache()
    return Page.open(SERVER, cluster.MODEL_PATH)


def open_hash(page: Page, hash_: str) -> dict:
    """A link opened in the page: its hash changes, and the view draws what it says."""
    return answer(page.fire(page.callback(VIEW), [(URL, "hash")], {(URL, "hash"): hash_}))


def change(page: Page, name: str, value) -> dict:
    return answer(page.fire(page.callback(VIEW), [(cid(name), "value")], {(cid(name), "value"): value}))


def unchanged(response) -> bool:
    """Dash's answer when a callback changed nothing: 204, or 200 with an empty response."""
    return response.status_code == 204 or (response.status_code == 200 and not response.get_json().get("response"))


def message(page: Page, name: str) -> str:
    return text_of(page.value(msg_id(name), "children"))


def cards(page: Page) -> str:
    return page.text("cards-model")


def assert_breakdown(page: Page, est) -> None:
    """The breakdown shows the busiest device's parts in ms, summing to the iteration, as a bar of full width."""
    text = page.text("breakdown-model")
    assert f"= {est.iteration_s * 1e3:,.1f} ms" in text
    assert sum(est.breakdown.values()) == pytest.approx(est.iteration_s)
    for key, seconds in est.breakdown.items():
        name = key.removesuffix("_s").replace("_", " ")
        assert name in text  # the legend
        assert (f"{name} {seconds * 1e3:,.1f} ms" in text) == (seconds > 0)
    assert page.value(bar_id("bar", 0), "style")["width"] == "100.00%"
    assert f"{est.iteration_s * 1e3:,.1f} ms on the busiest device" in page.value(bar_id("bar", 0), "title")


def memory_part(figure: dict) -> list[dict]:
    """The memory chart's traces: under the Gantt, in the same figure, on the second axes."""
    return [t for t in figure["data"] if t.get("yaxis") == "y2"]


def estimate(**layout):
    base = dict(tp=8, pp=8, dp=1, mbs=1, gbs=64, sequence_parallel=True, recompute="selective", zero=1)
    return ppviz.estimate("llama3-70b", "h100-sxm", Layout(**{**base, **layout}))


def test_the_view_draws_nothing_until_it_is_on_screen(page):
    """The model page is a page of its own: on the abstract page its callbacks have no components, so
    they cost nothing there; opened at /model with no hash, it draws the default view."""
    abstract = Page.open(SERVER)
    assert not abstract.has(abstract.callback(VIEW)) and "drawn-model" not in abstract.ids
    page.load()
    assert page.value("drawn-model", "data") == "#" + "&".join(
        f"{k}={v}" for k, v in cluster.encode(cluster.ModelState()).items()
    )
    assert unchanged(page.fire(page.callback(VIEW)))  # the same state again: nothing sent


def test_every_control_row_has_its_message_box_set_by_the_view(page):
    """The view's callback names each message box by its string id: one for every row the panel has."""
    boxes = {k for k, p in page.props.items() if p.get("className") == "control-msg" and k.startswith("msg-")}
    boxes = {k for k in boxes if k.endswith("-model")}  # the search page's boxes are its own
    assert boxes == {msg_id(n) for n in MESSAGE_NAMES} and len(boxes) == len(MESSAGE_NAMES) > 20
    assert {f"row-{n}-model" for n in MESSAGE_NAMES} <= set(page.props)  # each under its control's row
    outputs = page.callback(VIEW)["output"].split("...")
    assert {o for o in outputs if o.startswith("msg-")} == {f"{b}.children" for b in boxes}


def test_opening_the_view_shows_the_estimate_in_ms_and_gib(page):
    out = open_hash(page, DEFAULT)
    est = estimate(schedule="1f1b")
    text = cards(page)
    assert duration(est.iteration_s) in text
    assert f"{est.tokens_per_s:,.0f}" in text
    assert f"{est.mfu:.1%}" in text
    assert f"{est.peak_bytes.max() / GIB:,.2f} / 76.65 GiB usable" in text and "fits with" in text
    gantt = out["gantt-model"]["figure"]  # the Gantt with the memory chart under it, on one time axis in ms
    layout = gantt["layout"]
    assert layout["xaxis2"]["title"]["text"] == "time (ms)" and layout["xaxis2"]["matches"] == "x"
    assert layout["xaxis"]["range"] == pytest.approx([0, est.makespan_s * 1e3])
    assert layout["yaxis2"]["domain"][1] < layout["yaxis"]["domain"][0]  # memory under the Gantt
    assert out["memory-box-model"]["style"] == {}  # the second chart: each device's memory by part
    parts = [t["name"] for t in out["memory-model"]["figure"]["data"]]
    assert parts == ["weights", "gradients", "optimizer", "activations", "reserve", "HBM 79.65 GiB"]
    bars = [t for t in gantt["data"] if t.get("fill") == "toself"]
    ends = np.concatenate([figures.rects(t)[1] for t in bars])
    assert ends.max() == pytest.approx(est.makespan_s * 1e3, rel=1e-6)  # the last op ends at the makespan, in ms
    memory = memory_part(gantt)
    assert layout["yaxis2"]["title"]["text"] == "memory (GiB)"
    assert "static" in layout["annotations"][0]["text"] and "HBM" in layout["annotations"][0]["text"]
    # eight lines told apart by colour (its key heads their legend) and hover, not by eight legend entries
    shown = [t["name"] for t in memory if t.get("showlegend") is not False]
    assert shown == ["peak", "capacity 79.65 GiB", "reserve 3.00 GiB"]
    assert layout["legend2"]["title"]["text"] == "line colour: device 0 dark → 7 light"
    (peak,) = [t for t in memory if t["name"] == "peak"]
    assert figures.decode_typed_array(peak["y"]) == pytest.approx(est.peak_bytes / GIB)  # static + activation
    (capacity,) = [t for t in memory if t["name"].startswith("capacity")]
    assert capacity["y"] == [81_559 / 1024] * 2  # nvidia-smi's 81,559 MiB
    first = [t for t in memory if t["name"] == "device 0"][0]
    static = sum(est.static_bytes[k][0] for k in ("weight", "grad", "optimizer"))
    assert figures.decode_typed_array(first["y"])[0] == pytest.approx(static / GIB, rel=1e-6)  # the curve's base
    assert_breakdown(page, est)
    assert out["drawn-model"]["data"] == "#" + "&".join(
        f"{k}={v}" for k, v in cluster.encode(cluster.ModelState()).items()
    )


CHANGES = {
    "mode": "compare",
    "schedule": "zb-v",
    "compare": ["1f1b", "zb-h1"],
    "model": "llama3-8b",
    "gpu": "h200",
    "layers": 40,
    "hidden": 4096,
    "heads": 32,
    "kv_heads": 4,
    "ffn": 16384,
    "vocab": 32000,
    "seq": 4096,
    "head_dim": 128,
    "experts": 8,
    "top_k": 2,
    "expert_ffn": 14336,
    "shared_experts": 1,
    "dense_layers": 1,
    "tflops": 500,
    "fp8_tflops": 1500,
    "hbm_gib": 96,
    "reserve_gib": 4.5,
    "matmul_efficiency": 0.6,
    "hbm_efficiency": 0.7,
    "nvlink_efficiency": 0.6,
    "network_efficiency": 0.5,
    "precision": "fp8",
    "hbm_tbs": 2.5,
    "nvlink_gbs": 300,
    "net_gbs": 25,
    "domain": 72,
    "tp": 4,
    "pp": 4,
    "dp": 2,
    "cp": 2,
    "ep": 2,
    "vpp": 2,
    "mbs": 2,
    "gbs": 128,
    "iterations": 3,
    "sp": [],
    "tpo": ["on"],
    "recompute": "full",
    "zero": 3,
    "split": "9,10,10,10,10,10,10,11",
    "lines": [5, 2],
    "baseline": "zb-v",
    "compare_show": "sweep",
    "sweep_axis": "p",
}
IN_COMPARE = {"compare", "baseline", "compare_show", "sweep_axis"}  # controls of compare mode


@pytest.mark.parametrize("name", CONTROLS)
def test_every_control_writes_the_link_and_redraws(page, name):
    """Each control with an ordinary new value, then emptied: 200 both times, and the hash carries it."""
    open_hash(page, DEFAULT + ("&mode=compare" if name in IN_COMPARE else ""))  # compare's own controls
    out = change(page, name, CHANGES[name])
    state = shown = cluster.parse(out[URL]["hash"]).state
    assert out[URL]["hash"].startswith("#model=")  # the page's whole hash is its own
    if name in cluster.NUMBER_FIELDS:
        assert shown.field_value(name) == CHANGES[name]
    elif name == "sp":
        assert state.sp is False
    elif name == "tpo":
        assert state.tpo is True
    elif name == "split":
        assert state.split == (9, 10, 10, 10, 10, 10, 10, 11)
    elif name == "lines":
        assert state.lines == (2, 5)
    else:
        assert getattr(state, name) == (tuple(CHANGES[name]) if name == "compare" else CHANGES[name])
    assert "gantt-model" in out
    answer(page.fire(page.callback(VIEW), [(cid(name), "value")], {(cid(name), "value"): None}))


def test_a_preset_resets_its_fields_and_an_edited_field_is_an_override(page):
    open_hash(page, DEFAULT)
    out = change(page, "layers", 40)
    assert "layers=40" in out[URL]["hash"]
    est = ppviz.estimate(model("llama3-70b", layers=40), "h100-sxm", estimate(schedule="1f1b").layout)
    assert duration(est.iteration_s) in cards(page)
    out = change(page, "model", "llama3-8b")
    assert out["layers-model"]["value"] == 32 and out["hidden-model"]["value"] == 4096  # the preset's own
    assert "layers=" not in out[URL]["hash"] and "model=llama3-8b" in out[URL]["hash"]
    out = change(page, "gpu", "h200")
    assert out["hbm_gib-model"]["value"] == pytest.approx(143_771 / 1024, rel=1e-11)  # nvidia-smi's 143,771 MiB
    assert "137.40 GiB usable" in cards(page) and "of 140.40 GiB HBM" in cards(page)


def test_an_edited_field_changes_the_estimate(page):
    open_hash(page, DEFAULT)
    change(page, "hbm_gib", 40)
    est = estimate(schedule="1f1b")
    over = est.peak_bytes.max() - 37 * GIB  # 40 GiB less the 3 GiB reserve
    assert over > 0
    assert f"does not fit by {over / GIB:,.2f} GiB" in cards(page)


def test_an_estimate_error_shows_beside_the_control_to_change(page):
    open_hash(page, DEFAULT)
    out = change(page, "tp", 3)
    assert "tp 3 must divide the 64 attention heads" in message(page, "tp")
    assert "Nothing to draw" in out["gantt-model"]["figure"]["layout"]["annotations"][0]["text"]
    change(page, "tp", 8)
    assert message(page, "tp") == ""
    change(page, "mbs", 2)
    change(page, "gbs", 63)
    assert "global batch 63 is not a multiple" in message(page, "gbs")
    change(page, "gbs", 64)
    assert message(page, "gbs") == ""
    change(page, "vpp", 3)
    change(page, "schedule", "interleaved-1f1b")  # 80 layers do not split into 8 × 3 stages
    assert "do not split evenly" in message(page, "split")  # the core names layer_split: the split box
    change(page, "split", "9,10")
    assert "layer_split needs 24 entries" in message(page, "split")
    change(page, "ep", 2)
    assert "needs an MoE model" in message(page, "ep")


def test_too_many_microbatches_are_refused_with_the_cli_command(page):
    open_hash(page, DEFAULT)
    change(page, "gbs", 4096)
    text = message(page, "gbs")
    assert "4,096 microbatches" in text and "ppviz estimate --model llama3-70b" in text and "--gbs 4096" in text


def test_values_past_their_range_are_clamped_with_a_note(page):
    open_hash(page, DEFAULT)
    out = change(page, "pp", 10**9)
    assert out["pp-model"]["value"] == 64
    assert "pp 1e+09 is outside 1–64; using 64" in text_of(page.value("notes-model", "children"))
    out = change(page, "model", {"junk": 1})
    assert out["model-model"]["value"] == "llama3-70b"


def test_past_8_devices_memory_is_a_band_with_the_picked_devices_as_lines(page):
    """pp 16: a min–max band in GiB with the highest and lowest peak as lines (said beside the picker), then the
    devices picked, in the link; the picker offers the 16 devices, and is disabled at pp 8."""
    out = open_hash(page, DEFAULT + "&tp=4&pp=16&gbs=32")
    est = estimate(tp=4, pp=16, gbs=32)
    high, low = int(np.argmax(est.peak_bytes)), int(np.argmin(est.peak_bytes))
    names = [t.get("name") for t in memory_part(out["gantt-model"]["figure"])]
    assert names[:2] == ["min", "min–max of 16 devices"]
    assert f"device {high} (highest peak)" in names and f"device {low} (lowest peak)" in names
    assert f"automatic: device {high} (highest peak) and device {low} (lowest)" in message(page, "lines")
    options = out["lines-model"]  # with the view: the picker's options and its value in one answer
    assert options["options"] == [{"label": f"device {d}", "value": d} for d in range(16)]
    assert options["disabled"] is False

    out = change(page, "lines", [11, 4])
    assert cluster.parse(out[URL]["hash"]).state.lines == (4, 11) and out[URL]["hash"].endswith("&lines=4,11")
    lines = [t for t in memory_part(out["gantt-model"]["figure"]) if str(t.get("name")).startswith("device")]
    assert [t["name"].split(" (")[0] for t in lines] == ["device 4", "device 11"]
    static = est.static_bytes["weight"] + est.static_bytes["grad"] + est.static_bytes["optimizer"]
    top = max(figures.decode_typed_array(lines[0]["y"]))
    assert top == pytest.approx(est.peak_bytes[4] / GIB, rel=1e-6) and min(
        figures.decode_typed_array(lines[0]["y"])
    ) >= static[4] / GIB * (1 - 1e-6)
    assert "over the min–max band of all 16 devices" in message(page, "lines")

    open_hash(page, DEFAULT + "&pp=8&lines=3")
    assert page.value("lines-model", "value") == [3]
    assert page.value("lines-model", "disabled") is True and "every device is drawn as a line" in message(page, "lines")


def test_compare_mode_ranks_the_schedules_in_the_same_units(page):
    open_hash(page, DEFAULT + "&mode=compare&compare=1f1b,zb-v")
    table = text_of(page.value("ranking-model", "children"))
    for name in ("1f1b", "zb-v"):
        est = estimate(schedule=name)
        assert f"{est.iteration_s:,.3f}" in table  # over 10 s: the table's times in s
        assert f"{round(est.peak_bytes.max() / GIB, 2):,.2f}" in table
    fig = page.value("gantt-model", "figure")  # each schedule's Gantt, then its memory in GiB, on one ms axis
    assert fig["layout"]["xaxis4"]["title"]["text"] == "time (ms)"
    assert fig["layout"]["xaxis2"]["matches"] == fig["layout"]["xaxis3"]["matches"] == "x"
    assert fig["layout"]["yaxis2"]["title"]["text"] == fig["layout"]["yaxis4"]["title"]["text"] == "memory (GiB)"
    peaks = [t for t in fig["data"] if t["name"] == "peak"]
    for trace, name in zip(peaks, ("1f1b", "zb-v")):
        est = estimate(schedule=name)
        static = est.static_bytes["weight"] + est.static_bytes["grad"] + est.static_bytes["optimizer"]
        assert figures.decode_typed_array(trace["y"]) == pytest.approx(est.peak_bytes / GIB)
        assert max(figures.decode_typed_array(trace["y"])) > static.max() / GIB  # static + activation
    capacity = [t for t in fig["data"] if t["name"].startswith("capacity")]
    assert [t["y"] for t in capacity] == [[81_559 / 1024] * 2] * 2
    memory = page.value("memory-model", "figure")  # each schedule's peak GiB per device, against the HBM
    for name in ("1f1b", "zb-v"):
        (bars,) = [t for t in memory["data"] if t["name"] == name]
        assert figures.decode_typed_array(bars["y"]) == pytest.approx(estimate(schedule=name).peak_bytes / GIB)
    assert [t["y"] for t in memory["data"] if t["name"].startswith("capacity")] == [[81_559 / 1024] * 2]
    assert [t["y"] for t in memory["data"] if t["name"].startswith("usable")] == [[81_559 / 1024 - 3] * 2]
    assert page.value("memory-box-model", "style") == {}
    assert page.value("row-compare-model", "style") == {}


def test_a_link_sets_every_control(page):
    link = "#model=llama3-8b&gpu=a100-80gb&schedule=zb-h1&tp=2&pp=4&dp=2&mbs=2&gbs=64&sp=0"
    link += "&recompute=full&zero=2&seq=4096"
    out = open_hash(page, link)
    assert out["model-model"]["value"] == "llama3-8b" and out["gpu-model"]["value"] == "a100-80gb"
    assert (out["tp-model"]["value"], out["pp-model"]["value"], out["dp-model"]["value"]) == (2, 4, 2)
    assert out["sp-model"]["value"] == [] and out["recompute-model"]["value"] == "full"
    assert out["zero-model"]["value"] == 2 and out["seq-model"]["value"] == 4096
    est = ppviz.estimate(
        model("llama3-8b", seq=4096),
        "a100-80gb",
        Layout(tp=2, pp=4, dp=2, mbs=2, gbs=64, recompute="full", zero=2, schedule="zb-h1"),
    )
    assert duration(est.iteration_s) in cards(page)


def test_tp_comm_overlap_control_and_link_key(page):
    """The overlap's checkbox and its link key ``tpo``: the link sets the control, the estimate is the
    Python API's with tp_comm_overlap, the link and the CLI command keep it; off, links stay as before."""
    out = open_hash(page, DEFAULT + "&tpo=1")
    assert out["tpo-model"]["value"] == ["on"]
    state = cluster.parse(DEFAULT + "&tpo=1").state
    assert state.tpo and cluster.parse(url_hash.write_hash(cluster.encode(state))).state == state
    assert "tpo" not in cluster.encode(replace(state, tpo=False))
    lay = cluster.layout_of(state, state.schedule)
    assert lay.tp_comm_overlap and "--tp-comm-overlap" in cluster.cli_command(state, state.schedule)
    on, off = estimate(tp_comm_overlap=True), estimate()
    assert on.iteration_s < off.iteration_s and duration(on.iteration_s) in cards(page)
    out = change(page, "tpo", [])
    assert "tpo" not in out[URL]["hash"] and duration(off.iteration_s) in cards(page)
    # without sequence parallel (or at tp 1) it does not apply, as the control's label says
    assert not cluster.layout_of(replace(state, sp=False), "1f1b").tp_comm_overlap
    assert not cluster.layout_of(replace(state, tp=1), "1f1b").tp_comm_overlap


def test_a_hash_change_to_the_view_on_screen_redraws_nothing(page):
    """A hash that reads as the state drawn (keys in another order, a key of no use) sends nothing."""
    open_hash(page, DEFAULT)
    assert unchanged(page.fire(page.callback(VIEW), [(URL, "hash")], {(URL, "hash"): "#gpu=h100-sxm&tp=8"}))
    assert unchanged(page.fire(page.callback(VIEW), [(URL, "hash")], {(URL, "hash"): DEFAULT + "&s.gpus=512"}))


def test_the_page_left_leaves_the_next_page_s_hash_alone(page):
    """A header link to the abstract page: path and hash change at once while this page is still drawn;
    its callbacks see the other page's hash and send nothing (no estimate, no hash written)."""
    open_hash(page, DEFAULT)
    values = {(URL, "pathname"): "/", (URL, "hash"): "#schedule=zb-v&devices=8"}
    assert unchanged(page.fire(page.callback(VIEW), [(URL, "hash")], values))


def test_a_view_past_the_budget_is_estimated_by_a_background_job(page):
    link = "#model=llama3-8b&tp=1&pp=16&gbs=64&sp=0&schedule=v-auto"
    assert model_render.in_background(cluster.read(link))
    out = open_hash(page, link)
    assert "in the background" in out["gantt-model"]["figure"]["layout"]["annotations"][0]["text"]
    assert out["job-model"]["data"]["hash"].startswith("#model=llama3-8b")
    first, final, _ = page.run_background(page.callback("job-error-model.children"), [("job-model", "data")])
    assert set(first.get_json()) >= {"cacheKey", "job"}
    est = ppviz.estimate("llama3-8b", "h100-sxm", Layout(tp=1, pp=16, gbs=64, recompute="selective", zero=1,
                                                         schedule="v-auto"))  # fmt: skip
    assert duration(est.iteration_s) in cards(page)
    assert page.value("gantt-model", "figure")["layout"]["xaxis2"]["title"]["text"] == "time (ms)"


def test_compare_deltas_are_against_the_chosen_baseline_in_percent_and_gib(page):
    open_hash(page, DEFAULT + "&mode=compare&compare=1f1b,zb-v")
    one, zbv = estimate(schedule="1f1b"), estimate(schedule="zb-v")

    def expected(est, base):
        pct = 100 * (est.iteration_s - base.iteration_s) / base.iteration_s
        gib = round((est.peak_bytes.max() - base.peak_bytes.max()) / GIB, 2)
        sign = lambda v, f=".1f": ("+" if v > 0 else "−") + f"{abs(v):{f}}"  # noqa: E731
        return f"{sign(pct)}% iteration, {sign(gib, '.2f')} GiB peak"

    assert expected(zbv, one) in text_of(page.value("ranking-model", "children"))  # the first is the baseline
    out = change(page, "baseline", "zb-v")
    assert "baseline=zb-v" in out[URL]["hash"]
    table = text_of(page.value("ranking-model", "children"))
    assert expected(one, zbv) in table and expected(zbv, one) not in table


def test_dropping_the_baseline_from_the_comparison_shows_the_first_as_baseline(page):
    open_hash(page, DEFAULT + "&mode=compare&compare=1f1b,zb-v,zb-h1&baseline=zb-v")
    out = change(page, "compare", ["zb-h1", "1f1b"])
    assert out[cid("baseline")]["value"] == "zb-h1" and "baseline" not in out[URL]["hash"]


def test_the_baseline_picker_offers_the_compared_schedules(page):
    dep = page.callback(f"{cid('baseline')}.options")
    out = answer(page.fire(dep, [(cid("compare"), "value")], {(cid("compare"), "value"): ["zb-v", "1f1b", "zb-v"]}))
    assert out[cid("baseline")]["options"] == ["zb-v", "1f1b"]
    out = answer(page.fire(dep, [(cid("compare"), "value")], {(cid("compare"), "value"): None}))
    assert out[cid("baseline")]["options"] == []


def test_the_sweep_is_in_real_units_with_gaps_that_say_why(page):
    """Along v, interleaved 1F1B's iteration time is the estimate's at each vpp; 80 layers do not split
    into 8 × 4 stages, so v = 4 is a gap with that reason; 1F1B takes no chunks and stays flat."""
    open_hash(page, DEFAULT + "&mode=compare&compare=interleaved-1f1b,1f1b")
    out = change(page, "compare_show", "sweep")
    assert "show=sweep" in out[URL]["hash"]
    out = change(page, "sweep_axis", "v")
    assert "sweep=v" in out[URL]["hash"] and out["drawn-model"]["data"]
    fig = page.value("gantt-model", "figure")
    lines = {(t["name"], t["yaxis"]): t for t in fig["data"] if t.get("mode") == "lines+markers"}
    inter = lines[("interleaved-1f1b", "y")]
    assert inter["x"] == [1, 2, 4, 8]  # powers of two around vpp 1
    for v, y in zip((1, 2), inter["y"]):
        assert y == pytest.approx(estimate(schedule="interleaved-1f1b", vpp=v).iteration_s * 1e3)
    assert inter["y"][2] is None and "do not split evenly into 32 stages" in fig["layout"]["annotations"][0]["text"]
    assert len(set(lines[("1f1b", "y")]["y"])) == 1
    assert fig["layout"]["yaxis"]["title"]["text"] == "iteration (ms)"
    assert fig["layout"]["yaxis3"]["title"]["text"] == "peak memory (GiB)"
    assert fig["layout"]["xaxis3"]["title"]["text"] == "chunks per device v"
    assert [t["y"] for t in fig["data"] if t["name"].startswith("usable HBM")] == [[81_559 / 1024 - 3] * 2]


def test_the_model_view_prices_a_schedule_as_the_abstract_view_does_devices_squared_term_included(page):
    """The issue's link took 0.91 s of CPU served synchronously (v-auto's devices² term was left out):
    one price for every view, so it is a background job now."""
    link = "#schedule=v-auto&pp=56&layers=112&gbs=4&mbs=1&dp=1"
    state = cluster.parse(link).state
    abstract = ViewState(schedule="v-auto", devices=56, microbatches=4)
    n = budget.actions(abstract, "v-auto")
    assert model_render.work(cluster.derive(state)) == budget.cost(abstract, "v-auto") + n * limits.ESTIMATE_PER_ACTION
    assert (
        budget.cost(abstract, "v-auto") > n * limits.factor("v-auto")
        and model_render.work(cluster.derive(state)) > limits.SYNC_WORK
    )
    out = open_hash(page, link)
    assert "in the background" in out["gantt-model"]["figure"]["layout"]["annotations"][0]["text"]
    for name in ("v-half", "v-zb", "zb-auto", "1f1b"):  # every term, every schedule: the same price
        other = cluster.parse(link.replace("v-auto", name)).state
        n = budget.actions(replace(abstract, schedule=name), name)
        assert model_render.work(cluster.derive(other)) == budget.cost(replace(abstract, schedule=name), name) + 2 * n


def test_a_sweep_of_a_searching_schedule_is_priced_and_estimated_by_a_background_job(page):
    """zb-auto searches: its sweep along m = 4 … 256 at pp 8 is past a request's budget, the charts alone are not."""
    link = DEFAULT + "&mode=compare&compare=zb-auto,1f1b&tp=8&pp=8&gbs=32&show=sweep"
    state = cluster.parse(link).state
    assert not model_render.in_background(
        cluster.derive(replace(state, compare_show="charts"))
    ) and model_render.in_background(cluster.derive(state))
    out = open_hash(page, link)
    assert "in the background" in out["gantt-model"]["figure"]["layout"]["annotations"][0]["text"]
    page.run_background(page.callback("job-error-model.children"), [("job-model", "data")])
    fig = page.value("gantt-model", "figure")
    (zb,) = [t for t in fig["data"] if t["name"] == "zb-auto" and t["yaxis"] == "y"]
    assert zb["x"] == [4, 8, 16, 32, 64, 128, 256]
    assert zb["y"][3] == pytest.approx(estimate(schedule="zb-auto", pp=8, gbs=32).iteration_s * 1e3)


def test_iterations_put_each_optimizer_step_between_them_in_ms(page):
    """1F1B, 3 iterations: the run holds them with a grey step per device between each two, the card
    says the iteration is their average, and the link carries them."""
    out = open_hash(page, DEFAULT + "&iterations=3&gbs=16")
    est = estimate(schedule="1f1b", gbs=16, schedule_params={"iterations": 3})
    assert est.iterations == 3 and est.microbatches == 16
    assert out["iterations-model"]["value"] == 3
    text = cards(page)
    assert duration(est.iteration_s) in text and "average of 3 iterations" in text
    assert f"run {est.run_s * 1e3:,.0f} ms" in text
    gantt = out["gantt-model"]["figure"]
    assert "3 iterations of 16 microbatches" in gantt["layout"]["title"]["text"]
    (steps,) = [t for t in gantt["data"] if t.get("legendgroup") == "optimizer"]
    assert len(steps["y"]) == 2 * 8 and steps["name"] == figures.OPTIMIZER_LABEL
    ends = np.array(steps["base"]) + np.array(steps["x"])
    assert ends.max() < est.makespan_s * 1e3  # the last iteration's step follows the run, as for one iteration
    assert gantt["layout"]["xaxis"]["range"] == pytest.approx([0, est.makespan_s * 1e3])
    assert_breakdown(page, est)
    out = change(page, "iterations", 2)
    assert "iterations=2" in out[URL]["hash"]
    out = change(page, "iterations", 1)
    assert "iterations" not in out[URL]["hash"]  # one iteration: the link of before
    assert not [t for t in out["gantt-model"]["figure"]["data"] if t.get("legendgroup") == "optimizer"]


def test_iterations_beside_a_schedule_without_them_and_past_the_limit(page):
    open_hash(page, DEFAULT + "&iterations=3&gbs=16&schedule=zb-v")
    assert "zb-v runs one iteration" in message(page, "iterations")
    assert duration(estimate(schedule="zb-v", gbs=16).iteration_s) in cards(page)
    change(page, "schedule", "1f1b")
    assert message(page, "iterations") == ""
    change(page, "iterations", 64)  # 64 × 16 microbatches
    text = message(page, "iterations")
    assert "1,024 in the run" in text and "--iterations 64" in text


def test_a_move_sends_only_what_changed(page):
    """A new global batch redraws the charts and sets the cards' and the breakdown's text; messages, notes,
    styles and the legend that stay the same are not sent again, nor new elements (each costs the browser a
    pass over every component); an error that clears is sent as cleared."""
    open_hash(page, DEFAULT)
    out = change(page, "gbs", 72)
    sent = {k: set(props) for k, props in out.items()}
    texts = {card_id("value", k): {"children"} for k in ("iteration", "tokens", "mfu")}  # peak and GPUs stay
    texts |= {card_id("detail", k): {"children"} for k in ("iteration", "tokens", "mfu", "layout")}
    texts |= {bar_id("bar", 0): {"style", "title"}, bar_id("text", 0): {"children"}}
    # the memory chart is in the Gantt's figure; the memory breakdown per device is the second chart (charts
    # are always sent)
    assert sent == {"gantt-model": {"figure"}, "memory-model": {"figure"}} | texts | {
        URL: {"hash"},
        "drawn-model": {"data"},
        "sent-model": {"data"},
    }
    assert all(isinstance(v, str) for k in out if k.startswith("card-") for v in out[k].values())
    assert "· 72 microbatches" in out["gantt-model"]["figure"]["layout"]["title"]["text"]
    assert_breakdown(page, estimate(schedule="1f1b", gbs=72))
    change(page, "tp", 3)
    assert "tp 3 must divide" in message(page, "tp") and page.text("breakdown-model") == ""
    out = change(page, "tp", 8)
    assert message(page, "tp") == "" and msg_id("tp") in out
    assert msg_id("gbs") not in out
    assert_breakdown(page, estimate(schedule="1f1b", gbs=72))


def test_compare_draws_a_breakdown_row_per_schedule_against_the_longest(page):
    open_hash(page, DEFAULT + "&mode=compare&compare=1f1b,zb-v")
    one, zbv = estimate(schedule="1f1b"), estimate(schedule="zb-v")
    longest = max(one.iteration_s, zbv.iteration_s)
    rows = [page.text(bar_id("row", i)) for i in range(4)]
    assert rows[2:] == ["", ""] and page.text("cards-model") == ""  # two rows; no cards when comparing
    for i, est in enumerate((one, zbv)):
        assert rows[i].startswith(est.layout.schedule) and f"= {est.iteration_s * 1e3:,.1f} ms" in rows[i]
        width = float(page.value(bar_id("bar", i), "style")["width"].rstrip("%"))
        assert width == pytest.approx(100 * est.iteration_s / longest, abs=0.01)


def test_after_a_background_job_the_next_view_sends_what_the_job_drew_over(page):
    """The job draws the cards and breakdown after the callback answered: the next view sends them anew."""
    open_hash(page, "#model=llama3-8b&tp=1&pp=16&gbs=64&sp=0&schedule=v-auto")
    page.run_background(page.callback("job-error-model.children"), [("job-model", "data")])
    out = change(page, "schedule", "1f1b")
    assert {"cards-model", "breakdown-model"} <= set(out)
    est = ppviz.estimate("llama3-8b", "h100-sxm", Layout(tp=1, pp=16, gbs=64, recompute="selective", zero=1))
    assert duration(est.iteration_s) in cards(page)


def test_the_lines_picker_is_sent_only_when_its_devices_or_state_change(page):
    """Its options and whether it is disabled ride on the view's answer, sent only when they change."""
    out = open_hash(page, DEFAULT)
    assert len(out["lines-model"]["options"]) == 8 and out["lines-model"]["disabled"] is True
    out = change(page, "gbs", 72)  # a new hash, the same pipeline
    assert "lines-model" not in out
    out = change(page, "pp", 16)["lines-model"]
    assert len(out["options"]) == 16 and out["disabled"] is False


@pytest.mark.parametrize(
    ("link", "control"),
    [
        ("#model=llama3-70b&tp=3", "tp"),  # tp must divide the attention heads
        ("#model=llama3-70b&ep=2", "ep"),  # a dense model has no experts
        ("#model=llama3-70b&mbs=2&gbs=63", "gbs"),
    ],
)
def test_a_core_error_lands_under_the_model_control_its_field_names(link, control):
    view = model_render.render(cluster.read(link))
    assert view.messages[control][0] == "error"


@pytest.mark.parametrize(
    ("link", "unit"),
    [
        ("#mode=compare&compare=1f1b,zb-v", "s"),
        ("#model=llama3-8b&tp=2&pp=4&gbs=16&mode=compare&compare=1f1b,zb-v", "ms"),
    ],
)
def test_the_compare_table_writes_its_times_in_one_unit(page, link, unit):
    """ms when every iteration is under 10 s, else s: one unit for the column, named in its header."""
    open_hash(page, link)
    state = cluster.parse(link).state
    times = [model_render.estimate_of(cluster.derive(state), name).iteration_s for name in state.compare]
    assert (max(times) >= 10) == (unit == "s")
    text = page.text("ranking-model")
    assert f"iteration ({unit})" in text and f"bubble ({unit})" in text
    for t in times:
        assert (f"{t * 1e3:,.1f}" if unit == "ms" else f"{t:,.3f}") in text
