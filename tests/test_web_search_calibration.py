"""A calibration profile on the search page, through Dash's real dispatch: a real profile sets the GPU
and its efficiencies, the search ranks as `ppviz search --calibration FILE --json` does, the link, the
command box and the exports carry the efficiencies exactly, and a bad file answers a message."""

from __future__ import annotations

import base64
import contextlib
import io
import json
import shlex

import pytest
from web_dispatch import Page, answer, text_of

import app as page_app
import ppviz
from ppviz.__main__ import main
from ppviz.estimate import calibration_v100, gpu, profile
from ppviz.web.common import cluster, profile_upload
from ppviz.web.pages.model import render as model_render
from ppviz.web.pages.search import state as search_state
from ppviz.web.pages.search.ids import cid

SERVER = page_app.server
URL = "url-search"
MSG = "msg-calibration-search"
V100 = "v100-sxm2-32gb"
INPUTS = {"model": "megatron-22b", "gpu": "h100-sxm", "gpus": 16, "gbs": 32, "seq": 2048,
          "schedules": ["1f1b", "zb-v"], "headroom": 0, "top": 20, "tp_mode": ["1d"]}  # fmt: skip
CLI = ["search", "--model", "megatron-22b", "--gpu", V100, "--gpus", "16", "--gbs", "32", "--seq", "2048",
       "--schedules", "1f1b,zb-v", "--top", "20", "--json"]  # fmt: skip


@pytest.fixture(scope="module")
def real_profile(tmp_path_factory) -> tuple[str, str]:
    """The profile fitted on BigScience's Jean Zay throughput run (``ppviz calibrate``'s own fit): path, text."""
    path = tmp_path_factory.mktemp("profile") / "jean-zay.json"
    calibration_v100.fitted_profile().save(path)
    return str(path), path.read_text(encoding="utf-8")


@pytest.fixture
def page() -> Page:
    model_render.clear_cache()
    p = Page.open(SERVER, "/search")
    p.load()
    return p


def cli_json(args: list[str]) -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(args) == 0
    return json.loads(out.getvalue())


def upload(page: Page, data: bytes | str, name: str = "jean-zay.json") -> dict:
    """A file dropped on the upload, once the browser's size check passed it on."""
    raw = data.encode() if isinstance(data, str) else data
    checked = {"contents": "data:application/json;base64," + base64.b64encode(raw).decode(), "filename": name}
    (dep,) = [d for d in page.server_callbacks() if any(i["id"] == cid("calibration-checked") for i in d["inputs"])]
    response = page.fire(dep, [(cid("calibration-checked"), "data")], {(cid("calibration-checked"), "data"): checked})
    assert response.status_code == 200, response.get_data(as_text=True)[:500]
    return response.get_json()["response"]


def press_search(page: Page, inputs: dict) -> dict:
    values = {(cid(k), "value"): v for k, v in inputs.items()}
    values[("run-search", "n_clicks")] = (page.value("run-search", "n_clicks") or 0) + 1
    return answer(page.fire(page.callback("ran-search.data"), [("run-search", "n_clicks")], values))


def run_job(page: Page) -> None:
    page.run_background(page.callback("error-search.children"), [("request-search", "data")], timeout_s=120)


