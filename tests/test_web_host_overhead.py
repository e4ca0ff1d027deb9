"""The abstract view's per-device host overhead: its link key, the per-stage table's host column, the
costs of every drawing (single, compare, sweep) and the CLI command the page names. The page's
makespan is ``ppviz simulate --host-overhead``'s; callbacks are driven through Dash's real dispatch.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from web_dispatch import Page, answer, text_of

import app as page_app
import ppviz
from ppviz.__main__ import main
from ppviz.web.pages.abstract import budget, render, sync
from ppviz.web.pages.abstract.state import CUSTOM, ViewState, encode, parse

SERVER = page_app.server
PAGE = "gantt.figure...memory.figure"
HOST = (0.158, 0.449, 0.349, 0.068)
VIEW = "#schedule=zb-v&devices=4&microbatches=8&p2p=0.25&stage_times=1:2:1:1"
LINK = VIEW + "&host_overhead=" + ",".join(map(str, HOST))
COMMAND = "simulate zb-v -p 4 -m 8 --p2p 0.25 --stage-time 1:2,1,1 --host-overhead 0.158,0.449,0.349,0.068"


pytestmark = pytest.mark.usefixtures("fresh_run_cache")  # each test simulates its views itself


def opened(link: str) -> Page:
    page = Page.open(SERVER, "/", link)
    page.load()
    return page


def cli_makespan(capsys, command: str) -> float:
    """``ppviz …``'s makespan (``--json``), the command given without its leading ``ppviz``."""
    assert main([*command.removeprefix("ppviz ").split(), "--json"]) == 0
    return json.loads(capsys.readouterr().out)["makespan"]


def simulated(host: tuple[float, ...] = HOST, name: str = "zb-v") -> float:
    return ppviz.simulate(name, 4, 8, p2p=0.25, stage_times={1: (2, 1, 1)}, host_overhead=host).metrics.makespan


def cards(page: Page) -> str:
    return text_of(page.value("cards", "children"))


def test_a_link_with_a_host_overhead_shows_the_makespan_of_ppviz_simulate(capsys):
    page = opened(LINK)
    expected = cli_makespan(capsys, COMMAND)
    assert expected == simulated() > simulated(())
    assert f"makespan {expected:g} " in cards(page)
    assert [r[sync.HOST] for r in page.value("stage-table", "rowData")] == list(HOST)
    assert text_of(page.value("link-notes", "children")) == ""


def test_the_link_keeps_the_host_overhead_and_a_view_without_one_keeps_its_link():
    state = parse(LINK).state
    assert state.host_overhead == HOST
    assert parse(encode(state)) == (state, [])
    assert "host_overhead" not in encode(ViewState())
    assert sync.read("#host_overhead=0,0,0,0") == (ViewState(), [])  # all zeros is none


def test_the_page_s_cli_command_carries_the_host_overhead(capsys):
    state = parse(LINK).state
    command = budget.cli_command(state, "zb-v")
    assert command.startswith("ppviz simulate zb-v -p 4 -m 8")
    assert command.endswith(" --p2p 0.25 --stage-time 1:2,1,1 --host-overhead 0.158,0.449,0.349,0.068")
    assert cli_makespan(capsys, command) == render.cached_run(state, "zb-v").metrics.makespan
    big = parse("#schedule=v-auto&devices=4&microbatches=512&host_overhead=1,2,3,4").state
    assert "--host-overhead 1,2,3,4" in budget.cli_command(big, "v-auto")


@pytest.mark.parametrize("name", ["dualpipe", "zb-h1", "1f1b"])
def test_the_page_s_cli_command_gives_the_page_s_makespan_with_overlap_and_b_frees(capsys, name):
    """--overlap goes to a schedule with overlapped pairs, --b-frees to one with a split backward; elsewhere the
    CLI refuses them, and there they change nothing."""
    state = parse(f"#schedule={name}&devices=4&microbatches=8&overlap=0.5&b_frees=0.5&host_overhead=0.1,0,0.2,0").state
    command = budget.cli_command(state, name)
    assert ("--overlap 0.5" in command) == (name == "dualpipe")
    assert ("--b-frees 0.5" in command) == (name in ("dualpipe", "zb-h1"))
    assert cli_makespan(capsys, command) == render.cached_run(state, name).metrics.makespan


def test_editing_the_host_column_changes_the_makespan_and_the_reset_clears_it():
    page = opened(LINK)
    dep = page.callback(PAGE)
    rows = page.value("stage-table", "rowData")
    rows[2][sync.HOST] = 2.0
    edit = [{"rowIndex": 2, "colId": sync.HOST, "newValue": 2.0}]
    values = {("stage-table", "cellValueChanged"): edit, ("stage-table", "rowData"): rows}
    out = answer(page.fire(dep, [("stage-table", "cellValueChanged")], values))
    edited = (0.158, 0.449, 2.0, 0.068)
    assert parse(out["url"]["hash"]).state.host_overhead == edited
    assert simulated(edited) != simulated()
    assert f"makespan {simulated(edited):g} " in cards(page)
    out = answer(page.fire(dep, [("stage-reset", "n_clicks")], {("stage-reset", "n_clicks"): 1}))
    assert "host_overhead" not in out["url"]["hash"] and "stage_times" not in out["url"]["hash"]
    assert [r[sync.HOST] for r in out["stage-table"]["rowData"]] == [0.0] * 4
    reset = ppviz.simulate("zb-v", 4, 8, p2p=0.25).metrics.makespan
    assert f"makespan {reset:g} " in cards(page)


