"""One row per distinct layout: layouts equal in time and memory are one row listing its equivalents,
and near-duplicates fold behind ``--group-within``."""

import csv
import io
import json
from itertools import combinations

import pytest

import ppviz
from ppviz.__main__ import main
from ppviz.estimate import Layout
from ppviz.search.result import LAYOUT_FIELDS, group_near, merge_same


@pytest.fixture(scope="module")
def small():
    """Llama-3 8B on 8 GPUs: dp 8, dp 4 × cp 2 with mbs 2 and ZeRO 0/1/2 at dp 1 give the same numbers."""
    return ppviz.search("llama3-8b", "h100-sxm", 8, 16, top=20, pareto=False, schedules=["1f1b", "zb-v"])


@pytest.fixture(scope="module")
def gpt3():
    """GPT-3 175B on 1,024 A100s (pp 8 and 16, three schedules: the whole space takes half a minute)."""
    return ppviz.search("gpt3-175b", "a100-80gb", 1024, 1536, top=20, pareto=False, pp=[8, 16],
                        schedules=["1f1b", "interleaved-1f1b", "zb-v"])  # fmt: skip


def same(a: dict, b: dict) -> bool:
    return a["iteration_s"] == b["iteration_s"] and a["peak_bytes"] == b["peak_bytes"]


def layout_of(row: dict, **change) -> Layout:
    fields = {k: row[k] for k in LAYOUT_FIELDS} | {"gbs": row["gbs"], "layer_split": row["layer_split"]} | change
    return Layout(**{k: tuple(v) if isinstance(v, list) else v for k, v in fields.items()})


@pytest.mark.parametrize("name", ["small", "gpt3"])
def test_the_top_20_has_no_two_rows_that_differ_in_nothing(name, request):
    result = request.getfixturevalue(name)
    assert len(result.layouts) == 20
    assert not [(a["rank"], b["rank"]) for a, b in combinations(result.layouts, 2) if same(a, b)]


def test_equivalents_rerun_to_the_row_s_numbers(small):
    """Each equivalent is the row's layout with the fields it lists, and estimates to the row's time and peaks."""
    listed = [(r, e) for r in small.layouts for e in r["equivalents"]]
    assert listed and all(set(e) == {"dp", "cp", "mbs"} for _, e in listed)
    for row, e in listed:
        est = ppviz.estimate("llama3-8b", "h100-sxm", layout_of(row, **e))
        assert est.iteration_s == row["iteration_s"] and est.peak_bytes.tolist() == row["peak_bytes"]


def test_zero_over_one_data_parallel_rank_is_one_row():
    """At dp 1 ZeRO 1 and 2 shard nothing: the ZeRO 0 row lists them."""
    result = ppviz.search("llama3-8b", "h100-sxm", 8, 16, top=2, pareto=False, tp=[2], pp=[4], schedules=["1f1b"])
    rows = [r for r in result.layouts if r["dp"] == 1]
    assert rows and all(r["zero"] == 0 and r["equivalents"] == [{"zero": 1}, {"zero": 2}] for r in rows)
    est = ppviz.estimate("llama3-8b", "h100-sxm", layout_of(rows[0], zero=2))
    assert est.iteration_s == rows[0]["iteration_s"] and est.peak_bytes.tolist() == rows[0]["peak_bytes"]


def test_rows_from_parallel_parts_are_merged_the_same_way():
    a = {k: 1 for k in LAYOUT_FIELDS} | {"layer_split": None, "iteration_s": 1.0, "peak_bytes": [5.0]}
    b = a | {"zero": 2, "equivalents": [{"cp": 2}]}
    c = a | {"iteration_s": 2.0}
    merged = merge_same([a, b, c])
    assert [m["iteration_s"] for m in merged] == [1.0, 2.0]
    assert merged[0]["equivalents"] == [{"zero": 2}, {"zero": 2, "cp": 2}]


def test_near_duplicates_fold_behind_group_within(gpt3):
    """ZeRO 1 beside ZeRO 2 at the same time is one row with the flag, the ZeRO 1 row listed with its own peak
    (a vpp apart counts as one setting: the layer split follows from it)."""
    rows = gpt3.layouts
    pairs = [(a, b) for a, b in combinations(rows, 2) if a["iteration_s"] == b["iteration_s"]]
    assert pairs  # ZeRO 1 and 2 time alike
    grouped = group_near(rows, 0.001)
    assert len(grouped) < len(rows) and [r["rank"] for r in grouped] == list(range(1, len(grouped) + 1))
    for a, b in combinations(grouped, 2):
        apart = sum(a[k] != b[k] for k in LAYOUT_FIELDS)
        assert apart > 1 or b["iteration_s"] > a["iteration_s"] * 1.001
    folded = [e for r in grouped for e in r["equivalents"] if "iteration_s" in e]
    assert folded and all(len(set(e) - {"iteration_s", "peak_bytes", "layer_split"}) == 1 for e in folded)


def test_cli_text_csv_and_json_carry_the_equivalents(capsys):
    argv = ["search", "--model", "llama3-8b", "--gpu", "h100-sxm", "--gpus", "8", "--gbs", "16", "--top", "5",
            "--schedules", "1f1b,zb-v", "--no-pareto"]  # fmt: skip
    assert main(argv) == 0
    assert "(same as " in capsys.readouterr().out
    assert main([*argv, "--csv"]) == 0
    table = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert table[0]["equivalents"].startswith("same as ")
    assert main([*argv, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["layouts"][0]["equivalents"]
    assert main([*argv, "--json", "--group-within", "0.01"]) == 0
    assert any("iteration_s" in e for r in json.loads(capsys.readouterr().out)["layouts"] for e in r["equivalents"])
    assert main([*argv, "--group-within", "-1"]) == 2
    assert "--group-within -1 is out of range" in capsys.readouterr().err
