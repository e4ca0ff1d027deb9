"""The command line: the JSON contract, exports, imports, and one-line errors with exit 2."""

import json
import subprocess
import sys

import pytest

from ppviz import REGISTRY, __version__
from ppviz.__main__ import main

CONTRACT = ["schedule", "devices", "stages", "microbatches", "chunks", "makespan", "span", "busy",
            "bubble_fraction", "peak_activation", "ops"]  # fmt: skip


def run_cli(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def test_list_json_names_every_registered_schedule(capsys):
    code, out, _ = run_cli(capsys, "list", "--json")
    assert code == 0
    rows = json.loads(out)
    assert [r["name"] for r in rows] == list(REGISTRY)
    assert all(r["description"] and r["reference"] for r in rows)


def test_simulate_json_has_the_contract_fields_and_exact_1f1b_makespan(capsys):
    code, out, _ = run_cli(capsys, "simulate", "1f1b", "--devices", 4, "--microbatches", 8, "--json",
                           "--f", 1, "--b", 2, "--w", 0.5)  # fmt: skip
    assert code == 0
    res = json.loads(out)
    assert all(k in res for k in CONTRACT)
    assert res["makespan"] == (8 + 4 - 1) * (1 + 2 + 0.5)
    assert res["peak_activation"] == [4, 3, 2, 1]
    assert len(res["ops"]) == 4 * 8 * 2
    assert {o["kind"] for o in res["ops"]} == {"F", "BW"}


def test_simulate_csv_prints_one_row_per_op(capsys):
    code, out, _ = run_cli(capsys, "simulate", "zb-h1", "-p", 2, "-m", 3, "--csv")
    assert code == 0
    lines = out.strip().splitlines()
    assert lines[0] == "device,stage,microbatch,kind,start,end"
    assert len(lines) == 1 + 2 * 3 * 3


def test_torch_csv_export_then_import_gives_the_same_result(capsys, tmp_path):
    code, order, _ = run_cli(capsys, "simulate", "interleaved-1f1b", "-p", 2, "-m", 4, "-v", 2, "--torch-csv")
    assert code == 0
    path = tmp_path / "order.csv"
    path.write_text(order)
    _, a, _ = run_cli(capsys, "simulate", "interleaved-1f1b", "-p", 2, "-m", 4, "-v", 2, "--json")
    code, b, _ = run_cli(capsys, "simulate", "--order", path, "--json")
    assert code == 0
    a, b = json.loads(a), json.loads(b)
    assert b["makespan"] == a["makespan"] and b["ops"] == a["ops"]


def test_render_writes_a_standalone_page(capsys, tmp_path):
    out = tmp_path / "page.html"
    code, text, _ = run_cli(capsys, "render", "gpipe", "-p", 2, "-m", 2, "-o", out)
    assert code == 0 and "wrote" in text
    html = out.read_text()
    assert "<html" in html.lower() and "plotly" in html.lower()


@pytest.mark.parametrize(
    "args, words",
    [
        (["simulate", "1f1b", "--devices", 0, "--microbatches", 4], "devices"),
        (["simulate", "no-such", "--devices", 4, "--microbatches", 4], "unknown schedule"),
        (["simulate", "1f1b", "--devices", 4, "--microbatches", "x"], "microbatches"),
        (["simulate", "interleaved-1f1b", "-p", 4, "-m", 6, "-v", 2], "multiple of devices"),
        (["simulate", "1f1b", "-p", 4, "-m", 4, "--f", -1], "--f -1 is out of range: it takes 0 to"),
        (["simulate", "zb-h1", "-p", 4, "-m", 4, "--group-size", 2], "does not take"),
        (["simulate", "1f1b", "-p", 4], "--microbatches"),
        (["simulate", "--order", "/no/such/file.csv"], "cannot read"),
        (["simulate", "1f1b", "-p", 2, "-m", 2, "--stage-time", "5:1,1,1"], "device share 5"),
        (["simulate", "1f1b", "-p", 2, "-m", 2, "--stage-time", "bad"], "SHARE:F,B,W"),
        (["simulate", "1f1b", "-p", "٤", "-m", 4], "ASCII digits"),
        (["simulate", "1f1b", "-p", "４", "-m", 4], "ASCII digits"),
        (["simulate", "1f1b", "-p", 4, "-m", "1_000"], "ASCII digits"),
        (["simulate", "1f1b", "-p", 4, "-m", 4, "--f", "nan"], "ASCII digits"),
        (["simulate", "1f1b", "-p", 4, "-m", 4, "--b-frees", 0.5], "--b-frees does not apply"),
        (["simulate", "1f1b", "-p", 4, "-m", 4, "--overlap", 0.8], "--overlap does not apply"),
        (["simulate", "1f1b", "-p", 4, "-m", 4, "--f", 0, "--b", 0, "--w", 0], "all 0"),
        (["simulate"], "name a schedule"),
    ],
)
def test_bad_input_prints_one_line_and_exits_2(capsys, args, words):
    code, out, err = run_cli(capsys, *args)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("ppviz: error:")
    assert words in err
    assert "Traceback" not in err


def test_options_that_apply_are_taken(capsys):
    code, out, _ = run_cli(capsys, "simulate", "zb-h1", "-p", 2, "-m", 2, "--b-frees", 0.5, "--json")
    assert code == 0 and json.loads(out)["costs"]["b_frees"] == 0.5
    code, out, _ = run_cli(capsys, "simulate", "dualpipe", "-p", 4, "-m", 8, "--overlap", 0.8, "--json")
    assert code == 0 and json.loads(out)["costs"]["overlap"] == 0.8


def test_no_arguments_print_the_help_and_version_prints_the_version(capsys):
    code, out, err = run_cli(capsys)
    assert code == 0 and "usage: ppviz" in out and "simulate" in out and not err
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0 and capsys.readouterr().out.strip() == f"ppviz {__version__}"


def test_a_malformed_order_file_is_reported_with_its_position(capsys, tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("0F0,0X1\n")
    code, _, err = run_cli(capsys, "simulate", "--order", path)
    assert code == 2 and "row 1, column 2" in err


def test_module_entry_point_runs_as_a_subprocess():
    r = subprocess.run([sys.executable, "-m", "ppviz", "simulate", "gpipe", "-p", "2", "-m", "2"],
                       capture_output=True, text=True, timeout=60)  # fmt: skip
    assert r.returncode == 0 and "makespan 9" in r.stdout


def test_megatron_group_size_flag_is_the_group_size(capsys):
    args = ["simulate", "interleaved-1f1b", "-p", 4, "-m", 12, "-v", 2, "--json"]
    _, by_alias, _ = run_cli(capsys, *args, "--microbatch-group-size-per-vp-stage", 6)
    _, by_name, _ = run_cli(capsys, *args, "--group-size", 6)
    _, default, _ = run_cli(capsys, *args)
    assert json.loads(by_alias)["ops"] == json.loads(by_name)["ops"] != json.loads(default)["ops"]


@pytest.mark.parametrize(
    "args",
    [
        ["estimate", "--model", "llama3-8b", "--gpu", "h100-sxm", "--tp", "٢"],
        ["estimate", "--model", "llama3-8b", "--gpu", "h100-sxm", "--seq", "4_096"],
        ["estimate", "--model", "llama3-8b", "--gpu", "h100-sxm", "--peak-tflops", "inf"],
        ["search", "--model", "llama3-8b", "--gpu", "h100-sxm", "--gpus", "１６", "--gbs", 64],
        ["search", "--model", "llama3-8b", "--gpu", "h100-sxm", "--gpus", 16, "--gbs", 64, "--tp", "1,٢"],
    ],
)
def test_every_subcommand_takes_ascii_digits_only(capsys, args):
    code, _, err = run_cli(capsys, *args)
    assert code == 2 and err.count("\n") == 1 and ("ASCII digits" in err or "whole numbers" in err)