def test_a_real_profile_sets_the_gpu_and_the_search_ranks_as_the_cli_with_it(page, real_profile):
    path, text = real_profile
    out = upload(page, text)
    assert out[cid("gpu")]["value"] == V100
    assert out["calibration-search"]["data"] == {
        "gpu": V100,
        "efficiencies": {
            "matmul_efficiency": 0.58,
            "hbm_efficiency": 0.85,
            "nvlink_efficiency": 0.72,
            "network_efficiency": 0.8,
        },
    }
    line = text_of(out[MSG]["children"])
    assert line.startswith(f"calibrated: jean-zay.json, {V100}; matmul 0.58 (fitted), hbm 0.85,")
    assert "residual: mean 0.3%, max 0.3% over 1 run" in line
    searched = press_search(page, {**INPUTS, "gpu": page.value(cid("gpu"), "value")})
    hash_ = searched[URL]["hash"]
    assert "matmul_efficiency=0.58" in hash_ and f"gpu={V100}" in hash_ and "network_efficiency=0.8" in hash_
    run_job(page)
    rows = page.value("grid-search", "rowData")
    expected = cli_json([*CLI, "--calibration", path])["layouts"]
    assert rows and [r["command"] for r in rows] == [r["command"] for r in expected]
    assert [r["iteration_s"] for r in rows] == [round(r["iteration_s"], 4) for r in expected]
    assert "--matmul-efficiency 0.58" in rows[0]["command"]  # each row's `ppviz estimate` carries them
    uncalibrated = cli_json(CLI)["layouts"]
    assert [r["iteration_s"] for r in expected] != [r["iteration_s"] for r in uncalibrated]
    (dep,) = [d for d in page.server_callbacks() if any(i["id"] == "grid-search" for i in d["inputs"])]
    opened = answer(page.fire(dep, [("grid-search", "selectedRows")], {("grid-search", "selectedRows"): [rows[0]]}))
    href = opened[URL]["href"]  # the model page, with the calibrated GPU
    assert href.startswith(cluster.MODEL_PATH + "#") and "matmul_efficiency=0.58" in href
    state = cluster.parse("#" + href.partition("#")[2]).state
    assert cluster.gpu_of(state) == profile.load(path).apply(gpu(V100))
    model_view = search_state.model_link(search_state.parse(hash_).state, rows[0])
    est = ppviz.estimate(cluster.model_of(model_view), cluster.gpu_of(state), cluster.layout_of(state, state.schedule))
    assert est.iteration_s == pytest.approx(expected[0]["iteration_s"])


def test_the_command_box_and_the_exports_reproduce_the_calibrated_search(page, real_profile):
    """An efficiency no ``:g`` keeps (17 digits) travels exactly: link, command box, JSON export."""
    doc = json.loads(real_profile[1])
    doc["efficiencies"]["matmul_efficiency"] = 0.5812345678901234
    upload(page, json.dumps(doc), "odd.json")
    hash_ = press_search(page, {**INPUTS, "gpu": V100})[URL]["hash"]
    assert search_state.parse(hash_).state.matmul_efficiency == 0.5812345678901234
    page.fire(page.callback("command-search.children"), [(URL, "hash")], {(URL, "hash"): hash_})
    command = page.value("command-search", "children")
    assert "--matmul-efficiency 0.5812345678901234" in command and "--hbm-efficiency 0.85" in command
    run_job(page)
    rows = page.value("grid-search", "rowData")
    again = cli_json([*shlex.split(command)[1:], "--json"])["layouts"]  # the box's command, as a user runs it
    assert [r["command"] for r in rows] == [r["command"] for r in again]
    assert [r["iteration_s"] for r in rows] == [round(r["iteration_s"], 4) for r in again]
    (dep,) = [d for d in page.server_callbacks() if "download-search.data" in d["output"]]
    out = answer(page.fire(dep, [("export-json-search", "n_clicks")], {("export-json-search", "n_clicks"): 1}))
    exported = json.loads(out["download-search"]["data"]["content"])
    assert exported["command"] == command
    assert exported["search"]["efficiencies"]["matmul_efficiency"] == 0.5812345678901234


def test_a_link_with_efficiencies_sets_them_and_reruns_calibrated(page):
    link = "#model=megatron-22b&gpu=v100-sxm2-32gb&gpus=16&gbs=32&seq=2048&schedules=1f1b&top=5&matmul_efficiency=0.6"
    out = answer(page.fire(page.callback("ran-search.data"), [(URL, "hash")], {(URL, "hash"): link}))
    assert out["calibration-search"]["data"] == {"gpu": V100, "efficiencies": {"matmul_efficiency": 0.6}}
    assert "matmul 0.6" in text_of(out[MSG]["children"])
    assert "matmul_efficiency=0.6" in out["request-search"]["data"]["search"]
    plain = answer(page.fire(page.callback("ran-search.data"), [(URL, "hash")], {(URL, "hash"): link[:-22]}))
    assert plain["calibration-search"]["data"] is None and plain[MSG]["children"] is None


