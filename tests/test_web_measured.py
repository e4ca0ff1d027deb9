"""The measured-run view through Dash's real dispatch: uploaded traces of a real 4-rank run show the same
fitted costs, idle split and late ops as ``ppviz measured --json``; the what-if link opens the abstract
view with those costs; bad files get a message naming them; a reload keeps the view while the server
holds the files, and otherwise asks for them again.
"""

from __future__ import annotations

import base64
import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest
from fuzzing import check_answer, fuzz_settings, junk, randomised
from hypothesis import given
from hypothesis import strategies as st
from web_dispatch import Page, answer, text_of

import app as page_app
import ppviz
from ppviz.measured import synthetic
from ppviz.web.pages.abstract import state as abstract_state
from ppviz.web.pages.measured import callbacks as measured_callbacks
from ppviz.web.pages.measured import uploads
from ppviz.web.pages.measured.ids import PATH, URL, cid

SERVER = page_app.server
ROOT = Path(__file__).parent.parent
RUN = ROOT / "tests" / "data" / "measured" / "torch-2.13" / "1f1b-runtime-4r"
TRACES = sorted(RUN.glob("rank*.trace.json.gz"))
UNANNOTATED = ROOT / "tests" / "data" / "measured" / "torch-2.13" / "1f1b-2r"  # Schedule1F1B: no annotations
MEGATRON = ROOT / "tests" / "data" / "measured" / "megatron" / "gpt-pp4-old-timers.log"
CHECKED = cid("checked")
SHOW = cid("gantt") + ".figure"
HASH = URL + ".hash"


def data_url(content: bytes) -> str:
    return "data:application/octet-stream;base64," + base64.b64encode(content).decode("ascii")


def upload(page: Page, files: list[tuple[str, bytes]]) -> dict:
    """Files dropped on the upload, as the browser sends them once its size check passed (a clientside
    callback: the store it fills); then the view the new hash draws."""
    checked = {"contents": [data_url(d) for _, d in files], "filenames": [name for name, _ in files], "at": 1}
    out = answer(page.fire(page.callback(HASH), [(CHECKED, "data")], {(CHECKED, "data"): checked}))
    if URL in out and "hash" in out[URL]:
        return answer(page.fire(page.callback(SHOW), [(URL, "hash")]))
    return out


def cli_json(*args: str) -> dict:
    done = subprocess.run([sys.executable, "-m", "ppviz", "measured", *args, "--json"], capture_output=True, text=True,
                          cwd=ROOT, check=True)  # fmt: skip
    return json.loads(done.stdout)


def cli_makespan(command: str) -> float:
    """The makespan of a ``ppviz simulate …`` command, as the CLI prints it (``--json``)."""
    args = command.removeprefix("ppviz ").split()
    done = subprocess.run([sys.executable, "-m", "ppviz", *args, "--json"], capture_output=True, text=True,
                          cwd=ROOT, check=True)  # fmt: skip
    return json.loads(done.stdout)["makespan"]


@pytest.fixture
def page() -> Page:
    p = Page.open(SERVER, PATH)
    p.load()
    return p


@pytest.fixture(scope="module")
def expected() -> dict:
    return cli_json(*(str(p.relative_to(ROOT)) for p in TRACES), "--what-if", "zb-v")


def cells(page: Page, table: str) -> list[list[str]]:
    """A table's body as the page shows it."""
    body = page.value(cid(table), "children")
    node = body[0] if isinstance(body, list) else body
    rows = node["props"]["children"][1]["props"]["children"]
    return [[text_of(td) for td in tr["props"]["children"]] for tr in rows]


