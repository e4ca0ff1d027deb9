"""Megatron-LM logs: the three timer forms of tests/data/measured/megatron, a real Jean Zay log
excerpt (tests/data/measured/bigscience) and clear errors on what cannot be read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ppviz.errors import InputError
from ppviz.measured.megatron import read_log

DATA = Path(__file__).parent / "data" / "measured"
MEG = DATA / "megatron"


def test_old_single_line_form_is_the_last_ranks_timers_with_a_note():
    run = read_log(MEG / "gpt-pp4-old-timers.log")
    assert run.form == "single-line"
    assert [it.number for it in run.iterations] == [1, 2, 3, 4]
    assert [it.elapsed_ms for it in run.iterations] == [2204.6, 1467.3, 1459.8, 1461.2]
    assert {it.global_batch for it in run.iterations} == {8}
    second = run.iterations[1].timers
    assert second["forward-compute"].high == 416.32 and second["backward-compute"].low == 833.10
    assert "optimizer-clip-main-grad" not in run.iterations[0].timers  # the skipped fp16 iteration has none
    assert set(run.setup) == {"model-and-optimizer-setup", "train/valid/test-data-iterators-setup"}
    assert run.arguments["num_layers"] == "24" and run.arguments["fp16"] == "True"
    s = run.summary()
    assert s["format"] == "megatron" and s["timer_form"] == "single-line"
    assert s["iteration_ms"] == {"median": 1461.2, "first": 2204.6, "min": 1459.8, "max": 2204.6, "samples": 3}
    assert s["timers"]["forward-compute"] == {"median_ms": pytest.approx((416.32 + 416.54) / 2), "samples": 4}
    assert s["backward_forward_ratio"] == pytest.approx(s["timers"]["backward-compute"]["median_ms"] / 416.43)
    assert any("only one rank printed" in n for n in s["notes"])
    assert run.median_iteration_s() == pytest.approx(1.4612)
    assert s["arguments"]["pipeline_model_parallel_size"] == "4"  # the argument dump, as printed
    json.dumps(s)  # JSON-able


def test_minmax_form_keeps_the_spread_across_ranks():
    run = read_log(MEG / "gpt-pp4-minmax-timers.log")
    assert run.form == "minmax"
    t = run.iterations[1].timers["forward-compute"]
    assert (t.low, t.high) == (358.12, 417.40)
    assert len(run.iterations[0].timers) == 18
    s = run.summary()
    fc = s["timers"]["forward-compute"]
    assert fc["median_ms"] == pytest.approx((417.40 + 417.50) / 2)
    assert fc["median_min_ms"] == pytest.approx(358.17, abs=0.1)
    assert not any("only one rank" in n for n in s["notes"])
    assert "model-and-optimizer-setup" in run.setup


def test_all_ranks_form_gives_every_ranks_timers():
    run = read_log(MEG / "gpt-pp4-all-ranks-timers.log")
    assert run.form == "all"
    assert run.ranks() == [0, 1, 2, 3]
    last = run.iterations[-1].timers
    assert last["forward-compute"].per_rank == {0: 360.41, 1: 358.12, 2: 358.87, 3: 417.40}
    assert last["forward-recv"].per_rank == {1: 46.08, 2: 92.04, 3: 137.91}  # rank 0 receives nothing
    s = run.summary()
    assert s["ranks"] == [0, 1, 2, 3]
    assert s["timers"]["forward-compute"]["per_rank_median_ms"]["3"] == pytest.approx((634.45 + 417.40) / 2)
    assert s["iteration_ms"]["median"] == 1467.6  # the first iteration is left out


def test_summary_says_what_can_and_cannot_be_fitted():
    s = read_log(MEG / "gpt-pp4-minmax-timers.log").summary()
    assert any("iteration time" in x for x in s["fittable"])
    assert any("per-op" in x for x in s["not_fittable"])


def test_real_jean_zay_log_excerpt_reads():
    run = read_log(DATA / "bigscience" / "meg_gpt2_base_n4_dp1_tp4_pp4-1809579.out")
    assert run.form == "single-line"
    assert run.arguments["tensor_model_parallel_size"] == "4"
    assert run.arguments["pipeline_model_parallel_size"] == "4"
    assert run.iterations[0].number == 10 and run.iterations[-1].number == 200
    assert 1.37 < run.median_iteration_s() < 1.39
    assert run.iterations[1].timers["backward-embedding-all-reduce"].high == 415.87


def test_several_files_are_read_in_order(tmp_path):
    a, b = MEG / "gpt-pp4-old-timers.log", MEG / "gpt-pp4-minmax-timers.log"
    (tmp_path / "second.log").write_text(a.read_text(encoding="utf-8"), encoding="utf-8")
    run = read_log([a, tmp_path / "second.log"])
    assert len(run.iterations) == 8
    assert run.files == [str(a), str(tmp_path / "second.log")]
    assert any("repeat" in n for n in run.notes)
    with pytest.raises(InputError, match="after the single-line form"):
        read_log([a, b])


def _log(tmp_path, text: str) -> Path:
    p = tmp_path / "run.log"
    p.write_text(text, encoding="utf-8")
    return p


ITER = (" iteration        2/       4 | consumed samples:           16 | elapsed time per iteration (ms): 1467.3 "
        "| global batch size:     8 |\n")  # fmt: skip


@pytest.mark.parametrize(
    ("text", "message", "line"),
    [
        (
            ITER + "time (ms) | forward-compute: fast | backward-compute: 2.0\n",
            "cannot read timer 'forward-compute'",
            2,
        ),
        (ITER + "time (ms) | forward-compute 1.0\n", "expected 'name: ms'", 2),
        (ITER + "(min, max) time across ranks (ms):\n    forward-compute ....: (1.0 2.0)\n", r"'\(min, max\)'", 3),
        (ITER + "(min, max) time across ranks (ms):\n    forward-compute ....: (1.0, -2.0)\n", "≥ 0", 3),
        (ITER + "times across ranks (ms):\n     rank  0: 1.0\n", "before any timer name", 3),
        (ITER + "(min, max) time across ranks (ms):\nnext\n", "no timer under it", 2),
        (ITER.replace("1467.3", "n/a"), "elapsed time per iteration", 1),
        (ITER.replace("     8 |", " eight |"), "global batch size", 1),
    ],
)
def test_bad_lines_name_the_file_and_line(tmp_path, text, message, line):
    path = _log(tmp_path, text)
    with pytest.raises(InputError, match=message) as err:
        read_log(path)
    assert f"{path}:{line}:" in str(err.value)
    assert err.value.field == "log"


def test_not_a_megatron_log(tmp_path):
    with pytest.raises(InputError, match="no Megatron-LM iteration line"):
        read_log(_log(tmp_path, "+ source /workspace/env.sh\nhello\n"))
    with pytest.raises(InputError, match="cannot read"):
        read_log(tmp_path / "missing.log")
    with pytest.raises(InputError, match="at least one"):
        read_log([])


def test_a_log_without_timers_still_gives_its_iteration_time(tmp_path):
    run = read_log(_log(tmp_path, ITER + ITER.replace("1467.3", "1500.0")))
    assert run.form is None
    assert run.median_iteration_s() == pytest.approx(1.5)
    assert any("no per-iteration timers" in n for n in run.notes)


def test_validation_and_memory_lines_are_not_iterations(tmp_path):
    text = (ITER + "[Rank 1] (after 2 iterations) memory (MB) | allocated: 1.0[Rank 0] (after 2 iterations) memory\n"
            " validation loss at iteration 2 | lm loss value: 7.4 |\n")  # fmt: skip
    assert len(read_log(_log(tmp_path, text)).iterations) == 1


def test_max_form_and_crlf_line_ends(tmp_path):
    text = (
        ITER + "max time across ranks (ms):\n    forward-compute ......: 417.40\n    backward-compute .....: 834.21\n"
    )
    run = read_log(_log(tmp_path, text.replace("\n", "\r\n")))
    assert run.form == "max"
    t = run.iterations[0].timers
    assert (t["forward-compute"].low, t["forward-compute"].high) == (417.40, 417.40)
    assert t["backward-compute"].high == 834.21
    assert any("maximum over the ranks" in n for n in run.notes)


def test_an_overlong_line_is_cut_and_reading_goes_on(tmp_path, monkeypatch):
    from ppviz.measured import megatron

    monkeypatch.setattr(megatron, "MAX_LINE_CHARS", 64)
    text = "x" * 1000 + "\n iteration 2/ 4 | elapsed time per iteration (ms): 1.0 |\n"
    run = read_log(_log(tmp_path, text))
    assert [it.elapsed_ms for it in run.iterations] == [1.0]
    assert run.iterations[0].where.endswith(":2")
