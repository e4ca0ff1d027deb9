"""Record real torch.distributed.pipelining runs on the CPU as test data for reading measured runs.

Run with a torch-only virtualenv, never ppviz's (ppviz and its tests must not need torch):

    python3 -m venv /work/torchenv && /work/torchenv/bin/pip install torch==2.13.0 numpy==2.4.6
    /work/torchenv/bin/python scripts/make_pipeline_traces.py --out tests/data/measured/torch-2.13

For each schedule and rank count it spawns one process per rank (gloo on loopback), trains a stack of
Linear+ReLU blocks for a few steps under torch.profiler and writes, in ``<out>/<schedule>-<ranks>r/``:
one gzipped Chrome (Kineto) trace per rank, the schedule's compute-only and compute+comms orders as
CSV, and every rank's wall time of ``schedule.step`` in ``step_times.json``.
"""

import argparse
import csv
import gzip
import json
import os
import re
import shutil
import socket
import tempfile
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.distributed.pipelining import PipelineStage, schedules
from torch.profiler import ProfilerActivity, profile, record_function

SCHEDULES = {
    # name: (schedule class, stages per rank, stage placement)
    "gpipe": (schedules.ScheduleGPipe, 1, "loop"),
    "1f1b": (schedules.Schedule1F1B, 1, "loop"),
    "interleaved-1f1b": (schedules.ScheduleInterleaved1F1B, 2, "loop"),
    "zb-interleaved": (schedules.ScheduleInterleavedZeroBubble, 2, "loop"),
    "zbv": (schedules.ScheduleZBVZeroBubble, 2, "v"),
    # Schedule1F1B's order run by the CSV-driven runtime, whose actions are annotated in the trace
    "1f1b-runtime": (schedules._PipelineScheduleRuntime, 1, "loop"),
}
WARMUP, ACTIVE = 1, 2
STEP_ANNOTATION = "make_pipeline_traces:schedule.step"


def stage_indices(rank: int, ranks: int, per_rank: int, placement: str) -> list[int]:
    """Stages held by a rank: round-robin ("loop", as interleaved 1F1B expects) or V-shaped (ZB-V)."""
    if placement == "v":
        return [rank, 2 * ranks - 1 - rank]
    return [rank + k * ranks for k in range(per_rank)]


class _DeviceWait(torch.autograd.Function):
    """Identity whose forward sleeps `ms` and whose backward sleeps twice that: time a rank spends waiting
    for its device, as a host thread waits for a GPU, without using a core (the ranks never share one)."""

    @staticmethod
    def forward(ctx, x, ms):
        ctx.ms = ms
        time.sleep(ms / 1000)
        return x.clone()  # a new tensor, not a view: the split backward detaches its inputs in place

    @staticmethod
    def backward(ctx, grad):
        time.sleep(2 * ctx.ms / 1000)
        return grad, None


class DeviceTime(nn.Module):
    def __init__(self, ms: float):
        super().__init__()
        self.ms = ms

    def forward(self, x):
        return _DeviceWait.apply(x, self.ms)


def make_stage_module(stage: int, blocks: int, hidden: int, device_ms: float = 0.0) -> nn.Sequential:
    """One stage: `blocks` Linear+ReLU blocks, seeded by stage so every run builds the same weights; with
    `device_ms`, each block also waits that long for an emulated device (twice that in its backward)."""
    torch.manual_seed(1000 + stage)
    layers: list[nn.Module] = []
    for _ in range(blocks):
        layers += [nn.Linear(hidden, hidden), nn.ReLU()]
        if device_ms > 0:
            layers.append(DeviceTime(device_ms))
    return nn.Sequential(*layers)


def order_rows(order: dict) -> list[list[str]]:
    """A schedule IR as torch's `_dump_csv` writes it: one row per rank, '' for an idle slot."""
    return [["" if action is None else str(action) for action in order[rank]] for rank in sorted(order)]


def lower_with_comms(order: dict, n_microbatches: int, num_stages: int, stage_to_rank) -> dict:
    """Single-stage schedules have no compute+comms dump in torch 2.13: lower their order with torch's own
    passes, as `_PipelineScheduleRuntime._prepare_schedule_with_comms` does for the multi-stage ones."""
    lowered = {}
    for rank, actions in order.items():
        compute = [a for a in actions if a is not None and a.is_compute_op]
        lowered[rank] = schedules._add_reduce_grad(schedules._add_unshard_reshard(compute), n_microbatches)
    return schedules._add_send_recv(lowered, stage_to_rank=stage_to_rank, num_stages=num_stages)


