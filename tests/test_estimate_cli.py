"""`ppviz estimate` and `ppviz presets`: the JSON contract, overrides by flag, readable output, and
one-line refusals with exit status 2."""

import dataclasses
import json
import subprocess
import sys

import pytest

from ppviz.__main__ import main
from ppviz.estimate import Gpu, Model, gpu, model
from ppviz.estimate.specs import override_flags

BASE = ["estimate", "--model", "llama3-8b", "--gpu", "h100-sxm", "--tp", "2", "--pp", "4", "--dp", "2", "--mbs", "1",
        "--gbs", "32", "--seq", "4096", "--recompute", "selective", "--sequence-parallel", "--zero", "1",
        "--schedule", "zb-h1"]  # fmt: skip
CONTRACT = ["iteration_s", "tokens_per_s", "tflops_per_gpu", "mfu", "microbatches", "stages", "layer_ms", "stage_ms",
            "p2p_ms", "dp_sync_s", "optimizer_s", "activation_bytes_per_layer", "params_per_layer", "bytes_per_param",
            "weight_bytes", "grad_bytes", "optimizer_bytes", "peak_activation_bytes", "peak_bytes", "capacity_bytes",
            "fits", "run"]  # fmt: skip


def run_json(capsys, argv):
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_json_contract(capsys):
    d = run_json(capsys, BASE)
    assert set(CONTRACT) <= set(d)
    assert d["microbatches"] == 16 and d["stages"] == 4
    assert d["tokens_per_s"] == pytest.approx(32 * 4096 / d["iteration_s"])
    assert [s["layers"] for s in d["stage_ms"]] == [8] * 4
    assert set(d["layer_ms"]) == {"f", "b", "w"}
    assert d["run"]["makespan"] <= d["iteration_s"]
    assert d["run"]["schedule"] == "zb-h1" and len(d["run"]["ops"]) == 3 * 4 * 16
    assert d["iteration_s"] == pytest.approx(d["run"]["makespan"] + d["dp_sync_s"] + d["optimizer_s"])
    assert d["capacity_bytes"] == 81_559 * 2**20 and d["fits"] is True  # nvidia-smi's 81,559 MiB
    assert d["bytes_per_param"] == 6 + 12 / 2
    # the layer's stage times add up: a middle stage is 8 layers
    assert d["stage_ms"][1]["f"] == pytest.approx(8 * d["layer_ms"]["f"])


def test_json_matches_the_python_api(capsys):
    from ppviz.estimate import Layout, estimate

    d = run_json(capsys, BASE)
    lay = Layout(tp=2, pp=4, dp=2, mbs=1, gbs=32, recompute="selective", sequence_parallel=True, zero=1,
                 schedule="zb-h1")  # fmt: skip
    e = estimate(model("llama3-8b", seq=4096), "h100-sxm", lay)
    assert d["iteration_s"] == e.iteration_s and d["peak_bytes"] == e.peak_bytes.tolist()


def test_model_flags_override_every_field(capsys):
    values = {"layers": 16, "hidden": 2048, "heads": 16, "kv-heads": 4, "ffn": 8192, "vocab": 32000, "seq": 2048,
              "head-dim": 128}  # fmt: skip
    argv = ["estimate", "--model", "llama3-8b", "--gpu", "h100-sxm", "--tp", "2", "--gbs", "1"]
    for flag, v in values.items():
        argv += [f"--{flag}", str(v)]
    argv += ["--no-gated-mlp", "--tied-embeddings", "--bias", "--dropout", "--no-flash-attention",
             "--learned-positions"]  # fmt: skip
    d = run_json(capsys, argv)
    for flag, v in values.items():
        assert d["model"][flag.replace("-", "_")] == v
    assert (d["model"]["gated_mlp"], d["model"]["tied_embeddings"], d["model"]["flash_attention"]) == (
        False,
        True,
        False,
    )
    covered = {f.field for f in override_flags(Model)}
    assert covered == {f.name for f in dataclasses.fields(Model)} - {"name"}
    moe = run_json(capsys, ["estimate", "--model", "mixtral-8x7b", "--gpu", "h100-sxm", "--tp", "2", "--gbs", "1",
                            "--experts", "4", "--top-k", "1", "--expert-ffn", "1024", "--shared-experts", "1",
                            "--dense-layers", "2", "--seq", "2048", "--no-ops"])  # fmt: skip
    assert [moe["model"][k] for k in ("experts", "top_k", "expert_ffn", "shared_experts", "dense_layers")] == [
        4,
        1,
        1024,
        1,
        2,
    ]


