"""`--hf-config` gives the preset's numbers from a config.json; `--tokens` plans a training run."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from ppviz.__main__ import main

HF = Path(__file__).parent / "data" / "hf"
LAYOUT = ["--gpu", "h100-sxm", "--tp", "2", "--pp", "2", "--dp", "2", "--gbs", "16", "--schedule", "1f1b"]


def _json(capsys, argv) -> dict:
    assert main([*argv, "--json", "--no-ops"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_config_json_gives_the_same_estimate_as_its_preset(capsys):
    by_preset = _json(capsys, ["estimate", "--model", "llama3-8b", *LAYOUT])
    by_config = _json(capsys, ["estimate", "--hf-config", str(HF / "llama3_8b_config.json"), *LAYOUT])
    for key in ("iteration_s", "tokens_per_s", "mfu", "peak_bytes", "fits"):
        assert by_config[key] == by_preset[key], key


def test_a_searched_row_from_a_config_reruns_with_its_command(capsys):
    config = str(HF / "qwen3_8b_config.json")
    argv = ["search", "--hf-config", config, "--gpu", "h100-sxm", "--gpus", "8", "--gbs", "32", "--seq", "4096"]
    assert main([*argv, "--top", "1", "--json", "--schedules", "1f1b"]) == 0
    row = json.loads(capsys.readouterr().out)["layouts"][0]
    assert f"--hf-config {config}" in row["command"] and "--seq 4096" in row["command"]
    again = _json(capsys, shlex.split(row["command"])[1:])
    assert again["iteration_s"] == pytest.approx(row["iteration_s"], rel=1e-12)


def test_a_token_budget_gives_days_gpu_hours_and_cost(capsys):
    d = _json(capsys, ["estimate", "--model", "llama3-8b", *LAYOUT, "--tokens", "1e12", "--gpu-hour-price", "2.5"])
    plan = d["plan"]
    assert plan["days"] == pytest.approx(1e12 / d["tokens_per_s"] / 86_400)
    assert plan["gpu_hours"] == pytest.approx(plan["days"] * 24 * d["gpus"])
    assert plan["cost"] == pytest.approx(plan["gpu_hours"] * 2.5)
    assert main(["estimate", "--model", "llama3-8b", *LAYOUT, "--tokens", "1e12"]) == 0
    assert "GPU-hours" in capsys.readouterr().out.splitlines()[-1]


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--model", "llama3-8b", "--hf-config", "x.json"], "not allowed with"),
        (["--hf-config", "/nonexistent/config.json"], "cannot read"),
        (["--model", "llama3-8b", "--gpu-hour-price", "2"], "add --tokens"),
        (["--model", "llama3-8b", "--tokens", "0"], "tokens"),
    ],
)
def test_bad_planning_or_config_input_is_one_line_and_status_2(capsys, argv, says):
    argv = ["estimate", *argv, *LAYOUT]
    try:
        status = main(argv)
    except SystemExit as e:  # argparse's own refusals
        status = e.code
    assert status == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err
