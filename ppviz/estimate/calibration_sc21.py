"""A held-out A100 check: Megatron-LM's weak-scaling table (never used to fit anything).

Narayanan et al., Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM
(SC 2021, arXiv:2104.04473), Table 1: GPT models of 1.7B to 1T parameters on 32 to 3,072 A100-80GB
GPUs of Selene, V 51,200, s 2,048, mixed precision, activation recomputation. The published figure is
TFLOP/s per GPU counted by the paper's eq. 3, F = 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)) per iteration
(recomputation included), so ppviz's figure here is that F over ppviz's iteration time: the
comparison is one of iteration times, in the paper's unit.

The paper gives t, p, the GPUs and the batch, not the micro-batch size or the schedule: ppviz reads
them as micro-batch 1 and 1F1B (no interleaving), full recompute, no sequence parallelism and no
distributed optimizer (neither existed in Megatron-LM then), dp = GPUs / (t·p).

Figure 13 of the same paper (Section 5.4.1, "Tensor versus Pipeline Parallelism") holds the model
(GPT 162.2B: 32 layers, h 20,480, 128 heads) and the 64 GPUs and trades t against p: (t, p) = (32,
2), (16, 4), (8, 8), (4, 16), (2, 32), dp 1, at batches 32 and 128 (Megatron-LM's
``examples/sc21/run_figure_13.sh``: micro-batch 1, uniform full recompute, no interleaving). At t 16
and t 32 each TP group spans two and four 8-GPU DGX A100 nodes, so it checks TP collectives across
the network tier. The points are read from the figure's vector paths in the arXiv PDF (v5): on the
axis scale (ticks 0 to 200 at 50) every point lies within 0.01 TFLOP/s of a whole number, so the
reading error is under 0.01 TFLOP/s, below the plot's own rounding.
``python -m ppviz.estimate.calibration_sc21`` prints both tables.
"""

from __future__ import annotations

from dataclasses import dataclass

from .iteration import Estimate, estimate
from .specs import Layout, gpu, model

SOURCE = "Narayanan et al., SC 2021 (arXiv:2104.04473), Table 1"


@dataclass(frozen=True)
class Row:
    """One row of Table 1: the model's shape, its layout and the published TFLOP/s per GPU."""

    billions: float
    heads: int
    hidden: int
    layers: int
    tp: int
    pp: int
    gpus: int
    batch: int
    tflops_per_gpu: float

    @property
    def dp(self) -> int:
        return self.gpus // (self.tp * self.pp)

    def run(self) -> Estimate:
        """ppviz's estimate of this row on the A100-80GB preset (GPT-3's architecture, the row's shape)."""
        shape = {"layers": self.layers, "hidden": self.hidden, "heads": self.heads, "kv_heads": self.heads}
        gpt = model("gpt3-175b", ffn=4 * self.hidden, **shape)
        lay = Layout(tp=self.tp, pp=self.pp, dp=self.dp, mbs=1, gbs=self.batch, recompute="full", schedule="1f1b")
        return estimate(gpt, gpu("a100-80gb"), lay)

    def paper_flops(self) -> float:
        """The paper's eq. 3: FLOPs of one iteration, the recomputed forward included."""
        s, v, h, L = 2048, 51200, self.hidden, self.layers
        return 96 * self.batch * s * L * h * h * (1 + s / (6 * h) + v / (16 * L * h))

    def ppviz_tflops_per_gpu(self, run: Estimate | None = None) -> float:
        run = run or self.run()
        return self.paper_flops() / run.iteration_s / self.gpus / 1e12


# billions of parameters, heads, hidden, layers, t, p, GPUs, batch, TFLOP/s per GPU
TABLE1 = tuple(
    Row(*r)
    for r in (
        (1.7, 24, 2304, 24, 1, 1, 32, 512, 137),
        (3.6, 32, 3072, 30, 2, 1, 64, 512, 138),
        (7.5, 32, 4096, 36, 4, 1, 128, 512, 142),
        (18.4, 48, 6144, 40, 8, 1, 256, 1024, 135),
        (39.1, 64, 8192, 48, 8, 2, 512, 1536, 138),
        (76.1, 80, 10240, 60, 8, 4, 1024, 1792, 140),
        (145.6, 96, 12288, 80, 8, 8, 1536, 2304, 148),
        (310.1, 128, 16384, 96, 8, 16, 1920, 2160, 155),
        (529.6, 128, 20480, 105, 8, 35, 2520, 2520, 163),
        (1008.0, 160, 25600, 128, 8, 64, 3072, 3072, 163),
    )
)


