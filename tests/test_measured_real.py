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
    assert "no pipeline actions" in err and "_PipelineScheduleRuntime" in err and "Traceback" not in err


# Recorded on a quiet machine (load 0-2.5, tests/data/measured/README.md), 7 of the 10 annotated runs meet
# the 10% on every rank (docs/measured.md lists every rank's error). Three do not, for reasons the model
# does not carry (strict: a run that meets it must leave this set):
MISSES_TARGET = {
    # torch's GPipe step waits on its sends at its end (a gloo send completes when received), and on 2 ranks
    # its ranks idle beyond what the fitted costs imply (measured span 57 ms, simulated 44 ms)
    "gpipe-2r": "torch's GPipe waits on sends and receives beyond the fitted costs",
    "gpipe-4r": "ranks 2 and 3 wait at the step's end for their sends to be received (the makespan matches)",
    # 4 ranks on 2 cores: an op's time depends on how many ranks compute at once, more so as W ops fill gaps
    "zb-interleaved-4r": "4 ranks share 2 cores: op times depend on how many ranks compute at once",
}


@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=pytest.mark.xfail(reason=MISSES_TARGET[n], strict=True))
     if n in MISSES_TARGET else n for n in ANNOTATED],
)  # fmt: skip
def test_the_fitted_simulation_matches_each_ranks_step_time(name):
    """Each rank's step (``schedule.step``'s wall time) against the simulated end of that rank's last op,
    both from the step's start: a rank that finishes early in the schedule finishes early in both."""
    c = compare(read_run(_traces(name)))
    r = c.simulated.result
    ends = [float(r.end[r.device == d].max() - r.start.min()) for d in range(c.run.ranks)]
    settings = json.loads((DATA / name / "step_times.json").read_text())
    steps = [[s["step_s"] for s in x["steps"] if s["profiled"]][-1] for x in settings["per_rank"]]
    errors = [end / step - 1 for end, step in zip(ends, steps, strict=True)]
    assert max(abs(e) for e in errors) <= TARGET, [f"{e:+.1%}" for e in errors]
