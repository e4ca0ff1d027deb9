"""One set of defaults, memory in GiB against the HBM less a reserve, and the page equal to the CLI.

The model page is driven through Dash's real dispatch and compared, to the digit, with `ppviz estimate
--json` run with the command the page names for the same inputs.
"""

from __future__ import annotations

import json
import re
import shlex

import numpy as np
import pytest
from web_dispatch import Page, answer, text_of

import app as page_app
import ppviz
from ppviz import figures
from ppviz.__main__ import main
from ppviz.estimate import Layout, defaults, gpu, specs
from ppviz.estimate.iteration import fits
from ppviz.units import GIB, MIB, duration, gib, time_unit
from ppviz.web.common import cluster
from ppviz.web.pages.model import render as model_render
from ppviz.web.pages.model.ids import card_id, msg_id

VIEW = "drawn-model.data"
GB_WITHOUT_I = re.compile(r"\bGB\b(?!/s)")  # memory is GiB everywhere; bandwidth stays GB/s, the vendors' unit


@pytest.fixture
def page() -> Page:
    model_render.clear_cache()
    return Page.open(page_app.server, cluster.MODEL_PATH)  # a link opened afresh: open_hash draws it


def open_hash(page: Page, hash_: str) -> dict:
    return answer(page.fire(page.callback(VIEW), [("url-model", "hash")], {("url-model", "hash"): hash_}))


def cli_json(capsys, command: str) -> dict:
    argv = shlex.split(command)
    assert argv[:2] == ["ppviz", "estimate"]
    assert main([*argv[1:], "--json", "--no-ops"]) == 0
    return json.loads(capsys.readouterr().out)


# --- capacities and the reserve ---------------------------------------------------------------

CAPACITIES = {  # what the driver reports (docs/real-units/presets.md cites each)
    "a100-40gb": 40_960 * MIB,
    "a100-80gb": 81_920 * MIB,
    "h100-sxm": 81_559 * MIB,
    "h200": 143_771 * MIB,
    "b200": 183_359 * MIB,
    "mi300x": 8 * 25_767_706_624,  # one MI300X: 8 CPX partitions of 25,767,706,624 bytes
    "v100-sxm2-32gb": 32_510 * MIB,  # nvidia-smi on Jean Zay (BigScience logs)
}


def test_every_preset_holds_its_real_byte_count():
    """Every GPU preset's HBM is the driver's byte count (an "80GB" H100 holds 79.65 GiB); every preset is listed."""
    assert set(CAPACITIES) == set(specs.gpu_names())
    for name, n_bytes in CAPACITIES.items():
        assert gpu(name).hbm_bytes == n_bytes, name
    assert gib(gpu("h100-sxm").hbm_bytes) == "79.65 GiB" and gib(gpu("a100-80gb").hbm_bytes) == "80.00 GiB"


def test_the_reserve_is_its_parts_and_the_default_of_every_gpu():
    assert defaults.RESERVE_BYTES == defaults.CUDA_CONTEXT_BYTES + defaults.NCCL_BYTES + defaults.FRAGMENTATION_BYTES
    assert defaults.RESERVE_BYTES == 3 * GIB
    assert all(gpu(n).reserve_bytes == defaults.RESERVE_BYTES for n in specs.gpu_names())
    g = gpu("h100-sxm", reserve_bytes=5 * GIB)
    assert g.usable_bytes == g.hbm_bytes - 5 * GIB


def test_a_layout_fits_when_its_peak_is_within_the_hbm_less_the_reserve():
    """The fit rule, at its edge: peak = usable fits, one byte more does not; the verdict says it in GiB."""
    est = ppviz.estimate("llama3-70b", "h100-sxm", specs.default_layout(tp=8, pp=8, gbs=64))
    peak = float(est.peak_bytes.max())
    at_edge = gpu("h100-sxm", reserve_bytes=est.gpu.hbm_bytes - peak)
    assert fits(peak, at_edge) and not fits(peak + 1, at_edge)
    lay = specs.default_layout(tp=8, pp=8, gbs=64)
    assert ppviz.estimate("llama3-70b", at_edge, lay).fits
    over = gpu("h100-sxm", reserve_bytes=est.gpu.hbm_bytes - peak + GIB)
    tight = ppviz.estimate("llama3-70b", over, lay)
    assert not tight.fits and tight.over_bytes == pytest.approx(GIB)
    assert tight.verdict.startswith("does not fit by 1.00 GiB (device 0: peak ")
    assert "GiB usable = 79.65 GiB HBM −" in tight.verdict