def test_the_page_shows_the_clis_figures_for_a_real_4_rank_run(page, expected):
    out = upload(page, [(p.name, p.read_bytes()) for p in TRACES])
    assert out[cid("gantt")]["figure"]["data"], "the Gantt is drawn"
    d = page.value(cid("data"), "data")
    assert d["sources"] == [p.name for p in TRACES]
    for key in ("format", "ranks", "stages", "microbatches", "iteration", "fitted", "measured", "simulated",
                "excess_idle_s", "late_ops", "what_if"):  # fmt: skip
        assert d[key] == expected[key], key
    # what the tables show is the CLI's numbers, in ms
    fitted = cells(page, "fitted")
    for row, s in zip(fitted, expected["fitted"]["stage_times"]):
        assert row[0] == str(s["stage"])
        assert row[1].startswith(f"{s['f_s'] * 1e3:,.3f} [") and row[1].endswith(f"×{s['samples']['f']}")
        assert row[2].startswith(f"{s['b_s'] * 1e3:,.3f} [")
        assert row[3] == "—"  # 1F1B's backward is not split
    p2p_row = fitted[len(expected["fitted"]["stage_times"])]
    assert p2p_row[0] == "p2p" and p2p_row[1].startswith(f"{expected['fitted']['p2p_s'] * 1e3:,.3f}")
    hosts = zip(expected["fitted"]["host_overhead_s"], expected["fitted"]["host_overhead_samples"])
    assert fitted[-4:] == [[f"host overhead, rank {r}", f"{h * 1e3:,.3f} ×{n}", "", ""]
                           for r, (h, n) in enumerate(hosts)]  # fmt: skip
    idle = cells(page, "idle")
    sim = expected["simulated"]
    for r in range(4):
        m, e = expected["measured"]["idle_s"][r], expected["excess_idle_s"][r]
        a, b = expected["measured"]["step_s"][r], sim["step_s"][r]
        assert idle[r] == [str(r), f"{m * 1e3:,.3f}", f"{sim['bubble_s'][r] * 1e3:,.3f}",
                           f"{sim['host_overhead_s'][r] * 1e3:,.3f}", f"{e * 1e3:,.3f}", f"{a * 1e3:,.3f}",
                           f"{b * 1e3:,.3f}", f"{b / a - 1:+.1%}"]  # fmt: skip
        assert sim["bubble_s"][r] + sim["host_overhead_s"][r] == pytest.approx(sim["idle_s"][r])
    assert idle[-1][0] == "all" and idle[-1][4] == f"{sum(expected['excess_idle_s']) * 1e3:,.3f}"
    assert idle[-1][5] == f"{max(expected['measured']['step_s']) * 1e3:,.3f}"
    late = cells(page, "late")
    assert [(row[0], row[4]) for row in late] == [(x["op"], str(x["rank"])) for x in expected["late_ops"]]
    first = expected["late_ops"][0]
    assert late[0][7] == f"+{first['late_s'] * 1e3:,.3f}"
    stage, kind = first["op"][0], {"F": "F", "I": "B", "B": "BW", "W": "W"}[first["op"][1]]
    assert late[0][1] == stage and late[0][3] == kind
    what_if = page.text(cid("what-if"))
    assert f"{expected['what_if'][0]['makespan_s'] * 1e3:,.3f} ms" in what_if
    assert f"{expected['measured']['makespan_s'] * 1e3:,.3f} ms" in page.text(cid("summary"))


def test_the_what_if_link_opens_the_abstract_view_with_the_fitted_costs(page, expected):
    upload(page, [(p.name, p.read_bytes()) for p in TRACES])
    href = page.value(cid("what-if-link"), "href")
    path, _, hash_ = href.partition("#")
    assert path == "/"
    w = expected["what_if"][0]
    state, notes = abstract_state.parse("#" + hash_)
    assert not notes
    assert (state.schedule, state.devices, state.microbatches) == ("zb-v", 4, 8)
    flags = w["command"].split("--stage-time ")[1:]
    for flag in flags:  # the CLI's --stage-time SHARE:F,B,W, in ms
        share, _, times = flag.split()[0].partition(":")
        assert state.stage_times[int(share)] == tuple(float(t) for t in times.split(","))
    gaps = w["command"].split("--host-overhead ")[1].split()[0]  # each rank's, in ms
    assert state.host_overhead == tuple(float(t) for t in gaps.split(",")) and any(state.host_overhead)
    page.go("/", "#" + hash_)
    page.load()  # the abstract view: its per-stage table holds the fitted costs, its makespan is the what-if's
    table = page.value("stage-table", "rowData")
    assert [(r["stage"], r["f"], r["b"], r["w"]) for r in table] == [(i, *state.stage_times[i]) for i in range(4)]
    assert tuple(r["host_overhead"] for r in table) == state.host_overhead
    assert f"makespan {w['makespan_s'] * 1e3:g}" in page.text("cards")
    assert f"makespan {cli_makespan(w['command']):g}" in page.text("cards")