def test_a_bad_host_column_edit_is_left_out_with_a_note_and_the_table_shows_what_is_used():
    page = opened(LINK)
    dep = page.callback(PAGE)
    rows = page.value("stage-table", "rowData")
    rows[0][sync.HOST] = -1
    values = {("stage-table", "cellValueChanged"): [{"rowIndex": 0}], ("stage-table", "rowData"): rows}
    out = answer(page.fire(dep, [("stage-table", "cellValueChanged")], values))
    assert parse(out["url"]["hash"]).state.host_overhead == ()
    assert "host overhead -1 of device 0 is outside 0–1000; left out" in text_of(page.value("link-notes", "children"))
    assert [r[sync.HOST] for r in out["stage-table"]["rowData"]] == [0.0] * 4


@pytest.mark.parametrize(
    ("value", "note"),
    [
        ("a,b,1,2", "host overhead 'a,b,1,2' is not a list of times, one per device; left out"),
        ("-1,0,0,0", "host overhead -1 of device 0 is outside 0–1000; left out"),
        ("0,0,1e9,0", "host overhead 1e+09 of device 2 is outside 0–1000; left out"),
        ("nan,0,0,0", "is not a list of times"),
        ("1,2", "host overhead gives 2 times for 4 devices; left out"),
        ("1,2,3,4,5", "host overhead gives 5 times for 4 devices; left out"),
        (",", "is not a list of times"),
    ],
)
def test_a_bad_host_overhead_in_a_link_gives_a_note_and_is_dropped(value, note):
    page = opened("#schedule=1f1b&devices=4&microbatches=8&host_overhead=" + value)
    assert note in text_of(page.value("link-notes", "children"))
    assert "makespan 33 " in cards(page)  # drawn without it
    assert [r[sync.HOST] for r in page.value("stage-table", "rowData")] == [0.0] * 4


def test_more_devices_give_the_new_ones_no_overhead_and_fewer_keep_those_that_remain():
    page = opened(LINK.replace("zb-v", "1f1b"))
    dep = page.callback(PAGE)
    out = answer(page.fire(dep, [("devices", "value")], {("devices", "value"): 6}))
    assert parse(out["url"]["hash"]).state.host_overhead == (*HOST, 0.0, 0.0)
    assert [r[sync.HOST] for r in out["stage-table"]["rowData"]] == [*HOST, 0.0, 0.0]
    out = answer(page.fire(dep, [("devices", "value")], {("devices", "value"): 2}))
    assert parse(out["url"]["hash"]).state.host_overhead == HOST[:2]
    out = answer(page.fire(dep, [("devices", "value")], {("devices", "value"): 4}))
    assert parse(out["url"]["hash"]).state.host_overhead == (*HOST[:2], 0.0, 0.0)
    out = answer(page.fire(dep, [("devices", "value")], {("devices", "value"): 1e308}))  # clamped to 64, with a note
    assert parse(out["url"]["hash"]).state.host_overhead == (*HOST[:2], *[0.0] * 62)


def test_compare_mode_and_the_sweep_run_under_the_host_overhead():
    page = opened(LINK.replace("schedule=zb-v", "mode=compare&compare=1f1b,zb-v"))
    ranking = {r["schedule"]: r["makespan"] for r in page.value("ranking", "rowData")}
    assert ranking == {name: float(f"{simulated(name=name):g}") for name in ("1f1b", "zb-v")}
    state = parse(LINK.replace("schedule=zb-v", "mode=compare&compare=1f1b,zb-v&show=sweep")).state
    at_8 = {r["schedule"]: r["makespan"] for r in render.sweep_rows(state) if r["value"] == 8}
    assert at_8 == {name: simulated(name=name) for name in ("1f1b", "zb-v")}
    along_p = render.sweep_rows(replace(state, sweep_axis="p"))
    assert {r["value"] for r in along_p if r["reason"] is None} == {4}
    other = next(r for r in along_p if r["value"] == 8)
    assert "host overhead is given per device, for 4 devices" in other["reason"]


def test_an_uploaded_order_of_other_devices_says_so_at_the_upload():
    order = ppviz.to_torch_csv(ppviz.build("1f1b", 3, 4))
    view = render.render(ViewState(schedule=CUSTOM, order=order, host_overhead=(1.0, 1.0, 1.0, 1.0)))
    assert view.drawn_as == "none"
    assert "host_overhead gives times for 4 devices, but there are 3" in view.messages["upload"][1]
