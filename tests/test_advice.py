"""Advice for a layout that does not fit: the nearest layouts that do, why it does not, and the CLI's text and JSON."""

import json
import shlex

import pytest

import ppviz
from ppviz.__main__ import main
from ppviz.estimate import Layout, gpu, model
from ppviz.search.advice import GIB, advise, why

LLAMA = model("llama3-70b")
H100 = gpu("h100-sxm")
# the example: pp 2 of Llama-3 70B with selective recompute does not fit an H100 (79.65 GiB - 3 GiB)
PP2 = Layout(tp=8, pp=2, dp=1, mbs=1, gbs=64, recompute="selective", zero=1, sequence_parallel=True)
# fits once sequence parallel is on, or with full recompute: one change away
NO_SP = Layout(tp=8, pp=4, dp=1, mbs=1, gbs=64, recompute="none", zero=0)


def rerun(command: str, capsys) -> dict:
    """What the advice's own command prints as JSON."""
    argv = shlex.split(command)[1:] + ["--json", "--no-ops", "--no-advice"]
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_three_layouts_that_fit_each_rerun_by_its_command_to_the_same_numbers(capsys):
    """Every piece of advice fits, and its command reproduces its time and memory exactly."""
    advised = advise(LLAMA, H100, PP2)
    assert len(advised.advice) == 3
    for a in advised.advice:
        est = ppviz.estimate(LLAMA, H100, a.layout)
        assert est.fits and est.iteration_s == a.iteration_s and float(est.peak_bytes.max()) == a.peak_bytes
        assert a.peak_bytes <= a.capacity_bytes
        d = rerun(a.command, capsys)
        assert d["fits"] and d["iteration_s"] == a.iteration_s and max(d["peak_bytes"]) == a.peak_bytes


def test_pp_2_needs_more_gpus_and_the_advice_says_so():
    """dp 1 cannot give pipeline devices: the advice says that the GPU count changes."""
    advised = advise(LLAMA, H100, PP2, count=5)
    assert ("pp 2 → 4", "GPUs 16 → 32") in [a.changes for a in advised.advice]
    for a in advised.advice:
        assert any(c.startswith("GPUs 16 → ") for c in a.changes) == (a.layout.gpus != 16)


def test_the_nearest_come_first_one_change_before_two():
    """A layout one setting away comes before any two away; among equals, the faster first."""
    advised = advise(LLAMA, H100, NO_SP)
    first = [a.changes for a in advised.advice[:2]]
    assert first == [("sequence parallel off → on",), ("recompute none → full",)]
    assert advised.advice[0].iteration_s <= advised.advice[1].iteration_s
    assert len(advised.advice[2].changes) >= 2


def test_more_pp_comes_out_of_dp_when_dp_can_give_it():
    """With dp 4, pp 4 → 8 keeps the GPU count: dp 4 → 2."""
    lay = Layout(tp=4, pp=4, dp=4, mbs=2, gbs=64, recompute="none", zero=0)
    advised = advise(LLAMA, H100, lay, count=10, budget=400)
    moved = [a for a in advised.advice if "pp 4 → 8" in a.changes]
    assert moved and all("dp 4 → 2" in a.changes and a.layout.gpus == 64 for a in moved)


def test_why_names_what_fills_the_device_and_a_zero_stage_that_shards_nothing():
    """The reason comes from the breakdown, in GiB."""
    est = ppviz.estimate(LLAMA, H100, PP2)
    st = est.static_bytes
    static = float((st["weight"] + st["grad"] + st["optimizer"])[0])
    text = why(est)
    assert f"weights + gradients + optimizer take {static / GIB:,.2f} GiB" in text
    assert "ZeRO-1 over dp 1 shards nothing" in text
    over = ppviz.estimate(LLAMA, H100, Layout(tp=4, pp=2, dp=4, mbs=1, gbs=64, zero=0))
    assert "alone take" in why(over)
    assert "each of the 4 data-parallel ranks holds the whole optimizer state" in why(over)


def test_a_layout_that_fits_gets_no_advice():
    advised = advise(LLAMA, H100, Layout(tp=8, pp=8, dp=1, mbs=1, gbs=64, sequence_parallel=True))
    assert advised.advice == () and advised.why == "" and advised.evaluated == 0