@pytest.mark.parametrize(("value", "note"), [("2", "outside 0.01–1; using 1"), ("abc", "not a number")])
def test_a_junk_efficiency_in_a_link_is_bounded_with_a_note(value, note):
    state, notes, _ = search_state.parse(f"#model=llama3-8b&gpu=h100-sxm&hbm_efficiency={value}")
    assert any(note in n and "hbm_efficiency" in n for n in notes)
    assert state.hbm_efficiency == (1.0 if value == "2" else None)


def test_a_profile_of_another_gpu_is_left_out_of_the_search_with_a_note(page, real_profile):
    upload(page, real_profile[1])
    out = press_search(page, {**INPUTS, "gpu": "h100-sxm"})
    assert "efficiency" not in out[URL]["hash"]
    assert f"fitted on {V100}, not h100-sxm" in text_of(out["notes-search"]["children"])


def _bad_files(real: str) -> list[tuple[bytes, str]]:
    doc = json.loads(real)
    big = json.dumps({**doc, "runs": ["x" * 1000] * (profile_upload.MAX_BYTES // 1000)})
    return [
        (b"{not json", "not JSON"),
        (json.dumps({**doc, "format": "ppviz-calibration/9"}).encode(), "format must be 'ppviz-calibration/1'"),
        (json.dumps({**doc, "gpu": "tpu-v9"}).encode(), "not a GPU preset here"),
        (json.dumps({**doc, "efficiencies": {**doc["efficiencies"], "hbm_efficiency": 1.5}}).encode(), "(0, 1]"),
        (json.dumps({**doc, "efficiencies": {**doc["efficiencies"], "hbm_efficiency": 0.001}}).encode(), "0.01–1"),
        (json.dumps({**doc, "residual": {"mean_abs_error": "x"}}).encode(), "mean_abs_error must be a number"),
        (json.dumps([1, 2]).encode(), "expected a JSON object"),
        (b"\xff\xfe\x00", "not UTF-8"),
        (big.encode(), f"larger than {profile_upload.MAX_BYTES // 1024} KB"),
        (b"", "empty"),
    ]


def test_a_bad_file_answers_a_message_under_the_upload_and_changes_nothing(page, real_profile):
    for data, said in _bad_files(real_profile[1]):
        out = upload(page, data, "bad.json")
        assert said in text_of(out[MSG]["children"]), said
        assert set(out) == {MSG}  # neither the GPU nor the stored profile changed
    assert page.value("calibration-search", "data") is None and page.value(cid("gpu"), "value") == "h100-sxm"


def test_a_crafted_upload_request_answers_a_message(page):
    (dep,) = [d for d in page.server_callbacks() if any(i["id"] == cid("calibration-checked") for i in d["inputs"])]
    for junk in ("text", {"contents": 5}, {"contents": "data:x;base64,@@@", "filename": ["x"]}):
        response = page.fire(dep, [(cid("calibration-checked"), "data")], {(cid("calibration-checked"), "data"): junk})
        assert response.status_code == 200
        assert "msg-error" in json.dumps(response.get_json())


def test_the_page_cap_fits_a_request_and_the_cli_cap():
    from ppviz.web import protocol

    assert profile_upload.MAX_BYTES * 4 // 3 + 4096 < protocol.MAX_BODY_BYTES
    assert profile_upload.MAX_BYTES <= profile.MAX_PROFILE_BYTES


@pytest.mark.parametrize(
    "stored",
    ["x", 5, {"gpu": ["h100-sxm"]}, {"gpu": "h100-sxm", "efficiencies": {"matmul_efficiency": "x", "z": 1}},
     {"gpu": "h100-sxm", "efficiencies": {"hbm_efficiency": [1], "nvlink_efficiency": 1e308}},
     {"gpu": "h100-sxm", "efficiencies": {"network_efficiency": None}}],
)  # fmt: skip
def test_a_junk_stored_profile_is_bounded_never_a_500(page, stored):
    """The store is the browser's: whatever it holds, the search reads it through the same bounds."""
    page.set("calibration-search", "data", stored)
    out = press_search(page, {**INPUTS, "gpus": 16})
    state = search_state.parse(out[URL]["hash"]).state
    assert all(0.01 <= v <= 1 for v in state.efficiencies.values())
    assert state == search_state.bounded(search_state.with_calibration({**INPUTS}, stored, []))[0]
