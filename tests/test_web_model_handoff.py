"""The model page's hand-off through Dash's real dispatch: each export parsed back, the command run by
the CLI to the same numbers, the plan card against the CLI's plan, and a config.json upload."""

from __future__ import annotations

import base64
import csv
import io
import json
import shlex
import tomllib
from pathlib import Path

import pytest
from test_handoff import megatron_args
from web_dispatch import Page, answer, text_of

import app as page_app
from ppviz.__main__ import main
from ppviz.estimate import hf_config
from ppviz.web.common import cluster
from ppviz.web.pages.model import render as model_render
from ppviz.web.pages.model.ids import cid, msg_id

SERVER = page_app.server
VIEW = "drawn-model.data"
HASH = "#model=llama3-8b&gpu=h100-sxm&tp=2&pp=4&dp=1&gbs=16&sp=1&recompute=selective&zero=1"
COMPARE = HASH.replace("&schedule=", "") + "&mode=compare&compare=1f1b,zb-v"
HF = Path(__file__).parent / "data" / "hf"
GIB = 2**30


@pytest.fixture
def page() -> Page:
    model_render.clear_cache()
    p = Page.open(SERVER, cluster.MODEL_PATH)
    p.load()
    return p


def open_hash(page: Page, hash_: str) -> dict:
    page.set("url-model", "hash", hash_)
    return answer(page.fire(page.callback(VIEW), [("url-model", "hash")], {("url-model", "hash"): hash_}))


def download(page: Page, what: str) -> dict:
    button = f"export-{what}-model"
    clicks = (page.value(button, "n_clicks") or 0) + 1
    dep = page.callback("download-model.data")
    out = answer(page.fire(dep, [(button, "n_clicks")], {(button, "n_clicks"): clicks}))
    return out["download-model"]["data"]


def cli_json(capsys, command: str, *extra: str) -> dict:
    argv = shlex.split(command)
    assert argv[0] == "ppviz"
    assert main([*argv[1:], *extra, "--json", "--no-ops"]) == 0
    return json.loads(capsys.readouterr().out)


def test_csv_and_json_hold_what_is_shown_in_labelled_units(page, capsys):
    open_hash(page, COMPARE)
    data = download(page, "json")
    assert data["filename"].endswith(".json")
    estimates = json.loads(data["content"])["estimates"]
    assert [e["layout"]["schedule"] for e in estimates] == ["1f1b", "zb-v"]
    rows = list(csv.DictReader(io.StringIO(download(page, "csv")["content"])))
    assert [r["schedule"] for r in rows] == ["1f1b", "zb-v"]
    for row, est in zip(rows, estimates, strict=True):
        assert float(row["iteration (ms)"]) == pytest.approx(est["iteration_s"] * 1e3, abs=1e-3)
        assert float(row["peak memory (GiB)"]) == pytest.approx(max(est["peak_bytes"]) / GIB, abs=1e-3)
        assert float(row["capacity (GiB)"]) == pytest.approx(est["capacity_bytes"] / GIB, abs=1e-3)
        assert row["fits"] == str(est["fits"])
        again = cli_json(capsys, row["command"])  # the command gives the same numbers (seconds, bytes)
        assert again["iteration_s"] == est["iteration_s"] and again["peak_bytes"] == est["peak_bytes"]


def test_the_command_box_holds_each_shown_schedule_command(page):
    open_hash(page, COMPARE)
    out = answer(page.fire(page.callback("command-model.children"), [("url-model", "hash")]))
    state = cluster.parse(COMPARE).state
    lines = out["command-model"]["children"].splitlines()
    assert lines == [cluster.cli_command(state, "1f1b"), cluster.cli_command(state, "zb-v")]
    assert all("  " not in line and " --gpu h100-sxm " in line for line in lines)
    assert page.value("copy-command-model", "target_id") == "command-model"


def test_launch_settings_parse_back(page):
    open_hash(page, HASH)
    megatron = download(page, "megatron")
    args = megatron_args(megatron["content"])
    assert args[args.index("--tensor-model-parallel-size") + 1] == "2"
    assert args[args.index("--pipeline-model-parallel-size") + 1] == "4"
    assert "--sequence-parallel" in args and "--recompute-activations" in args
    toml = tomllib.loads(download(page, "torchtitan")["content"])
    assert toml["parallelism"]["pipeline_parallel_schedule"] == "1F1B"
    assert toml["training"]["global_batch_size"] == 16


def test_an_export_past_the_page_budget_names_the_cli(page):
    big = HASH.replace("gbs=16", "gbs=4096")
    open_hash(page, big)
    out = answer(page.fire(page.callback("download-model.data"), [("export-csv-model", "n_clicks")],
                           {("export-csv-model", "n_clicks"): 1}))  # fmt: skip
    assert "ppviz estimate --model llama3-8b" in text_of(out["export-msg-model"]["children"])


