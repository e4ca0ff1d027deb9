"""The column-wise ``ops[]`` writer against the dict-per-op contract it replaces: same fields, same
order, same exact float64 values, on every schedule and on awkward times; each test with both
writers of the rows (CPython's join, and the numba kernel once numba is loaded)."""

import contextlib
import io
import json
import warnings

import numpy as np
import pytest
from test_formats import overlapped_run

import ppviz
from ppviz import formats, ops_json_kernel
from ppviz.__main__ import main
from ppviz.ops_json import CHUNK_ROWS, _whole, dumps_with_ops, ops_json, write_with_ops
from ppviz.simulator import Result


@pytest.fixture(autouse=True, params=["joined", "compiled"])
def writer(request, monkeypatch):
    """The rows joined by CPython (numba not loaded), or copied by the kernel (numba loaded)."""
    if request.param == "compiled":
        import numba  # noqa: F401  (the kernel runs only in a process that has numba)

        assert ops_json_kernel.warm()
    else:
        monkeypatch.setattr(ops_json_kernel, "_kernel", False)
    return request.param


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


# durations in eighths of a unit: whole steps, and so many (start, duration) pairs that the pair table
# does not pay and the times come from orjson chunk by chunk
MANY_DURATIONS = {
    "stage_times": {0: (1.0, 2.125, 0.5), 1: (1.375, 2.5, 0.25), 2: (0.625, 1.75, 0.875), 3: (2.0, 1.0, 1.5)}
}


@pytest.mark.parametrize(
    "times", [{}, {"f": 1.5, "b": 0.75}, MANY_DURATIONS, AWKWARD], ids=["whole", "grid", "many", "awkward"]
)
@pytest.mark.parametrize("rows", [1, 7, 64])
def test_any_chunk_size_writes_the_same_text(monkeypatch, times, rows):
    """Rows are joined a chunk at a time: the text does not depend on where the chunks end."""
    run = ppviz.simulate("zb-h1", 4, 16, **times)  # 192 rows: 64 divides them, 7 does not
    whole = ops_json(run.result)
    monkeypatch.setattr("ppviz.ops_json.CHUNK_ROWS", rows)
    monkeypatch.setattr("ppviz.ops_json.KERNEL_CHUNK_ROWS", rows)
    assert ops_json(run.result) == whole
    assert json.loads(whole) == run.result.ops()


@pytest.mark.parametrize("times", [{}, MANY_DURATIONS], ids=["few-pairs", "many-pairs"])
def test_times_on_a_grid_are_json_dumps_text_past_a_chunk(times):
    run = ppviz.simulate("interleaved-1f1b", 8, 160, chunks=4, **times)  # 10,240 rows: three chunks
    assert len(run.result) > 2 * CHUNK_ROWS
    assert formats.run_json(run) == json.dumps(run.to_dict())


def test_written_bytes_are_the_text():
    run = ppviz.simulate("zb-h1", 4, 8, **AWKWARD)
    out = io.BytesIO()
    formats.write_run_json(run, out)
    assert out.getvalue() == formats.run_json(run).encode()
    out = io.BytesIO()
    write_with_ops(out, {"run": run.summary()}, run.result, at=("run",))
    assert out.getvalue() == dumps_with_ops({"run": run.summary()}, run.result, at=("run",)).encode()


def test_an_empty_result_is_an_empty_array():
    run = ppviz.simulate("1f1b", 2, 2)
    ints, floats = np.zeros(0, dtype=np.int64), np.zeros(0)
    empty = Result(run.schedule, run.costs, ints, ints, ints, ints, ints, floats, floats, ints, floats, floats)
    assert ops_json(empty, head="{", tail="}") == "{[]}"


def test_the_cli_writes_run_json_to_stdout_bytes(capsys):
    assert main(["simulate", "interleaved-1f1b", "-p", "4", "-m", "8", "-v", "2", "--f", "0.1", "--json"]) == 0
    run = ppviz.simulate("interleaved-1f1b", 4, 8, chunks=2, f=0.1)
    assert capsys.readouterr().out == formats.run_json(run) + "\n"


def test_the_cli_writes_to_a_text_stdout_too():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["simulate", "zb-h1", "-p", "4", "-m", "8", "--json"]) == 0
    assert out.getvalue() == formats.run_json(ppviz.simulate("zb-h1", 4, 8)) + "\n"


def test_times_on_a_grid_are_written_by_the_kernel_once_numba_is_loaded(writer, monkeypatch):
    """Whole steps of 1/2^k: every column a table, so the kernel writes the rows, not the join."""
    run = ppviz.simulate("interleaved-1f1b", 4, 8, chunks=2)
    expected = json.dumps(run.to_dict())
    if writer == "compiled":
        monkeypatch.setattr("ppviz.ops_json._joined", None)  # calling it would fail
    assert formats.run_json(run) == expected


def test_a_kernel_that_cannot_compile_warns_once_and_the_join_writes(monkeypatch):
    """numba present but unable to compile: one warning, then every write joins, the same text."""
    import numba

    run = ppviz.simulate("zb-h1", 4, 8)
    monkeypatch.setattr(ops_json_kernel, "_kernel", None)
    monkeypatch.setattr(ops_json_kernel, "LOAD_AFTER_ROWS", 0)
    monkeypatch.setattr(numba, "njit", lambda **kw: 1 / 0)
    with pytest.warns(RuntimeWarning, match="compiled --json writer is unavailable"):
        assert formats.run_json(run) == json.dumps(run.to_dict())
    assert ops_json_kernel._kernel is False
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no second warning
        assert formats.run_json(run) == json.dumps(run.to_dict())


@pytest.mark.parametrize(
    ("column", "expected"),
    [
        ([0.0, 0.5, 1.5, 3.0], [0, 1, 3, 6]),
        ([0.0, 0.25], None),  # a quarter is not a whole half
        ([0.0, -0.5], None),
        ([0.0, 4.0], None),  # past top
        ([0.0, float("nan")], None),
        ([0.0, float("inf")], None),
        ([0.0, 2.0**40], None),
    ],
)
def test_whole_steps_are_the_same_in_numpy_and_in_the_kernel(writer, column, expected):
    """Whole steps of 1/2 up to 6: the tables' keys, from numpy's passes or the kernel's one."""
    whole = ops_json_kernel.whole if writer == "compiled" else _whole
    got = whole(np.array(column), 2, 6)
    assert (got if got is None else got.tolist()) == expected


def test_the_kernel_loads_for_a_large_write_only(monkeypatch):
    """With numba in the process, a write below ``LOAD_AFTER_ROWS`` rows joins and leaves the
    kernel unloaded (its load would cost more); one that reaches it loads the kernel."""
    import numba  # noqa: F401

    run = ppviz.simulate("1f1b", 4, 8)
    expected = json.dumps(run.to_dict())
    monkeypatch.setattr(ops_json_kernel, "_kernel", None)
    monkeypatch.setattr(ops_json_kernel, "LOAD_AFTER_ROWS", len(run.result) + 1)
    assert formats.run_json(run) == expected
    assert ops_json_kernel._kernel is None
    monkeypatch.setattr(ops_json_kernel, "LOAD_AFTER_ROWS", len(run.result))
    assert formats.run_json(run) == expected
    assert ops_json_kernel._kernel