def renumber_forwards(order: dict) -> dict:
    """The order Schedule1F1B runs: torch 2.13's `_get_pipeline_order` numbers the last rank's forwards 1..n
    (it increments before its first use), while `_step_microbatches` runs microbatches 0..n-1 in that order."""
    fixed = {}
    for rank, actions in order.items():
        count = iter(range(len(actions)))
        fixed[rank] = [
            a._replace(microbatch_index=next(count)) if a is not None and a.computation_type == schedules.F else a
            for a in actions
        ]
    return fixed


def write_csv(path: Path, rows: list[list[str]]) -> None:
    with open(path, "w", newline="") as f:
        csv.writer(f).writerows(rows)


def write_orders(schedule, out: Path, n_microbatches: int, num_stages: int) -> None:
    """Both CSV forms of the schedule that ran, via its own `_dump_csv` where the class has one."""
    if isinstance(schedule, schedules._PipelineScheduleRuntime):
        schedule._dump_csv(str(out / "order_compute.csv"), format="compute_only")
        schedule._dump_csv(str(out / "order_comms.csv"), format="compute_comms")
        return
    order = schedule.pipeline_order
    if isinstance(schedule, schedules.Schedule1F1B):
        write_csv(out / "order_compute.torch-dump.csv", order_rows(order))
        order = renumber_forwards(order)
    write_csv(out / "order_compute.csv", order_rows(order))
    ranks = len(order)
    comms = lower_with_comms(order, n_microbatches, num_stages, stage_to_rank=lambda s: s % ranks)
    write_csv(out / "order_comms.csv", order_rows(comms))


def runtime_running_1f1b(stages: list, mbs: int, loss_fn, csv_path: Path):
    """Schedule1F1B's order as a compute-only CSV, loaded into `_PipelineScheduleRuntime` the way a user runs a
    schedule from a file (REDUCE_GRAD is dropped: the compute-only loader accepts compute actions only)."""
    order = renumber_forwards(schedules.Schedule1F1B(stages[0], n_microbatches=mbs, loss_fn=loss_fn).pipeline_order)
    compute = {rank: [a for a in actions if a is None or a.is_compute_op] for rank, actions in order.items()}
    write_csv(csv_path, order_rows(compute))
    schedule = schedules._PipelineScheduleRuntime(stages, n_microbatches=mbs, loss_fn=loss_fn)
    schedule._load_csv(str(csv_path), format="compute_only")
    return schedule


def run_rank(rank: int, cfg: dict) -> None:
    """One rank: build its stages, train `steps` steps under the profiler, write its trace and step times."""
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(cfg["port"]))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=cfg["ranks"])
    try:
        _train_and_profile(rank, cfg)
    finally:
        dist.destroy_process_group()