def test_the_plan_card_gives_the_cli_plan(page, capsys):
    open_hash(page, HASH)
    dep = page.callback("plan-model.children")
    values = {("plan-tokens-model", "value"): 1e12, ("plan-price-model", "value"): 2.5}
    out = answer(page.fire(dep, [("plan-tokens-model", "value")], values))
    text = text_of(out["plan-model"]["children"])
    state = cluster.parse(HASH).state
    plan = cli_json(capsys, cluster.cli_command(state, "1f1b"), "--tokens", "1e12", "--gpu-hour-price", "2.5")["plan"]
    assert f"{plan['days']:,.1f} days" in text
    assert f"{plan['gpu_hours']:,.0f} GPU-hours" in text
    assert f"cost {plan['cost']:,.0f}" in text
    out = answer(page.fire(dep, [("plan-tokens-model", "value")], {("plan-tokens-model", "value"): -5}))
    assert "tokens" in text_of(out["plan-tokens-msg-model"]["children"])
    assert "no plan" in text_of(out["plan-model"]["children"])


def upload(page: Page, text: str, name: str = "config.json") -> dict:
    contents = "data:application/json;base64," + base64.b64encode(text.encode()).decode()
    values = {("hf-upload-model", "contents"): contents, ("hf-upload-model", "filename"): name}
    return answer(page.fire(page.callback("upload-msg-model.children"), [("hf-upload-model", "contents")], values))


@pytest.mark.parametrize("name", ["mixtral_8x7b_config.json", "qwen3_8b_config.json", "gpt2_config.json"])
def test_an_uploaded_config_is_the_model_in_the_link(page, name):
    open_hash(page, HASH)
    out = upload(page, (HF / name).read_text(), name)
    hash_ = out["url-model"]["hash"]
    state = cluster.parse(hash_).state
    expected = hf_config.model_from_config(HF / name, seq=8192)
    model = cluster.model_of(state)
    for field in ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "seq", "experts", "top_k", "expert_ffn"):
        assert getattr(model, field) == getattr(expected, field), field
    assert f"model from {name}" in text_of(out["upload-msg-model"]["children"])
    assert "tp=2" in hash_  # the layout is kept
    drawn = open_hash(page, hash_)  # the view (and a reload) draws it from the link alone
    assert drawn["layers-model"]["value"] == expected.layers


def test_a_bad_config_names_the_field_beside_the_upload(page):
    open_hash(page, HASH)
    config = json.loads((HF / "llama3_8b_config.json").read_text())
    del config["num_hidden_layers"]
    out = upload(page, json.dumps(config))
    assert "url-model" not in out
    assert "num_hidden_layers" in text_of(out["upload-msg-model"]["children"])
    out = upload(page, "{not json")
    assert "not JSON" in text_of(out["upload-msg-model"]["children"])


BAD_BOXES = [("hbm_gib", "enter a number in 1–"), ("layers", "enter a whole number in 1–"), ("gbs", "whole number")]


@pytest.mark.parametrize(("name", "says"), BAD_BOXES)
def test_a_box_without_a_valid_number_says_why_and_the_results_are_stale(page, name, says):
    """The browser sends an empty box, or one past its min–max (HBM −1, layers 1e9, gbs 0), as no value."""
    open_hash(page, HASH)
    before = page.text("cards-model")
    dep = page.callback(VIEW)
    answer(page.fire(dep, [(cid(name), "value")], {(cid(name), "value"): None}))
    assert says in text_of(page.value(msg_id(name), "children"))
    assert "stale" in text_of(page.value("notes-model", "children"))
    assert page.text("cards-model") == before
    answer(page.fire(dep, [(cid(name), "value")], {(cid(name), "value"): 16 if name != "hbm_gib" else 96}))
    assert says not in text_of(page.value(msg_id(name), "children"))
    assert "stale" not in text_of(page.value("notes-model", "children"))


def test_the_command_of_an_edited_gpu_gives_the_same_numbers(page, capsys):
    """GPU fields edited on the page go into the command in the flags' own units."""
    hash_ = HASH + "&tflops=500&hbm_gib=96&hbm_tbs=2.5&nvlink_gbs=300&net_gbs=25&domain=4"
    open_hash(page, hash_)
    (item,) = json.loads(download(page, "json")["content"])["estimates"]
    assert "--hbm-gbps 2500" in item["command"] and "--nvlink-domain 4" in item["command"]
    again = cli_json(capsys, item["command"])
    assert again["iteration_s"] == item["iteration_s"]
    assert again["capacity_bytes"] == item["capacity_bytes"] == 96 * 2**30