def test_another_schedule_changes_the_what_if(page):
    upload(page, [(p.name, p.read_bytes()) for p in TRACES])
    out = answer(page.fire(page.callback(HASH), [(cid("schedule"), "value")], {(cid("schedule"), "value"): "1f1b"}))
    assert "schedule=1f1b" in out[URL]["hash"] and "run=" in out[URL]["hash"]
    answer(page.fire(page.callback(SHOW), [(URL, "hash")]))
    assert "#schedule=1f1b&" in page.value(cid("what-if-link"), "href")
    assert "under 1f1b" in page.text(cid("what-if"))


def test_the_cores_the_ranks_shared_give_the_clis_figures_with_cores(page):
    """The 4-rank run time-shared the recording machine's 2 cores: with them the page shows what
    ``ppviz measured … --cores 2`` prints, its link and command carry them, and a bad value gets a note."""
    upload(page, [(p.name, p.read_bytes()) for p in TRACES])
    out = answer(page.fire(page.callback(HASH), [(cid("cores"), "value")], {(cid("cores"), "value"): 2}))
    assert "cores=2" in out[URL]["hash"]
    answer(page.fire(page.callback(SHOW), [(URL, "hash")]))
    d = page.value(cid("data"), "data")
    want = cli_json(*(str(p.relative_to(ROOT)) for p in TRACES), "--cores", "2", "--what-if", "zb-v")
    for key in ("fitted", "measured", "simulated", "excess_idle_s", "late_ops", "what_if"):
        assert d[key] == want[key], key
    assert d["fitted"]["cores"] == 2 and "--cores 2" in page.text("command-measured")
    again = Page.open(SERVER, PATH, out[URL]["hash"].replace("cores=2", "cores=0.5"))
    again.load()
    assert "cores 0.5 is not a whole number" in text_of(again.value(cid("notes"), "children"))
    assert again.value(cid("data"), "data")["fitted"]["cores"] is None


def test_a_reload_keeps_the_view_while_the_server_holds_the_files(page):
    upload(page, [(p.name, p.read_bytes()) for p in TRACES])
    out = answer(page.fire(page.callback(HASH), [(cid("iteration"), "value")], {(cid("iteration"), "value"): 4}))
    link = out[URL]["hash"]
    assert "iteration=4" in link and "run=" in link
    again = Page.open(SERVER, PATH, link)
    again.load()
    assert again.value(cid("data"), "data")["iteration"] == 4  # ProfilerStep#4, as the link asks
    assert again.value(cid("iteration"), "value") == 4
    assert "--iteration 4" in again.text("command-measured")
    assert again.text("msg-upload-measured") == ""
    uploads.store().clear()
    gone = Page.open(SERVER, PATH, link)
    gone.load()
    assert "does not hold this run's files" in gone.text("msg-upload-measured")
    assert "upload the files again" in gone.text("msg-upload-measured")
    assert gone.value(cid("data"), "data") is None


def test_bad_files_are_named_with_what_was_expected(page):
    out = upload(page, [("rank0.trace.json", b'{"traceEvents": [')])  # cut short
    message = page.text("msg-upload-measured")
    assert "rank0.trace.json" in message and "/tmp" not in message, message
    assert out[cid("gantt")]["figure"]["layout"]["annotations"], "a message, not a blank chart"
    upload(page, [("order.csv", b"0F0,0X9\n")])
    assert "order.csv" in page.text("msg-upload-measured")


def test_an_empty_upload_says_what_to_upload(page):
    upload(page, [("empty.json", b"")])
    assert "empty.json is empty: upload the files of one run" in page.text(cid("upload-error"))
    answer(page.fire(page.callback(HASH), [(CHECKED, "data")], {(CHECKED, "data"): {"contents": [], "at": 2}}))
    assert "the upload holds no file: upload the files of one run" in page.text(cid("upload-error"))


def test_too_large_an_upload_says_the_cap():
    with pytest.raises(ValueError, match=f"up to {uploads.MAX_UPLOAD_BYTES:,} bytes in all"):
        uploads.decoded([data_url(b"x" * (uploads.MAX_UPLOAD_BYTES + 1))], ["big.json"])


def test_a_megatron_log_says_what_it_holds(page):
    upload(page, [(MEGATRON.name, MEGATRON.read_bytes())])
    assert "Megatron-LM timer log" in page.text(cid("summary"))
    assert "cannot be fitted" in page.text(cid("text"))


def test_an_order_csv_says_it_has_no_times(page):
    order = RUN / "order_comms.csv"
    upload(page, [(order.name, order.read_bytes())])
    assert "4 ranks, 4 stages, 8 microbatches: an order without times" in page.text(cid("summary"))
    assert page.text("msg-upload-measured") == ""


