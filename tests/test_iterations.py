"""Sizing a run by batch (CLI and core), and where each iteration ends (for the page and real units)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import ppviz
from ppviz.__main__ import main
from ppviz.iterations import iteration_ends, iterations, microbatches_for_batch


def run_cli(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(("gbs", "mbs", "m"), [(64, 8, 8), (32, 8, 4), (8, 8, 1), (96, 1, 96)])
def test_microbatches_are_the_global_batch_over_the_micro_batch_size(gbs, mbs, m):
    assert microbatches_for_batch(gbs, mbs) == m


@pytest.mark.parametrize(("gbs", "mbs", "words"), [(64, 6, "not a multiple"), (4, 8, "not a multiple"),
                                                   (0, 8, "global batch"), (8, 0, "micro-batch size")])  # fmt: skip
def test_sizes_that_do_not_divide_are_value_errors(gbs, mbs, words):
    with pytest.raises(ValueError, match=words):
        microbatches_for_batch(gbs, mbs)


def test_cli_gbs_and_mbs_give_the_same_run_as_microbatches(capsys):
    code, out, _ = run_cli(capsys, "simulate", "1f1b", "-p", 4, "--gbs", 64, "--mbs", 8, "--iterations", 2, "--json")
    assert code == 0
    by_batch = json.loads(out)
    code, out, _ = run_cli(capsys, "simulate", "1f1b", "-p", 4, "-m", 8, "--iterations", 2, "--json")
    assert json.loads(out) == by_batch
    assert by_batch["makespan"] == 2 * (8 + 4 - 1) * 3


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--gbs", 64, "--mbs", 6], "global batch 64 is not a multiple of micro-batch size 6"),
        (["--gbs", 64], "--gbs with --mbs"),
        (["--mbs", 8], "--gbs with --mbs"),
        (["--gbs", 64, "--mbs", 8, "-m", 8], "not both"),
        (["--gbs", 64, "--mbs", "x"], "whole number"),
    ],
)
def test_cli_batch_sizes_that_do_not_fit_print_one_line_and_exit_2(capsys, args, words):
    code, out, err = run_cli(capsys, "simulate", "gpipe", "-p", 4, *args)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("ppviz: error:")
    assert words in err


def test_iteration_ends_mark_the_flush_of_each_iteration():
    """1F1B, p = 4, m = 4, f = b = w = 1, 2 iterations: device d ends iteration i's backwards at
    (i+1)·21 − 2d; the next iteration's first forward starts at the largest of them."""
    run = ppviz.simulate("1f1b", 4, 4, iterations=2)
    assert iterations(run.schedule) == (2, 4)
    ends = iteration_ends(run.result)
    assert ends.tolist() == [[21 - 2 * d for d in range(4)], [42 - 2 * d for d in range(4)]]
    res = run.result
    second = res.microbatch >= 4
    assert res.start[second].min() == ends[0].max()


def test_iteration_ends_without_a_flush_overlap_the_next_iteration():
    """PipeDream-2BW: device 0 ends iteration 0 at 21 (as with a flush) but iteration 1 follows
    12 later, not 21, and its forwards started before that end."""
    run = ppviz.simulate("1f1b-2bw", 4, 4, iterations=2)
    ends = iteration_ends(run.result)
    assert ends[:, 0].tolist() == [21, 33]
    assert run.result.start[run.result.microbatch >= 4].min() < ends[0].max()


def test_a_schedule_without_iterations_is_one_iteration():
    run = ppviz.simulate("zb-h1", 4, 8)
    assert iterations(run.schedule) == (1, 8)
    ends = iteration_ends(run.result)
    assert ends.shape == (1, 4) and np.array_equal(ends[0], np.asarray(run.metrics.span) + np.arange(4))
