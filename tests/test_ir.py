"""The schedule IR: actions, placements, schedules and the PyTorch compute-only CSV form."""

from __future__ import annotations

import numpy as np
import pytest
from checks import schedule_kwargs

import ppviz
from ppviz.ir import (
    BW,
    Action,
    B,
    F,
    Kind,
    Overlap,
    Placement,
    Row,
    W,
    from_torch_csv,
    make_schedule,
    parse_action,
    parse_torch_rows,
    stack_rows,
    to_torch_csv,
)


def test_actions_print_with_pytorch_letters():
    """I is our input-grad B, B is our full backward BW, F and W keep their letters."""
    assert [str(Action(0, 3, F)), str(Action(2, 1, B)), str(Action(2, 1, W)), str(Action(1, 0, BW))] == [
        "0F3",
        "2I1",
        "2W1",
        "1B0",
    ]


@pytest.mark.parametrize(
    ("text", "action"),
    [("0F3", Action(0, 3, F)), ("2I1", Action(2, 1, B)), ("2W1", Action(2, 1, W)), ("1B0", Action(1, 0, BW))],
)
def test_parse_action_reads_pytorch_letters(text, action):
    """Each PyTorch kind letter maps to its own kind, and printing gives the text back."""
    assert parse_action(text) == action
    assert str(parse_action(text)) == text


def test_overlapped_pair_text_round_trips():
    """A pair prints as ``(a;b)OVERLAP_F_B`` and parses back to the same two actions."""
    pair = Overlap(Action(0, 7, F), Action(7, 3, BW))
    assert str(pair) == "(0F7;7B3)OVERLAP_F_B"
    assert parse_action("(0F7;7B3)OVERLAP_F_B") == pair


def test_multi_digit_stages_and_microbatches_parse():
    """Stage and microbatch are whole numbers of any length."""
    assert parse_action("12W345") == Action(12, 345, W)


@pytest.mark.parametrize("text", ["0X1", "F01", "0F", "F", "0F1x", "-1F0", "0BW1", "(0F1)OVERLAP_F_B", "(0F1;1F0)"])
def test_parse_action_rejects_malformed_text(text):
    """Anything that is not stage-letter-microbatch or a pair is a ValueError that shows the form."""
    with pytest.raises(ValueError, match="cannot read action"):
        parse_action(text)


def test_placement_standard_puts_one_stage_per_device():
    """Stage s runs on device s."""
    pl = Placement.standard(3)
    assert (pl.devices, pl.stages, pl.devices_of, pl.chunks) == (3, 3, ((0, 1, 2),), 1)


def test_placement_looped_puts_stage_on_device_mod_p():
    """Looped: stage s on device s mod p; each device holds v chunks in stage order."""
    pl = Placement.looped(3, 2)
    assert pl.devices_of == ((0, 1, 2, 0, 1, 2),)
    assert pl.held()[1] == [(0, 1), (0, 4)]
    assert pl.chunks == 2
    assert pl.chunk_index() == [[0, 0, 0, 1, 1, 1]]


def test_placement_vshape_folds_back_on_the_last_device():
    """V: device d holds stages d and 2p-1-d, so stages p-1 and p share the last device."""
    pl = Placement.vshape(3)
    assert pl.devices_of == ((0, 1, 2, 2, 1, 0),)
    assert [pl.device(s) for s in (2, 3)] == [2, 2]
    assert pl.held()[0] == [(0, 0), (0, 5)]
    assert pl.chunk_index() == [[0, 0, 0, 1, 1, 1]]


def test_placement_dualpipe_has_two_opposite_pipes():
    """Direction 0 runs stage s on device s, direction 1 on p-1-s; each device holds two chunks."""
    pl = Placement.dualpipe(4)
    assert pl.devices_of == ((0, 1, 2, 3), (3, 2, 1, 0))
    assert pl.device(0, direction=1) == 3
    assert pl.held()[1] == [(0, 1), (1, 2)]
    assert pl.chunks == 2


def test_schedule_size_counts_pair_halves_and_skips_idle_slots():
    """An overlapped pair is two actions; an idle slot is none."""
    pair = Overlap(Action(0, 1, F), Action(0, 0, BW))
    sched = make_schedule(Placement.standard(1), 2, [[Action(0, 0, F), None, pair, Action(0, 1, BW)]])
    assert sched.size == 4
    assert list(sched.actions()) == [
        (0, Action(0, 0, F)),
        (0, Action(0, 1, F)),
        (0, Action(0, 0, BW)),
        (0, Action(0, 1, BW)),
    ]


def test_schedule_direction_defaults_to_zero():
    """Without ``directions`` every microbatch flows in direction 0."""
    sched = make_schedule(Placement.dualpipe(2), 2, [[], []], directions=(0, 1))
    assert [sched.direction(0), sched.direction(1)] == [0, 1]
    assert make_schedule(Placement.standard(2), 2, [[], []]).direction(1) == 0


