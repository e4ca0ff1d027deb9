"""`ppviz measured`: formats detected, the JSON contract, the text tables, and clear errors."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

import ppviz
from ppviz.__main__ import main
from ppviz.errors import InputError
from ppviz.measured import files
from ppviz.measured.kineto import read_traces
from ppviz.measured.read import read
from ppviz.measured.synthetic import rank_traces

DATA = Path(__file__).parent / "data" / "measured"
ZBV = sorted(str(p) for p in (DATA / "torch-2.13/zbv-2r").glob("rank*.trace.json.gz"))


def _json(capsys, *argv) -> dict:
    assert main(["measured", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_json_has_the_stable_fields(capsys):
    d = _json(capsys, *ZBV)
    assert {"format", "ranks", "stages", "microbatches", "fitted", "measured", "simulated", "excess_idle_s",
            "late_ops", "notes"} <= set(d)  # fmt: skip
    assert (d["format"], d["ranks"], d["stages"], d["microbatches"]) == ("kineto", 2, 4, 8)
    rows = d["fitted"]["stage_times"]
    assert [r["stage"] for r in rows] == [0, 1, 2, 3]
    assert all({"stage", "f_s", "b_s", "w_s", "samples"} <= set(r) and r["w_s"] > 0 for r in rows)
    assert d["fitted"]["p2p_s"] > 0
    for side in ("measured", "simulated"):
        assert d[side]["makespan_s"] > 0 and len(d[side]["idle_s"]) == 2
        assert len(d[side]["step_s"]) == 2 and min(d[side]["step_s"]) > 0
    assert max(d["simulated"]["step_s"]) <= d["simulated"]["makespan_s"]  # a send is received by an op that ends
    assert d["excess_idle_s"] == pytest.approx(
        [m - s for m, s in zip(d["measured"]["idle_s"], d["simulated"]["idle_s"])]
    )
    late = d["late_ops"][0]
    assert late["late_s"] == pytest.approx(late["measured_start_s"] - late["simulated_start_s"]) and late["late_s"] > 0


def test_w_is_null_when_the_backward_is_not_split(capsys):
    d = _json(capsys, *sorted(str(p) for p in (DATA / "torch-2.13/gpipe-2r").glob("rank*")))
    assert all(r["w_s"] is None and r["b_s"] > 0 for r in d["fitted"]["stage_times"])


def test_text_output_is_a_table_in_ms(capsys):
    assert main(["measured", *ZBV]) == 0
    out = capsys.readouterr().out
    assert "fitted per-stage times (ms" in out and "p2p latency" in out and "excess" in out
    assert " ms" in out and "latest against the model" in out
    d = _json(capsys, *ZBV)
    for r, (m, s) in enumerate(zip(d["measured"]["step_s"], d["simulated"]["step_s"])):
        assert f"{r:>4} {m * 1e3:,.3f} ms".replace(" ", "") in out.replace(" ", "")
        assert f"{s * 1e3:,.3f} ms {s / m - 1:+.1%}".replace(" ", "") in out.replace(" ", "")


def test_an_order_csv_is_read_and_said_to_have_no_times(capsys):
    d = _json(capsys, str(DATA / "torch-older-naming/1f1b-2r-4mb.order_comms.csv"))
    assert (d["format"], d["ranks"], d["microbatches"]) == ("torch-csv", 2, 4)
    assert any("older" in n for n in d["notes"])


def _write(tmp_path, traces, name="r{}.json") -> list[str]:
    out = []
    for r, t in enumerate(traces):
        path = tmp_path / name.format(r)
        path.write_text(json.dumps(t))
        out.append(str(path))
    return out


def test_a_pattern_reads_other_frameworks_annotations(tmp_path):
    run = ppviz.simulate("zb-h1", 2, 4, f=1.0, b=1.0, w=0.5)
    traces = rank_traces(run)
    names = {"F": "fwd", "I": "bwd_in", "W": "bwd_w"}
    for t in traces:
        for e in t["traceEvents"]:
            if e["name"].startswith("PP:"):
                s, k, m = e["name"][3], e["name"][4], e["name"][5:]
                e["name"] = f"{names[k]}.stage{s}.mb{m}"
    paths = _write(tmp_path, traces)
    pattern = r"(?P<kind>fwd|bwd_in|bwd_w)\.stage(?P<stage>\d+)\.mb(?P<microbatch>\d+)"
    with pytest.raises(InputError, match="kind 'fwd' is not one of"):
        read_traces(paths, pattern=pattern)
    for t in traces:
        for e in t["traceEvents"]:
            for word, k in (("bwd_in", "I"), ("bwd_w", "W"), ("fwd", "F")):
                e["name"] = e["name"].replace(word + ".", k + ".")
    paths = _write(tmp_path, traces)
    measured = read_traces(paths, pattern=r"(?P<kind>[FIW])\.stage(?P<stage>\d+)\.mb(?P<microbatch>\d+)")
    assert measured.schedule().order == tuple(tuple(a for a in row if a is not None) for row in run.schedule.order)
    assert any("pattern" in n for n in measured.notes)
    with pytest.raises(InputError, match="lacks microbatch") as e:
        read_traces(paths, pattern=r"(?P<kind>F)")
    assert e.value.field == "pattern"


def test_nccl_p2p_is_timed_by_its_kernel(tmp_path):
    run = ppviz.simulate("gpipe", 2, 2)
    traces = rank_traces(run)
    ev = traces[0]["traceEvents"]
    send = next(e for e in ev if e["name"] == "gloo:send")
    send["name"] = "nccl:send"
    send["args"] = {"In msg nelems": 4096, "dtype": "BFloat16"}
    ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "tid": send["tid"], "ts": send["ts"],
               "dur": 0.0, "args": {"correlation": 7}})  # fmt: skip
    ev.append({"ph": "X", "cat": "kernel", "name": "ncclDevKernel_SendRecv", "tid": 99, "ts": send["ts"] + 40.0,
               "dur": 25.0, "args": {"correlation": 7}})  # fmt: skip
    measured = read_traces(_write(tmp_path, traces))
    comm = next(c for c in measured.comms if c.rank == 0 and c.what == "send" and c.microbatch == 0)
    first = min(op.start for row in measured.ops for op in row)
    assert comm.end - comm.start == pytest.approx(25e-6) and comm.peer == 1 and comm.bytes == 8192
    assert comm.start == pytest.approx((send["ts"] + 40.0 - 1e6) / 1e6 - first)


@pytest.mark.parametrize(
    "content, message",
    [
        (b'{"traceEvents": [{"ph": "X", "name": "x", "ts": 1, "dur": 1}, {"ph": "X"', "not valid trace JSON after "
         "event 0"),
        (b'{"traceEvents": [{"ph": "X", "name": "PP:0F0", "ts": "soon", "dur": 1}]}', "event 0 \\('PP:0F0'\\): "
         "expected numbers"),
        (b'{"traceEvents": []}', "no traceEvents"),
        (b"[1, 2]", "bare JSON array"),
        (b'{"traceEvents": [{"ph": "X", "name": "PP:0F0", "ts": 1, "dur": 1}]}', "no ProfilerStep#N"),
    ],
)  # fmt: skip
def test_malformed_traces_name_the_file_and_event(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(InputError, match=message) as e:
        read_traces([str(path)])
    assert "bad.json" in str(e.value) or "ProfilerStep" in str(e.value)


def test_cli_errors_are_one_line(capsys, tmp_path):
    bad = tmp_path / "t.json.gz"
    bad.write_bytes(gzip.compress(b'{"traceEvents": [')[:-4])
    for argv, message in (
        ([str(bad)], "t.json.gz"),
        ([*ZBV, "--iteration", "9"], "ProfilerStep#9 is not in every trace; they share ProfilerStep#4, ProfilerStep#5"),
        ([ZBV[0], ZBV[0]], "ranks [0, 0]"),
        ([ZBV[0]], "world size 2, but 1 given: give one trace per rank"),
        ([ZBV[0], str(DATA / "torch-2.13/zbv-2r/order_comms.csv")], "different formats"),
        ([*ZBV, "--pattern", "("], "not a valid regular expression"),
        (["/no/such/trace.json"], "cannot read /no/such/trace.json"),
        (
            [str(DATA / "torch-older-naming/zb-interleaved-2r.order_compute.csv"), "--naming", "torch"],
            "has W but no B (read in torch 2.13's",
        ),
    ):
        assert main(["measured", *argv]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err


def test_a_chosen_iteration_is_read(capsys):
    assert _json(capsys, *ZBV, "--iteration", "4")["iteration"] == 4


def test_size_caps_stop_a_file_past_them(tmp_path):
    path = tmp_path / "big.json"
    path.write_text(json.dumps(rank_traces(ppviz.simulate("1f1b", 2, 4))[0]))
    with pytest.raises(InputError, match="larger than 100 bytes"), files.open_binary(str(path), cap=100) as fh:
        fh.read()
    with pytest.raises(InputError, match="larger than 10 bytes"):
        files.read_text(str(DATA / "torch-2.13/zbv-2r/order_comms.csv"), cap=10)


@pytest.mark.parametrize("log", sorted((DATA / "megatron").glob("*.log")), ids=lambda p: p.name)
def test_megatron_logs_are_detected_and_routed_to_the_megatron_reader(log, capsys):
    assert files.detect(str(log)) == "megatron"
    fmt, got = read([str(log)])
    assert fmt == "megatron"
    d = _json(capsys, str(log))
    assert d["format"] == "megatron" and d == {"format": "megatron", **got.summary()}


@pytest.mark.parametrize("log", sorted((DATA / "megatron").glob("*.log")), ids=lambda p: p.name)
def test_megatron_logs_print_as_text_without_json(log, capsys):
    """The text form names the iteration time, every timer and what can and cannot be fitted."""
    assert main(["measured", str(log)]) == 0
    out = capsys.readouterr().out
    summary = read([str(log)])[1].summary()
    assert "{" not in out and f"{summary['iteration_ms']['median']:,.1f} ms median" in out
    assert all(name in out for name in summary["timers"]) and "cannot be fitted:" in out
