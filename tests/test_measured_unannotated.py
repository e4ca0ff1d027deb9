"""Unannotated Kineto traces named by a known order: torch 2.13's Schedule1F1B runs import by ``--order`` and by
``--schedule``; on annotated runs, ignoring the annotations and naming by the order gives the annotated
reading's actions; the fitted simulation meets each rank's step time; bad inputs get clear messages."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from ppviz import formats
from ppviz.__main__ import main
from ppviz.errors import InputError
from ppviz.ir import Kind
from ppviz.measured.read import read_run
from ppviz.measured.unannotated import CpuOps, segments

DATA = Path(__file__).parent / "data" / "measured" / "torch-2.13"
UNANNOTATED = ["1f1b-2r", "1f1b-4r"]
# annotated runs with full backwards (one stage per rank, and two for interleaved 1F1B): their annotations
# check the naming by order
CHECKABLE = ["gpipe-2r", "gpipe-4r", "1f1b-runtime-2r", "1f1b-runtime-4r", "interleaved-1f1b-2r", "interleaved-1f1b-4r"]


def _traces(run: str) -> list[str]:
    return [str(p) for p in sorted((DATA / run).glob("rank*.trace.json.gz"))]


def _order(run: str, kind: str = "compute") -> str:
    return str(DATA / run / f"order_{kind}.csv")


def _key(run) -> list[list[tuple]]:
    return [[(op.rank, op.stage, op.microbatch, op.kind) for op in row] for row in run.ops]


def _compute(run: str) -> tuple:
    order = formats.read_torch_csv(Path(_order(run)).read_text()).order
    return tuple(tuple(a for a in row if a is not None) for row in order)


@pytest.mark.parametrize("name", UNANNOTATED)
def test_schedule1f1b_runs_import_by_their_order_and_by_the_schedule_alike(name):
    by_file = read_run(_traces(name), order=_order(name))
    assert by_file.schedule().order == _compute(name)  # each rank ran its row, in its order
    assert all(0 <= op.start < op.end for row in by_file.ops for op in row)
    assert {op.kind for row in by_file.ops for op in row} == {Kind.F, Kind.BW}
    assert any("no annotations: compute named by the order of" in n for n in by_file.notes)
    by_schedule = read_run(_traces(name), schedule="1f1b")
    assert by_schedule.ops == by_file.ops and by_schedule.comms == by_file.comms
    assert any("named by the schedule 1f1b" in n for n in by_schedule.notes)
    assert read_run(_traces(name), order=_order(name, "comms")).ops == by_file.ops  # compute+comms CSV too
    # every send and receive is labelled: a send by the segment that posted it, a receive by the op it fed
    p2p = [c for c in by_file.comms if c.what in ("send", "recv")]
    assert p2p and all(c.direction is not None and c.peer is not None and c.peer != c.rank for c in p2p)


@pytest.mark.parametrize("name", CHECKABLE)
def test_naming_by_order_gives_the_annotated_reading(name):
    """The same (rank, stage, microbatch, kind) sequence in every profiled step. Times differ in how an op
    is bounded: by its annotation span, or by its first and last operator (through posting its send). The
    difference is Python with no operator at the edges (tens of µs), time the rank was descheduled (4 ranks
    on 2 cores) and, on GPipe's last stage, the loss, computed after its Forward span. So each segment must
    overlap its annotated op by at least half the shorter of the two (it is the same work), and the
    median edge difference must stay under 0.25 ms, a quarter of the shortest fitted op (~1 ms)."""
    for step in (4, 5):
        annotated = read_run(_traces(name), iteration=step)
        ordered = read_run(_traces(name), iteration=step, order=_order(name), ignore_annotations=True)
        assert _key(ordered) == _key(annotated), step
        pairs = [(a, u) for ra, ru in zip(annotated.ops, ordered.ops) for a, u in zip(ra, ru)]
        for a, u in pairs:
            overlap = min(a.end, u.end) - max(a.start, u.start)
            assert overlap >= 0.5 * min(a.duration, u.duration), (step, a, u)
        assert statistics.median(abs(u.start - a.start) for a, u in pairs) < 0.25e-3
        assert statistics.median(abs(u.end - a.end) for a, u in pairs) < 0.25e-3


def test_annotated_traces_keep_their_annotations_when_an_order_is_given():
    run = read_run(_traces("gpipe-2r"), order=_order("gpipe-2r"))
    assert run.ops == read_run(_traces("gpipe-2r")).ops
    assert any("the traces are annotated" in n and "--ignore-annotations" in n for n in run.notes)


def _refused(capsys, *argv) -> str:
    assert main(["measured", *argv]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


def test_an_order_of_other_counts_is_refused_naming_the_rank(capsys):
    other = str(DATA.parent / "torch-older-naming" / "1f1b-2r-4mb.order_comms.csv")  # 4 microbatches
    err = _refused(capsys, *_traces("1f1b-2r"), "--order", other)
    forwards = sum(a.kind == Kind.F for a in _compute("1f1b-2r")[0])
    assert f"rank 0 ran {forwards} forward and {forwards} backward segments" in err
    assert "has 4 F and 4 B for it" in err


def test_an_order_for_another_rank_count_is_refused(capsys):
    err = _refused(capsys, *_traces("1f1b-2r"), "--order", _order("1f1b-4r"))
    assert "is an order for 4 ranks, but the traces are of 2 ranks" in err


@pytest.mark.parametrize(("schedule", "why"), [("interleaved-1f1b", "several stages per rank"),
                                               ("zb-h1", "splits its backward"),
                                               ("1f1b-overlap", "overlaps a forward and a backward")])  # fmt: skip
def test_a_schedule_without_one_stage_per_rank_and_full_backwards_is_refused(capsys, schedule, why):
    err = _refused(capsys, *_traces("1f1b-2r"), "--schedule", schedule)
    assert why in err and "--order" in err and "gpipe, 1f1b" in err


def test_an_order_with_split_backwards_is_refused_saying_they_cannot_be_told_apart(capsys):
    err = _refused(capsys, *_traces("1f1b-2r"), "--order", _order("zbv-2r"))
    assert "split backwards (I and W) cannot be told apart in unannotated traces" in err


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--schedule", "1f1b", "--order", "X"], "--order FILE or --schedule NAME, not both"),
        (["--ignore-annotations"], "needs an order to name the compute by"),
        (["--schedule", "1f1b", "--pattern", "(?P<kind>F)(?P<microbatch>\\d)"], "give one way of naming"),
        (["--schedule", "nope"], "unknown schedule 'nope'"),
    ],
)
def test_contradictory_naming_options_are_refused(capsys, extra, said):
    extra = [_order("1f1b-2r") if x == "X" else x for x in extra]
    assert said in _refused(capsys, *_traces("1f1b-2r"), *extra)


def test_an_order_for_a_file_that_is_not_a_trace_is_refused():
    with pytest.raises(InputError, match="name the compute of profiler traces"):
        read_run([_order("1f1b-2r")], schedule="1f1b")


def test_unannotated_traces_without_an_order_say_what_to_give(capsys):
    err = _refused(capsys, *_traces("1f1b-2r"))
    assert "no pipeline actions" in err and "--order FILE" in err and "--schedule NAME" in err


def test_the_json_keeps_its_shape_and_says_how_ops_were_named(capsys):
    assert main(["measured", *_traces("1f1b-2r"), "--schedule", "1f1b", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert main(["measured", *_traces("gpipe-2r"), "--json"]) == 0
    assert set(d) == set(json.loads(capsys.readouterr().out))
    assert any(n.startswith("no annotations: compute named by the schedule 1f1b") for n in d["notes"])


# --- the segmentation rules, on operators made by hand (µs; one thread unless said) -------------------------


def _segments(ops: list[tuple], optimizer: tuple = (), main: int = 1) -> list[tuple]:
    cpu = CpuOps()
    for name, start, end, *tid in ops:
        cpu.take(name, "cpu_op", start, end, tid[0] if tid else main)
    for start, end in optimizer:
        cpu.take("Optimizer.step#SGD.step", "user_annotation", start, end, main)
    return [(s.kind, s.start, s.end, tuple(s.sends)) for s in segments(cpu, 0, 1000, main)]


def test_a_segment_is_a_run_of_one_class_between_communications():
    ops = [("aten::tensor_split", 0, 5),  # the microbatch split: bookkeeping, dropped
           ("aten::linear", 10, 20), ("aten::addmm", 11, 19),  # nested: only the top level counts
           ("aten::relu", 21, 25), ("aten::detach", 26, 27),
           ("c10d::send", 30, 35), ("c10d::recv_", 31, 33),  # its send carries the forward's output
           ("c10d::recv_", 40, 42),
           ("autograd::engine::evaluate_function: AddmmBackward0", 50, 60),
           ("aten::linear", 62, 70),  # no communication between, but another class: a new segment
           ("c10d::send", 71, 72),
           ("autograd::engine::evaluate_function: AddmmBackward0", 80, 90),
           ("aten::div_", 95, 96), ("aten::cat", 97, 98)]  # fmt: skip  # after the last backward: dropped
    assert _segments(ops) == [("F", 10, 27, ((30, 35),)), ("B", 35, 60, ()), ("F", 60, 70, ((71, 72),)),
                              ("B", 72, 90, ())]  # fmt: skip


def test_gradient_scaling_between_backwards_is_not_a_forward():
    """With two stages per rank, one stage reduces (scales) its gradients while the other still has backwards."""
    ops = [("autograd::engine::evaluate_function: AddmmBackward0", 10, 20), ("c10d::send", 21, 22),
           ("aten::div_", 30, 31), ("aten::mul_", 32, 33), ("aten::detach", 34, 35),
           ("c10d::recv_", 40, 41), ("autograd::engine::evaluate_function: AddmmBackward0", 50, 60)]  # fmt: skip
    assert [(s[0], s[1]) for s in _segments(ops)] == [("B", 10), ("B", 35)]
    inplace = [("aten::linear", 10, 20), ("aten::div_", 21, 22), ("c10d::send", 23, 24)]  # inside a forward: kept
    assert _segments(inplace) == [("F", 10, 22, ((23, 24),))]


def test_optimizer_operators_and_bookkeeping_runs_are_not_compute():
    ops = [("aten::zero_", 1, 2), ("aten::linear", 10, 20), ("c10d::send", 21, 22),
           ("autograd::engine::evaluate_function: MseLossBackward0", 30, 40), ("aten::detach_", 41, 42),
           ("c10d::send", 43, 44), ("aten::ones_like", 50, 51), ("c10d::recv_", 52, 53)]  # fmt: skip
    got = _segments(ops, optimizer=[(0, 3)])
    assert got == [("F", 10, 20, ((21, 22),)), ("B", 22, 42, ((43, 44),))]


def test_backwards_of_the_autograd_engines_device_thread_are_taken():
    ops = [("aten::linear", 10, 20), ("c10d::send", 21, 22),
           ("autograd::engine::evaluate_function: AddmmBackward0", 30, 40, 7),
           ("aten::add", 32, 33, 7)]  # fmt: skip  # another thread's forward-class ops are not the rank's
    assert [s[0] for s in _segments(ops)] == ["F", "B"]


def test_operators_inside_a_kept_one_are_dropped_as_they_stream():
    cpu = CpuOps()
    for name, start, end in [("aten::linear", 0, 10), ("aten::t", 1, 2), ("aten::addmm", 2, 9), ("aten::relu", 11, 12)]:
        cpu.take(name, "cpu_op", start, end, 1)
    assert [(o[0], o[1]) for o in cpu.ops] == [(0, 10), (11, 12)]