def test_a_schedule_that_refuses_the_run_says_so_beside_its_picker_and_the_rest_shows(page):
    """A synthetic 4-rank 1F1B run of 6 microbatches: interleaved 1F1B needs a multiple of 4."""
    run = ppviz.simulate("1f1b", 4, 6, f=1, b=2, w=0)
    upload(page, [(f"rank{r}.json", json.dumps(t).encode()) for r, t in enumerate(synthetic.rank_traces(run))])
    page.fire(page.callback(HASH), [(cid("schedule"), "value")], {(cid("schedule"), "value"): "interleaved-1f1b"})
    answer(page.fire(page.callback(SHOW), [(URL, "hash")]))
    assert "multiple of devices" in page.text("msg-schedule-measured")
    assert page.value(cid("what-if-link"), "href") == "/" and page.text(cid("what-if")) == ""
    assert cells(page, "fitted")[0][1].startswith("1.000 [1.000–1.000] ×6")  # the fit still shows: F = 1 ms
    assert page.value(cid("data"), "data")["what_if"] == []


def test_a_bad_iteration_goes_beside_its_box(page):
    upload(page, [(p.name, p.read_bytes()) for p in TRACES])
    page.fire(page.callback(HASH), [(cid("iteration"), "value")], {(cid("iteration"), "value"): 99})
    answer(page.fire(page.callback(SHOW), [(URL, "hash")]))
    assert "99" in page.text("msg-iteration-measured")


def test_a_pattern_that_could_take_exponential_time_is_refused_beside_its_box(page):
    upload(page, [(p.name, p.read_bytes()) for p in TRACES])
    bad = "(?P<kind>F)(?P<microbatch>(\\d+)+)"
    page.fire(page.callback(HASH), [(cid("pattern"), "value")], {(cid("pattern"), "value"): bad})
    answer(page.fire(page.callback(SHOW), [(URL, "hash")]))
    assert "exponential time" in page.text("msg-pattern-measured")
    good = "(?P<kind>[FIWB])_s(?P<stage>\\d+)_mb(?P<microbatch>\\d+)"
    page.fire(page.callback(HASH), [(cid("pattern"), "value")], {(cid("pattern"), "value"): good})
    answer(page.fire(page.callback(SHOW), [(URL, "hash")]))
    assert page.text("msg-pattern-measured") == ""
    assert "no pipeline actions" in page.text("msg-upload-measured")  # these traces have no such names


def test_unannotated_traces_with_their_order_csv_are_named_by_it(page):
    traces = sorted(UNANNOTATED.glob("rank*.trace.json.gz"))
    order = UNANNOTATED / "order_compute.csv"
    upload(page, [(p.name, p.read_bytes()) for p in traces] + [(order.name, order.read_bytes())])
    assert page.text("msg-upload-measured") == ""
    expected = cli_json(*(str(p.relative_to(ROOT)) for p in traces), "--order", str(order.relative_to(ROOT)),
                        "--what-if", "zb-v")  # fmt: skip
    d = page.value(cid("data"), "data")
    assert d["sources"] == [p.name for p in traces]
    for key in ("format", "ranks", "stages", "microbatches", "iteration", "fitted", "measured", "simulated",
                "excess_idle_s", "late_ops", "what_if"):  # fmt: skip
        assert d[key] == expected[key], key
    assert any(n.startswith("no annotations: compute named by the order of order_compute.csv") for n in d["notes"])
    command = page.text("command-measured")
    assert "--order order_compute.csv" in command and "rank0.trace.json.gz rank1.trace.json.gz --order" in command


def test_unannotated_traces_alone_ask_for_the_order_csv(page):
    upload(page, [(p.name, p.read_bytes()) for p in sorted(UNANNOTATED.glob("rank*.trace.json.gz"))])
    message = page.text("msg-upload-measured")
    assert "no pipeline actions" in message and "Add the order the run ran to the upload" in message
    assert "schedule._dump_csv" in message


