"""Exports (ops CSV, JSON contract, Chrome trace, PyTorch CSV) and the strict order import."""

import csv
import io
import json

import pytest

import ppviz
from ppviz import formats
from ppviz.ir import BW, Action, Overlap, Placement, make_schedule
from ppviz.ir import F as FWD


def overlapped_run():
    a = Action
    d0 = [a(0, 0, FWD), a(0, 1, FWD), Overlap(a(0, 2, FWD), a(0, 0, BW)), a(0, 1, BW), a(0, 2, BW)]
    d1 = [a(1, 0, FWD), Overlap(a(1, 1, FWD), a(1, 0, BW)), Overlap(a(1, 2, FWD), a(1, 1, BW)), a(1, 2, BW)]
    return ppviz.evaluate(make_schedule(Placement.standard(2), 3, [d0, d1], "hand-overlap"))


def test_ops_csv_has_one_row_per_op_with_exact_times():
    run = ppviz.simulate("zb-h1", 4, 8, f=1.0, b=1.5, w=0.5)
    rows = list(csv.DictReader(io.StringIO(formats.ops_csv(run))))
    assert list(rows[0]) == ["device", "stage", "microbatch", "kind", "start", "end"]
    assert len(rows) == len(run.result) == 4 * 8 * 3
    assert rows == [{k: str(v) for k, v in op.items()} for op in run.result.ops()]
    assert max(float(r["end"]) for r in rows) == run.metrics.makespan == 8 * 3.0 + 3 * (1.0 + 1.5 - 0.5)


def test_run_json_is_the_cli_contract():
    run = ppviz.simulate("1f1b", 4, 8)
    data = json.loads(formats.run_json(run))
    assert data == json.loads(json.dumps(run.to_dict()))
    assert data["makespan"] == (8 + 4 - 1) * 3.0 and len(data["ops"]) == 64


def check_trace_format(trace: dict) -> None:
    """The Chrome trace event format's rules for the phases ppviz writes (X, M, C, s, f)."""
    assert isinstance(trace["traceEvents"], list)
    number = (int, float)
    flows: dict[tuple, list[dict]] = {}
    for e in trace["traceEvents"]:
        ph = e["ph"]
        assert isinstance(e["name"], str) and isinstance(e["pid"], int), e
        if ph == "M":
            assert e["name"] in {"process_name", "thread_name", "thread_sort_index"} and isinstance(e["args"], dict)
        elif ph == "X":
            assert isinstance(e["tid"], int) and isinstance(e["ts"], number) and isinstance(e["dur"], number), e
            assert e["dur"] >= 0 and isinstance(e["cat"], str), e
        elif ph == "C":
            assert isinstance(e["ts"], number) and e["args"], e
            assert all(isinstance(v, number) and not isinstance(v, bool) for v in e["args"].values()), e
        elif ph in ("s", "f"):
            assert isinstance(e["tid"], int) and isinstance(e["ts"], number) and isinstance(e["id"], int), e
            assert isinstance(e["cat"], str), e
            flows.setdefault((e["cat"], e["name"], e["id"]), []).append(e)
        else:
            raise AssertionError(f"unexpected phase {ph!r}")
    for key, pair in flows.items():
        assert sorted(e["ph"] for e in pair) == ["f", "s"], f"flow {key} is not one start and one finish"
        start, finish = sorted(pair, key=lambda e: e["ph"] != "s")
        assert finish["ts"] >= start["ts"] and finish.get("bp") == "e", key


def _slices_around(trace: dict, tid: int, ts: float) -> list[dict]:
    return [
        e for e in trace["traceEvents"] if e["ph"] == "X" and e["tid"] == tid and e["ts"] <= ts <= e["ts"] + e["dur"]
    ]


