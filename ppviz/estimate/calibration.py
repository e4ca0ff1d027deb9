"""Published measurements the estimate is checked against, and the README's error tables.

Korthikanti et al., Reducing Activation Recomputation in Large Transformer Models (arXiv:2205.05198),
A100-80GB (Selene), s 2048, V 51200: Table 4 (per-layer times of the 22B model, t 8, b 4) and
Table 5 (iteration times, dp 1, global batch = GPUs; interleaved where v > 1, 1F1B otherwise).
"""

from __future__ import annotations

from .iteration import estimate
from .specs import Layout, gpu

# recompute, sequence parallel, forward ms, backward ms
TABLE4 = [
    ("none", False, 7.7, 11.9),
    ("none", True, 7.2, 11.8),
    ("full", False, 7.7, 19.5),
    ("selective", False, 7.7, 13.2),
    ("selective", True, 7.2, 13.1),
]
# model, t, p, v, micro-batch, global batch, iteration s (full recompute), iteration s (SP + selective)
TABLE5 = [
    ("megatron-22b", 8, 1, 1, 4, 4, 1.42, 1.10),
    ("gpt3-175b", 8, 8, 3, 1, 64, 18.13, 13.75),
    ("megatron-530b", 8, 35, 3, 1, 280, 49.05, 37.83),
    ("megatron-1t", 8, 64, 1, 1, 512, 94.42, 71.49),
]
MFU = {"megatron-22b": 41.5, "gpt3-175b": 51.4, "megatron-530b": 56.0, "megatron-1t": 56.3}  # Table 5, SP + selective


def table4_layout(recompute: str, sp: bool) -> Layout:
    return Layout(tp=8, mbs=4, gbs=4, recompute=recompute, sequence_parallel=sp)


def table5_layout(t: int, p: int, v: int, mbs: int, gbs: int, selective: bool) -> Layout:
    return Layout(
        tp=t, pp=p, vpp=v, mbs=mbs, gbs=gbs, schedule="interleaved-1f1b" if v > 1 else "1f1b",
        recompute="selective" if selective else "full", sequence_parallel=selective,
    )  # fmt: skip


def _err(got: float, ref: float) -> str:
    return f"{(got / ref - 1) * 100:+.1f}%"


def readme_tables() -> str:
    """Markdown: Table 4 and Table 5 beside ppviz's estimates, error case by case."""
    g = gpu("a100-80gb")
    rows = ["| configuration | forward ms (paper → ppviz) | error | backward ms (paper → ppviz) | error |",
            "|---|---:|---:|---:|---:|"]  # fmt: skip
    names = {
        ("none", False): "baseline",
        ("none", True): "sequence parallel",
        ("full", False): "full recompute",
        ("selective", False): "selective recompute",
        ("selective", True): "selective + sequence parallel",
    }
    for rec, sp, fwd, bwd in TABLE4:
        lp = estimate("megatron-22b", g, table4_layout(rec, sp)).layer_times_s()
        f, b = lp.f.s * 1e3, (lp.b.s + lp.w.s) * 1e3
        rows.append(f"| {names[rec, sp]} | {fwd} → {f:.2f} | {_err(f, fwd)} | {bwd} → {b:.2f} | {_err(b, bwd)} |")
    rows += [
        "",
        "| model | GPUs | t | p | v | full recompute, s (paper → ppviz) | error "
        "| SP + selective, s (paper → ppviz) | error | MFU paper / ppviz |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    errors = []
    for name, t, p, v, mbs, gbs, full, sel in TABLE5:
        a = estimate(name, g, table5_layout(t, p, v, mbs, gbs, False))
        b = estimate(name, g, table5_layout(t, p, v, mbs, gbs, True))
        errors += [abs(a.iteration_s / full - 1), abs(b.iteration_s / sel - 1)]
        rows.append(
            f"| {name} | {t * p} | {t} | {p} | {v} | {full:.2f} → {a.iteration_s:.2f} | {_err(a.iteration_s, full)} "
            f"| {sel:.2f} → {b.iteration_s:.2f} | {_err(b.iteration_s, sel)} | {MFU[name]}% / {b.mfu * 100:.1f}% |"
        )
    rows += ["", f"Table 5: mean absolute error {sum(errors) / len(errors) * 100:.2f}%, "
             f"maximum {max(errors) * 100:.2f}% (Calculon: 3.65% and 8.87%)."]  # fmt: skip
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(readme_tables(), end="")
