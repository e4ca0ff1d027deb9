"""The search page's exports and its number boxes through Dash's real dispatch: the table on screen as
CSV and JSON (parsed back, against the search itself), its command, the best layout's launch settings,
and a bad box said beside it without a search."""

from __future__ import annotations

import csv
import io
import json
import shlex
import tomllib

import pytest
from test_handoff import megatron_args
from web_dispatch import Page, answer, text_of

import app as page_app
from ppviz.__main__ import main
from ppviz.web.pages.search import render as search_render
from ppviz.web.pages.search import state as search_state
from ppviz.web.pages.search.ids import cid

SERVER = page_app.server
LINK = "#model=llama3-8b&gpu=h100-sxm&gpus=16&gbs=32&seq=4096&schedules=1f1b,zb-v&headroom=10&top=5"
GIB = 2**30


@pytest.fixture(scope="module")
def result():
    return search_render.run(search_state.parse(LINK).state)


@pytest.fixture
def page(result) -> Page:
    p = Page.open(SERVER, "/search")
    p.load()
    p.set("url-search", "hash", LINK)
    p.set("grid-search", "rowData", search_render.rows(result))  # what the search job puts on screen
    return p


def download(page: Page, what: str) -> dict:
    button = f"export-{what}-search"
    out = answer(page.fire(page.callback("download-search.data"), [(button, "n_clicks")], {(button, "n_clicks"): 1}))
    return out["download-search"]["data"]


def test_csv_and_json_are_the_ranking_on_screen(page, result):
    layouts = json.loads(download(page, "json")["content"])
    assert layouts["command"] == search_state.cli_command(search_state.parse(LINK).state)
    assert layouts["search"]["gpus"] == 16 and layouts["search"]["schedules"] == ["1f1b", "zb-v"]
    rows = list(csv.DictReader(io.StringIO(download(page, "csv")["content"])))
    assert len(rows) == len(layouts["layouts"]) == len(result.layouts) == 5
    for row, item, r in zip(rows, layouts["layouts"], result.layouts, strict=True):
        assert item["iteration_s"] == r["iteration_s"] and item["peak_bytes"] == max(r["peak_bytes"])
        assert (item["schedule"], item["tp"], item["pp"], item["dp"]) == (r["schedule"], r["tp"], r["pp"], r["dp"])
        assert float(row["iteration (ms)"]) == pytest.approx(r["iteration_s"] * 1e3, abs=1e-3)
        assert float(row["peak memory (GiB)"]) == pytest.approx(max(r["peak_bytes"]) / GIB, abs=1e-3)
        assert row["command"] == r["command"]


def test_the_command_box_holds_the_search_command(page, capsys):
    out = answer(page.fire(page.callback("command-search.children"), [("url-search", "hash")]))
    command = out["command-search"]["children"]
    assert command == search_state.cli_command(search_state.parse(LINK).state)
    argv = shlex.split(command)
    assert main([*argv[1:], "--json"]) == 0
    best = json.loads(capsys.readouterr().out)["layouts"][0]
    assert best["command"] == page.value("grid-search", "rowData")[0]["command"]


def test_the_best_layouts_launch_settings(page, result):
    best = result.layouts[0]
    args = megatron_args(download(page, "megatron")["content"])
    assert args[args.index("--tensor-model-parallel-size") + 1] == str(best["tp"])
    assert args[args.index("--global-batch-size") + 1] == "32"
    toml = tomllib.loads(download(page, "torchtitan")["content"])
    assert toml["parallelism"]["pipeline_parallel_degree"] == best["pp"]


def test_no_table_no_export(page):
    page.set("grid-search", "rowData", [])
    out = answer(page.fire(page.callback("download-search.data"), [("export-csv-search", "n_clicks")]))
    assert "run a search first" in text_of(out["export-msg-search"]["children"])
    page.set("grid-search", "rowData", [{"exact": {}, "rank": 1}])  # not a row of ours
    out = answer(page.fire(page.callback("download-search.data"), [("export-megatron-search", "n_clicks")]))
    assert "search again" in text_of(out["export-msg-search"]["children"])


def test_a_box_without_a_valid_number_is_said_beside_it_and_nothing_runs(page):
    values = {(cid("gpus"), "value"): None, ("run-search", "n_clicks"): 1}
    out = answer(page.fire(page.callback("ran-search.data"), [("run-search", "n_clicks")], values))
    assert "GPUs: enter a whole number in 1–16,384" in text_of(out["msg-gpus-search"]["children"])
    assert "from the last search" in text_of(out["notes-search"]["children"])
    assert "request-search" not in out and "url-search" not in out
