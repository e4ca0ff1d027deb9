"""The schedule table (the handbook's Schedules page, `ppviz table`), generated from the registry."""

from __future__ import annotations

from . import api
from .schedules import REGISTRY

P, M, V = 8, 32, 2  # the sizes the table is measured at (chunks = 2 where a schedule takes it)


def _measure(name: str) -> api.Run | None:
    spec = REGISTRY[name]
    params = {"chunks": V} if spec.param("chunks") else {}
    try:
        return api.simulate(name, P, M, **params)
    except ValueError:
        return None


def schedule_table() -> str:
    """Markdown: each schedule's formulas and its numbers at p=8, m=32, f=b=w=1, latency 0."""
    head = (
        "| schedule | what it is | reference | activation (formula) | bubble / makespan (formula) "
        "| makespan | max span | bubble | peak act. | params |\n"
        "|---|---|---|---|---|---:|---:|---:|---:|---:|\n"
    )
    rows = []
    for name, spec in REGISTRY.items():
        run = _measure(name)
        if run is None:
            nums = "— | — | — | — | —"
        else:
            m = run.metrics
            nums = (
                f"{m.makespan:g} | {max(m.span):g} | {m.bubble_fraction:.3f} | {max(m.peak_activation):g} "
                f"| {max(m.parameters):g}"
            )
        rows.append(
            f"| `{name}` | {spec.description} | {spec.reference} | {spec.memory_text or '—'} "
            f"| {spec.formula_text or '—'} | {nums} |\n"
        )
    return head + "".join(rows)