def test_an_order_of_other_counts_uploaded_with_the_traces_is_named(page):
    other = ROOT / "tests" / "data" / "measured" / "torch-older-naming" / "1f1b-2r-4mb.order_comms.csv"
    traces = [(p.name, p.read_bytes()) for p in sorted(UNANNOTATED.glob("rank*.trace.json.gz"))]
    upload(page, [*traces, (other.name, other.read_bytes())])
    message = page.text("msg-upload-measured")
    assert "rank 0 ran" in message and "has 4 F and 4 B" in message and other.name in message
    assert "/tmp" not in message
    upload(page, [*traces, ("a.csv", b"0F0\n"), ("b.csv", b"0F0\n")])
    assert "2 other files (a.csv, b.csv)" in page.text("msg-upload-measured")


def test_a_gzipped_file_too_large_once_decompressed_says_the_cap():
    bomb = gzip.compress(b" " * (uploads.MAX_READ_BYTES + 1))
    assert len(bomb) < uploads.MAX_UPLOAD_BYTES
    with pytest.raises(ValueError, match=f"more than {uploads.MAX_READ_BYTES:,} bytes once decompressed"):
        uploads.decoded([data_url(bomb)], ["rank0.trace.json.gz"])


MEASURED_MODULES = {measured_callbacks.__name__}
OWN = {
    k for k, v in page_app.app.callback_map.items() if getattr(v.get("callback"), "__module__", "") in MEASURED_MODULES
}
JUNK = junk("zb-v", "auto", "torch-old", "#run=0", "(?P<kind>F)", "data:;base64,AAAA", 5)


@pytest.fixture(scope="module")
def fuzzed() -> tuple[Page, dict]:
    """The page with a real run uploaded, and values it sends itself (the run's hash, its files, options)."""
    p = Page.open(SERVER, PATH)
    p.load()
    files = [(t.name, t.read_bytes()) for t in TRACES]
    unannotated = [
        (t.name, t.read_bytes()) for t in [*sorted(UNANNOTATED.glob("rank*")), UNANNOTATED / "order_compute.csv"]
    ]
    upload(p, files)
    plausible = {
        URL: [p.value(URL, "hash"), "#run=" + "0" * 32, "#schedule=nope&iteration=-1", "", "#pattern=(("],
        CHECKED: [
            {"contents": [data_url(d) for _, d in files], "filenames": [n for n, _ in files]},
            {"contents": [data_url(b"{")], "filenames": ["x.json"]},
            {"contents": [data_url(d) for _, d in unannotated], "filenames": [n for n, _ in unannotated]},
            {"contents": [], "filenames": []},
            {"contents": ["data:x"], "filenames": None},
        ],
        cid("iteration"): [4, 5, None, 99, -1],
        cid("pattern"): ["", "((", "(?P<kind>[FIWB])_s(?P<stage>\\d+)_mb(?P<microbatch>\\d+)"],
        cid("naming"): ["auto", "torch", "x"],
        cid("schedule"): ["zb-v", "1f1b", "interleaved-1f1b", "nope"],
    }
    return p, plausible


def test_the_view_has_callbacks_to_fuzz(fuzzed):
    page, _ = fuzzed
    own = [d for d in page.server_callbacks() if d["output"] in OWN]
    assert len(own) == 2 and all(page.has(d) for d in own)


@pytest.mark.slow  # fuzz at its full example count
@fuzz_settings(80)
@given(data=st.data())
def test_random_values_for_every_input_never_give_a_500(fuzzed, data):
    page, plausible = fuzzed
    dep = data.draw(st.sampled_from([d for d in page.server_callbacks() if d["output"] in OWN]))
    check_answer(page, dep, randomised(page, dep, data, JUNK, plausible))


def test_the_gantt_draws_each_rank_measured_over_simulated_in_ms():
    from ppviz import figures
    from ppviz.ir import Kind

    measured = [[(0, 0, Kind.F, 0.0, 0.002)], [(1, 0, Kind.F, 0.003, 0.004)]]
    simulated = [[(0, 0, Kind.F, 0.0, 0.0015)], [(1, 0, Kind.F, 0.0025, 0.0035)]]
    fig = figures.measured_gantt(measured, simulated)
    names = [t.get("name") for t in fig["data"]]
    assert names[:2] == ["F forward", "F forward (simulated)"]
    bars = fig["data"][0]
    assert bars["x"][:5] == [0.0, 2.0, 2.0, 0.0, 0.0]  # rank 0's measured F, in ms
    assert fig["layout"]["yaxis"]["ticktext"] == ["rank 0 measured", "rank 0 simulated", "rank 1 measured",
                                                  "rank 1 simulated"]  # fmt: skip
    assert fig["data"][-1]["text"][0].startswith("measured <b>0F0</b> on rank 0")
