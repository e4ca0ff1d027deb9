"""Planning figures for a token budget: wall-clock days, GPU-hours and, given a price, the cost.

The arithmetic is Narayanan et al. 2021 (SC21, arXiv:2104.04473) §5.1's end-to-end training time,
``time = T / throughput`` with the throughput in tokens/s of the whole job; their example (GPT-3
175B, T = 300 billion tokens, n = 1,024 A100s at X = 140 TFLOP/s each, so 8·P FLOPs per token with
recomputation: n·X / (8·P) tokens/s) gives 34 days. ppviz takes the throughput from its simulated
iteration instead of a FLOP/s guess. GPU-hours count every GPU of the job for the whole time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import InputError

SECONDS_PER_DAY = 86_400
SECONDS_PER_HOUR = 3_600


@dataclass(frozen=True)
class TrainingPlan:
    """What a token budget costs at a job's throughput."""

    tokens: float
    tokens_per_s: float
    gpus: int
    days: float
    gpu_hours: float
    gpu_hour_price: float | None
    cost: float | None  # in the price's currency; None without a price

    def to_dict(self) -> dict:
        """The JSON ``plan`` object: days, gpu_hours and cost (null without a price)."""
        return {
            "tokens": self.tokens,
            "tokens_per_s": self.tokens_per_s,
            "gpus": self.gpus,
            "days": self.days,
            "gpu_hours": self.gpu_hours,
            "gpu_hour_price": self.gpu_hour_price,
            "cost": self.cost,
        }


def training_plan(tokens_per_s: float, gpus: int, tokens: float, gpu_hour_price: float | None = None) -> TrainingPlan:
    """Days, GPU-hours and cost of ``tokens`` at ``tokens_per_s`` on ``gpus`` GPUs."""
    _positive("tokens", tokens, "the token budget, e.g. 1e12 for a trillion tokens")
    _positive("tokens_per_s", tokens_per_s, "the job's throughput")
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
        raise InputError(f"gpus must be a whole number ≥ 1 (got {gpus!r})", field="gpus")
    if gpu_hour_price is not None:
        _positive("gpu_hour_price", gpu_hour_price, "the price of one GPU for one hour", zero_ok=True)
    seconds = tokens / tokens_per_s
    gpu_hours = gpus * seconds / SECONDS_PER_HOUR
    cost = None if gpu_hour_price is None else gpu_hours * gpu_hour_price
    return TrainingPlan(tokens, tokens_per_s, gpus, seconds / SECONDS_PER_DAY, gpu_hours, gpu_hour_price, cost)


def _positive(field: str, v: object, what: str, zero_ok: bool = False) -> None:
    if (
        isinstance(v, bool)
        or not isinstance(v, (int, float))
        or not math.isfinite(v)
        or v < 0
        or (v == 0 and not zero_ok)
    ):
        bound = "≥ 0" if zero_ok else "> 0"
        raise InputError(f"{field} ({what}) must be a finite number {bound} (got {v!r})", field=field)