def test_gpu_flags_are_in_human_units(capsys):
    argv = ["estimate", "--model", "llama3-8b", "--gpu", "h100-sxm", "--tp", "8", "--gbs", "1",
            "--peak-tflops", "500", "--hbm-gib", "40", "--hbm-gbps", "2000", "--nvlink-gbps", "100",
            "--nvlink-domain", "4", "--network-gbps", "10", "--kernel-overhead-us", "7",
            "--matmul-efficiency", "0.5", "--no-ops"]  # fmt: skip
    d = run_json(capsys, argv)
    g = d["gpu"]
    assert (g["bf16_flops"], g["hbm_bytes"], g["hbm_bytes_per_s"], g["nvlink_bytes_per_s"]) == (
        500e12,
        40 * 2**30,
        2e12,
        1e11,
    )
    assert (g["nvlink_domain"], g["network_bytes_per_s"], g["matmul_efficiency"]) == (4, 1e10, 0.5)
    assert g["kernel_overhead_s"] == pytest.approx(7e-6)
    assert d["capacity_bytes"] == 40 * 2**30
    fields = {f.field for f in override_flags(Gpu)}
    assert fields == set(gpu("h100-sxm").__dataclass_fields__) - {"name"}


def test_readable_summary_and_does_not_fit(capsys):
    argv = ["estimate", "--model", "gpt3-175b", "--gpu", "a100-40gb", "--tp", "8", "--pp", "8", "--vpp", "3",
            "--gbs", "64", "--schedule", "interleaved-1f1b"]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "iteration" in out and "tokens/s" in out and "MFU" in out
    assert "does not fit by" in out and "GiB usable = 40.00 GiB HBM − 3.00 GiB reserve" in out
    assert len([line for line in out.splitlines() if line.strip()[:1].isdigit()]) == 8  # one row per device


def test_presets(capsys):
    assert main(["presets"]) == 0
    out = capsys.readouterr().out
    assert "llama3-405b" in out and "mi300x" in out
    assert main(["presets", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert list(d["models"])[0] == "gpt3-175b" and d["gpus"]["h100-sxm"]["bf16_flops"] == 989e12


@pytest.mark.parametrize(
    "change, words",
    [
        (["--tp", "3"], "tp 3 must divide the 32 attention heads"),
        (["--gbs", "33"], "global batch 33 is not a multiple of dp·mbs"),
        (["--model", "no-such-model"], "unknown model preset 'no-such-model'"),
        (["--gpu", "tpu-v5"], "unknown GPU preset 'tpu-v5'"),
        (["--schedule", "1f1b", "--group-size", "2"], "1f1b does not take --group-size"),
        (["--recompute", "most"], "invalid choice"),
        (["--layers", "30"], "30 layers do not split evenly into 4 stages"),
        (["--layer-split", "8,8,x"], "--layer-split wants layers per stage"),
        (["--hbm-gib", "-1"], "--hbm-gib -1 is out of range: it takes > 0"),
        (["--hbm-gb", "40"], "HBM is in GiB now (2^30 bytes, as nvidia-smi counts): give --hbm-gib 37.2529 for 40 GB"),
        (["--reserve-gib", "90"], "the reserve (90.00 GiB) leaves nothing of the HBM (79.65 GiB): lower the reserve"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, change, words):
    argv = list(BASE)
    for i in range(0, len(change), 2):
        if change[i] in argv:
            argv[argv.index(change[i]) + 1] = change[i + 1]
        else:
            argv += change[i : i + 2]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_cli_in_a_subprocess():
    r = subprocess.run([sys.executable, "-m", "ppviz", *BASE, "--tp", "3"], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.count("\n") == 1


def test_tp_comm_overlap_flag_round_trip(capsys, tmp_path):
    """--tp-comm-overlap reaches the Layout (JSON layout field, the Python API's figures) in `ppviz
    estimate` and `ppviz render`; it hides TP time and is refused without --sequence-parallel."""
    from ppviz.estimate import Layout, estimate

    argv = [*BASE, "--schedule", "1f1b"]
    off, on = run_json(capsys, argv), run_json(capsys, [*argv, "--tp-comm-overlap"])
    assert off["layout"]["tp_comm_overlap"] is False and on["layout"]["tp_comm_overlap"] is True
    lay = Layout(tp=2, pp=4, dp=2, mbs=1, gbs=32, recompute="selective", sequence_parallel=True, zero=1,
                 tp_comm_overlap=True)  # fmt: skip
    assert on["iteration_s"] == estimate(model("llama3-8b", seq=4096), "h100-sxm", lay).iteration_s
    assert on["iteration_s"] < off["iteration_s"] and on["breakdown_s"]["tp_comm_s"] < off["breakdown_s"]["tp_comm_s"]
    page = tmp_path / "p.html"
    render = ["render", "1f1b", *BASE[1:5], "--tp", "2", "--pp", "4", "--dp", "2", "--gbs", "32", "--seq", "4096",
              "--recompute", "selective", "--sequence-parallel", "--zero", "1", "--tp-comm-overlap", "-o",
              str(page)]  # fmt: skip
    assert main(render) == 0
    assert f"iteration {on['iteration_s'] * 1e3:,.1f} ms" in capsys.readouterr().out
    assert main([a for a in argv if a != "--sequence-parallel"] + ["--no-sequence-parallel", "--tp-comm-overlap"]) == 2
    err = capsys.readouterr().err
    assert "add sequence_parallel" in err and len(err.strip().splitlines()) == 1