def test_to_torch_csv_pads_rows_with_idle_cells():
    """Rows are padded with empty cells to one width; one line per rank, newline-terminated."""
    sched = make_schedule(Placement.standard(2), 1, [[Action(0, 0, F), Action(0, 0, BW)], [Action(1, 0, F)]])
    assert to_torch_csv(sched) == "0F0,0B0\n1F0,\n"


def test_parse_rows_keeps_inner_idle_cells_and_drops_trailing_ones():
    """An inner empty cell is a deliberate idle slot (None); trailing ones are padding."""
    rows = parse_torch_rows("0F0,,0B0,,\n")
    assert rows == [[Action(0, 0, F), None, Action(0, 0, BW)]]


@pytest.mark.parametrize(
    "text",
    [
        "0F0,,0B0\n,1F0,1B0\n",
        "0F0,(0F1;0B0)OVERLAP_F_B,,0B1\n1F0,1B0,1F1,1B1\n",
        "0F0,0F1,0I0,0W0,0I1,0W1\n1F0,1I0,1F1,1I1,1W0,1W1\n",
        "0F0,,1F0\n,,\n",
    ],
)
def test_text_to_schedule_to_text_is_identical(text):
    """Idle cells, pairs and split backwards survive a parse and a print unchanged."""
    assert to_torch_csv(from_torch_csv(text)) == text


def test_from_torch_csv_infers_looped_placement():
    """Stages found on ranks s mod p give the looped placement."""
    sched = from_torch_csv(to_torch_csv(ppviz.build("looped-bfs", 2, 2, chunks=2)))
    assert sched.placement.devices_of == ((0, 1, 0, 1),)
    assert sched.directions is None


def test_from_torch_csv_splits_microbatches_into_directions():
    """A stage that runs on two ranks gives two directions, in order of first appearance."""
    text = "0F0,1F1,1B1,0B0\n1F0,0F1,0B1,1B0\n"
    sched = from_torch_csv(text)
    assert sched.placement.devices_of == ((0, 1), (1, 0))
    assert sched.directions == (0, 1)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty"),
        ("\n\n", "empty"),
        (",,\n", "no actions"),
        ("0F0,0X0\n", "row 1, column 2"),
        ("0F0\n1F0,(0F0;1B0)\n", "row 2, column 2"),
        ("0F0\n0F0\n", "ranks 0 and 1"),
        ("0F0,0B0\n1F1,1B1\n", "stage 1 of microbatch 0 never runs"),
    ],
)
def test_malformed_text_is_a_value_error_that_says_where(text, message):
    """Bad cells name their row and column; inconsistent orders say which action is wrong."""
    with pytest.raises(ValueError, match=message):
        from_torch_csv(text)


def _sizes(spec):
    """A couple of sizes per schedule (the first valid ones among a few candidates)."""
    out = []
    for p, m, v in [(2, 4, 2), (4, 8, 3), (3, 6, 2), (4, 16, 2), (1, 3, 1)]:
        try:
            out.append(ppviz.build(spec.name, p, m, **schedule_kwargs(spec, v)))
        except ValueError:
            continue
    return out[:3]


@pytest.mark.parametrize("name", list(ppviz.REGISTRY))
def test_torch_csv_round_trip_keeps_every_op(name):
    """from_torch_csv(to_torch_csv(s)) simulates to the same makespan and the same ops."""
    schedules = _sizes(ppviz.REGISTRY[name])
    assert schedules, f"{name}: no valid size among the candidates"
    costs = ppviz.make_costs(f=1, b=2, w=1.5, p2p=0.25)
    for sched in schedules:
        text = to_torch_csv(sched)
        back = from_torch_csv(text)
        assert to_torch_csv(back) == text
        a, b = ppviz.evaluate(sched, costs), ppviz.evaluate(back, costs)
        assert b.metrics.makespan == a.metrics.makespan
        assert b.result.ops() == a.result.ops()


def test_kinds_are_strings():
    """Kind values are the letters used in the JSON contract."""
    assert [k.value for k in Kind] == ["F", "B", "W", "BW"]


def test_a_stage_number_beyond_the_order_is_refused_by_name():
    """A huge stage number in a tiny upload is named in the error, not walked up to."""
    with pytest.raises(ValueError, match="1000000"):
        from_torch_csv("0F0,1000000F0\n")


def test_actions_from_columns_are_real_actions():
    built = stack_rows([Row.of(Kind.B, np.array([3, 1]), [0, 2])], 4, 3).actions()
    assert built == [Action(3, 0, Kind.B), Action(1, 2, Kind.B)]
    assert all(type(a) is Action for a in built)
    assert built[1].stage == 1 and built[1].microbatch == 2 and built[1].kind is Kind.B