def _train_and_profile(rank: int, cfg: dict) -> None:
    cls, per_rank, placement = SCHEDULES[cfg["schedule"]]
    ranks, mbs, hidden = cfg["ranks"], cfg["microbatches"], cfg["hidden"]
    num_stages = ranks * per_rank
    mine = stage_indices(rank, ranks, per_rank, placement)
    modules = [make_stage_module(s, cfg["blocks"], hidden, cfg["device_ms"]) for s in mine]
    stages = [PipelineStage(m, s, num_stages, torch.device("cpu")) for m, s in zip(modules, mine)]
    loss_fn = nn.MSELoss()
    if cls is schedules._PipelineScheduleRuntime:
        schedule = runtime_running_1f1b(stages, mbs, loss_fn, Path(cfg["tmp"]) / f"order.rank{rank}.csv")
    elif per_rank == 1:
        schedule = cls(stages[0], n_microbatches=mbs, loss_fn=loss_fn)
    else:
        schedule = cls(stages, n_microbatches=mbs, loss_fn=loss_fn)
    optimizer = torch.optim.SGD([p for m in modules for p in m.parameters()], lr=1e-3)

    torch.manual_seed(0)
    batch = torch.randn(mbs * cfg["microbatch_rows"], hidden)
    target = torch.randn(mbs * cfg["microbatch_rows"], hidden)
    args = (batch,) if 0 in mine else ()
    kwargs = {"target": target, "losses": []} if num_stages - 1 in mine else {}

    out = Path(cfg["out"])
    trace = out / f"rank{rank}.trace.json.gz"
    steps = []
    with profile(
        activities=[ProfilerActivity.CPU],
        schedule=torch.profiler.schedule(wait=cfg["wait"], warmup=WARMUP, active=ACTIVE, repeat=1),
        on_trace_ready=lambda p: p.export_chrome_trace(str(trace)),
        record_shapes=False,
        profile_memory=False,
        with_stack=False,
        with_flops=False,
        with_modules=False,
    ) as prof:
        for step in range(cfg["wait"] + WARMUP + ACTIVE):
            dist.barrier()
            start_ns = time.time_ns()
            t0 = time.perf_counter()
            with record_function(STEP_ANNOTATION):
                schedule.step(*args, **kwargs)
            elapsed = time.perf_counter() - t0
            optimizer.step()
            optimizer.zero_grad()
            steps.append(
                {
                    "step": step,
                    "profiled": step >= cfg["wait"] + WARMUP,
                    "start_unix_ns": start_ns,
                    "step_s": round(elapsed, 6),
                }
            )
            prof.step()
    if rank == 0:
        write_orders(schedule, out, mbs, num_stages)
    record = {"rank": rank, "stages": mine, "steps": steps}
    (Path(cfg["tmp"]) / f"rank{rank}.json").write_text(json.dumps(record))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def record_least_disturbed(name: str, ranks: int, args: argparse.Namespace) -> Path:
    """Record a run `--attempts` times and keep the one whose slowest profiled step is fastest: every attempt
    does the same work, so the fastest is the one other jobs on this shared machine disturbed least."""
    final = Path(args.out) / f"{name}-{ranks}r"
    with tempfile.TemporaryDirectory() as tmp:
        runs = [record_run(name, ranks, args, Path(tmp) / f"attempt{k}") for k in range(args.attempts)]
        best = min(runs, key=slowest_step)
        shutil.rmtree(final, ignore_errors=True)
        shutil.copytree(best, final)
    return final


def slowest_step(out: Path) -> float:
    summary = json.loads((out / "step_times.json").read_text())
    return max(s["step_s"] for rank in summary["per_rank"] for s in rank["steps"] if s["profiled"])


def step_spread(out: Path) -> float:
    """Largest relative difference between a rank's profiled step times."""
    summary = json.loads((out / "step_times.json").read_text())
    spreads = []
    for rank in summary["per_rank"]:
        times = [s["step_s"] for s in rank["steps"] if s["profiled"]]
        spreads.append(max(times) / min(times) - 1)
    return max(spreads)


def record_run(name: str, ranks: int, args: argparse.Namespace, out: Path) -> Path:
    """Spawn one process per rank for one schedule, then merge their step times into step_times.json."""
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        cfg = {
            "schedule": name,
            "ranks": ranks,
            "microbatches": args.microbatches,
            "microbatch_rows": args.microbatch_rows,
            "hidden": args.hidden,
            "blocks": args.blocks,
            "device_ms": args.device_ms,
            "wait": args.wait,
            "port": free_port(),
            "out": str(out),
            "tmp": tmp,
        }
        mp.spawn(run_rank, args=(cfg,), nprocs=ranks, join=True)
        per_rank = [json.loads((Path(tmp) / f"rank{r}.json").read_text()) for r in range(ranks)]
    cls, per, placement = SCHEDULES[name]
    summary = {
        "schedule": name,
        "schedule_class": cls.__name__,
        "torch": torch.__version__,
        "backend": "gloo",
        "ranks": ranks,
        "stages": ranks * per,
        "stage_placement": placement,
        "microbatches": args.microbatches,
        "microbatch_shape": [args.microbatch_rows, args.hidden],
        "stage_module": f"{args.blocks} x (Linear({args.hidden}, {args.hidden}) + ReLU"
        + (f" + DeviceTime({args.device_ms} ms forward, {2 * args.device_ms} ms backward)" if args.device_ms else "")
        + ")",
        "threads_per_rank": 1,
        "profiler_schedule": {"wait": args.wait, "warmup": WARMUP, "active": ACTIVE},
        "step_annotation": STEP_ANNOTATION,
        "note": "step_s is the wall time of schedule.step (after a barrier); steps with profiled=true are "
        "the ProfilerStep#N spans in the traces, in the same order",
        "per_rank": per_rank,
    }
    (out / "step_times.json").write_text(json.dumps(summary, indent=1) + "\n")
    return out