def test_a_reserve_as_large_as_the_hbm_is_refused_naming_its_field():
    with pytest.raises(specs.SpecError, match="leaves nothing of the HBM") as e:
        gpu("a100-40gb", reserve_bytes=40 * GIB)
    assert e.value.field == "reserve_bytes"


def test_reserve_gib_and_hbm_gib_flags_change_the_fit(capsys):
    base = ["estimate", "--model", "llama3-70b", "--gpu", "h100-sxm", "--tp", "8", "--pp", "8", "--gbs", "64"]
    d = cli_json(capsys, "ppviz " + " ".join(base))
    assert d["reserve_bytes"] == 3 * GIB and d["capacity_bytes"] == 81_559 * MIB
    assert d["usable_bytes"] == d["capacity_bytes"] - d["reserve_bytes"] and d["fits"]
    peak = max(d["peak_bytes"])
    tight = cli_json(capsys, "ppviz " + " ".join(base) + f" --hbm-gib {(peak + 2 * GIB) / GIB!r} --reserve-gib 3")
    assert tight["fits"] is False and tight["over_bytes"] == pytest.approx(GIB)
    assert tight["gpu"]["reserve_bytes"] == 3 * GIB


def test_every_surface_starts_from_the_same_defaults(capsys):
    """The CLI, the Python API's default_layout and the page take selective recompute, SP when tp > 1 and ZeRO-1."""
    lay = specs.default_layout(tp=8, pp=8, gbs=64)
    assert (lay.recompute, lay.sequence_parallel, lay.zero) == ("selective", True, 1)
    assert specs.default_layout(tp=1).sequence_parallel is False
    state = cluster.ModelState()
    assert cluster.layout_of(state, state.schedule) == lay
    d = cli_json(capsys, "ppviz estimate --model llama3-70b --gpu h100-sxm --tp 8 --pp 8 --gbs 64")
    assert d["layout"] | {"schedule_params": {}} == {**d["layout"], "recompute": "selective", "zero": 1}
    assert d["layout"]["sequence_parallel"] is True
    off = cli_json(capsys, "ppviz estimate --model llama3-8b --gpu h100-sxm --tp 2 --gbs 2 --no-sequence-parallel")
    assert off["layout"]["sequence_parallel"] is False


def test_the_json_records_every_input_and_the_breakdown_of_the_fullest_device(capsys):
    d = cli_json(capsys, "ppviz estimate --model llama3-70b --gpu h100-sxm --tp 8 --pp 2 --gbs 16")
    assert set(d["layout"]) == set(Layout.__dataclass_fields__)
    assert {"hbm_bytes", "reserve_bytes", "matmul_efficiency"} <= set(d["gpu"])
    parts = d["memory_breakdown_bytes"]
    assert list(parts) == ["weights", "gradients", "optimizer", "activations", "reserve"]
    device = int(np.argmax(d["peak_bytes"]))
    assert parts["weights"] + parts["gradients"] + parts["optimizer"] + parts["activations"] == pytest.approx(
        d["peak_bytes"][device]
    )
    assert parts["reserve"] == d["reserve_bytes"] and d["fits"] is False


# --- display units -------------------------------------------------------------------------------


def test_times_are_ms_below_ten_seconds_and_s_above_with_separators():
    assert duration(10.4394) == "10.44 s" and duration(9.9) == "9,900.0 ms" and duration(0.0123) == "12.3 ms"
    assert time_unit([0.5, 12.0]) == (1.0, "s") and time_unit([0.5, 2.0]) == (1e3, "ms")


