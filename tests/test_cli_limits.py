"""The command line's bounds: every number refused past its bound before any work, with the bound
in a one-line message and exit 2; negative numbers read as values; --jobs at most the cores."""

import argparse
import subprocess
import sys

import pytest

from ppviz import cli_limits
from ppviz.__main__ import _parse, _parser, _render_units_parser, main
from ppviz.estimate import specs
from ppviz.search import Options, space

M = ["--model", "llama3-8b", "--gpu", "h100-sxm"]


def run_cli(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def refused(capsys, args, words):
    code, _, err = run_cli(capsys, *args)
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("ppviz: error:") and "Traceback" not in err
    for w in words:
        assert w in err, err
    return err


# the probes of issue 18, each of which hung or took GBs before
PROBES = [
    (["estimate", *M, "--layers", 1_000_000_000], ["--layers", "1 to 65,536"]),
    (["search", *M, "--gpus", 1_099_511_627_776, "--gbs", 64], ["--gpus", "1 to 1,048,576"]),
    (["search", *M, "--gpus", 64, "--gbs", 512, "--layers", 1_000_000_000], ["--layers", "1 to 65,536"]),
    (["search", *M, "--gpus", 16384, "--gbs", 1048576, "--seq", 100_000_000], ["--seq", "1 to 16,777,216"]),
    (
        ["search", *M, "--gpus", 16384, "--gbs", 2**20, "--layers", 1024],
        [f"the bound is {cli_limits.SEARCH_ACTIONS:,}", "--pp"],
    ),
    (["search", *M, "--gpus", 64, "--gbs", 64, "--jobs", 100_000], ["--jobs", "cores", "--oversubscribe"]),
    (["search", *M, "--gpus", 0, "--gbs", 64], ["--gpus 0", "1 to 1,048,576"]),
    (["estimate", *M, "--kernel-overhead-us", "-1e308"], ["--kernel-overhead-us -1e+308", "0 to 1,000,000"]),
]


@pytest.mark.parametrize("args, words", PROBES)
def test_every_probe_of_the_issue_is_refused_with_its_bound(capsys, args, words):
    refused(capsys, args, words)


def test_the_probes_answer_exit_2_as_processes():
    for args, words in PROBES:
        r = subprocess.run([sys.executable, "-m", "ppviz", *map(str, args)], capture_output=True, text=True,
                           timeout=60)  # fmt: skip
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and words[0] in r.stderr, (args, r.stderr)


@pytest.mark.parametrize(
    "args, words",
    [
        (["simulate", "1f1b", "-p", 4, "-m", 4, "--f", "-1.5e-3"], ["--f -0.0015", "0 to 1,000,000,000"]),
        (["simulate", "1f1b", "-p", 4, "-m", 4, "--p2p", "-1E2"], ["--p2p -100", "0 to"]),
        (["estimate", *M, "--hbm-gib", "-.5"], ["--hbm-gib -0.5", "> 0 and ≤ 100,000"]),
        (["estimate", *M, "--reserve-gib", "-1"], ["--reserve-gib -1", "≥ 0 and < 100,000"]),
        (["estimate", *M, "--nvlink-latency-us", "-inf"], ["ASCII digits"]),
        (["estimate", *M, "--tp", "-1e3"], ["whole number"]),
        (["search", *M, "--gpus", 8, "--gbs", 8, "--headroom", "-1e-9"], ["--headroom", "≥ 0 and < 1"]),
    ],
)
def test_negative_numbers_are_values_refused_by_their_range(capsys, args, words):
    err = refused(capsys, args, words)
    assert "expected one argument" not in err


def test_a_number_of_thousands_of_digits_is_refused_in_one_short_line(capsys):
    err = refused(capsys, ["estimate", *M, "--layers", "9" * 5000], ["has 5,000 digits: far past every bound"])
    assert len(err) < 200


def test_a_negative_zero_is_a_value_within_range(capsys):
    code, out, err = run_cli(capsys, "simulate", "1f1b", "-p", 2, "-m", 2, "--p2p", "-0e0")
    assert code == 0 and "makespan" in out, err


def _check(*args):
    sub, ns = _parse([str(a) for a in args])
    cli_limits.check(sub, ns)


@pytest.mark.parametrize(
    "command, flag, high",
    [
        (["estimate", *M], "--layers", 2**16),
        (["estimate", *M], "--seq", 2**24),
        (["estimate", *M], "--mbs", 2**16),
        (["simulate", "1f1b", "-m", 1], "--devices", 2**10),
        (["estimate", *M], "--pp", 2**10),
        (["simulate", "1f1b", "-p", 1], "--microbatches", 2**20),
        (["search", *M, "--gbs", 8], "--gpus", 2**20),
        (["search", *M, "--gpus", 8], "--gbs", 2**20),
        (["search", *M, "--gpus", 8, "--gbs", 8], "--top", 1000),
        (["render", "1f1b", "-o", "x.html", *M], "--hidden", 2**20),
    ],
)
def test_the_largest_value_passes_and_one_past_it_is_refused(command, flag, high):
    _check(*command, flag, high)
    with pytest.raises(ValueError, match=f"{flag} {high + 1:,} is out of range: it takes 1 to {high:,}"):
        _check(*command, flag, high + 1)


def test_the_largest_layers_and_devices_run(capsys):
    code, out, err = run_cli(capsys, "estimate", *M, "--layers", 2**16)
    assert code == 0 and "on 1 × h100-sxm" in out, err
    code, out, err = run_cli(capsys, "simulate", "1f1b", "-p", 2**10, "-m", 1, "--json")
    assert code == 0 and '"devices": 1024' in out, err
    code, out, err = run_cli(capsys, "estimate", *M, "--layers", 2**10, "--pp", 2**10)
    assert code == 0 and "pp 1024" in out, err


def test_a_search_whose_pp_could_pass_the_bound_is_refused_unless_pp_is_restricted(capsys):
    args = ["search", *M, "--gpus", 4096, "--gbs", 64, "--layers", 4096]
    refused(capsys, args, ["pp up to 4,096", "the bound is 1,024", "--pp"])
    code, out, err = run_cli(capsys, *args, "--pp", 8, "--schedules", "1f1b", "--tp", 8, "--no-pareto")
    assert code == 0 and "on 4,096 × h100-sxm" in out, err


def test_jobs_are_at_most_the_cores_unless_oversubscribed(monkeypatch):
    monkeypatch.setattr(cli_limits, "cores", lambda: 3)
    base = ["search", *M, "--gpus", 8, "--gbs", 8]
    _check(*base, "--jobs", 3)
    with pytest.raises(ValueError, match="--jobs 4 is out of range: it takes 1 to 3 .*--oversubscribe allows up to 12"):
        _check(*base, "--jobs", 4)
    _check(*base, "--jobs", 12, "--oversubscribe")
    with pytest.raises(ValueError, match="--jobs 13 .* 1 to 12"):
        _check(*base, "--jobs", 13, "--oversubscribe")
    with pytest.raises(ValueError, match="--jobs 0"):
        _check(*base, "--jobs", 0)


def test_cores_are_those_this_process_may_use():
    assert 1 <= cli_limits.cores() <= (__import__("os").cpu_count() or 1)


def test_a_layout_of_more_gpus_than_the_bound_is_refused(capsys):
    refused(capsys, ["estimate", *M, "--tp", 1024, "--dp", 1024, "--cp", 2], ["1,048,576"])


def test_every_number_option_of_every_subcommand_has_a_bound():
    parser = _parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    names_only = {"--schedules", "--recompute", "--tp-mode"}  # lists of names, checked against their choices
    for command, p in [*sub.choices.items(), ("render in real units", _render_units_parser())]:
        for action in p._actions:
            flag = next((s for s in action.option_strings if s.startswith("--")), None)
            if action.type is None or flag in names_only:
                continue
            assert flag in cli_limits.BOUNDS, f"{command} {flag} has no bound"


TINY = specs.Model(name="tiny", layers=8, hidden=512, heads=8, kv_heads=4, ffn=1536, vocab=2048, seq=1024)


@pytest.mark.parametrize(
    "model, gpus, gbs, opt",
    [
        (TINY, 8, 16, Options()),
        (TINY, 16, 64, Options(schedules=("1f1b", "interleaved-1f1b", "zb-v"), vpp=(2, 4))),
        ("llama3-8b", 64, 96, Options()),
        ("deepseek-v3", 64, 64, Options(mbs=(1, 2))),
        (TINY, 16, 32, Options(tp_mode=("1d", "2d"), summa_blocks=(0, 8))),
        ("llama3-8b", 32, 64, Options(cp=(1, 2), dp=(2, 4), pp=(2, 4))),
    ],
)
def test_the_search_size_bounds_every_order_the_search_may_build(model, gpus, gbs, opt):
    model = specs.model(model) if isinstance(model, str) else model
    built = {}
    for g in space.groups(model, gpus, gbs, opt, 8).groups:
        for v in space.variants(model, g, opt):
            built[(v.schedule, g.pp, g.microbatches, v.vpp)] = (
                g.microbatches * v.stages * (3 if v.split_backward else 2)
            )
    assert built and space.order_actions(model, gpus, gbs, opt) >= sum(built.values())


def test_a_search_past_its_memory_bound_stops_with_a_message():
    """In a fresh process, as the CLI runs: a long-lived one (a test worker) may hold freed heap that
    the search reuses without growing its data, so the bound would not trip there."""
    args = ["search", "--model", "llama3-70b", "--gpu", "h100-sxm", "--gpus", "64", "--gbs", "512",
            "--max-memory-gb", "0.1"]  # fmt: skip
    done = subprocess.run([sys.executable, "-m", "ppviz", *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    err = done.stderr
    assert err.count("\n") == 1 and err.startswith("ppviz: error:") and "Traceback" not in err
    assert "memory bound of 0.1 GB (--max-memory-gb)" in err and "narrow it" in err


def test_the_process_gets_its_own_memory_limit_back_after_a_search(capsys):
    import resource

    before = resource.getrlimit(resource.RLIMIT_DATA)
    code, out, err = run_cli(capsys, "search", *M, "--gpus", 8, "--gbs", 8, "--max-memory-gb", 8)
    assert code == 0, err
    assert resource.getrlimit(resource.RLIMIT_DATA) == before


def test_the_memory_bound_is_shared_by_the_jobs(monkeypatch):
    from ppviz.search import cli as search_cli

    shares = []
    monkeypatch.setattr(
        search_cli, "memory_cap", lambda gb: shares.append(gb) or __import__("contextlib").nullcontext()
    )
    monkeypatch.setattr(search_cli, "search_parallel", lambda *a, **k: (_ for _ in ()).throw(MemoryError()))
    monkeypatch.setattr(cli_limits, "cores", lambda: 4)
    args = ["search", *M, "--gpus", 8, "--gbs", 8, "--jobs", 4, "--max-memory-gb", 2]
    assert main([str(a) for a in args]) == 2 and shares == [0.5]
