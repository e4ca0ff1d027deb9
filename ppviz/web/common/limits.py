"""The page's bounds shared by every page, and the price of the work a view asks for.

Values are bounded by ``common.validation``; each page refuses work past these bounds before it
starts (``check`` in its budget), whatever the request it came in.

Work is priced in plain-action units (one unit ≈ 2.5 µs of CPU here, a plain schedule's generate +
simulate + draw per action) by ``price``, the one price of every view (abstract and model & cluster):
a schedule's estimated actions times its search factor (plus ESTIMATE_PER_ACTION in the model &
cluster view, whose estimate does more per action), plus, for the schedules that search their
order, terms for the search's own size: the V schedules pay units × devices² (their family's
blocks of p devices; v-auto many more, as it tries many memory budgets), V-Half and V-ZB also
units × devices × min(microbatches, devices) (their search of the authors' family costs up to a
second whatever the actions: V-Half at 16 × 16 took 0.7 s).
Factors and terms are fitted to the CPU seconds (``time.process_time``) of views drawn from cold caches,
each in a fresh process (the least of 2 runs), by ``python bench/bench_load.py --factors``
(2026-11-25, load average 3-7 on this shared 2-core machine): a grid of p × m up to 20,000 actions
for the searching schedules, and every schedule's largest synchronous views. Every view measured
that took over 0.4 s is priced past SYNC_WORK, and a factor is never below the CPU per action of the
schedule's largest views. Plain schedules took 1.3-2.1 µs per action at their largest synchronous
views (0.26-0.42 s), so their factor 1 holds; ``tests/test_web_cold_budget.py`` keeps it so.
"""

from __future__ import annotations

from ppviz import REGISTRY

MAX_DEVICES = 64  # the devices slider's and the pp box's top
MAX_MICROBATCHES = 512  # the microbatches slider's top
MAX_ORDER_RANKS = MAX_DEVICES  # rows of an imported order, blank (idle) rows included
MAX_ORDER_BYTES = 256 * 1024
MAX_COMPARE = 4
MAX_STAGE_TIME = 1_000.0  # a per-stage time in the table (the sliders stop at 4)
MAX_LIMIT = 1e6  # the memory-limit line
MAX_PARAM = {int: MAX_MICROBATCHES, float: 1e6}  # for parameters the registry leaves unbounded
MAX_MICRO_BATCH = 65_536  # the micro-batch size box; a global batch is at most MAX_MICROBATCHES of them
MAX_SEARCH_CHARS = 16_384  # a query string arriving in a callback (a link carries at most ~6,000)

# Units per action of the schedules that search their order (plain ones: 1), and the terms of their
# search's size (fitted on cold caches, see the module docstring: e.g. V-ZB at 16 × 12 took 0.52 s,
# V-Half at 20 × 12 0.60 s, v-auto at 16 × 1 0.47 s, each well under 2,000 actions).
SEARCH_FACTOR = {"v-min": 41, "v-half": 41, "v-zb": 71, "zb-auto": 30, "v-auto": 124}
# × devices²: the V family's blocks of p devices, listed cold (V-Min at 64 × 7 took 0.25-0.53 s, V-Half
# at 64 × 1 up to 0.6 s), and v-auto's many memory budgets besides (about 30 ms per device: 12 × 1 took 0.42 s)
SEARCH_PER_DEVICE2 = {"v-min": 40, "v-half": 40, "v-zb": 40, "v-auto": 1700}
SEARCH_PER_FAMILY = {"v-half": 900, "v-zb": 900}  # × devices × min(microbatches, devices)
# The model & cluster view's estimate simulates twice (with and without p2p) and draws memory in bytes:
# units per action on top (zb-v at 64 × 512 took 1.0 s there, 0.4 s in the abstract view).
ESTIMATE_PER_ACTION = 2
DEFAULT_SEARCH_FACTOR = max(SEARCH_FACTOR.values())  # a searching schedule not measured yet
# A synchronous request does at most this much (0.3 s of CPU at 2.5 µs a unit); more runs in the background.
# The promise is 0.5 s of CPU from cold caches (tests/test_web_cold_budget.py): the rest is margin for this
# shared machine, where the same cold view took 1.5-2× the CPU time from one quarter-hour to the next
# (dualpipe-v at 64 × 512: 0.30 s, then 0.46-0.56 s).
SYNC_WORK = 120_000
SYNC_BUDGET_S = 0.5
# A background job is priced at most this much; past it, the CLI. The search terms are fitted where they
# decide synchronous or background (small p) and grow faster than the work at large p, so here a unit is
# far less than 2.5 µs: v-auto at 64 × 256 (19 M units) draws in 1.5 s of CPU cold, v-zb at 64 × 512
# (18 M) in 1.3 s, v-half at 64 × 512 (12 M) in 1.7 s. This keeps every slider view of the V family in
# reach (v-auto up to 64 × 273); what bounds a job is its own time limit and memory (ppviz.web.common.jobs).
BACKGROUND_WORK = 20_000_000


def factor(name: str) -> int:
    spec = REGISTRY.get(name)
    if spec is None or not spec.uses_costs:
        return 1
    return SEARCH_FACTOR.get(name, DEFAULT_SEARCH_FACTOR)


def price(name: str, devices: int, microbatches: int, n_actions: int, estimated: bool = False) -> int:
    """The units of drawing ``name`` with ``n_actions`` actions on ``devices`` devices and ``microbatches``
    microbatches (per iteration), ``estimated`` in the model & cluster view: the one price of every view
    (0 for no actions)."""
    if not n_actions:
        return 0
    units = n_actions * (factor(name) + (ESTIMATE_PER_ACTION if estimated else 0))
    units += SEARCH_PER_DEVICE2.get(name, 0) * devices**2
    return units + SEARCH_PER_FAMILY.get(name, 0) * devices * min(microbatches, devices)


def prices(items: list[tuple[str, int, int, int]], estimated: bool = False) -> list[int]:
    """``price`` of each (name, devices, microbatches, actions): a view's schedules priced in one call."""
    return [price(*item, estimated=estimated) for item in items]


# A sweep computes at most this much (about 6 s here), its cheapest points first; past it, the CLI.
SWEEP_WORK = BACKGROUND_WORK // 4


def cheapest_within(priced: list[tuple[int, str, int]], budget: int) -> tuple[set[tuple[str, int]], int]:
    """The sweep points a page computes: (price, schedule, value) cheapest first while their total stays
    within ``budget``, as {(schedule, value)}, and that total; the rest are gaps naming the CLI."""
    allowed, spent = set(), 0
    for units, name, value in sorted(priced):
        if spent + units <= budget:
            allowed.add((name, value))
            spent += units
    return allowed, spent
