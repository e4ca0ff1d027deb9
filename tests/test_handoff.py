"""Launch settings: parsed back as the framework would read them, flag and key names checked
against lists copied from the frameworks' sources."""

import argparse
import json
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from ppviz import handoff
from ppviz.estimate import specs

FLAGS = Path(__file__).parent / "data" / "megatron_flags.txt"
MEGATRON_FLAGS = {line for line in FLAGS.read_text().splitlines() if line.startswith("--")}

# torchtitan's JobConfig sections and their fields: torchtitan/config/job_config.py at
# pytorch/torchtitan e347b1e5e6b6941d789d16d340145294d82dc71e (the last revision read from TOML).
JOB_CONFIG = {
    "model": {"name", "flavor", "hf_assets_path", "tokenizer_path", "converters", "print_after_conversion"},
    "training": {
        "dataset",
        "dataset_path",
        "local_batch_size",
        "global_batch_size",
        "seq_len",
        "max_norm",
        "steps",
        "enable_cpu_offload",
        "dtype",
        "mixed_precision_param",
        "mixed_precision_reduce",
        "gc_freq",
        "gc_debug",
        "dataloader",
    },
    "parallelism": {
        "data_parallel_replicate_degree",
        "data_parallel_shard_degree",
        "fsdp_reshard_after_forward",
        "tensor_parallel_degree",
        "disable_loss_parallel",
        "enable_async_tensor_parallel",
        "pipeline_parallel_degree",
        "module_fqns_per_model_part",
        "pipeline_parallel_first_stage_less_layers",
        "pipeline_parallel_last_stage_less_layers",
        "pipeline_parallel_layers_per_stage",
        "pipeline_parallel_schedule",
        "pipeline_parallel_schedule_csv",
        "pipeline_parallel_microbatch_size",
        "pipeline_parallel_expert_parallel_overlap",
        "context_parallel_degree",
        "context_parallel_load_balancer",
        "context_parallel_rotate_method",
        "expert_parallel_degree",
        "expert_tensor_parallel_degree",
        "expert_parallel_comm_backend",
    },
    "activation_checkpoint": {
        "mode",
        "selective_ac_option",
        "per_op_sac_force_recompute_mm_shapes_by_fqns",
        "early_stop",
        "memory_budget",
        "visualize_memory_budget_pareto",
        "preserve_rng_state",
        "determinism_check",
        "debug",
    },
    "compile": {"enable", "components", "backend"},
}
# torch.distributed.pipelining.schedules.get_schedule_class's names
TORCH_NAMES = {
    "1F1B",
    "Interleaved1F1B",
    "GPipe",
    "LoopedBFS",
    "InterleavedZeroBubble",
    "PipelineScheduleSingle",
    "PipelineScheduleMulti",
    "ZBVZeroBubble",
    "DualPipeV",
}

LLAMA70 = specs.model("llama3-70b")
CASES = [
    (LLAMA70, specs.Layout(tp=8, pp=8, gbs=64, sequence_parallel=True, recompute="selective", zero=1)),
    (
        LLAMA70,
        specs.Layout(
            tp=8,
            pp=4,
            dp=2,
            vpp=5,
            gbs=64,
            schedule="interleaved-1f1b",
            sequence_parallel=True,
            tp_comm_overlap=True,
            recompute="full",
            zero=3,
        ),
    ),
    (
        specs.model("llama3-405b"),
        specs.Layout(tp=8, pp=16, dp=4, cp=2, gbs=256, edge_fewer=1, zero=2, precision="fp8", sequence_parallel=True),
    ),
    (
        specs.model("mixtral-8x7b"),
        specs.Layout(tp=2, pp=4, dp=8, ep=8, gbs=128, schedule="zb-v", sequence_parallel=True, zero=1),
    ),
    (specs.model("gpt3-175b"), specs.Layout(tp=8, pp=4, dp=1, gbs=16, layer_split=(23, 24, 26, 23))),
]


def megatron_args(text: str) -> list[str]:
    """The arguments as a shell would pass them (comment lines and line continuations dropped)."""
    body = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
    return shlex.split(body.replace("\\\n", " "))


def megatron_parser(args: list[str]) -> argparse.ArgumentParser:
    """A parser that knows exactly the flags written: a flag followed by another flag is a switch."""
    p = argparse.ArgumentParser(exit_on_error=False)
    for i, a in enumerate(args):
        if a.startswith("--"):
            switch = i + 1 == len(args) or args[i + 1].startswith("--")
            p.add_argument(a, action="store_true") if switch else p.add_argument(a)
    return p