def test_the_budget_counts_layouts_and_the_answer_is_the_same_every_time():
    """Work is bounded by layouts evaluated (not seconds), so the advice is the same on any machine."""
    small = advise(LLAMA, H100, PP2, budget=3)
    assert small.evaluated <= 3 and small.exhausted
    assert advise(LLAMA, H100, PP2, budget=3) == small
    full = advise(LLAMA, H100, PP2)
    assert full.evaluated <= full.budget and not full.exhausted
    with pytest.raises(ValueError, match="budget"):
        advise(LLAMA, H100, PP2, budget=0)


def test_the_user_s_precision_is_kept_and_named_in_the_command(capsys):
    """FP8 advice is searched in FP8 and its command says so."""
    lay = Layout(tp=8, pp=2, dp=1, mbs=1, gbs=64, recompute="selective", zero=1, sequence_parallel=True,
                 precision="fp8")  # fmt: skip
    a = advise(LLAMA, H100, lay, count=1).advice[0]
    assert a.layout.precision == "fp8" and "--precision fp8" in a.command
    assert rerun(a.command, capsys)["iteration_s"] == a.iteration_s


def test_cli_prints_why_and_the_advice_under_the_verdict_and_marks_mfu(capsys):
    argv = ["estimate", "--model", "llama3-70b", "--gpu", "h100-sxm", "--tp", "8", "--pp", "2", "--gbs", "64",
            "--recompute", "selective", "--zero", "1", "--sequence-parallel"]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    verdict = next(i for i, line in enumerate(lines) if line.startswith("does not fit"))
    assert any(line.startswith("why ") and "ZeRO-1 over dp 1 shards nothing" in line for line in lines[verdict:])
    assert "nearest layouts that fit:" in out and "  - " in out and "cp 1 → 2, GPUs 16 → 32" in out
    assert out.count("ppviz estimate --model llama3-70b") == 3
    assert "(does not fit)" in next(line for line in lines if "MFU" in line)
    assert "(does not fit)" in next(line for line in lines if "tokens/s" in line)


def test_cli_json_carries_advice_and_why(capsys):
    argv = ["estimate", "--model", "llama3-70b", "--gpu", "h100-sxm", "--tp", "8", "--pp", "2", "--gbs", "64",
            "--json", "--no-ops"]  # fmt: skip
    assert main(argv) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["fits"] is False and d["why"].startswith("weights + gradients + optimizer")
    assert len(d["advice"]) == 3
    for a in d["advice"]:
        assert set(a) >= {"changes", "layout", "iteration_s", "peak_bytes", "capacity_bytes", "command"}
        assert a["peak_bytes"] <= a["capacity_bytes"] and a["command"].startswith("ppviz estimate")
        assert Layout(**{k: tuple(v) if isinstance(v, list) else v for k, v in a["layout"].items()}).gpus == a["gpus"]
    assert main([*argv, "--no-advice"]) == 0
    assert json.loads(capsys.readouterr().out)["advice"] == []


def test_cli_json_of_a_layout_that_fits_has_empty_advice(capsys):
    argv = ["estimate", "--model", "llama3-8b", "--gpu", "h100-sxm", "--tp", "2", "--pp", "4", "--gbs", "8", "--json",
            "--no-ops"]  # fmt: skip
    assert main(argv) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["fits"] and d["advice"] == [] and d["why"] == ""


def test_carry_takes_only_fields_the_search_does_not_set():
    from ppviz.search import Options

    assert Options(carry=[("precision", "fp8")]).carry == (("precision", "fp8"),)
    with pytest.raises(ValueError, match="carry takes layout fields the search does not set"):
        Options(carry=(("pp", 2),))


def test_render_facts_mark_mfu_of_a_layout_that_does_not_fit():
    from ppviz.estimate.cli import facts

    shown = dict(facts(ppviz.estimate(LLAMA, H100, PP2)))
    assert shown["MFU"].endswith("(does not fit)") and shown["tokens/s"].endswith("(does not fit)")
