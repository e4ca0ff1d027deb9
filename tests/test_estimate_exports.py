"""Real units outside the estimate's JSON: `ppviz render --model ...` (Gantt in ms, memory in GB on
the static base with the HBM line), `ppviz estimate --csv` (times in seconds) and `--trace` (Chrome
trace in real time, counters in activation bytes), and their one-line refusals."""

import json

import numpy as np
import pytest

from ppviz import figures
from ppviz.__main__ import main
from ppviz.estimate import Layout, estimate, model
from ppviz.figures import decode_typed_array

LAYOUT = ["--tp", "2", "--pp", "4", "--dp", "2", "--mbs", "1", "--gbs", "16", "--seq", "2048",
          "--recompute", "selective", "--sequence-parallel", "--zero", "1"]  # fmt: skip
EST = Layout(tp=2, pp=4, dp=2, mbs=1, gbs=16, recompute="selective", sequence_parallel=True, zero=1, schedule="zb-h1")


@pytest.fixture(scope="module")
def est():
    return estimate(model("llama3-8b", seq=2048), "h100-sxm", EST)


def cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_render_in_ms_and_gib(capsys, tmp_path, est):
    out = tmp_path / "page.html"
    code, text, err = cli(capsys, "render", "zb-h1", "--model", "llama3-8b", "--gpu", "h100-sxm", *LAYOUT,
                          "--limit", "70", "-o", out)  # fmt: skip
    assert code == 0, err
    assert f"iteration {est.iteration_s * 1e3:,.1f} ms" in text
    page = out.read_text()
    assert page.count('"text":"time (ms)"') == 1  # one time axis: the memory chart's, which the Gantt's matches
    assert '"text":"memory (GiB)"' in page and '"text":"time"' not in page
    assert '"name":"capacity 79.65 GiB"' in page and '"name":"limit 70.00 GiB"' in page
    assert '"name":"reserve 3.00 GiB"' in page
    assert f"{est.makespan_s * 1e3:,.1f} ms" in page
    assert f"{est.peak_bytes.max() / 2**30:,.2f} GiB of 76.65 GiB usable (79.65 GiB HBM)" in page
    (both,) = figures_of(page)  # the Gantt over the memory chart (on x2, y2)
    assert both["layout"]["xaxis"]["range"][1] == pytest.approx(est.makespan_s * 1e3)
    assert both["layout"]["xaxis2"]["matches"] == "x"
    mem = [t for t in both["data"] if t.get("yaxis") == "y2"]
    peak = next(t for t in mem if t["name"] == "peak")
    assert decode_typed_array(peak["y"]) == pytest.approx(est.peak_bytes / 2**30)  # static + activation, in GiB
    first = [decode_typed_array(t["y"])[0] for t in mem if t["name"].startswith("device ")]
    base = figures.memory_kwargs(est)["base"]
    assert first == pytest.approx(np.array(base) / 2**30, rel=1e-6)  # each curve starts on its base


def figures_of(page: str) -> list[dict]:
    """The (data, layout) of every Plotly.newPlot call in a standalone page."""
    out, dec, at = [], json.JSONDecoder(), 0
    while (at := page.find("Plotly.newPlot(", at)) >= 0:
        at = page.index(",", at) + 1  # past the div id
        data, end = dec.raw_decode(page, len(page[:at]) + len(page[at:]) - len(page[at:].lstrip()))
        at = page.index(",", end) + 1
        layout, at = dec.raw_decode(page, len(page[:at]) + len(page[at:]) - len(page[at:].lstrip()))
        out.append({"data": data, "layout": layout})
    return out


def test_render_same_numbers_as_estimate(capsys, tmp_path):
    code, text, _ = cli(capsys, "estimate", "--model", "llama3-8b", "--gpu", "h100-sxm", *LAYOUT, "--schedule",
                        "zb-h1", "--json", "--no-ops")  # fmt: skip
    d = json.loads(text)
    code, text, _ = cli(capsys, "render", "zb-h1", "--model", "llama3-8b", "--gpu", "h100-sxm", *LAYOUT, "-o",
                        tmp_path / "p.html")  # fmt: skip
    assert code == 0 and f"iteration {d['iteration_s'] * 1e3:,.1f} ms" in text