@pytest.mark.parametrize(
    "name, params", [("1f1b", {}), ("zb-v", {}), ("dualpipe", {}), ("interleaved-1f1b", {"chunks": 2})]
)
def test_chrome_trace_follows_the_trace_event_format(name, params):
    run = ppviz.simulate(name, 4, 8, f=1.0, b=2.0, w=1.0, p2p=0.25, **params)
    trace = json.loads(formats.chrome_trace(run))
    check_trace_format(trace)
    for e in trace["traceEvents"]:
        if e["ph"] in "sf":  # every arrow end sits on a slice of its thread
            assert _slices_around(trace, e["tid"], e["ts"]), e


def test_chrome_trace_has_one_slice_per_op_in_microseconds():
    run = ppviz.simulate("1f1b", 4, 8, f=1.0, b=2.0, w=0.0)
    trace = json.loads(formats.chrome_trace(run))
    events = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert len(events) == len(run.result)
    want = sorted(
        (
            op["device"],
            op["start"] * 1000,
            (op["end"] - op["start"]) * 1000,
            f"{op['kind']} s{op['stage']} mb{op['microbatch']}",
        )
        for op in run.result.ops()
    )
    assert sorted((e["tid"], e["ts"], e["dur"], e["name"]) for e in events) == want
    assert {e["pid"] for e in trace["traceEvents"]} == {0}
    assert "F s3 mb7" in {e["name"] for e in events}


def test_chrome_trace_names_each_device_thread():
    trace = json.loads(formats.chrome_trace(ppviz.simulate("gpipe", 3, 2)))
    names = {e["tid"]: e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "thread_name"}
    assert names == {0: "device 0", 1: "device 1", 2: "device 2"}


def test_chrome_trace_draws_an_overlapped_pair_as_one_slice_with_both_ops():
    run = overlapped_run()
    events = [e for e in json.loads(formats.chrome_trace(run))["traceEvents"] if e["ph"] == "X"]
    pairs = [e for e in events if e["cat"] == "overlapped"]
    assert len(pairs) == 3 and all(e["args"]["overlapped"] for e in pairs)
    assert len(events) == len(run.result) - 3
    pair = next(e for e in pairs if e["tid"] == 1 and "F s1 mb1" in e["name"])
    assert pair["name"] == "F s1 mb1 & BW s1 mb0"
    assert pair["args"]["ops"] == [
        {"stage": 1, "microbatch": 1, "kind": "F"},
        {"stage": 1, "microbatch": 0, "kind": "BW"},
    ]


def test_chrome_trace_counts_each_devices_activation_over_time():
    """1F1B on 4 devices, 8 microbatches: device d holds p − d microbatches at its peak."""
    run = ppviz.simulate("1f1b", 4, 8)
    events = json.loads(formats.chrome_trace(run))["traceEvents"]
    for d in range(4):
        values = [
            e["args"]["microbatch units"] for e in events if e["ph"] == "C" and e["name"] == f"activation device {d}"
        ]
        assert max(values) == 4 - d and values[0] == 0 and values[-1] == 0


def test_chrome_trace_flows_join_exactly_the_cross_device_dependencies():
    """GPipe on p devices and m microbatches: (p − 1)·m forward hand-offs and as many backward ones."""
    p, m = 3, 4
    run = ppviz.simulate("gpipe", p, m, p2p=0.5)
    trace = json.loads(formats.chrome_trace(run))
    starts = sorted((e["tid"], e["ts"]) for e in trace["traceEvents"] if e["ph"] == "s")
    assert len(starts) == 2 * (p - 1) * m
    finishes = [e for e in trace["traceEvents"] if e["ph"] == "f"]
    for e in finishes:  # each arrow ends on the op that waited: its slice starts at the arrow's time
        (target,) = [s for s in _slices_around(trace, e["tid"], e["ts"]) if s["ts"] == e["ts"]]
        assert target["name"].startswith(("F", "BW"))


