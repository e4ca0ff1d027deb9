"""The column-wise ``ops[]`` writer against the dict-per-op contract it replaces: same fields, same
order, same exact float64 values, on every schedule and on awkward times."""

import json

import pytest
from test_formats import overlapped_run

import ppviz
from ppviz import formats
from ppviz.ops_json import dumps_with_ops, ops_json

# times whose shortest text differs between writers (exponents, long fractions, big values)
AWKWARD = {"f": 0.1, "b": 1 / 3, "w": 1e-05, "p2p": 1e-9, "stage_times": {1: (123456789.125, 2.0, 0.7)}}


def _size(spec):
    params = {"chunks": 2} if spec.param("chunks") else {}
    return 4, 8, params


@pytest.mark.parametrize("name", list(ppviz.REGISTRY))
def test_every_schedule_writes_the_ops_the_dicts_give(name):
    p, m, params = _size(ppviz.REGISTRY[name])
    run = ppviz.simulate(name, p, m, **AWKWARD, **params)
    text = formats.run_json(run)
    assert json.loads(text) == json.loads(json.dumps(run.to_dict()))
    assert list(json.loads(text)) == list(run.to_dict())  # the fields in the contract's order
    assert [list(op) for op in json.loads(ops_json(run.result))] == [list(op) for op in run.result.ops()]


def test_overlapped_pairs_and_a_head_and_tail():
    run = overlapped_run()
    assert json.loads(ops_json(run.result, head='{"x":', tail="}")) == {"x": run.result.ops()}


def test_floats_round_trip_exactly():
    run = ppviz.simulate("zb-h1", 4, 8, **AWKWARD)
    ops = json.loads(ops_json(run.result))
    assert [o["start"] for o in ops] == run.result.start.tolist()
    assert [o["end"] for o in ops] == run.result.end.tolist()


@pytest.mark.parametrize(
    ("name", "params"),
    [("1f1b", {}), ("dualpipe", {}), ("zb-v", {"f": 1.5}), ("interleaved-1f1b", {"chunks": 4, "b": 0.75})],
)
def test_plain_times_give_the_same_text_as_json_dumps(name, params):
    """Times on a 1/2^k grid (whole costs, chunk shares) come from a table of repr's: the same text."""
    run = ppviz.simulate(name, 4, 8, **params)
    assert formats.run_json(run) == json.dumps(run.to_dict())


def test_ops_go_into_a_nested_dict_which_is_left_as_it_was():
    run = ppviz.simulate("zb-h1", 4, 8, **AWKWARD)
    outer = {"model": "ops-", "run": run.summary(), "after": [1.5, None]}
    text = dumps_with_ops(outer, run.result, at=("run",))
    assert json.loads(text) == json.loads(json.dumps({**outer, "run": run.to_dict()}))
    assert "ops" not in outer["run"]
