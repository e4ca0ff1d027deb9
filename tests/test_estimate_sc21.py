"""Megatron-LM's weak-scaling table (Narayanan et al., SC 2021, Table 1), held out: never fitted on."""

import pytest

from ppviz.estimate import calibration_sc21 as sc21

TOLERANCE = 0.10  # every row; the README states it


@pytest.fixture(scope="module")
def runs():
    return {r.billions: r.run() for r in sc21.TABLE1}


def test_the_papers_flop_count_is_ppvizs_hardware_flops(runs):
    """Eq. 3 (recompute included) is exactly what ppviz counts as hardware FLOPs under full recompute."""
    for r in sc21.TABLE1:
        assert runs[r.billions].hardware_flops == pytest.approx(r.paper_flops(), rel=1e-12)


def test_every_row_within_ten_percent(runs):
    errors = {r.billions: r.ppviz_tflops_per_gpu(runs[r.billions]) / r.tflops_per_gpu - 1 for r in sc21.TABLE1}
    assert all(abs(e) <= TOLERANCE for e in errors.values()), errors
    assert sum(abs(e) for e in errors.values()) / len(errors) < 0.06


def test_every_published_run_fits_in_80_gb(runs):
    """They ran on A100-80GB: ppviz must not say they could not."""
    for b, run in runs.items():
        assert run.fits, (b, run.peak_bytes.max() / 1e9)


def test_layout_as_read():
    r = sc21.TABLE1[-1]
    assert (r.dp, r.run().microbatches, r.run().layout.recompute) == (6, 512, "full")