@pytest.mark.parametrize(("model", "layout"), CASES)
def test_megatron_arguments_parse_back_to_the_layout(model, layout):
    launch = handoff.megatron(model, layout)
    args = megatron_args(launch.text)
    assert args == launch.settings
    unknown = [a for a in args if a.startswith("--") and a not in MEGATRON_FLAGS]
    assert not unknown, f"not flags of Megatron-LM's arguments.py: {unknown}"
    ns = megatron_parser(args).parse_args(args)
    assert int(ns.tensor_model_parallel_size) == layout.tp
    assert int(ns.pipeline_model_parallel_size) == layout.pp
    assert int(ns.micro_batch_size) == layout.mbs
    assert int(ns.global_batch_size) == layout.global_batch
    assert int(ns.num_layers) == model.layers and int(ns.hidden_size) == model.hidden
    assert int(ns.seq_length) == model.seq and int(ns.vocab_size) == model.vocab
    assert getattr(ns, "sequence_parallel", False) is layout.sequence_parallel
    assert getattr(ns, "tp_comm_overlap", False) is layout.tp_comm_overlap
    assert int(getattr(ns, "context_parallel_size", 1)) == layout.cp
    assert int(getattr(ns, "num_virtual_stages_per_pipeline_rank", 1)) == layout.vpp
    assert getattr(ns, "use_distributed_optimizer", False) is (layout.zero == 1)
    assert getattr(ns, "recompute_activations", False) is (layout.recompute == "selective")
    assert getattr(ns, "recompute_granularity", None) == ("full" if layout.recompute == "full" else None)
    assert getattr(ns, "fp8_format", None) == ("hybrid" if layout.precision == "fp8" else None)
    if model.kv_heads != model.heads:
        assert ns.group_query_attention and int(ns.num_query_groups) == model.kv_heads
    if model.moe:
        assert int(ns.num_experts) == model.experts and int(ns.moe_router_topk) == model.top_k
        assert int(ns.expert_model_parallel_size) == layout.ep


def test_megatron_uneven_stages():
    model, layout = CASES[2]  # one layer fewer on the first and last stage
    ns = megatron_parser(a := handoff.megatron(model, layout).settings).parse_args(a)
    assert (int(ns.decoder_first_pipeline_num_layers), int(ns.decoder_last_pipeline_num_layers)) == (7, 7)
    model, layout = CASES[4]  # an explicit split whose middle is uneven is the full layout
    args = handoff.megatron(model, layout).settings
    ns = megatron_parser(args).parse_args(args)
    stages = ns.pipeline_model_parallel_layout.split("|")
    assert stages == ["Et*23", "t*24", "t*26", "t*23L"]


def test_megatron_says_what_it_cannot_run():
    model, layout = CASES[3]  # ZB-V
    launch = handoff.megatron(model, layout)
    assert any("no zb-v schedule" in n for n in launch.notes)
    assert launch.text.startswith("# Megatron-LM has no zb-v")
    two_d = specs.Layout(tp=4, pp=2, gbs=8, tp_mode="2d", tp2d=(2, 2))
    assert any("2D (SUMMA)" in n for n in handoff.megatron(LLAMA70, two_d).notes)


@pytest.mark.parametrize(("model", "layout"), CASES)
def test_torchtitan_toml_parses_to_job_config_keys(model, layout):
    launch = handoff.torchtitan(model, layout)
    config = tomllib.loads(launch.text)
    assert config == launch.settings
    for section, values in config.items():
        assert section in JOB_CONFIG, section
        assert set(values) <= JOB_CONFIG[section], set(values) - JOB_CONFIG[section]
    par, training = config["parallelism"], config["training"]
    dp = par["data_parallel_replicate_degree"] * par["data_parallel_shard_degree"]
    assert dp == layout.dp
    assert (par["tensor_parallel_degree"], par["pipeline_parallel_degree"]) == (layout.tp, layout.pp)
    assert par["context_parallel_degree"] == layout.cp
    assert training["global_batch_size"] == layout.global_batch
    assert training["local_batch_size"] * layout.dp == layout.global_batch
    assert training["seq_len"] == model.seq
    assert config["activation_checkpoint"]["mode"] == layout.recompute
    if layout.pp > 1:
        assert par["pipeline_parallel_schedule"] in TORCH_NAMES
        assert par["pipeline_parallel_microbatch_size"] == layout.mbs
        parts = par["module_fqns_per_model_part"]
        layers = [name for part in parts for name in part if name.startswith("layers.")]
        assert layers == [f"layers.{i}" for i in range(model.layers)]
        assert parts[0][0] == "tok_embeddings" and parts[-1][-2:] == ["norm", "output"]
    if model.moe:
        assert par["expert_parallel_degree"] == layout.ep


def test_torchtitan_schedules_and_notes():
    assert set(handoff.TORCH_SCHEDULES.values()) <= TORCH_NAMES
    v = handoff.torchtitan(*CASES[3]).settings["parallelism"]
    assert v["pipeline_parallel_schedule"] == "ZBVZeroBubble" and len(v["module_fqns_per_model_part"]) == 8
    eager = handoff.torchtitan(LLAMA70, specs.Layout(tp=8, pp=8, gbs=64, schedule="eager-1f1b"))
    assert "pipeline_parallel_schedule" not in eager.settings["parallelism"]
    assert any("has no eager-1f1b" in n for n in eager.notes)
    zero1 = handoff.torchtitan(*CASES[0])
    assert any("ZeRO-1 is written as ZeRO-2" in n for n in zero1.notes)


def test_cli_launch_text_and_json():
    base = [
        sys.executable,
        "-m",
        "ppviz",
        "estimate",
        "--model",
        "llama3-70b",
        "--gpu",
        "h100-sxm",
        "--tp",
        "8",
        "--pp",
        "8",
        "--gbs",
        "64",
        "--sequence-parallel",
        "--zero",
        "1",
    ]
    text = subprocess.run([*base, "--launch", "torchtitan"], capture_output=True, text=True, check=True).stdout
    assert tomllib.loads(text)["parallelism"]["tensor_parallel_degree"] == 8
    out = subprocess.run(
        [*base, "--launch", "megatron", "--json", "--no-ops"], capture_output=True, text=True, check=True
    ).stdout
    launch = json.loads(out)["launch"]
    assert launch["framework"] == "megatron" and megatron_args(launch["text"]) == launch["args"]
