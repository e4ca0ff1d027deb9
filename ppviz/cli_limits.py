"""The bounds of every number the command line takes, in one table, checked before any work.

Python computes with any size, so without them an absurd size hangs or takes the machine's memory
(``--layers 1000000000`` loops a billion times; ``search --jobs 100000`` forks 100,000 processes).
Each bound is what is physically meaningful (the largest published model or cluster times a
margin) and what this machine computes in seconds; the comment beside it says which. A value past
its bound is refused with the bound in the message (exit 2) before anything is built.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from .costs import MAX_TIME
from .schedules import REGISTRY

# the largest published training clusters hold about 100,000 GPUs (2024-25): ten times that
GPUS = 2**20
# the deepest published transformer has 1,000 layers (DeepNet, 2022), production ones ≤ 160: 64× that
LAYERS = 2**16
# the largest published global batch is about 16,000 sequences (DeepSeek-V3: 15,360): 64× that
GBS = 2**20
# the micro-batch size: at most the global batch of one pipeline; as the web's micro-batch box (65,536)
MBS = 2**16
# pipeline devices (and pp): the most published is 64 stages, 16× that; an estimate's work grows with pp²
# (its p2p links, 1,024: 0.6 s, 4,096: 5.6 s) and a rendered page's memory with p (65,536: 9 GB);
# the simulator's own limit (MAX_ACTIONS) bounds p × m
DEVICES = 2**10
# the longest published training context is about 10M tokens: 16,777,216
SEQ = 2**24
# widths: the widest published model has h 25,600 (Megatron 1T), FFN 102,400, vocabulary 256,000
HIDDEN, FFN, VOCAB = 2**20, 2**22, 2**22
# heads, experts: at most 160 heads and 384 routed experts published; head dimensions ≤ 256
HEADS, EXPERTS = 2**16, 2**16
# rates: B200's 2,250 dense BF16 TFLOP/s and 8,000 GB/s of HBM, 900 GB/s NVLink: about 100× each
TFLOPS, GBPS = 1e6, 1e6
# HBM per GPU: 288 GB on B300: 100,000 GiB is 370× that
HBM_GIB = 1e5
# the schedule orders a search may build, in actions (``search.space.order_actions``, an upper bound
# that leaves out the pruning): refused past this before any work. A search that builds all it counts
# takes about 80 bytes per action (llama3-8b with 1,024 layers on 64 GPUs, gbs 512: 48M counted,
# 3.7 GB peak, bench/bench_cli_bounds.py --rss); larger models prune most (DeepSeek-V3 on 16,384 GPUs
# at gbs 16,384: 40M counted, 0.2 GB). The README's GPT 1T example counts 168M: this keeps it, and
# the memory bound below ends whatever passes and still grows
SEARCH_ACTIONS = 500_000_000
# latencies and launch overheads in µs: a second (they are µs in practice)
MICROSECONDS = 1e6


@dataclass(frozen=True)
class Bound:
    """A closed range [low, high], or open at an end when ``low_open`` / ``high_open``; ``why`` is shown."""

    low: float
    high: float
    why: str
    low_open: bool = False
    high_open: bool = False

    def holds(self, v: float) -> bool:
        above = v > self.low if self.low_open else v >= self.low
        below = v < self.high if self.high_open else v <= self.high
        return above and below

    def text(self) -> str:
        lo, hi = _num(self.low), _num(self.high)
        if self.low_open or self.high_open:
            return f"{'>' if self.low_open else '≥'} {lo} and {'<' if self.high_open else '≤'} {hi}"
        return f"{lo} to {hi}"


def _num(v: float) -> str:
    return f"{int(v):,}" if float(v).is_integer() and abs(v) < 1e15 else f"{v:g}"


def _sizes(high: int, why: str, low: int = 1) -> Bound:
    return Bound(low, high, why)


BOUNDS: dict[str, Bound] = {
    # simulate / render in abstract units
    "--devices": _sizes(DEVICES, "published pipelines have at most 64 devices"),
    "--microbatches": _sizes(GBS, "a global batch of at most 2^20 sequences"),
    "--gbs": _sizes(GBS, "the largest published global batch is about 16,000 sequences"),
    "--mbs": _sizes(MBS, "a micro-batch holds at most 65,536 sequences"),
    "--f": Bound(0, MAX_TIME, "op times, any unit"),
    "--b": Bound(0, MAX_TIME, "op times, any unit"),
    "--w": Bound(0, MAX_TIME, "op times, any unit"),
    "--p2p": Bound(0, MAX_TIME, "a latency, in op-time units"),
    "--host-overhead": Bound(0, MAX_TIME, "a host time between two ops, in op-time units"),
    "--overlap": Bound(0, 100, "the time factor of an overlapped pair", low_open=True),
    "--b-frees": Bound(0, 1, "a fraction"),
    "--stage-time": Bound(0, MAX_TIME, "device shares and op times"),
    "--limit": Bound(0, 1e6, "a memory line (GB with --model)"),
    "--iteration-ms": Bound(0, 1e9, "a measured iteration time (1e9 ms is 11 days)", low_open=True),
    "--iteration": Bound(0, 2**31 - 1, "a profiler step number (ProfilerStep#N)"),
    "--cores": Bound(1, 4096, "the cores of one host"),
    # layout (estimate, render --model, search's restrictions)
    "--tp": _sizes(GPUS, "a share of at most 2^20 GPUs"),
    "--pp": _sizes(DEVICES, "published pipelines have at most 64 stages"),
    "--dp": _sizes(GPUS, "a share of at most 2^20 GPUs"),
    "--cp": _sizes(GPUS, "a share of at most 2^20 GPUs"),
    "--ep": _sizes(EXPERTS, "at most one expert per rank"),
    "--vpp": _sizes(16, "as interleaved schedules' chunks"),
    "--zero": Bound(0, 3, "ZeRO stages 0 to 3"),
    "--tp2d": _sizes(GPUS, "grid sides of at most 2^20 GPUs"),
    "--summa-blocks": Bound(0, 2**16, "SUMMA steps per matmul"),
    "--nvlink-dp-pp": _sizes(GPUS, "ranks of at most 2^20 GPUs"),
    "--layer-split": Bound(0, LAYERS, "layers per stage"),
    "--edge-fewer": Bound(0, LAYERS, "layers taken off the edge stages"),
    # model overrides
    "--layers": _sizes(LAYERS, "the deepest published transformer has 1,000 layers"),
    "--hidden": _sizes(HIDDEN, "the widest published model has h 25,600"),
    "--heads": _sizes(HEADS, "published models have at most 160 heads"),
    "--kv-heads": _sizes(HEADS, "published models have at most 160 heads"),
    "--ffn": _sizes(FFN, "the widest published FFN is 102,400"),
    "--vocab": _sizes(VOCAB, "published vocabularies are at most 256,000"),
    "--seq": _sizes(SEQ, "the longest published context is about 10M tokens"),
    "--head-dim": _sizes(HEADS, "published head dimensions are at most 256"),
    "--experts": Bound(0, EXPERTS, "published MoE models have at most 384 routed experts"),
    "--top-k": Bound(0, EXPERTS, "at most the experts"),
    "--expert-ffn": Bound(0, FFN, "as the FFN"),
    "--shared-experts": Bound(0, EXPERTS, "at most the experts"),
    "--dense-layers": Bound(0, LAYERS, "at most the layers"),
    # GPU overrides
    "--peak-tflops": Bound(0, TFLOPS, "B200 has 2,250", low_open=True),
    "--fp8-tflops": Bound(0, TFLOPS, "B200 has 4,500"),
    "--vector-tflops": Bound(0, TFLOPS, "tens on today's GPUs", low_open=True),
    "--hbm-gib": Bound(0, HBM_GIB, "B300 has 288 GB, 268 GiB", low_open=True),
    "--reserve-gib": Bound(0, HBM_GIB, "a few GiB", high_open=True),
    "--hbm-gbps": Bound(0, GBPS, "B200 has 8,000", low_open=True),
    "--nvlink-gbps": Bound(0, GBPS, "NVLink 5 has 900", low_open=True),
    "--network-gbps": Bound(0, GBPS, "today's NICs give 50 to 100", low_open=True),
    "--nvlink-latency-us": Bound(0, MICROSECONDS, "µs, a few in practice"),
    "--network-latency-us": Bound(0, MICROSECONDS, "µs, a few in practice"),
    "--matmul-efficiency": Bound(0, 1, "a fraction of the peak", low_open=True),
    "--hbm-efficiency": Bound(0, 1, "a fraction of the peak", low_open=True),
    "--nvlink-efficiency": Bound(0, 1, "a fraction of the peak", low_open=True),
    "--network-efficiency": Bound(0, 1, "a fraction of the peak", low_open=True),
    "--kernel-overhead-us": Bound(0, MICROSECONDS, "µs, a few in practice"),
    "--nvlink-domain": _sizes(GPUS, "NVL576 is the largest domain announced"),
    # search
    "--gpus": _sizes(GPUS, "the largest published clusters hold about 100,000 GPUs"),
    "--top": _sizes(1_000, "layouts ranked and printed"),
    "--headroom": Bound(0, 1, "a fraction of HBM", high_open=True),
    "--tokens": Bound(0, 1e16, "a token budget; the largest published runs train on tens of trillions", low_open=True),
    "--gpu-hour-price": Bound(0, 1e6, "a price per GPU-hour"),
    "--budget-ops": Bound(0, 10**9, "ops of searched orders built, about a day of CPU"),
    "--pareto-within": Bound(0, 100, "a fraction of the best time"),
    "--group-within": Bound(0, 100, "a fraction of a row's time"),
    "--jobs": _sizes(1, "replaced by the cores at check time"),
    "--max-memory-gb": Bound(0, 1e6, "GB the search may take; 0.1 is the least", low_open=True),
}
# schedule parameters: the registry's own range, and where it has none, what a page of this size means
_OPEN_HIGH = {"group_size": (GBS, "at most the microbatches"), "max_memory": (1e6, "microbatch activations")}
for _spec in REGISTRY.values():
    for _p in _spec.params:
        _high, _why = (_p.high, "the schedule's range") if _p.high is not None else _OPEN_HIGH[_p.name]
        for _name in (_p.name, *_p.aliases):
            BOUNDS.setdefault(f"--{_name.replace('_', '-')}", Bound(_p.low, _high, _why))


# `ppviz search --max-memory-gb`: by default half of this machine's memory (a search never takes it all)
def default_memory_gb() -> float:
    try:
        return round(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 2e9, 1)
    except (ValueError, OSError, AttributeError):
        return 8.0


@contextmanager
def memory_cap(gb: float) -> Iterator[None]:
    """Let the process's data (heap and private mappings) grow by at most ``gb`` GB beyond what it holds
    now (RLIMIT_DATA; a fork inherits it): past it an allocation raises MemoryError. Linux only."""
    try:
        import resource

        with open("/proc/self/statm") as fh:
            held = int(fh.read().split()[5]) * os.sysconf("SC_PAGE_SIZE")
        before = resource.getrlimit(resource.RLIMIT_DATA)
    except (ImportError, OSError, AttributeError, ValueError, IndexError):
        yield
        return
    cap = held + int(gb * 1e9)
    if before[1] != resource.RLIM_INFINITY:
        cap = min(cap, before[1])
    resource.setrlimit(resource.RLIMIT_DATA, (cap, before[1]))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_DATA, before)


# `--jobs` over the cores only with --oversubscribe, and then at most this many per core
OVERSUBSCRIBE = 4


def cores() -> int:
    """The cores this process may run on (its affinity mask, not the machine's count)."""
    count = getattr(os, "process_cpu_count", None)
    if count is not None:
        return count() or 1
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def jobs_bound(oversubscribe: bool) -> Bound:
    n = cores()
    if oversubscribe:
        return Bound(1, OVERSUBSCRIBE * n, f"{OVERSUBSCRIBE}× the {n} cores this process may use")
    return Bound(1, n, f"the cores this process may use; --oversubscribe allows up to {OVERSUBSCRIBE * n}")


def check(sub: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse the first number of ``args`` past its bound (``sub``: the subcommand's parser)."""
    for action in sub._actions:
        flag = next((s for s in action.option_strings if s.startswith("--")), None)
        bound = BOUNDS.get(flag)
        if bound is None:
            continue
        if flag == "--jobs":
            bound = jobs_bound(getattr(args, "oversubscribe", False))
        for v in _numbers(getattr(args, action.dest, None)):
            if not bound.holds(v):
                raise ValueError(f"{flag} {_num(v)} is out of range: it takes {bound.text()} ({bound.why})")
    gpus = 1
    for name in ("tp", "pp", "dp", "cp"):
        gpus *= getattr(args, name, None) or 1
    if gpus > GPUS:
        raise ValueError(f"tp × pp × dp × cp is {gpus:,} GPUs; the bound is {GPUS:,} (about 10× the largest clusters)")


def _numbers(value: object) -> list[float]:
    if value is None or isinstance(value, (bool, str)):
        return []
    if isinstance(value, (int, float)):
        return [value]
    if isinstance(value, (list, tuple)):
        return [x for item in value for x in _numbers(item)]
    return []


__all__ = ["BOUNDS", "SEARCH_ACTIONS", "default_memory_gb", "memory_cap", "Bound", "check", "cores", "jobs_bound"]