def test_csv_in_seconds(capsys, est):
    code, text, _ = cli(capsys, "estimate", "--model", "llama3-8b", "--gpu", "h100-sxm", *LAYOUT, "--schedule",
                        "zb-h1", "--csv")  # fmt: skip
    assert code == 0
    lines = text.splitlines()
    assert lines[0] == "device,stage,microbatch,kind,start_s,end_s"
    rows = [r.split(",") for r in lines[1:]]
    assert len(rows) == len(est.run.result)
    ends = np.array([float(r[5]) for r in rows])
    assert ends.max() == est.makespan_s
    starts = np.array([float(r[4]) for r in rows])
    assert np.array_equal(np.sort(starts), np.sort(est.run.result.start))


def test_trace_in_real_time_and_bytes(capsys, est):
    code, text, _ = cli(capsys, "estimate", "--model", "llama3-8b", "--gpu", "h100-sxm", *LAYOUT, "--schedule",
                        "zb-h1", "--trace")  # fmt: skip
    assert code == 0
    events = json.loads(text)["traceEvents"]
    r = est.run.result
    slices = sorted((e["tid"], e["ts"], e["dur"]) for e in events if e["ph"] == "X")
    want = sorted(
        (int(d), round(float(a) * 1e6, 6), round(float(b - a) * 1e6, 6)) for d, a, b in zip(r.device, r.start, r.end)
    )
    assert np.allclose(np.array(slices), np.array(want), rtol=1e-12, atol=1e-6)
    assert max(ts + dur for _, ts, dur in slices) == pytest.approx(est.makespan_s * 1e6)
    curves = est.activation
    for d in range(est.run.schedule.devices):
        counter = [(e["ts"], e["args"]["bytes"]) for e in events if e["ph"] == "C" and e["name"].endswith(f" {d}")]
        assert [v for _, v in counter] == pytest.approx(curves.values[d].tolist())
        assert [t for t, _ in counter] == pytest.approx((curves.times[d] * 1e6).tolist())
        assert max(v for _, v in counter) == pytest.approx(est.to_dict(ops=False)["peak_activation_bytes"][d])


def test_abstract_trace_keeps_its_units():
    from ppviz import api, formats

    run = api.simulate("1f1b", 2, 2)
    events = json.loads(formats.chrome_trace(run))["traceEvents"]
    counters = [e["args"]["microbatch units"] for e in events if e["ph"] == "C"]
    assert max(counters) == 2.0  # two microbatches in flight on device 0, one unit each


@pytest.mark.parametrize(
    "argv, says",
    [
        (["render", "1f1b", "--model", "llama3-8b", "-o", "x.html"], "real units need --gpu"),
        (["render", "1f1b", "--tp", "2", "-p", "2", "-m", "2", "-o", "x.html"], "real units need --model and --gpu"),
        (
            ["render", "1f1b", "--model", "llama3-8b", "--gpu", "h100-sxm", "-p", "4", "-o", "x.html"],
            "--devices is for abstract units; with --model use --pp",
        ),
        (
            ["render", "1f1b", "--model", "llama3-8b", "--gpu", "h100-sxm", "--f", "2", "-o", "x.html"],
            "--f is for abstract units",
        ),
        (["render", "--model", "llama3-8b", "--gpu", "h100-sxm", "-o", "x.html"], "name a schedule"),
        (
            ["render", "1f1b", "--model", "llama3-8b", "--gpu", "h100-sxm", "--tp", "3", "-o", "x.html"],
            "tp 3 must divide the 32 attention heads",
        ),
        (["render", "1f1b", "--model", "nope", "--gpu", "h100-sxm", "-o", "x.html"], "unknown model preset 'nope'"),
        (["estimate", "--model", "llama3-8b", "--gpu", "h100-sxm", "--csv", "--no-ops"], "--no-ops applies to --json"),
        (["estimate", "--model", "llama3-8b", "--gpu", "h100-sxm", "--csv", "--trace"], "not allowed with"),
    ],
)
def test_bad_input_one_line_exit_2(capsys, tmp_path, monkeypatch, argv, says):
    monkeypatch.chdir(tmp_path)
    code, out, err = cli(capsys, *argv)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and says in err, err
    assert not (tmp_path / "x.html").exists()
