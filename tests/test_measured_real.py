"""The real torch 2.13 CPU pipelining runs of tests/data/measured: every file imports, and the fitted
simulation of each annotated run is compared with every rank's measured step time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ppviz import formats
from ppviz.__main__ import main
from ppviz.ir import Kind
from ppviz.measured.compare import compare
from ppviz.measured.read import read_run

DATA = Path(__file__).parent / "data" / "measured" / "torch-2.13"
DEVICE = DATA.with_name("torch-2.13-device")  # the same runs, each block waiting for an emulated device
RUNS = sorted(p.name for p in DATA.iterdir() if p.is_dir())
DEVICE_RUNS = sorted(p.name for p in DEVICE.iterdir() if p.is_dir())
ANNOTATED = [r for r in RUNS if not r.startswith("1f1b-") or r.startswith("1f1b-runtime")]
TARGET = 0.10  # the issue's: the fitted simulation within 10% of each rank's measured step time


def _traces(run: str, data: Path = DATA) -> list[str]:
    return [str(p) for p in sorted((data / run).glob("rank*.trace.json.gz"))]


@pytest.mark.parametrize("data", [DATA, DEVICE], ids=["cpu", "device"])
@pytest.mark.parametrize("name", RUNS)
def test_every_real_trace_set_imports(name, data):
    run = read_run(_traces(name, data))
    settings = json.loads((data / name / "step_times.json").read_text())
    assert run.format == "kineto" and run.ranks == settings["ranks"] and run.iteration == 5
    assert any("ProfilerStep#5, the last" in n for n in run.notes)
    assert any(n.startswith(f"ranks {', '.join(map(str, range(run.ranks)))} ran on one host (vm) without a GPU")
               for n in run.notes)  # fmt: skip
    assert {c.what for c in run.comms} == {"send", "recv"} and all(c.start <= c.end for c in run.comms)
    if name not in ANNOTATED:  # Schedule1F1B annotates nothing: imported, and said
        assert not any(run.ops) and any("does not annotate" in n and "--pattern" in n for n in run.notes)
        return
    compute = formats.read_torch_csv((data / name / "order_compute.csv").read_text())
    assert run.schedule().order == tuple(tuple(a for a in row if a is not None) for row in compute.order)
    assert all(0 <= op.start < op.end for row in run.ops for op in row)
    if name.startswith("gpipe"):
        assert {op.kind for row in run.ops for op in row} == {Kind.F, Kind.BW}
    labelled = [c for c in run.comms if c.direction is not None]
    assert labelled and all(c.peer is not None and c.peer != c.rank for c in labelled)


@pytest.mark.parametrize("name", ["1f1b-2r", "1f1b-4r"])
def test_a_run_without_annotations_is_refused_with_what_to_do(capsys, name):
    assert main(["measured", *_traces(name)]) == 2
    err = capsys.readouterr().err
    assert "no pipeline actions" in err and "--order FILE" in err and "Traceback" not in err


CORES = 2  # the recording machine's: the 4-rank runs time-shared them (tests/data/measured/README.md)
STEP_END_WITHIN = 0.05  # the trace's step end (last op or comm) against schedule.step's wall time


def _step_times(run_dir: Path) -> dict[int, list[float]]:
    """Per profiled step (``ProfilerStep#N``, N from the profiler's schedule), each rank's wall time of
    ``schedule.step``."""
    settings = json.loads((run_dir / "step_times.json").read_text())
    first = settings["profiler_schedule"]["wait"] + settings["profiler_schedule"]["warmup"]
    per_rank = [[s["step_s"] for s in x["steps"] if s["profiled"]] for x in settings["per_rank"]]
    return {first + k: list(step) for k, step in enumerate(zip(*per_rank))}


def _step_errors(run_dir: Path, iteration: int | None = None, cores: int | None = None) -> list[float]:
    """Each rank's simulated step end (the later of its last op's end and its last send's receipt, from the
    step's first op) under the costs fitted from that step, against the step's wall time. Runs without
    annotations are named by their own ``order_compute.csv``."""
    traces = [str(p) for p in sorted(run_dir.glob("rank*.trace.json.gz"))]
    order = None if run_dir.name in ANNOTATED else str(run_dir / "order_compute.csv")
    c = compare(read_run(traces, order=order, iteration=iteration), cores=cores)
    walls = _step_times(run_dir)[c.run.iteration]
    return [end / step - 1 for end, step in zip(c.simulated_step_s, walls, strict=True)]


@pytest.mark.parametrize("name", RUNS)
def test_the_fitted_simulation_matches_each_ranks_step_time(name):
    """The kept (last) profiled step of every run, every rank, fitted and simulated with the machine's 2 cores
    (the 4-rank runs time-shared them; on 2 ranks each has a core and this is the plain fit)."""
    errors = _step_errors(DATA / name, cores=CORES)
    assert max(abs(e) for e in errors) <= TARGET, [f"{e:+.1%}" for e in errors]


@pytest.mark.parametrize("name", [n for n in RUNS if n.endswith("-2r")])
def test_with_a_core_per_rank_the_plain_fit_is_the_same(name):
    assert _step_errors(DATA / name, cores=CORES) == _step_errors(DATA / name)


@pytest.mark.parametrize("iteration", [4, 5])
@pytest.mark.parametrize("name", DEVICE_RUNS)
def test_with_a_device_per_rank_every_step_of_every_run_is_matched(name, iteration):
    """With an emulated device per block (ranks no longer time-share the cores), both profiled steps of all
    twelve runs, every rank."""
    errors = _step_errors(DEVICE / name, iteration)
    assert max(abs(e) for e in errors) <= TARGET, [f"{e:+.1%}" for e in errors]


@pytest.mark.parametrize("name", ANNOTATED)
def test_the_traces_step_end_is_the_steps_wall_time(name):
    """What the CLI calls the measured step (a rank's last op or comm event, its sends' receipts included)
    is ``schedule.step``'s wall time: the two compare like for like with the simulated step."""
    c = compare(read_run(_traces(name)))
    errors = [end / step - 1 for end, step in zip(c.measured_step_s, _step_times(DATA / name)[5], strict=True)]
    assert max(abs(e) for e in errors) <= STEP_END_WITHIN, [f"{e:+.1%}" for e in errors]
