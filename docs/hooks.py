"""MkDocs hooks: the handbook's generated parts, made from the code at build time so they stay true.

A page asks for a part with a marker on a line of its own:

- ``<!-- generated: NAME -->`` for one of ``TABLES`` (the schedule table from the registry, the
  presets, the calibration tables);
- ``<!-- bench: NAME -->`` for the table of ``docs/bench/NAME.json``, written by
  ``python bench/bench_NAME.py --json docs/bench/NAME.json``;
- a ``console`` code block of ``$ ppviz ...`` lines gets each command's real output under it
  (the command is run with this checkout's ``ppviz``, in a scratch folder).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MARKER = re.compile(r"^<!-- (generated|bench): ([\w-]+) -->$", re.M)
CONSOLE = re.compile(r"^```console\n(.*?)^```$", re.M | re.S)


def schedule_table() -> str:
    from ppviz.report import schedule_table

    return schedule_table()


def model_presets() -> str:
    from ppviz.estimate import model, model_names

    rows = ["| model | L | h | heads / KV | FFN | vocab | s | MoE |", "|---|---:|---:|---|---:|---:|---:|---|"]
    for name in model_names():
        m = model(name)
        moe = f"{m.experts} experts, top-{m.top_k}, FFN {m.expert_ffn}" if m.experts else "—"
        rows.append(f"| `{name}` | {m.layers} | {m.hidden} | {m.heads} / {m.kv_heads} | {m.ffn} | {m.vocab} "
                    f"| {m.seq} | {moe} |")  # fmt: skip
    return "\n".join(rows) + "\n"


def gpu_presets() -> str:
    from ppviz.estimate import gpu, gpu_names

    rows = [
        "| GPU | BF16 / FP8 TFLOP/s | HBM GiB | HBM GB/s | NVLink GB/s each way × domain | network GB/s per GPU "
        "| matmul efficiency |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name in gpu_names():
        g = gpu(name)
        fp8 = f"{g.fp8_flops / 1e12:g}" if g.fp8_flops else "–"
        rows.append(f"| `{name}` | {g.bf16_flops / 1e12:g} / {fp8} | {g.hbm_bytes / 2**30:,.2f} "
                    f"| {g.hbm_bytes_per_s / 1e9:g} | {g.nvlink_bytes_per_s / 1e9:g} × {g.nvlink_domain} "
                    f"| {g.network_bytes_per_s / 1e9:g} | {g.matmul_efficiency:g} |")  # fmt: skip
    return "\n".join(rows) + "\n"


def calibration_a100() -> str:
    from ppviz.estimate import calibration

    return calibration.readme_tables()


def calibration_h100() -> str:
    from ppviz.estimate import calibration

    return calibration.h100_table()


def calibration_sc21() -> str:
    from ppviz.estimate import calibration_sc21

    return calibration_sc21.table()


def calibration_v100() -> str:
    from ppviz.estimate import calibration_v100

    return calibration_v100.table()


def calibration_v100_each() -> str:
    from ppviz.estimate import calibration_v100

    return calibration_v100.each_fit_table()


def calibration_sc21_figure13() -> str:
    from ppviz.estimate import calibration_sc21

    return calibration_sc21.figure13_table()


TABLES = {
    "schedule-table": schedule_table,
    "model-presets": model_presets,
    "gpu-presets": gpu_presets,
    "calibration-a100": calibration_a100,
    "calibration-h100": calibration_h100,
    "calibration-sc21": calibration_sc21,
    "calibration-v100": calibration_v100,
    "calibration-v100-each": calibration_v100_each,
    "calibration-sc21-figure13": calibration_sc21_figure13,
}


def _cell(value) -> str:
    if isinstance(value, bool) or value is None:
        return "—" if value is None else str(value).lower()
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)


def bench_table(name: str) -> str:
    """The table a bench script wrote with ``--json``, with the command and the machine's load."""
    data = json.loads((ROOT / "docs" / "bench" / f"{name}.json").read_text(encoding="utf-8"))
    head = "| " + " | ".join(data["columns"]) + " |\n|" + "---|" * len(data["columns"]) + "\n"
    body = "".join("| " + " | ".join(_cell(v) for v in row) + " |\n" for row in data["rows"])
    load = ", ".join(f"{x:.2f}" for x in data["loadavg"])
    source = f"`{data['command']}` on {data['when']} (load average {load} at the start; {data['machine']})"
    return f"{head}{body}\n{source}\n"


def run_cli(command: str, cwd: str) -> subprocess.CompletedProcess:
    """``ppviz ARGS`` as ``python -m ppviz ARGS`` with this checkout's package first on the path."""
    args = shlex.split(command)
    if args[0] != "ppviz":
        raise ValueError(f"a console block runs ppviz commands only (got {command!r})")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "120"}
    return subprocess.run([sys.executable, "-m", "ppviz", *args[1:]], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)  # fmt: skip


def console_commands(markdown: str) -> list[str]:
    """The ``$ ppviz ...`` commands of a page's console blocks, in order."""
    return [line[2:] for block in CONSOLE.findall(markdown) for line in block.splitlines() if line.startswith("$ ")]


def _with_output(block: re.Match, cwd: str) -> str:
    out = []
    for line in block.group(1).splitlines():
        out.append(line)
        if line.startswith("$ "):
            done = run_cli(line[2:], cwd)
            if done.returncode != 0:
                raise RuntimeError(f"`{line[2:]}` exited {done.returncode}: {done.stderr.strip()}")
            out.append(done.stdout.rstrip("\n"))
    return "```console\n" + "\n".join(x for x in out if x) + "\n```"


def _generated(match: re.Match) -> str:
    kind, name = match.groups()
    return TABLES[name]() if kind == "generated" else bench_table(name)


def on_page_markdown(markdown: str, page, config, files) -> str:
    markdown = MARKER.sub(_generated, markdown)
    if CONSOLE.search(markdown):
        with tempfile.TemporaryDirectory() as cwd:
            markdown = CONSOLE.sub(lambda m: _with_output(m, cwd), markdown)
    return markdown