def test_cli_output_shows_memory_in_gib_only(capsys, tmp_path):
    """`ppviz estimate`, `presets`, `search` and `render --model` print no "GB" without the i (GB/s is bandwidth)."""
    runs = [
        ["estimate", "--model", "llama3-70b", "--gpu", "h100-sxm", "--tp", "8", "--pp", "2", "--gbs", "16"],
        ["estimate", "--model", "llama3-8b", "--gpu", "a100-40gb", "--tp", "2", "--gbs", "2", "--tokens", "1e12"],
        ["presets"],
        ["search", "--model", "llama3-8b", "--gpu", "h100-sxm", "--gpus", "8", "--gbs", "16", "--top", "3",
         "--schedules", "1f1b", "--tp", "1,2", "--pp", "1,2", "--budget", "0"],
        ["render", "1f1b", "--model", "llama3-8b", "--gpu", "h100-sxm", "--tp", "4", "--pp", "2", "--gbs", "8",
         "-o", str(tmp_path / "page.html")],
    ]  # fmt: skip
    for argv in runs:
        assert main(argv) == 0
        out = capsys.readouterr().out
        assert not GB_WITHOUT_I.search(out), (argv[0], GB_WITHOUT_I.search(out))
    assert "GiB" in out
    page = (tmp_path / "page.html").read_text()
    facts = page[page.index('<div class="facts">') : page.index("</div>\n")]
    assert "GiB" in facts and not GB_WITHOUT_I.search(facts)
    assert "memory (GiB)" in page and not GB_WITHOUT_I.search(page.split("<script")[0])


