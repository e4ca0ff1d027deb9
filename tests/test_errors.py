"""Input errors name the input they belong to, so every surface can put them beside it."""

from __future__ import annotations

import pytest

import ppviz
from ppviz.errors import InputError
from ppviz.estimate import Layout, estimate, model, override
from ppviz.iterations import microbatches_for_batch
from ppviz.search.space import Options

CASES = {
    "unknown schedule": (lambda: ppviz.simulate("nope", 4, 8), "schedule"),
    "devices below 1": (lambda: ppviz.simulate("1f1b", 0, 8), "devices"),
    "microbatches not whole": (lambda: ppviz.simulate("1f1b", 4, 2.5), "microbatches"),
    "chunks out of range": (lambda: ppviz.simulate("interleaved-1f1b", 4, 8, chunks=0), "chunks"),
    "a schedule's own rule": (lambda: ppviz.simulate("interleaved-1f1b", 4, 2, chunks=2), "microbatches"),
    "dualpipe odd devices": (lambda: ppviz.simulate("dualpipe", 3, 12), "devices"),
    "negative F": (lambda: ppviz.simulate("1f1b", 4, 8, f=-1), "f"),
    "overlap 0": (lambda: ppviz.make_costs(overlap=0), "overlap"),
    "b_frees past 1": (lambda: ppviz.make_costs(b_frees=2), "b_frees"),
    "all times 0": (lambda: ppviz.make_costs(f=0, b=0, w=0), "f"),
    "stage past the devices": (lambda: ppviz.simulate("1f1b", 2, 4, stage_times={5: (1, 1, 1)}), "stage_times"),
    "unreadable order": (lambda: ppviz.from_torch_csv("0F0,zz"), "order"),
    "batch not a multiple": (lambda: microbatches_for_batch(10, 4), "gbs"),
    "tp 0": (lambda: Layout(tp=0), "tp"),
    "unknown recompute": (lambda: Layout(recompute="some"), "recompute"),
    "gbs not a multiple of dp·mbs": (lambda: Layout(dp=3, gbs=16).microbatches, "gbs"),
    "kv heads": (lambda: override(model("llama3-8b"), kv_heads=5), "kv_heads"),
    "tp must divide the heads": (lambda: estimate("llama3-8b", "h100-sxm", Layout(tp=3, gbs=8)), "tp"),
    "vpp on a one-chunk schedule": (
        lambda: estimate("llama3-8b", "h100-sxm", Layout(pp=4, vpp=2, gbs=8, schedule="1f1b")),
        "vpp",
    ),
    "search zero stage": (lambda: Options(zero=(4,)), "zero"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_an_input_error_names_its_field(case):
    call, field = CASES[case]
    with pytest.raises(InputError) as err:
        call()
    assert err.value.field == field, f"{case}: {err.value}"
    assert str(err.value)  # and still says what to change


def test_input_errors_are_value_errors_for_callers_that_catch_those():
    with pytest.raises(ValueError):
        ppviz.simulate("1f1b", 0, 8)