@pytest.mark.parametrize(
    "name, params", [("1f1b", {}), ("zb-h1", {}), ("interleaved-1f1b", {"chunks": 2}), ("zb-v", {})]
)
def test_torch_csv_round_trip_keeps_the_makespan(name, params):
    run = ppviz.simulate(name, 4, 8, f=1.0, b=2.0, w=1.0, **params)
    schedule = formats.read_torch_csv(formats.torch_csv(run))
    again = ppviz.evaluate(schedule, run.result.costs)
    assert again.metrics.makespan == run.metrics.makespan
    assert formats.torch_csv(schedule) == formats.torch_csv(run.schedule)


def test_torch_csv_round_trip_keeps_overlapped_pairs():
    run = overlapped_run()
    text = formats.torch_csv(run)
    assert "(1F1;1B0)OVERLAP_F_B" in text
    assert ppviz.evaluate(formats.read_torch_csv(text)).metrics.makespan == run.metrics.makespan


def test_read_torch_csv_accepts_bytes():
    text = formats.torch_csv(ppviz.simulate("1f1b", 2, 2))
    assert formats.read_torch_csv(text.encode()).microbatches == 2


def test_read_torch_csv_refuses_files_over_the_size_limit():
    text = formats.torch_csv(ppviz.simulate("1f1b", 4, 8))
    with pytest.raises(ValueError, match="limit is 100"):
        formats.read_torch_csv(text, max_bytes=100)
    with pytest.raises(ValueError, match="bytes"):
        formats.read_torch_csv(b"0F0," * 300_000)


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "empty"),
        ("0F0,0B0\n1X0\n", "row 2, column 1"),
        ("__import__('os').system('true')\n", "cannot read action"),
        ("0F0\n0B0\n", "runs on ranks 0 and 1"),
        (b"\xff\xfe0F0", "not UTF-8"),
        ("0F0,0B0,0F99999999\n", "need at least"),
        ("0F0,0F0\n", "appears 2 times"),
    ],
)
def test_read_torch_csv_rejects_malformed_orders_with_a_clear_message(text, message):
    with pytest.raises(ValueError, match=message):
        formats.read_torch_csv(text)


def test_the_run_json_records_every_cost_input_and_reproduces_itself():
    run = ppviz.simulate(
        "zb-v", 4, 8, f=1.5, b=1.25, w=0.75, p2p=0.1, overlap=0.9, b_frees=0.5, stage_times={2: (2.0, 1.0, 1.0)}
    )
    d = json.loads(formats.run_json(run))
    c = d["costs"]
    assert {k: c[k] for k in ("f", "b", "w", "p2p", "overlap", "b_frees")} == {
        "f": 1.5, "b": 1.25, "w": 0.75, "p2p": 0.1, "overlap": 0.9, "b_frees": 0.5,
    }  # fmt: skip
    again = ppviz.simulate(
        d["schedule"],
        d["devices"],
        d["microbatches"],
        **{k: c[k] for k in ("f", "b", "w", "p2p", "overlap", "b_frees")},
        stage_times={int(k): v for k, v in c["stage_times"].items()},
        **d["params"],
    )
    assert json.loads(formats.run_json(again)) == d


VARIANTS = {
    "bom": lambda t: "\ufeff" + t,
    "cr-only": lambda t: t.replace("\n", "\r"),
    "crlf": lambda t: t.replace("\n", "\r\n"),
}


@pytest.mark.parametrize("transform", VARIANTS.values(), ids=VARIANTS.keys())
def test_valid_csv_variants_read_as_the_same_order(transform):
    text = ppviz.to_torch_csv(ppviz.build("zb-h1", 4, 6))
    same = formats.read_torch_csv(transform(text))
    assert ppviz.to_torch_csv(same) == text
    assert ppviz.to_torch_csv(formats.read_torch_csv(transform(text).encode("utf-8"))) == text


def test_an_order_with_too_many_rank_rows_is_refused_before_it_is_parsed():
    text = ppviz.to_torch_csv(ppviz.build("1f1b", 2, 2)) + "\n" * 3 + "0F0\n"
    with pytest.raises(ValueError, match="6 rows .*limit here is 4"):
        formats.read_torch_csv(text, max_ranks=4)