def test_the_cli_text_shows_a_memory_table_of_the_fullest_device(capsys):
    argv = ["estimate", "--model", "llama3-70b", "--gpu", "h100-sxm", "--tp", "8", "--pp", "2", "--gbs", "16"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    est = ppviz.estimate("llama3-70b", "h100-sxm", specs.default_layout(tp=8, pp=2, gbs=16))
    parts = est.memory_breakdown()
    assert f"memory of device {est.fullest_device} (the fullest)" in out
    for name, n in parts.items():
        assert re.search(rf"  {name} +{n / GIB:,.2f} ", out), name
    assert re.search(rf"  HBM \(h100-sxm\) +{est.capacity_bytes / GIB:,.2f}\n", out)
    assert "does not fit by" in out and "GiB" in out


# --- the page against the CLI --------------------------------------------------------------------

LAYOUTS = [
    # the default view: Llama 3 70B on H100, 1F1B, tp 8, pp 8, gbs 64
    "#",
    # another model, GPU and schedule, recompute and ZeRO set, an efficiency and the reserve edited
    "#model=llama3-8b&gpu=a100-80gb&schedule=zb-v&tp=2&pp=4&dp=2&gbs=32&recompute=full&zero=2"
    "&reserve_gib=5&matmul_efficiency=0.6",
    # an MoE model in FP8 on H200, interleaved, SP off, full recompute, the HBM bandwidth edited
    "#model=mixtral-8x7b&gpu=h200&schedule=interleaved-1f1b&tp=2&pp=4&dp=4&ep=4&vpp=2&gbs=32"
    "&sp=0&precision=fp8&hbm_tbs=4.5&recompute=full",
    # a layout that does not fit: Llama 3 70B on pp 2
    "#tp=8&pp=2&gbs=16",
]


@pytest.mark.parametrize("link", LAYOUTS)
def test_the_page_and_its_command_give_the_same_numbers_to_the_digit(page, capsys, link):
    """Through Dash's dispatch, the page's cards and memory charts equal `ppviz estimate --json` run
    with the command the page names for the same inputs."""
    out = open_hash(page, link)
    state = cluster.parse(link).state
    assert not cluster.parse(link).notes
    d = cli_json(capsys, cluster.cli_command(state, state.schedule))
    cards = {k: text_of(page.value(card_id("value", k), "children")) for k in ("iteration", "tokens", "mfu", "peak")}
    assert cards["iteration"] == duration(d["iteration_s"])
    assert cards["tokens"] == f"{d['tokens_per_s']:,.0f}"
    assert cards["mfu"] == f"{d['mfu']:.1%}"
    assert cards["peak"] == f"{max(d['peak_bytes']) / GIB:,.2f} / {d['usable_bytes'] / GIB:,.2f} GiB usable"
    detail = text_of(page.value(card_id("detail", "peak"), "children"))
    assert ("does not fit by" in detail) == (not d["fits"])
    assert d["fits"] is (link != LAYOUTS[-1])
    # the memory chart under the Gantt: each device's peak, the HBM line and the reserve band, in GiB
    memory = [t for t in page.value("gantt-model", "figure")["data"] if t.get("yaxis") == "y2"]
    (peak,) = [t for t in memory if t["name"] == "peak"]
    assert figures.decode_typed_array(peak["y"]).tolist() == [p / GIB for p in d["peak_bytes"]]
    (reserve,) = [t for t in memory if t["name"].startswith("reserve")]
    assert reserve["y"] == [d["capacity_bytes"] / GIB] * 2 and reserve["fill"] == "tonexty"
    # the breakdown: a stacked bar per device, the fullest device's parts as the JSON gives them
    bars = {t["name"]: t for t in page.value("memory-model", "figure")["data"] if t["type"] == "bar"}
    assert list(bars) == list(d["memory_breakdown_bytes"])
    device = int(np.argmax(d["peak_bytes"]))
    for name, n_bytes in d["memory_breakdown_bytes"].items():
        assert figures.decode_typed_array(bars[name]["y"])[device] == n_bytes / GIB
    assert out["memory-box-model"]["style"] == {}
    assert d["layout"] == json.loads(json.dumps(_layout_dict(cluster.layout_of(state, state.schedule))))


def _layout_dict(lay: Layout) -> dict:
    out = {}
    for k, v in lay.__dict__.items():
        out[k] = dict(v) if k == "schedule_params" else list(v) if isinstance(v, tuple) else v
    return out


def test_page_text_shows_memory_in_gib_only(page):
    """The cards, the memory charts' titles, axes and legends and the footer say GiB, never GB."""
    for link in (LAYOUTS[0], LAYOUTS[-1], "#mode=compare&compare=1f1b,zb-v"):
        out = open_hash(page, link)
        panel = page._text(page.value("model-view", "children"))  # the whole view, shown or not
        shown = [page.text("cards-model"), panel, page.text("ranking-model")]
        for fig in (out["gantt-model"]["figure"], out.get("memory-model", {}).get("figure")):
            if fig:
                shown.append(json.dumps(fig["layout"]))
                shown += [t.get("name", "") + t.get("hovertemplate", "") for t in fig["data"]]
        for text in shown:
            assert not GB_WITHOUT_I.search(text), GB_WITHOUT_I.search(text)
    assert "HBM capacity (GiB)" in panel and "memory in GiB" in panel and "peak (GiB)" in page.text("ranking-model")


def test_an_old_link_in_gb_opens_converted_to_gib_with_a_note(page):
    open_hash(page, "#gpu=a100-80gb&hbm_gb=40")
    notes = page.text("notes-model")
    assert "HBM 40 GB (10⁹ bytes, an older link) read as 37.2529 GiB" in notes
    state = cluster.parse("#gpu=a100-80gb&hbm_gb=40").state
    assert cluster.gpu_of(state).hbm_bytes == pytest.approx(40e9, rel=1e-11)
    assert "hbm_gb" not in cluster.encode(state) and cluster.encode(state)["hbm_gib"] == "37.2529029846"


def test_the_reserve_fp8_and_efficiency_controls_reach_the_estimate(page):
    open_hash(page, "#gpu=h100-sxm&reserve_gib=70")
    assert "does not fit by" in text_of(page.value(card_id("detail", "peak"), "children"))
    open_hash(page, "#gpu=a100-80gb&precision=fp8")
    assert "FP8" in text_of(page.value(msg_id("precision"), "children"))


def test_a_reserve_that_leaves_no_hbm_falls_back_with_a_note(page):
    """A link whose reserve is the whole HBM (or an HBM below the default reserve) opens with a reserve that
    leaves some, said in the notes, never an error page."""
    out = open_hash(page, "#reserve_gib=100")
    assert "reserve 100 GiB leaves nothing of the HBM (79.6475 GiB); using 3 GiB" in page.text("notes-model")
    assert out["reserve_gib-model"]["value"] == 3
    open_hash(page, "#hbm_gib=2")
    assert "reserve 3 GiB leaves nothing of the HBM (2 GiB); using 0 GiB" in page.text("notes-model")
    assert "does not fit" in text_of(page.value(card_id("detail", "peak"), "children"))
