"""PyTorch's order CSVs in every form it writes: compute-only, compute+comms, both namings."""

from __future__ import annotations

from pathlib import Path

import pytest

import ppviz
from ppviz import formats
from ppviz.__main__ import main
from ppviz.errors import InputError
from ppviz.ir import Kind
from ppviz.measured.torch_csv import read_order

DATA = Path(__file__).parent / "data" / "measured"
REAL = [p for p in sorted((DATA / "torch-2.13").glob("*/order_*.csv")) if "torch-dump" not in p.name]
OLD = sorted((DATA / "torch-older-naming").glob("*.csv"))


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.parent.name + "/" + p.name)
def test_every_real_order_csv_reads_and_both_forms_give_one_schedule(path):
    compute = (path.parent / "order_compute.csv").read_text()
    schedule = formats.read_torch_csv(path.read_text())
    busy = [[a for a in row if a is not None] for row in formats.read_torch_csv(compute).order]
    assert [[a for a in row if a is not None] for row in schedule.order] == busy
    assert read_order(path.read_text()).naming == "torch"


def test_torchs_own_1f1b_dump_is_refused_as_torch_refuses_it():
    """Schedule1F1B's pipeline_order numbers the last rank's forwards 1..8 (torch's own lowering rejects it)."""
    with pytest.raises(ValueError, match="need at least"):
        formats.read_torch_csv((DATA / "torch-2.13/1f1b-2r/order_compute.torch-dump.csv").read_text())


def test_comms_tokens_are_kept_as_events_with_their_peer_and_said_in_a_note():
    order = read_order((DATA / "torch-2.13/zbv-2r/order_comms.csv").read_text(), source="zbv")
    sends = [c for c in order.comms if c.what == "send" and c.stage == 0 and c.direction == "F"]
    assert len(sends) == 8 and {c.peer for c in sends} == {1} and {c.rank for c in sends} == {0}
    assert {c.what for c in order.comms} == {"send", "recv", "UNSHARD", "RESHARD", "REDUCE_GRAD"}
    assert any("communication tokens kept as events" in n and "REDUCE_GRAD" in n for n in order.notes)


@pytest.mark.parametrize("path", OLD, ids=lambda p: p.name)
def test_the_older_naming_is_detected_and_reads_as_the_same_order(path):
    order = read_order(path.read_text(), source=path.name)
    assert order.naming == "torch-old" and "older" in order.notes[0] and "detected" in order.notes[0]
    schedule = formats.read_torch_csv(path.read_text())
    if path.name.startswith("zb-interleaved-2r"):
        new = formats.read_torch_csv((DATA / "torch-2.13/zb-interleaved-2r/order_compute.csv").read_text())
        merged = path.name.endswith("_bw.csv")
        assert ppviz.evaluate(schedule).metrics.makespan == ppviz.evaluate(new).metrics.makespan
        if not merged:
            assert schedule.order == new.order
        else:  # rank 0's B directly followed by its W became one BW
            kinds = {a.kind for a in schedule.order[0] if a is not None}
            assert kinds == {Kind.F, Kind.BW}
    else:  # full backward B, batched send/receive tokens
        assert {a.kind for row in schedule.order for a in row} == {Kind.F, Kind.BW}
        assert sum(c.what in ("send", "recv") for c in read_order(path.read_text()).comms) == 16


def test_a_given_naming_is_used_and_said():
    text = "0F0,0B0\n"
    assert read_order(text, naming="torch").rows[0][1].kind == Kind.BW
    assert read_order(text, naming="torch-old").rows[0][1].kind == Kind.BW  # no W: B is the full backward
    assert "detected" not in read_order(text, naming="torch").notes[0]
    with pytest.raises(InputError, match="only torch 2.13"):
        read_order("0F0,0I0,0W0\n", naming="torch-old")
    with pytest.raises(InputError, match="mixes"):
        read_order("0F0,0I0,0W0,0BW1\n")


def test_an_unknown_token_names_file_row_column_and_what_was_expected():
    with pytest.raises(InputError, match=r"run\.csv: row 2, column 3 \(rank 1\): cannot read action 'X'.*expected"):
        read_order("0F0\n1F0,1B0,X\n", source="run.csv")


@pytest.mark.parametrize("name", ["order_comms.csv", "order_compute.csv"])
def test_simulate_order_takes_every_csv_form(capsys, name):
    path = DATA / "torch-2.13/interleaved-1f1b-4r" / name
    assert main(["simulate", "--order", str(path)]) == 0
    assert "8 stages, 8 microbatches" in capsys.readouterr().out


def test_simulate_order_takes_the_older_naming(capsys):
    assert main(["simulate", "--order", str(DATA / "torch-older-naming/1f1b-2r-4mb.order_comms.csv")]) == 0
    assert "4 microbatches" in capsys.readouterr().out


def test_torchtitans_csvs_read_in_both_forms():
    folder = DATA / "torchtitan"
    compute = formats.read_torch_csv((folder / "zb-interleaved-2r-4mb.order_compute.csv").read_text())
    comms = formats.read_torch_csv((folder / "zb-interleaved-2r-4mb.order_comms.csv").read_text())
    assert comms.order == tuple(tuple(a for a in row if a is not None) for row in compute.order)
    assert compute.order == ppviz.build("interleaved-zb", 2, 4, chunks=2).order
