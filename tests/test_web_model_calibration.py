"""A calibration profile uploaded on the model page, through Dash's real dispatch: it selects its GPU
preset and fills the four efficiency boxes (the link carries them), the page's numbers are then those of
``ppviz estimate --calibration FILE`` to the digit, and a file that is not a profile gets a message under
the upload and changes nothing (never a 500)."""

from __future__ import annotations

import base64
import json
import shlex

import pytest
from web_dispatch import Page, answer, text_of

import app as page_app
from ppviz.__main__ import main
from ppviz.estimate import profile
from ppviz.web.common import cluster, profile_upload
from ppviz.web.pages.model import render as model_render
from ppviz.web.pages.model.ids import cid

SERVER = page_app.server
VIEW = "drawn-model.data"
HASH = "#model=llama3-8b&gpu=h100-sxm&tp=2&pp=4&dp=1&gbs=16&sp=1&recompute=selective&zero=1&hbm_gib=70"
V100 = "v100-sxm2-32gb"
EFFICIENCIES = {"matmul_efficiency": 0.58, "hbm_efficiency": 0.85, "nvlink_efficiency": 0.75, "network_efficiency": 0.6}
PROFILE = profile.Profile(V100, tuple(EFFICIENCIES.items()), ("matmul_efficiency",), ({"label": "run"},), 0.004, 0.004)


@pytest.fixture
def page() -> Page:
    model_render.clear_cache()
    p = Page.open(SERVER, cluster.MODEL_PATH)
    p.load()
    open_hash(p, HASH)
    return p


def open_hash(page: Page, hash_: str) -> dict:
    page.set("url-model", "hash", hash_)
    return answer(page.fire(page.callback(VIEW), [("url-model", "hash")], {("url-model", "hash"): hash_}))


def upload(page: Page, data: bytes, filename: str = "jean-zay.json"):
    """The server's answer to a file the page let through (its size within the page's limit)."""
    (dep,) = [d for d in page.server_callbacks() if "calibration-store-model" in str(d["inputs"])]
    contents = "data:application/json;base64," + base64.b64encode(data).decode()
    store = {"contents": contents, "filename": filename, "at": 1}
    return page.fire(dep, [("calibration-store-model", "data")], {("calibration-store-model", "data"): store})


def test_a_profile_selects_its_gpu_and_fills_the_efficiency_boxes(page):
    out = answer(upload(page, json.dumps(PROFILE.to_dict()).encode()))
    message = text_of(out["calibration-msg-model"]["children"])
    assert message.startswith("calibrated: jean-zay.json, v100-sxm2-32gb; matmul 0.58 (fitted), hbm ")
    assert message.endswith("residual: mean 0.4%, max 0.4% over 1 run")
    hash_ = out["url-model"]["hash"]
    assert f"gpu={V100}" in hash_ and "matmul_efficiency=0.58" in hash_ and "tp=2" in hash_
    assert "hbm_gib" not in hash_  # the preset's fields: the profile was fitted on the preset
    drawn = open_hash(page, hash_)  # the view (and a reload) draws it from the link alone
    assert drawn[cid("gpu")]["value"] == V100
    for name, value in EFFICIENCIES.items():
        assert drawn[cid(name)]["value"] == value


def test_the_calibrated_page_gives_the_cli_s_numbers_to_the_digit(page, tmp_path, capsys):
    path = tmp_path / "jean-zay.json"
    PROFILE.save(path)
    out = answer(upload(page, path.read_bytes()))
    open_hash(page, out["url-model"]["hash"])
    reading = cluster.read(out["url-model"]["hash"])
    shown = model_render.estimate_of(reading, reading.state.schedule)
    argv = shlex.split(reading.commands[reading.state.schedule])[1:]
    flags = {f"--{name.replace('_', '-')}" for name in EFFICIENCIES}
    kept = [a for i, a in enumerate(argv) if a not in flags and (i == 0 or argv[i - 1] not in flags)]
    assert len(kept) < len(argv) and not flags & set(kept)  # the page's efficiency flags, replaced by the profile
    assert main([*kept, "--calibration", str(path), "--json", "--no-ops"]) == 0
    cli = json.loads(capsys.readouterr().out)
    assert cli["gpu"]["name"] == V100 and cli["gpu"]["matmul_efficiency"] == 0.58
    assert cli["iteration_s"] == shown.iteration_s and cli["peak_bytes"] == shown.peak_bytes.tolist()
    assert cli["tokens_per_s"] == shown.tokens_per_s and cli["mfu"] == shown.mfu


def _bad(**change) -> bytes:
    return json.dumps({**PROFILE.to_dict(), **change}).encode()


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b"{not json", "is not JSON"),
        (b"\xff\xfe", "is not UTF-8 text"),
        (b"[1, 2]", "expected a JSON object"),
        (_bad(format="ppviz-calibration/0"), "format must be 'ppviz-calibration/1'"),
        (_bad(gpu="tpu-v9"), "not a GPU preset here"),
        (_bad(efficiencies={"matmul_efficiency": 0.5}), "efficiencies must give exactly"),
        (_bad(efficiencies={**EFFICIENCIES, "hbm_efficiency": 1.5}), "hbm_efficiency must be a number in (0, 1]"),
        (b"", "the upload is empty"),
        (b" " * (profile_upload.MAX_BYTES + 1), "is larger than"),
    ],
    ids=["not-json", "not-utf8", "not-object", "format", "gpu", "fields", "range", "empty", "too-large"],
)
def test_a_bad_file_gets_a_message_under_the_upload_and_changes_nothing(page, data, says):
    response = upload(page, data)
    assert response.status_code == 200
    out = answer(response)
    assert "url-model" not in out  # the link, and so the view, stay as they were
    assert says in text_of(out["calibration-msg-model"]["children"])


def test_the_page_takes_what_a_request_carries():
    """The page's limit: the CLI's (``profile.MAX_PROFILE_BYTES``), or what fits a request's body as base64."""
    assert profile_upload.MAX_BYTES <= profile.MAX_PROFILE_BYTES
    assert page_app.server.config["MAX_CONTENT_LENGTH"] > profile_upload.MAX_BYTES * 4 / 3
