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


FIGURE13_ACROSS_NODES = 0.15  # the TP groups that span nodes (t 16, 32); docs/real-units/validation.md states it


@pytest.fixture(scope="module")
def figure13():
    return {(r.batch, r.tp): (r, r.run()) for r in sc21.FIGURE13}


def test_figure13_as_published():
    """Ten points: (t, p) from (32, 2) to (2, 32) at batches 32 and 128, 64 GPUs, dp 1, the 162.2B model."""
    assert [(r.batch, r.tp, r.pp, r.dp) for r in sc21.FIGURE13][:5] == [(32, 32, 2, 1), (32, 16, 4, 1), (32, 8, 8, 1),
                                                                         (32, 4, 16, 1), (32, 2, 32, 1)]  # fmt: skip
    assert {r.batch for r in sc21.FIGURE13} == {32, 128} and len(sc21.FIGURE13) == 10
    r = sc21.FIGURE13[0]
    params = r.layers * 12 * r.hidden**2 + 51200 * r.hidden
    assert params == pytest.approx(162.2e9, rel=0.01)


def test_figure13_tp_across_nodes_within_fifteen_percent(figure13):
    """TP groups of 16 and 32 GPUs span 2 and 4 DGX A100 nodes: their collectives cross the network tier."""
    across = {k: r.ppviz_tflops_per_gpu(run) / r.tflops_per_gpu - 1 for k, (r, run) in figure13.items() if k[1] > 8}
    assert len(across) == 4
    assert all(abs(e) <= FIGURE13_ACROSS_NODES for e in across.values()), across
    for r, run in figure13.values():
        assert run.fits and run.hardware_flops == pytest.approx(r.paper_flops(), rel=1e-12)


def test_figure13_best_tp_is_one_node(figure13):
    """The paper's finding: peak throughput with t equal to the GPUs of one node (8); ppviz agrees."""
    for batch in (32, 128):
        points = {t: r.ppviz_tflops_per_gpu(run) for (b, t), (r, run) in figure13.items() if b == batch}
        assert max(points, key=points.get) == 8, points


def test_figure13_table_reports_every_point():
    text = sc21.figure13_table()
    assert text.count("| 32 |") + text.count("| 128 |") >= 10 and "across 4 nodes" in text and "%" in text
    assert set(sc21.figure13_errors()) == {(b, t) for b in (32, 128) for t in (2, 4, 8, 16, 32)}
