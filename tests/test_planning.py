"""Planning figures: the published end-to-end training time and the units of every figure."""

from __future__ import annotations

import pytest

from ppviz.errors import InputError
from ppviz.estimate.planning import training_plan


def test_the_sc21_example_takes_34_days():
    """Narayanan et al. 2021 §5.1: GPT-3 175B, 300B tokens, 1,024 A100s at 140 TFLOP/s, 8·P FLOPs a token."""
    gpus, flops, params = 1024, 140e12, 175e9
    plan = training_plan(tokens_per_s=gpus * flops / (8 * params), gpus=gpus, tokens=300e9)
    assert round(plan.days) == 34
    assert plan.gpu_hours == pytest.approx(plan.days * 24 * gpus)
    assert plan.cost is None and plan.to_dict()["cost"] is None


def test_the_cost_is_gpu_hours_times_the_price():
    plan = training_plan(tokens_per_s=1e6, gpus=8, tokens=3.6e9, gpu_hour_price=2.5)
    assert (plan.days, plan.gpu_hours, plan.cost) == (pytest.approx(1 / 24), pytest.approx(8.0), pytest.approx(20.0))
    assert set(plan.to_dict()) >= {"days", "gpu_hours", "cost"}


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"tokens": 0}, "tokens"),
        ({"tokens": float("inf")}, "tokens"),
        ({"tokens_per_s": -1}, "tokens_per_s"),
        ({"gpus": 0}, "gpus"),
        ({"gpu_hour_price": -2}, "gpu_hour_price"),
    ],
)
def test_bad_inputs_name_their_field(kwargs, field):
    args = {"tokens_per_s": 1e5, "gpus": 8, "tokens": 1e9, **kwargs}
    with pytest.raises(InputError) as err:
        training_plan(**args)
    assert err.value.field == field
