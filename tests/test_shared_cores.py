"""Ranks time-sharing a host's cores (``ppviz.measured.shared_cores``): closed forms, the linear simulation
when every rank has a core, and the round trip through traces."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import ppviz
from ppviz.__main__ import main
from ppviz.errors import InputError
from ppviz.measured import shared_cores
from ppviz.measured.compare import compare
from ppviz.measured.kineto import read_traces
from ppviz.measured.synthetic import rank_traces

UNPAIRED = [n for n in ppviz.REGISTRY if not ppviz.simulate(n, 4, 8).result.paired.any()]


@pytest.mark.parametrize("name", UNPAIRED)
def test_with_a_core_per_device_it_is_the_linear_simulation(name):
    linear = ppviz.simulate(name, 4, 8, f=1.0, b=1.5, w=0.5, p2p=0.25, host_overhead=[0.1, 0.3, 0.0, 0.2])
    shared = shared_cores.simulate(linear, 4)
    assert shared.result.start == pytest.approx(linear.result.start, abs=1e-9)
    assert shared.result.end == pytest.approx(linear.result.end, abs=1e-9)


@pytest.mark.parametrize("name", UNPAIRED)
def test_on_one_core_without_latency_or_overhead_the_makespan_is_all_the_work(name):
    """Some op can always run (else the order would deadlock), and on one core the ops that run share it
    whole: the core is never idle."""
    linear = ppviz.simulate(name, 4, 8, f=1.0, b=1.5, w=0.5)
    shared = shared_cores.simulate(linear, 1)
    assert shared.metrics.makespan == pytest.approx(float(np.sum(linear.result.end - linear.result.start)))


def test_two_devices_on_one_core_by_hand():
    """GPipe, 2 devices, 2 microbatches, F 1, BW 2 on one core: 0F0 alone 0–1; 0F1 and 1F0 share 1–3; 1F1
    alone 3–4; 1BW0 alone 4–6; 1BW1 and 0BW0 share 6–10; 0BW1 alone 10–12."""
    run = shared_cores.simulate(ppviz.simulate("gpipe", 2, 2, f=1.0, b=2.0, w=0.0), 1)
    times = {f"{d}{k}{m}": (s, e) for d, _, m, k, s, e in run.result.rows()}
    assert times == {"0F0": (0, 1), "0F1": (1, 3), "1F0": (1, 3), "1F1": (3, 4), "1BW0": (4, 6),
                     "1BW1": (6, 10), "0BW0": (6, 10), "0BW1": (10, 12)}  # fmt: skip


def _traces(tmp_path, run) -> list[str]:
    paths = []
    for r, trace in enumerate(rank_traces(run)):
        (tmp_path / f"rank{r}.json").write_text(json.dumps(trace))
        paths.append(str(tmp_path / f"rank{r}.json"))
    return paths


@pytest.mark.parametrize("name, p", [("1f1b", 4), ("interleaved-zb", 3), ("zb-v", 4)])
def test_a_run_on_shared_cores_is_fitted_to_each_ops_own_work(tmp_path, name, p):
    times = [(1.0 + 0.25 * s, 1.5, 0.5) for s in range(p)]
    linear = ppviz.simulate(name, p, 9 if p == 3 else 8, p2p=0.2, stage_times=dict(enumerate(times)),
                            host_overhead=[0.05 * (d + 1) for d in range(p)])  # fmt: skip
    shared = shared_cores.simulate(linear, 2)
    assert shared.metrics.makespan > linear.metrics.makespan
    measured = read_traces(_traces(tmp_path, shared))  # a unit is 1 ms
    c = compare(measured, cores=2)
    want = linear.costs.durations(linear.schedule.stages, p) * 1e-3
    for s in c.fit.stages:
        assert s.f.time == pytest.approx(want[0, s.stage], abs=1e-12) and s.f.low == pytest.approx(s.f.high)
    assert c.fit.p2p.time == pytest.approx(0.2e-3, abs=1e-12)
    assert c.simulated_makespan_s == pytest.approx(c.measured_makespan_s, rel=1e-9)
    assert c.excess_idle_s == pytest.approx([0.0] * p, abs=1e-9) and not c.late_ops
    plain = compare(measured)  # a device per rank: the slowdown is read as longer ops, and the order differs
    assert plain.fit.cores is None and plain.fit.stages[0].f.high > plain.fit.stages[0].f.low


def test_bad_cores_are_refused(capsys):
    with pytest.raises(InputError, match="cores must be a whole number from 1 to 4,096"):
        shared_cores.check_cores(0)
    traces = [str(p) for p in sorted((Path(__file__).parent / "data/measured/torch-2.13/zbv-4r").glob("rank*.gz"))]
    assert main(["measured", *traces, "--cores", "0"]) == 2
    assert "--cores 0 is out of range: it takes 1 to 4,096" in capsys.readouterr().err
    assert main(["measured", *traces, "--cores", "2", "--json", "--what-if", "zb-v"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["fitted"]["cores"] == 2 and any("time-shared 2 cores" in n for n in d["what_if"][0]["notes"])
    assert main(["measured", *traces, "--cores", "8", "--json"]) == 0  # a core per rank: the plain fit
    assert json.loads(capsys.readouterr().out)["fitted"]["cores"] is None


@pytest.mark.parametrize("devices, note", [([], True), ([{"id": 0, "name": "NVIDIA H100"}], False)])
def test_ranks_on_one_host_without_a_gpu_are_pointed_to_cores(tmp_path, devices, note):
    run = ppviz.simulate("1f1b", 2, 4)
    # Kineto writes its header (host_name, deviceProperties) before the events, which is where they are read
    traces = [{"host_name": "laptop", "deviceProperties": devices, **t} for t in rank_traces(run)]
    paths = []
    for r, t in enumerate(traces):
        (tmp_path / f"rank{r}.json").write_text(json.dumps(t))
        paths.append(str(tmp_path / f"rank{r}.json"))
    said = [n for n in read_traces(paths).notes if "ran on one host" in n]
    assert said == ([
        "ranks 0, 1 ran on one host (laptop) without a GPU, so their compute shared its cores: if it has fewer "
        "than 2, fit with --cores N (the page: host cores the ranks shared)"] if note else [])  # fmt: skip