FIGURE13_SOURCE = "Narayanan et al., SC 2021 (arXiv:2104.04473), Figure 13"
NODE = 8  # GPUs per DGX A100 node of Selene: a TP group larger than this crosses the network


def _fig13(t: int, batch: int, tflops: float) -> Row:
    return Row(162.2, 128, 20480, 32, t, 64 // t, 64, batch, tflops)


# TFLOP/s per GPU by (t, batch); the figure's x axis is (pipeline-parallel size, tensor-parallel size)
FIGURE13 = tuple(
    _fig13(t, batch, tflops)
    for batch, points in ((32, ((32, 103), (16, 134), (8, 140), (4, 111), (2, 91))),
                          (128, ((32, 107), (16, 146), (8, 165), (4, 162), (2, 148))))
    for t, tflops in points
)  # fmt: skip


def table() -> str:
    """Markdown: every row of Table 1 beside ppviz, with the error and whether ppviz says it fits."""
    rows = [
        "| model | GPUs | t | p | dp | batch | TFLOP/s per GPU (paper → ppviz) | error | ppviz peak GiB (of 80) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    errors = []
    for r in TABLE1:
        run = r.run()
        got = r.ppviz_tflops_per_gpu(run)
        errors.append(abs(got / r.tflops_per_gpu - 1))
        rows.append(
            f"| GPT {r.billions:g}B | {r.gpus:,} | {r.tp} | {r.pp} | {r.dp} | {r.batch:,} "
            f"| {r.tflops_per_gpu:g} → {got:.0f} | {(got / r.tflops_per_gpu - 1) * 100:+.1f}% "
            f"| {run.peak_bytes.max() / 2**30:,.2f} |"
        )
    rows += ["", f"Mean absolute error {sum(errors) / len(errors) * 100:.1f}%, maximum {max(errors) * 100:.1f}%."]
    return "\n".join(rows) + "\n"


def figure13_errors() -> dict[tuple[int, int], float]:
    """ppviz / published − 1 for every point of Figure 13, keyed by (batch, t)."""
    return {(r.batch, r.tp): r.ppviz_tflops_per_gpu() / r.tflops_per_gpu - 1 for r in FIGURE13}


def figure13_table() -> str:
    """Markdown: every point of Figure 13 beside ppviz, the TP groups across nodes marked."""
    rows = [
        "| batch | t | p | TP group | TFLOP/s per GPU (paper → ppviz) | error | ppviz TP time of the iteration |",
        "|---:|---:|---:|---|---:|---:|---:|",
    ]
    across, within = [], []
    for r in FIGURE13:
        run = r.run()
        got = r.ppviz_tflops_per_gpu(run)
        err = got / r.tflops_per_gpu - 1
        (across if r.tp > NODE else within).append(abs(err))
        where = f"across {r.tp // NODE} nodes" if r.tp > NODE else "in one node"
        share = run.breakdown["tp_comm_s"] / run.iteration_s
        rows.append(
            f"| {r.batch} | {r.tp} | {r.pp} | {where} | {r.tflops_per_gpu:g} → {got:.0f} | {err * 100:+.1f}% "
            f"| {share * 100:.0f}% |"
        )
    rows += [
        "",
        f"TP across nodes: mean absolute error {sum(across) / len(across) * 100:.1f}%, maximum "
        f"{max(across) * 100:.1f}%; inside a node: mean {sum(within) / len(within) * 100:.1f}%, maximum "
        f"{max(within) * 100:.1f}%.",
    ]
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(table(), end="")
    print()
    print(figure13_table(), end="")
