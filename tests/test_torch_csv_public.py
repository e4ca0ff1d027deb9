"""The public order readers (``ppviz.from_torch_csv``, ``ppviz.ir.parse_torch_rows``) read every form
the CLI reads, through the one reader (``ppviz.ir.read_torch_order``): both torch namings, compute+comms
CSVs, torchtitan's; the naming can be given; a bad cell names its row and column."""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import re
from pathlib import Path

import pytest

import ppviz
from ppviz import formats
from ppviz.__main__ import main
from ppviz.errors import InputError
from ppviz.ir import Action, Kind, parse_torch_rows

DATA = Path(__file__).parent / "data"
CSVS = sorted(DATA.rglob("*.csv"))


def cli_simulate(path: Path) -> dict | None:
    """``ppviz simulate --order FILE --json``'s answer, or None when the CLI refuses the file."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["simulate", "--order", str(path), "--json"])
    return json.loads(out.getvalue()) if code == 0 else None


def test_the_test_data_holds_every_form():
    names = {p.parent.name for p in CSVS}
    assert {"torch-older-naming", "torchtitan"} <= names
    assert any(p.name.endswith("order_comms.csv") for p in CSVS) and len(CSVS) >= 20


@pytest.mark.parametrize("path", CSVS, ids=lambda p: str(p.relative_to(DATA)))
def test_every_csv_the_cli_reads_gives_the_same_schedule_through_the_public_reader(path):
    cli = cli_simulate(path)
    text = path.read_text(encoding="utf-8")
    if cli is None:  # torch's own dump of 1F1B, which names a microbatch it never runs: refused by both
        assert "torch-dump" in path.name
        with pytest.raises(ValueError, match="microbatch 8 never runs"):
            ppviz.from_torch_csv(text)
        return
    schedule = ppviz.from_torch_csv(text, name=path.name)
    assert schedule == formats.read_torch_csv(text, name=path.name)  # what `ppviz simulate --order` reads
    run = ppviz.evaluate(schedule)
    assert json.loads(json.dumps(run.result.ops())) == cli["ops"]
    assert run.metrics.makespan == cli["makespan"]
    assert parse_torch_rows(text) == [list(row) for row in schedule.order]


def test_a_compute_and_comms_csv_reads_as_its_compute_tokens_alone():
    """Communication tokens are left out of the schedule, never refused, and move no action."""
    comm = re.compile(r"\d+(SEND|RECV)_[FB]\d+(_\d+(SEND|RECV)_[FB]\d+)?|\d+(UNSHARD|RESHARD|REDUCE_GRAD)")
    files = sorted((DATA / "measured").rglob("*comms.csv"))
    assert len(files) >= 10
    for path in files:
        text = path.read_text()
        compute = "\n".join(",".join(c for c in line.split(",") if not comm.fullmatch(c.strip())) for line in
                            text.splitlines())  # fmt: skip
        assert compute != text
        assert ppviz.from_torch_csv(text).order == ppviz.from_torch_csv(compute).order, path


def test_the_naming_can_be_given():
    old = (DATA / "measured/torch-older-naming/zb-interleaved-2r.order_compute.csv").read_text()
    auto = ppviz.from_torch_csv(old)
    assert ppviz.from_torch_csv(old, naming="torch-old") == auto
    assert Kind.B in {a.kind for row in auto.order for a in row if isinstance(a, Action)}  # B: input gradient
    with pytest.raises(InputError, match="only torch's older naming") as e:  # its BW is not torch 2.13's
        ppviz.from_torch_csv(old.replace("0B0", "0BW0", 1), naming="torch")
    assert e.value.field == "naming"
    # "0F0,0B0": a full backward in torch 2.13's naming, and (without W) in the older one
    assert parse_torch_rows("0F0,0B0\n", naming="torch") == [[Action(0, 0, Kind.F), Action(0, 0, Kind.BW)]]
    assert parse_torch_rows("0F0,0B0\n", naming="torch-old") == [[Action(0, 0, Kind.F), Action(0, 0, Kind.BW)]]
    with pytest.raises(InputError, match="naming must be one of auto, torch, torch-old") as e:
        ppviz.from_torch_csv("0F0,0B0\n", naming="new")
    assert e.value.field == "naming"


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("0F0,0SEND_F0,0B0\n1F0,zz,1B0\n", "row 2, column 2 (rank 1): cannot read action 'zz'"),
        ("0F0,0UNSHARD,(0F1;0X0)OVERLAP_F_B\n", "row 1, column 3 (rank 0): cannot read the pair"),
        ("0F0,0I0,0W0\n1F0,1BW0\n", "mixes torch's two namings"),
    ],
)
def test_a_bad_cell_names_its_row_and_column(text, where):
    with pytest.raises(InputError) as e:
        ppviz.from_torch_csv(text)
    assert str(e.value).startswith("the order") and where in str(e.value) and e.value.field == "order"
    with pytest.raises(InputError, match="orders.csv: row"):
        parse_torch_rows("0F0,?\n", source="orders.csv")


def test_simulate_order_takes_the_naming(capsys):
    """`ppviz simulate --order FILE --naming …` reads it as the public reader does; --naming alone is refused."""
    path = DATA / "measured/torch-older-naming/zb-interleaved-2r.order_compute.csv"
    assert main(["simulate", "--order", str(path), "--naming", "torch-old", "--json"]) == 0
    ops = json.loads(capsys.readouterr().out)["ops"]
    assert ops == json.loads(json.dumps(ppviz.evaluate(ppviz.from_torch_csv(path.read_text())).result.ops()))
    assert main(["simulate", "--order", str(path), "--naming", "torch"]) == 2
    assert "has W but no B" in capsys.readouterr().err  # read as torch 2.13's: its B is a full backward
    assert main(["simulate", "1f1b", "-p", "2", "-m", "4", "--naming", "torch"]) == 2
    assert "--naming is the naming of an --order file" in capsys.readouterr().err
    assert (
        main(["render", "1f1b", "--model", "llama3-8b", "--gpu", "h100-sxm", "--naming", "torch", "-o", "x.html"]) == 2
    )
    assert "--naming is for abstract units" in capsys.readouterr().err


def test_a_trace_or_a_timer_log_given_as_an_order_says_which_command_reads_it(tmp_path, capsys):
    """The issue's refusals of a Kineto trace (gzipped: "not UTF-8"; plain: "cannot read action '{…'") and of a
    Megatron-LM log now name `ppviz measured`."""
    gz = DATA / "measured/torch-2.13/zbv-2r/rank0.trace.json.gz"
    plain = tmp_path / "rank0.trace.json"
    plain.write_bytes(gzip.decompress(gz.read_bytes()))
    for path, what in ((gz, "is gzip-compressed"), (plain, "holds JSON")):
        assert main(["simulate", "--order", str(path)]) == 2
        err = capsys.readouterr().err
        assert f"{path.name} {what}, not an order CSV" in err and "ppviz measured" in err
    with pytest.raises(InputError, match="holds JSON") as e:
        ppviz.from_torch_csv('{"schemaVersion": 1}')
    assert e.value.field == "order"
    for log in sorted((DATA / "measured/megatron").glob("*.log")):  # the "cannot read action '+ source …'"
        assert main(["simulate", "--order", str(log)]) == 2
        assert f"{log.name} is a Megatron-LM timer log, not an order CSV: `ppviz measured" in capsys.readouterr().err