PP_ACTION = re.compile(r"^PP:(?P<stage>\d+)(?P<kind>[A-Z_]+?)(?P<microbatch>\d*)$")
SINGLE_ACTION = re.compile(r"^(?P<kind>Forward|Backward) (?P<microbatch>\d+)$")


def verify_run(out: Path) -> list[str]:
    """Check every rank's trace against the run: gzipped JSON, its rank, the profiled steps, and the
    pipelining runtime's own action annotations (in the CSV's order for the runtime schedules)."""
    summary = json.loads((out / "step_times.json").read_text())
    comms_rows = list(csv.reader((out / "order_comms.csv").read_text().splitlines()))
    lines = []
    for r in range(summary["ranks"]):
        with gzip.open(out / f"rank{r}.trace.json.gz", "rt") as f:
            trace = json.load(f)
        info = trace["distributedInfo"]
        assert (info["rank"], info["world_size"]) == (r, summary["ranks"]), info
        events = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
        steps = sorted((e for e in events if e["name"].startswith("ProfilerStep#")), key=lambda e: e["ts"])
        assert len(steps) == ACTIVE, [e["name"] for e in steps]
        actions = sorted(
            (e for e in events if PP_ACTION.match(e["name"]) or SINGLE_ACTION.match(e["name"])), key=lambda e: e["ts"]
        )
        spans = sorted((e for e in events if e["name"] == STEP_ANNOTATION), key=lambda e: e["ts"])
        profiled = [s for s in summary["per_rank"][r]["steps"] if s["profiled"]]
        for span, step in zip(spans, profiled, strict=True):
            unix_us = span["ts"] + trace["baseTimeNanoseconds"] / 1000
            assert abs(unix_us - step["start_unix_ns"] / 1000) < 5000, "trace clock is not Unix time"
        for step in steps:
            inside = [e["name"] for e in actions if step["ts"] <= e["ts"] < step["ts"] + step["dur"]]
            if summary["schedule_class"] in ("ScheduleGPipe",):
                assert len(inside) == 2 * summary["microbatches"], inside
            elif inside or summary["schedule_class"] != "Schedule1F1B":
                assert inside == [f"PP:{a}" for a in comms_rows[r]], (step["name"], inside[:8])
        lines.append(
            f"rank {r}: {', '.join(e['name'] for e in steps)}; {len(actions) // ACTIVE} action annotations per step"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="tests/data/measured/torch-2.13")
    parser.add_argument("--schedules", nargs="+", default=list(SCHEDULES), choices=list(SCHEDULES))
    parser.add_argument("--ranks", nargs="+", type=int, default=[2, 4])
    parser.add_argument("--microbatches", type=int, default=8)
    parser.add_argument("--microbatch-rows", type=int, default=32)
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--blocks", type=int, default=2)
    parser.add_argument(
        "--device-ms",
        type=float,
        default=0.0,
        help="each block also waits this long for an emulated device (a sleep, twice in its backward)",
    )
    parser.add_argument("--wait", type=int, default=3, help="unprofiled steps first, so the profiled ones run warm")
    parser.add_argument("--attempts", type=int, default=3, help="runs per schedule; the least disturbed is kept")
    parser.add_argument("--verify-only", action="store_true", help="check the traces already in --out")
    args = parser.parse_args()
    for name in args.schedules:
        for ranks in args.ranks:
            t0 = time.perf_counter()
            out = Path(args.out) / f"{name}-{ranks}r" if args.verify_only else record_least_disturbed(name, ranks, args)
            took, slowest, spread = time.perf_counter() - t0, slowest_step(out) * 1e3, step_spread(out)
            print(f"{out}: {took:.1f} s, slowest profiled step {slowest:.1f} ms, steps differ by {spread:.0%}")
            for line in verify_run(out):
                print("  " + line)


if __name__ == "__main__":
    main()
