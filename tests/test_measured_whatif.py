"""What-if: a measured run's fitted costs under another schedule, as one `ppviz simulate` command."""

from __future__ import annotations

import gzip
import json
import shlex

import pytest

import ppviz
from ppviz.__main__ import main
from ppviz.measured.compare import compare
from ppviz.measured.read import read_run
from ppviz.measured.synthetic import rank_traces
from ppviz.measured.whatif import share_times, what_if


def _write(tmp_path, run) -> list[str]:
    paths = []
    for r, trace in enumerate(rank_traces(run)):  # 1 ppviz time unit = 1 ms
        path = tmp_path / f"rank{r}.json.gz"
        path.write_bytes(gzip.compress(json.dumps(trace).encode()))
        paths.append(str(path))
    return paths


CASES = [  # (measured schedule, p, m, its costs in ms, what-if schedule)
    ("1f1b", 4, 8, dict(f=1.0, b=2.0, w=0.0, p2p=0.1), "zb-v"),
    ("zb-h1", 3, 6, dict(f=1.0, b=1.0, w=0.75, p2p=0.2), "zb-v"),
    ("interleaved-1f1b", 2, 4, dict(f=1.0, b=1.5, w=0.5, p2p=0.1, chunks=2), "1f1b"),
]


@pytest.mark.parametrize("measured, p, m, costs, target", CASES, ids=[c[0] for c in CASES])
def test_the_fitted_costs_under_another_schedule_are_that_schedule_under_the_known_costs(
    tmp_path, measured, p, m, costs, target
):
    """A synthetic run with known costs: its what-if under another schedule is that schedule simulated with
    the same costs (a full backward goes into B, W 0)."""
    run = read_run(_write(tmp_path, ppviz.simulate(measured, p, m, **costs)))
    got = what_if(compare(run).fit, target, run.ranks, run.microbatches)
    split = measured.startswith("zb")  # the zero-bubble schedules run B and W apart; the others one backward
    b, w = (costs["b"], costs["w"]) if split else (costs["b"] + costs["w"], 0.0)
    expected = ppviz.simulate(target, p, m, f=costs["f"], b=b, w=w, p2p=costs["p2p"]).metrics.makespan
    assert got.makespan_s * 1e3 == pytest.approx(expected, rel=1e-9)
    assert bool(got.notes) == (not split)


def test_the_same_schedule_gives_back_the_compared_simulation(tmp_path):
    """Under its own schedule (one stage per rank), the what-if is the simulation the comparison made."""
    run = read_run(_write(tmp_path, ppviz.simulate("1f1b", 4, 8, f=1.0, b=2.0, w=0.0, p2p=0.1)))
    c = compare(run)
    assert what_if(c.fit, "1f1b", 4, 8).makespan_s == pytest.approx(c.simulated_makespan_s, rel=1e-9)


def test_shares_sum_the_stages_they_cover(tmp_path):
    """Four stages on two ranks (interleaved): share 0 is stages 0 and 1, share 1 stages 2 and 3."""
    run = read_run(_write(tmp_path, ppviz.simulate("interleaved-1f1b", 2, 4, f=1.0, b=1.5, w=0.5, chunks=2)))
    shares = share_times(compare(run).fit, 2)
    # each stage ran at its share's times × p/S = half: two stages give back the share's (f, b + w, 0)
    assert shares == {i: pytest.approx((1e-3, 2e-3, 0.0)) for i in (0, 1)}


def test_the_cli_prints_a_command_that_gives_the_same_makespan(tmp_path, capsys):
    files = _write(tmp_path, ppviz.simulate("zb-h1", 3, 6, f=1.0, b=1.0, w=0.75, p2p=0.2))
    assert main(["measured", *files, "--what-if", "zb-v", "--json"]) == 0
    (w,) = json.loads(capsys.readouterr().out)["what_if"]
    assert w["schedule"] == "zb-v" and w["command"].startswith("ppviz simulate zb-v --devices 3 --microbatches 6")
    assert main(shlex.split(w["command"])[1:] + ["--json"]) == 0
    assert json.loads(capsys.readouterr().out)["makespan"] == pytest.approx(w["makespan_s"] * 1e3, rel=1e-9)
    assert main(["measured", *files, "--what-if", "zb-v"]) == 0
    assert "under zb-v: makespan" in capsys.readouterr().out
    assert main(["measured", *files, "--what-if", "no-such"]) == 2
    assert "unknown schedule 'no-such'" in capsys.readouterr().err
