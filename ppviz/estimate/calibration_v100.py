"""A calibration fitted on one real run predicts the others: BigScience's Megatron-LM GPT runs on
Jean Zay's V100s.

Source: github.com/bigscience-workshop/bigscience at commit 9e64ede, ``experiments/gpt2-meg/``:
the logs of Megatron-LM (2021) GPT runs on Jean Zay (V100-SXM2-32GB, 4 GPUs per node, Omni-Path),
TP 4, DP 1, fp16, ``--checkpoint-activations`` (full recompute), the non-interleaved 1F1B schedule
(``virtual_pipeline_model_parallel_size`` None), sequence 1,024, 32 heads, vocabulary 50,257
padded to 50,688, GPT-2's architecture (biases, LayerNorm, dropout 0.1, learned positions, tied
embeddings, no flash attention). Every figure below is read from the log's own argument dump and
iteration lines (excerpts in ``tests/data/measured/bigscience/``); the measured time is the median
of the iteration lines after the first (``MegatronRun.median_iteration_s``).

The profile is fitted on ``FIT_ON`` alone (the matmul efficiency, ``profile_fit.fit``) and predicts
the others, which it never saw. ``python -m ppviz.estimate.calibration_v100`` prints the docs' table.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from .profile import Profile
from .profile_fit import Measured, fit, predict
from .specs import Layout, gpu, model

COMMIT = "9e64edec2ad1fb9263bf39ba616a84ff64b4d947"
SOURCE = f"github.com/bigscience-workshop/bigscience/blob/{COMMIT[:7]}/experiments/gpt2-meg"
GPU = "v100-sxm2-32gb"


@dataclass(frozen=True)
class JeanZayRun:
    """One log: its file, the model's shape, the layout and the measured median iteration (ms)."""

    file: str
    hidden: int
    layers: int
    pp: int
    mbs: int
    gbs: int
    iteration_ms: float

    @property
    def label(self) -> str:
        return f"GPT {self.hidden}×{self.layers}, tp 4 pp {self.pp}, mbs {self.mbs} gbs {self.gbs}"

    def measured(self) -> Measured:
        shape = dict(layers=self.layers, hidden=self.hidden, heads=32, kv_heads=32, ffn=4 * self.hidden)
        gpt = model("gpt3-175b", vocab=50688, seq=1024, **shape)
        lay = Layout(tp=4, pp=self.pp, mbs=self.mbs, gbs=self.gbs, recompute="full", precision="fp16")
        return Measured(self.label, gpt, lay, self.iteration_ms / 1e3, f"{SOURCE}/{self.file}")


RUNS = (
    JeanZayRun("meg_gpt2_perf_n16-1999618.out", 8192, 64, 16, 4, 1024, 123896.3),
    JeanZayRun("meg_gpt2_base_n4_dp1_tp4_pp4-1809579.out", 6144, 40, 4, 1, 4, 1380.6),
    JeanZayRun("meg_gpt2_base_n8_dp1_tp4_pp8-1809562.out", 7168, 48, 8, 1, 4, 1617.2),
    JeanZayRun("meg_gpt2_base_n16_dp1_tp4_pp16-1809577.out", 9216, 64, 16, 1, 4, 2740.05),
    JeanZayRun("meg_gpt2_base_n32_dp1_tp4_pp32-1809620.out", 12288, 64, 32, 1, 4, 4213.8),
    JeanZayRun("meg_gpt2_base_n64_dp1_tp4_pp64-1809655.out", 16384, 64, 64, 1, 4, 6715.3),
)
FIT_ON = RUNS[0]  # the throughput run (256 microbatches): its time is mostly compute, as a fit wants


@cache
def fitted_profile() -> Profile:
    """The V100 preset's matmul efficiency fitted on ``FIT_ON`` alone."""
    return fit([FIT_ON.measured()], GPU)


def _err(got: float, ref: float) -> str:
    return f"{(got / ref - 1) * 100:+.1f}%"


def table() -> str:
    """Markdown: every run measured, by the default V100 preset and by the profile fitted on FIT_ON."""
    prof = fitted_profile()
    runs = [r.measured() for r in RUNS]
    default = predict(runs, gpu(GPU))
    calibrated = predict(runs, prof.apply(gpu(GPU)))
    rows = ["| run | log | used for | measured ms | default ppviz ms | error | calibrated ppviz ms | error |",
            "|---|---|---|---:|---:|---:|---:|---:|"]  # fmt: skip
    errs: dict[str, list[float]] = {"default": [], "calibrated": []}
    for spec, run, d, c in zip(RUNS, runs, default, calibrated):
        ms = spec.iteration_ms
        role = "fit" if spec is FIT_ON else "predicted"
        if spec is not FIT_ON:
            errs["default"].append(abs(d / run.iteration_s - 1))
            errs["calibrated"].append(abs(c / run.iteration_s - 1))
        rows.append(f"| {run.label} | `{spec.file}` | {role} | {ms:,.1f} | {d * 1e3:,.1f} "
                    f"| {_err(d, run.iteration_s)} | {c * 1e3:,.1f} | {_err(c, run.iteration_s)} |")  # fmt: skip
    mean = {k: sum(v) / len(v) * 100 for k, v in errs.items()}
    worst = {k: max(v) * 100 for k, v in errs.items()}
    rows += ["", f"Fitted: matmul efficiency {dict(prof.efficiencies)['matmul_efficiency']:.2f} (default 0.75), "
             f"residual {prof.mean_abs_error * 100:.2f}% on the run it was fitted on. On the {len(RUNS) - 1} runs it "
             f"never saw: mean |error| {mean['default']:.1f}% → {mean['calibrated']:.1f}%, maximum "
             f"{worst['default']:.1f}% → {worst['calibrated']:.1f}%."]  # fmt: skip
    return "\n".join(rows) + "\n"


@dataclass(frozen=True)
class OneFit:
    """A profile fitted on one run alone, and the |error| of each of the other runs before and after."""

    run: Measured
    profile: Profile
    default_errors: tuple[float, ...]
    calibrated_errors: tuple[float, ...]


@cache
def each_fit() -> tuple[OneFit, ...]:
    """A profile fitted on each run alone, checked on the five others."""
    runs = [r.measured() for r in RUNS]
    default = predict(runs, gpu(GPU))
    out = []
    for i, run in enumerate(runs):
        prof = fitted_profile() if RUNS[i] is FIT_ON else fit([run], GPU)
        others = runs[:i] + runs[i + 1 :]
        before = [abs(d / r.iteration_s - 1) for d, r in zip(default[:i] + default[i + 1 :], others)]
        after = [abs(c / r.iteration_s - 1) for c, r in zip(predict(others, prof.apply(gpu(GPU))), others)]
        out.append(OneFit(run, prof, tuple(before), tuple(after)))
    return tuple(out)


def each_fit_table() -> str:
    """Markdown: ``each_fit``, the mean and largest |error| on the other runs, default → calibrated."""
    rows = ["| fitted on | matmul efficiency | the others' mean abs error: default → calibrated | largest |",
            "|---|---:|---:|---:|"]  # fmt: skip
    for one in each_fit():
        b, a = one.default_errors, one.calibrated_errors
        eff = dict(one.profile.efficiencies)["matmul_efficiency"]
        rows.append(f"| {one.run.label} | {eff:.2f} | {sum(b) / len(b) * 100:.1f}% → {sum(a) / len(a) * 100:.1f}% "
                    f"| {max(b) * 100:.1f}% → {max(a) * 100:.1f}% |")  # fmt: skip
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(table(), end="")
    print()
    print(each_fit_table(), end="")
