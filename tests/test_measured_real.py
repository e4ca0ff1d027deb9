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
RUNS = sorted(p.name for p in DATA.iterdir() if p.is_dir())
ANNOTATED = [r for r in RUNS if not r.startswith("1f1b-") or r.startswith("1f1b-runtime")]
TARGET = 0.10  # the issue's: the fitted simulation within 10% of each rank's measured step time


def _traces(run: str) -> list[str]:
    return [str(p) for p in sorted((DATA / run).glob("rank*.trace.json.gz"))]


@pytest.mark.parametrize("name", RUNS)
def test_every_real_trace_set_imports(name):
    run = read_run(_traces(name))
    settings = json.loads((DATA / name / "step_times.json").read_text())
    assert run.format == "kineto" and run.ranks == settings["ranks"] and run.iteration == 5
    assert any("ProfilerStep#5, the last" in n for n in run.notes)
    assert {c.what for c in run.comms} == {"send", "recv"} and all(c.start <= c.end for c in run.comms)
    if name not in ANNOTATED:  # Schedule1F1B annotates nothing: imported, and said
        assert not any(run.ops) and any("does not annotate" in n and "--pattern" in n for n in run.notes)
        return
    compute = formats.read_torch_csv((DATA / name / "order_compute.csv").read_text())
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


# Recorded on a quiet machine (load 0-2.5, tests/data/measured/README.md), 7 of the 12 runs meet the 10% on
# every rank (docs/measured.md lists every rank's error). Five do not, for reasons the model does not carry
# (strict: a run that meets it must leave this set):
MISSES_TARGET = {
    # the step end counts its sends' receipt (rank 1: -25.4% → -19.0%), but the ranks idle beyond what the
    # fitted costs imply all through the step: measured span 57.3 ms, simulated 44.0 ms (rank 0: -24.3%)
    "gpipe-2r": "torch's GPipe on 2 ranks idles beyond the fitted costs (span 57.3 ms measured, 44.0 simulated)",
    # rank 3's step ends when rank 2 receives its last gradient (-38.0% → -27.8%; rank 2 -39.9% → -8.1%), but
    # rank 2 runs its backwards 24 ms later than the model (its 2B7 starts at 85.9 ms, simulated 61.7 ms):
    # 4 ranks on 2 cores, its receives wait beyond the transfers
    "gpipe-4r": "rank 2's backwards run 24 ms after the model's, so rank 3's last send is received late",
    # 4 ranks on 2 cores: an op's time depends on how many ranks compute at once, more so as W ops fill gaps
    "zb-interleaved-4r": "4 ranks share 2 cores: op times depend on how many ranks compute at once",
    # Schedule1F1B's unannotated runs, named by their order_compute.csv: both miss because their ops ran
    # longer than their medians, which is what the simulation runs
    "1f1b-2r": "simulated step -10.5%, -11.8%: the ranks' ops sum to 22.6 and 32.6 ms, 21.0 and 30.3 ms at "
    "their medians (rank 0's last backwards take 3.5 and 1.9 ms, median 1.6), and the ranks idle 1.6 and "
    "0.9 ms beyond the bubble",
    "1f1b-4r": "simulated step -15.9%, -12.9%, -16.4%, -15.9%: 4 ranks on 2 cores; rank 0's ops sum to 49.2 ms, "
    "30.1 ms at their medians, and ranks 1-3 idle 13.1, 12.3, 8.6 ms beyond the bubble",
}
STEP_END_WITHIN = 0.05  # the trace's step end (last op or comm) against schedule.step's wall time


def _step_times(name: str) -> list[float]:
    settings = json.loads((DATA / name / "step_times.json").read_text())
    return [[s["step_s"] for s in x["steps"] if s["profiled"]][-1] for x in settings["per_rank"]]


@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=pytest.mark.xfail(reason=MISSES_TARGET[n], strict=True))
     if n in MISSES_TARGET else n for n in RUNS],
)  # fmt: skip
def test_the_fitted_simulation_matches_each_ranks_step_time(name):
    """Each rank's step (``schedule.step``'s wall time) against its simulated step end: the later of its last
    op's end and its last send's receipt (the step waits for its sends), both from the step's start. Runs
    without annotations are named by their own ``order_compute.csv``."""
    order = None if name in ANNOTATED else str(DATA / name / "order_compute.csv")
    c = compare(read_run(_traces(name), order=order))
    errors = [end / step - 1 for end, step in zip(c.simulated_step_s, _step_times(name), strict=True)]
    assert max(abs(e) for e in errors) <= TARGET, [f"{e:+.1%}" for e in errors]


@pytest.mark.parametrize("name", ANNOTATED)
def test_the_traces_step_end_is_the_steps_wall_time(name):
    """What the CLI calls the measured step (a rank's last op or comm event, its sends' receipts included)
    is ``schedule.step``'s wall time: the two compare like for like with the simulated step."""
    c = compare(read_run(_traces(name)))
    errors = [end / step - 1 for end, step in zip(c.measured_step_s, _step_times(name), strict=True)]
    assert max(abs(e) for e in errors) <= STEP_END_WITHIN, [f"{e:+.1%}" for e in errors]
