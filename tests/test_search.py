"""The layout search: exact against brute force, bounds that never exceed the simulated figures,
rows that rerun through `ppviz estimate`, capacity respected, clear errors."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest

import ppviz
from ppviz.estimate import Gpu, Layout, Model, comm, estimate, gpu, iteration
from ppviz.search import Options, engine, space

TINY = Model(name="tiny", layers=8, hidden=512, heads=8, kv_heads=4, ffn=1536, vocab=2048, seq=1024, gated_mlp=True)
SCHEDULES = ("gpipe", "1f1b", "1f1b-2bw", "zb-h1", "interleaved-1f1b", "1f1b-overlap", "zb-v", "dualpipe", "v-half")
# TP overlap pinned off here (the brute force stays its size); test_tp_comm_overlap_is_searched_... covers it searched
OPTS = dict(schedules=SCHEDULES, vpp=(2, 3), zero=(0, 1, 3), mbs=(1, 2), recompute=("none", "full"),
            tp_comm_overlap=False)  # fmt: skip
# the same space with 2D tensor parallelism beside 1D: every (R, C) grid of tp 2, 4 and 8, SUMMA blocks lcm(R, C) and 8
OPTS_2D = dict(OPTS, tp_mode=("1d", "2d"), summa_blocks=(0, 8))


def _gpu(hbm_bytes: float) -> Gpu:
    return gpu("h100-sxm", hbm_bytes=hbm_bytes, nvlink_domain=4, reserve_bytes=0)  # the capacity these tests set


def _all_layouts(model, g, gpus, gbs, opt):
    """Every layout of the space, each estimated (the brute force)."""
    out = []
    for grp in space.groups(model, gpus, gbs, opt, g.nvlink_domain).groups:
        for v in space.variants(model, grp, opt):
            for z in opt.zero:
                lay = grp.layout(gbs, schedule=v.schedule, vpp=v.vpp, layer_split=v.layer_split, zero=z)
                out.append(estimate(model, g, lay))
    return out


@pytest.fixture(scope="module", params=["1d", "1d+2d"])
def brute(request):
    opt = Options(**(OPTS if request.param == "1d" else OPTS_2D))
    ests = _all_layouts(TINY, _gpu(80e9), 8, 16, opt)
    modes = {e.layout.tp_mode for e in ests}
    assert modes == ({"1d"} if request.param == "1d" else {"1d", "2d"})
    if request.param != "1d":  # 2D grids of every shape and both block counts are in the space
        grids = {(e.layout.tp2d, e.layout.blocks) for e in ests if e.layout.tp_mode == "2d"}
        assert {((2, 2), 2), ((2, 2), 8), ((1, 8), 8), ((4, 2), 4), ((4, 2), 8), ((2, 1), 2)} <= grids
    # NERSC's NVLink placements beside Megatron's order: dp or pp ranks beside tp·cp in the domain of 4
    assert {e.layout.nvlink_dp_pp for e in ests} == {None, (1, 4), (1, 2), (2, 2)}
    peaks = sorted(float(e.peak_bytes.max()) for e in ests)
    return opt, ests, peaks


def _ranked(ests, capacity, k):
    fit = [e for e in ests if float(e.peak_bytes.max()) <= capacity]
    fit.sort(key=lambda e: (e.iteration_s, engine.rank_key(e.layout)))
    return fit[:k], fit


def _front(fit):
    pts = sorted((e.iteration_s, float(e.peak_bytes.max())) for e in fit)
    front = []
    for t, m in pts:
        if not front or m < front[-1][1]:
            front.append((t, m))
    return front


@pytest.mark.parametrize("quantile", [1.0, 0.5, 0.2])
def test_pruned_search_equals_brute_force(brute, quantile):
    opt, ests, peaks = brute
    capacity = peaks[int(quantile * (len(peaks) - 1))]  # some layouts do not fit, at 0.2 most do not
    g = _gpu(capacity)
    brute_est = [estimate(TINY, g, e.layout) for e in ests] if quantile != 1.0 else ests
    want, fit = _ranked(brute_est, capacity, 7)
    got = ppviz.search(TINY, g, 8, 16, top=7, budget_ops=10**9, options=opt, pareto_within=1e9)
    assert got.searched == len(ests)
    assert got.simulated < len(ests) / 3  # the bounds do prune
    assert [engine.rank_key(e.layout) for e in want] == [_key(r) for r in got.layouts]
    assert [e.iteration_s for e in want] == [r["iteration_s"] for r in got.layouts]
    assert [(r["iteration_s"], max(r["peak_bytes"])) for r in got.pareto] == _front(fit)
    assert got.complete and got.budget_cut == 0
    near = ppviz.search(TINY, g, 8, 16, top=7, budget_ops=10**9, options=opt, pareto_within=0.1)
    best = want[0].iteration_s
    assert [(r["iteration_s"], max(r["peak_bytes"])) for r in near.pareto] == [
        p for p in _front(fit) if p[0] <= 1.1 * best
    ]
    assert near.layouts == got.layouts
    two_d = [e for e in brute_est if e.layout.tp_mode == "2d"]
    if two_d:  # the 2D layouts alone (the fastest of the whole space are 1D here): again exact
        want, fit = _ranked(two_d, capacity, 7)
        got = ppviz.search(TINY, g, 8, 16, top=7, budget_ops=10**9, options=opt, pareto_within=1e9, tp_mode=["2d"])
        assert got.searched == len(two_d) and len(want) == 7
        assert [engine.rank_key(e.layout) for e in want] == [_key(r) for r in got.layouts]
        assert [e.iteration_s for e in want] == [r["iteration_s"] for r in got.layouts]
        assert [(r["iteration_s"], max(r["peak_bytes"])) for r in got.pareto] == _front(fit)


def _key(row):
    return (row["schedule"], row["tp"], row["cp"], row["pp"], row["dp"], row["ep"], row["vpp"], row["mbs"],
            row["recompute"], row["sequence_parallel"], row["zero"], tuple(row["layer_split"] or ()), row["tp_mode"],
            tuple(row["tp2d"] or ()), row["summa_blocks"], tuple(row["nvlink_dp_pp"] or ()),
            row["tp_comm_overlap"])  # fmt: skip


def test_bounds_never_exceed_the_simulated_figures(brute):
    """Every leaf's time and memory bound, and every group's, is ≤ what ppviz.estimate gives."""
    opt, ests, _ = brute
    by_key = {engine.rank_key(e.layout): e for e in ests}
    s = engine._Search(TINY, _gpu(80e9), 8, 16, 5, opt, 1e9, False, None, None)
    sp = space.groups(TINY, 8, 16, opt, 4)
    checked = 0
    for g in sp.groups:
        grp = s._group(g)
        raws: list = []
        s._expand(grp, raws.append)
        for raw in raws:
            variants: list = []
            s._bound(raw, variants.append, np.inf)
            (var,) = variants
            assert grp.lb_s <= raw.lb_s * (1 + 1e-12) and raw.lb_s <= var.lb_s * (1 + 1e-12)
            leaves: list = []
            s._leaves(var, leaves.append, np.inf)
            for leaf in leaves:
                e = by_key[engine.rank_key(leaf.layout)]
                peak = float(e.peak_bytes.max())
                assert grp.lb_s <= var.lb_s * (1 + 1e-12) and var.lb_s <= e.iteration_s * (1 + 1e-9), leaf.layout
                assert leaf.lb_s <= e.iteration_s * (1 + 1e-9), leaf.layout
                assert grp.mem_lb <= peak * (1 + 1e-9) and var.mem <= peak * (1 + 1e-9), leaf.layout
                if leaf.exact:  # the activation peak from the order alone equals the simulated one
                    assert leaf.mem == pytest.approx(peak, rel=1e-9), leaf.layout
                else:
                    assert leaf.mem <= peak * (1 + 1e-9)
                checked += 1
    assert checked == len(ests)


def test_rows_are_estimates_and_fit():
    g = gpu("h100-sxm")
    res = ppviz.search("llama3-8b", g, 16, 64, top=4, headroom=0.25, schedules=["1f1b", "zb-h1", "zb-v"])
    assert len(res.layouts) == 4
    for row in res.layouts + res.pareto:
        lay = Layout(
            tp=row["tp"], pp=row["pp"], dp=row["dp"], cp=row["cp"], ep=row["ep"], vpp=row["vpp"], mbs=row["mbs"],
            gbs=64, schedule=row["schedule"], recompute=row["recompute"], zero=row["zero"],
            sequence_parallel=row["sequence_parallel"], tp_comm_overlap=row["tp_comm_overlap"],
            layer_split=tuple(row["layer_split"]) if row["layer_split"] else None,
        )  # fmt: skip
        e = ppviz.estimate("llama3-8b", g, lay)
        assert row["iteration_s"] == e.iteration_s and row["mfu"] == e.mfu and row["tokens_per_s"] == e.tokens_per_s
        assert row["peak_bytes"] == e.peak_bytes.tolist() and row["fits"] == e.fits
        assert max(row["peak_bytes"]) <= g.usable_bytes - 0.25 * g.hbm_bytes  # the reserve and the headroom kept free
        assert row["breakdown_s"] == e.breakdown
    times = [r["iteration_s"] for r in res.layouts]
    assert times == sorted(times)


def test_the_top_row_reruns_through_the_cli_to_the_same_numbers():
    # llama3-8b's preset has seq 8192 and h100-sxm 79.65 GiB in NVLink domains of 8: the overrides must reach the
    # command
    base = ["--model", "llama3-8b", "--gpu", "h100-sxm", "--seq", "2048", "--tied-embeddings", "--hbm-gib", "60.5",
            "--network-latency-us", "7.3", "--nvlink-domain", "4"]  # fmt: skip
    out = _cli("search", *base, "--gpus", "8", "--gbs", "32", "--top", "3", "--schedules", "1f1b,zb-h1", "--json")
    res = json.loads(out.stdout)
    assert out.stderr == ""  # no progress bar when stderr is not a terminal
    assert {"layouts", "pareto", "searched", "pruned", "seconds"} <= set(res)
    for row in res["layouts"]:
        assert row["capacity_bytes"] == 60.5 * 2**30
        cmd = row["command"].split()
        assert cmd[:2] == ["ppviz", "estimate"] and "--seq" in cmd and cmd[cmd.index("--seq") + 1] == "2048"
        rerun = json.loads(_cli("estimate", *cmd[2:], "--json", "--no-ops").stdout)  # the command alone
        assert rerun["iteration_s"] == row["iteration_s"] and rerun["peak_bytes"] == row["peak_bytes"]
        assert rerun["tokens_per_s"] == row["tokens_per_s"] and rerun["capacity_bytes"] == row["capacity_bytes"]
        assert " ".join(base[4:]) in row["command"]  # every override (model, then GPU)
    row = res["layouts"][0]
    preset = json.loads(_cli("estimate", *row["command"].split()[2:], "--seq", "8192", "--json", "--no-ops").stdout)
    assert preset["iteration_s"] != row["iteration_s"]  # the preset's own sequence length is another model
    csv_out = _cli("search", *base, "--gpus", "8", "--gbs", "32", "--top", "3", "--schedules", "1f1b,zb-h1", "--csv")
    lines = csv_out.stdout.splitlines()
    assert lines[0].startswith("rank,iteration_s") and len(lines) == 4
    assert float(lines[1].split(",")[1]) == row["iteration_s"]


def test_2d_rows_rerun_through_the_cli_to_the_same_numbers():
    base = ["search", "--model", "llama3-8b", "--gpu", "h100-sxm", "--seq", "2048", "--gpus", "16", "--gbs", "32",
            "--top", "4", "--schedules", "1f1b,zb-h1", "--pp", "1,2"]  # fmt: skip
    blocks = json.loads(_cli(*base, "--tp2d", "2,4", "--tp2d", "4,2", "--summa-blocks", "16", "--json").stdout)
    lcm = json.loads(_cli(*base, "--tp-mode", "2d", "--json").stdout)  # every grid, blocks lcm(R, C)
    rows = blocks["layouts"] + blocks["pareto"] + lcm["layouts"] + lcm["pareto"]
    assert {r["tp_mode"] for r in rows} == {"2d"}  # --tp2d implies --tp-mode 2d
    assert {tuple(r["tp2d"]) for r in blocks["layouts"]} <= {(2, 4), (4, 2)}
    assert {r["summa_blocks"] for r in blocks["layouts"]} == {16} and {r["summa_blocks"] for r in lcm["layouts"]} == {0}
    assert not any(r["sequence_parallel"] or r["cp"] > 1 for r in rows)
    for row in rows:
        cmd = row["command"].split()
        assert f"--tp-mode 2d --tp2d {row['tp2d'][0]},{row['tp2d'][1]}" in row["command"]
        rerun = json.loads(_cli("estimate", *cmd[2:], "--json", "--no-ops").stdout)
        assert rerun["iteration_s"] == row["iteration_s"] and rerun["peak_bytes"] == row["peak_bytes"]
        assert rerun["mfu"] == row["mfu"] and rerun["breakdown_s"] == row["breakdown_s"]
    table = _cli(*base, "--tp-mode", "1d,2d", "--csv").stdout.splitlines()
    head = table[0].split(",")
    assert {"tp_mode", "tp2d", "summa_blocks"} <= set(head) and len(table) == 5


def test_2d_joins_only_when_asked():
    opt = dict(schedules=["1f1b", "zb-h1"], zero=[1], recompute=["none"], mbs=[1])
    plain = ppviz.search(TINY, _gpu(80e9), 8, 16, top=50, pareto=False, **opt)
    both = ppviz.search(TINY, _gpu(80e9), 8, 16, top=500, pareto=False, tp_mode=["1d", "2d"], **opt)
    assert {r["tp_mode"] for r in plain.layouts} == {"1d"} and plain.layouts[0]["tp2d"] is None
    assert {r["tp_mode"] for r in both.layouts} == {"1d", "2d"} and both.searched > plain.searched
    assert len(both.layouts) == both.searched <= 500  # every layout fits in 80 GB, so all are ranked
    assert sum(r["tp_mode"] == "2d" for r in both.layouts) == both.searched - plain.searched
    grid = ppviz.search(TINY, _gpu(80e9), 8, 16, top=500, pareto=False, tp2d=[(2, 2)], **opt)
    assert grid.layouts and {(r["tp_mode"], tuple(r["tp2d"])) for r in grid.layouts} == {("2d", (2, 2))}
    with pytest.raises(ValueError, match="add --tp-mode 2d"):
        ppviz.search(TINY, _gpu(80e9), 8, 16, tp_mode=["1d"], summa_blocks=[8])


def _cli(*args):
    r = subprocess.run([sys.executable, "-m", "ppviz", *args], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return r


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--model", "llama3-70b", "--gpus", "1000", "--gbs", "1024"], "try a GPU count such as"),
        (["--model", "llama3-405b", "--gpus", "8", "--gbs", "8", "--schedules", "1f1b"], "GiB over"),
        (["--model", "llama3-8b", "--gpus", "16", "--gbs", "64", "--tp", "3"], "no layout of 16 GPUs divides"),
        (["--model", "llama3-8b", "--gpus", "16", "--gbs", "64", "--schedules", "nope"], "unknown schedule"),
        (["--model", "llama3-8b", "--gpus", "16", "--gbs", "64", "--headroom", "1.5"], "headroom"),
        (["--model", "llama3-8b", "--gpus", "0", "--gbs", "64"], "--gpus 0 is out of range: it takes 1 to"),
        (["--model", "llama3-8b", "--gpus", "16", "--gbs", "64", "--tp-mode", "3d"], "--tp-mode takes 1d, 2d"),
        (["--model", "llama3-8b", "--gpus", "16", "--gbs", "64", "--tp-mode", "1d", "--tp2d", "2,4"], "--tp-mode 2d"),
        (["--model", "mixtral-8x7b", "--gpus", "16", "--gbs", "64", "--tp-mode", "2d"], "no layout of 16 GPUs divides"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, needle):
    r = subprocess.run([sys.executable, "-m", "ppviz", "search", "--gpu", "h100-sxm", *args], capture_output=True,
                       text=True, timeout=300)  # fmt: skip
    assert r.returncode == 2, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert needle in r.stderr


def test_nothing_fits_names_the_closest_layout_and_by_how_much():
    with pytest.raises(ValueError) as e:
        ppviz.search("llama3-405b", "h100-sxm", 8, 8, schedules=["1f1b"], pareto=False)
    msg = str(e.value)
    assert "the closest" in msg and "GiB over" in msg
    # the closest is the layout with the least simulated peak: rerun it and compare the figure quoted
    need = float(msg.split(" needs ")[1].split(" GiB")[0])
    assert need > 80


def test_searching_schedules_report_a_cut_budget_and_progress_reaches_the_total():
    calls = []
    res = ppviz.search(TINY, _gpu(80e9), 8, 16, top=3, budget_ops=0, progress=lambda d, t: calls.append((d, t)),
                       schedules=["1f1b", "v-half", "zb-auto"], zero=[1], recompute=["none"])  # fmt: skip
    assert res.budget_cut > 0 and not res.complete and "budget" in res.notes[0]
    assert all(r["schedule"] == "1f1b" for r in res.layouts)
    assert calls[-1][0] == calls[-1][1] == res.searched
    assert all(d <= t for d, t in calls)


def test_cancel_stops_the_search():
    res = ppviz.search(TINY, _gpu(80e9), 8, 16, cancel=lambda: True, **OPTS)
    assert res.cancelled and not res.complete and res.simulated == 0


@pytest.mark.parametrize("opts", [OPTS, dict(OPTS_2D, tp_mode=("2d",))], ids=["1d", "2d"])
def test_jobs_give_the_same_ranking(opts):
    from ppviz.search.parallel import search_parallel

    opt = Options(**opts)
    one = ppviz.search(TINY, _gpu(80e9), 8, 16, top=5, options=opt, budget_ops=10**9)
    two = search_parallel(TINY, _gpu(80e9), 8, 16, jobs=2, top=5, options=opt, budget_ops=10**9)
    assert {r["tp_mode"] for r in one.layouts} == {opts.get("tp_mode", ("1d",))[0]}
    assert [(_key(r), r["iteration_s"]) for r in one.layouts] == [(_key(r), r["iteration_s"]) for r in two.layouts]
    assert [r["iteration_s"] for r in one.pareto] == [r["iteration_s"] for r in two.pareto]
    assert one.searched == two.searched


def test_nvlink_placements_time_each_group_on_its_tier():
    """dp ranks inside the NVLink domain sync faster than dp across the network; pp ranks inside it send
    their activations at NVLink speed (NERSC's placements, seed 003)."""
    g = gpu("h100-sxm")  # NVLink domains of 8
    base = dict(tp=2, pp=4, dp=4, mbs=1, gbs=64, schedule="1f1b", zero=0)
    dp_in, pp_in = (estimate("llama3-8b", g, Layout(**base, nvlink_dp_pp=p)) for p in ((4, 1), (1, 4)))
    mega = estimate("llama3-8b", g, Layout(**base))  # Megatron's order puts tp then dp in the domain: (4, 1)
    assert mega.iteration_s == dp_in.iteration_s and mega.dp_sync_s == dp_in.dp_sync_s
    assert iteration.dp_groups(dp_in.layout, g)[0] == (4, 2, 4) and iteration.dp_groups(pp_in.layout, g)[0] == (4, 2, 1)
    assert dp_in.dp_sync_s < pp_in.dp_sync_s and pp_in.dp_sync_s > 0
    # the exposed sync across the network is the ring all-reduce of the fp32 gradients beyond the last op
    grads = iteration.GRAD_B * pp_in.params_per_device
    ring = np.array([comm.all_reduce_s(q, 4, 1, g) for q in grads])
    last_op = iteration.device_times(pp_in.run)[2]
    assert pp_in.dp_exposed_s == pytest.approx(np.maximum(0, ring - last_op), rel=1e-12)
    size = 2 * 1 * 8192 * 4096 / 2  # bf16 activation of one microbatch, split over tp 2
    assert dp_in.to_dict(ops=False)["p2p_boundary_ms"] == [comm.p2p_s(size, False, g) * 1e3] * 3
    assert pp_in.to_dict(ops=False)["p2p_boundary_ms"] == [comm.p2p_s(size, True, g) * 1e3] * 3
    half = estimate("llama3-8b", g, Layout(**base, nvlink_dp_pp=(2, 2)))
    assert half.to_dict(ops=False)["p2p_boundary_ms"] == [comm.p2p_s(size, s, g) * 1e3 for s in (True, False, True)]
    with pytest.raises(ValueError, match="puts tp·cp·4·4 = 32 GPUs in one NVLink domain of 8"):
        estimate("llama3-8b", g, Layout(**base, nvlink_dp_pp=(4, 4)))
    with pytest.raises(ValueError, match="must divide dp 4"):
        Layout(**base, nvlink_dp_pp=(3, 1))


def test_the_search_offers_nvlink_placements_and_their_rows_rerun():
    base = ["search", "--model", "llama3-8b", "--gpu", "h100-sxm", "--seq", "2048", "--gpus", "16", "--gbs", "32",
            "--top", "60", "--schedules", "1f1b", "--tp", "2", "--pp", "4", "--zero", "0", "--mbs", "1",
            "--recompute", "none", "--sequence-parallel", "off", "--no-pareto"]  # fmt: skip
    rows = json.loads(_cli(*base, "--json").stdout)["layouts"]
    # tp 2 leaves room for 4 of the dp 2 × pp 4 ranks: Megatron's order (dp 2 then pp 2, the same as (2, 2)) and pp 4
    assert sorted(tuple(r["nvlink_dp_pp"] or ()) for r in rows) == [(), (1, 4)]
    for row in rows:
        rerun = json.loads(_cli("estimate", *row["command"].split()[2:], "--json", "--no-ops").stdout)
        assert rerun["iteration_s"] == row["iteration_s"] and rerun["dp_sync_s"] == row["dp_sync_s"]
        assert rerun["layout"]["nvlink_dp_pp"] == row["nvlink_dp_pp"]
    only = json.loads(_cli(*base, "--megatron-order", "--json").stdout)["layouts"]
    assert [r["nvlink_dp_pp"] for r in only] == [None]


def test_complete_front_flag_gives_the_front_over_every_layout():
    args = ["search", "--model", "llama3-8b", "--gpu", "h100-sxm", "--seq", "2048", "--gpus", "8", "--gbs", "16",
            "--schedules", "1f1b,zb-h1", "--recompute", "none,full", "--zero", "0,1"]  # fmt: skip
    full = json.loads(_cli(*args, "--complete-front", "--json").stdout)
    near = json.loads(_cli(*args, "--json").stdout)
    times = [r["iteration_s"] for r in full["pareto"]]
    peaks = [max(r["peak_bytes"]) for r in full["pareto"]]
    assert times == sorted(times) and peaks == sorted(peaks, reverse=True) and len(set(peaks)) == len(peaks)
    best = full["layouts"][0]["iteration_s"]
    assert [r["command"] for r in near["pareto"]] == [
        r["command"] for r in full["pareto"] if r["iteration_s"] <= 1.1 * best
    ]
    assert max(times) > 1.1 * best  # the complete front reaches past the 10% window here


def test_balanced_split_puts_the_lighter_stages_at_the_edges():
    assert space.balanced_split(126, 16) == (7,) + (8,) * 14 + (7,)  # Llama 3 405B's published split
    assert space.balanced_split(80, 16) is None
    assert sum(space.balanced_split(80, 24)) == 80


def test_tp_comm_overlap_pinned_on_exact_against_brute_force():
    """--tp-comm-overlap (pinned on) applies to every searched layout with sequence parallel (the others
    cannot take it, and are searched as before); the pruned search still equals the brute force over
    that space, and each row's command reruns through `ppviz estimate` to the same numbers."""
    opt = Options(schedules=("1f1b", "zb-h1", "interleaved-1f1b"), vpp=(2,), zero=(0, 1), mbs=(1,),
                  recompute=("none",), tp_comm_overlap=True)  # fmt: skip
    g = _gpu(80e9)
    ests = _all_layouts(TINY, g, 8, 16, opt)
    assert {(e.layout.sequence_parallel, e.layout.tp_comm_overlap) for e in ests} == {(False, False), (True, True)}
    want, fit = _ranked(ests, g.hbm_bytes, 5)
    got = ppviz.search(TINY, g, 8, 16, top=5, budget_ops=10**9, options=opt, pareto_within=1e9)
    assert got.searched == len(ests)
    assert [e.iteration_s for e in want] == [r["iteration_s"] for r in got.layouts]
    assert [(r["iteration_s"], max(r["peak_bytes"])) for r in got.pareto] == _front(fit)
    serial = _all_layouts(TINY, g, 8, 16, replace(opt, tp_comm_overlap=False))
    off = {engine.rank_key(e.layout): e.iteration_s for e in serial}
    for e in ests:  # never slower than the same layout without it; unchanged where there is no SP
        before = off[engine.rank_key(replace(e.layout, tp_comm_overlap=False))]
        assert e.iteration_s <= before and (e.layout.sequence_parallel or e.iteration_s == before)
    base = ["--model", "llama3-8b", "--gpu", "h100-sxm", "--seq", "2048"]
    args = ["--gpus", "16", "--gbs", "32", "--top", "3", "--schedules", "1f1b,zb-h1", "--sequence-parallel", "on",
            "--tp", "2,4", "--tp-comm-overlap", "--json"]  # fmt: skip
    res = json.loads(_cli("search", *base, *args).stdout)
    for row in res["layouts"]:
        assert row["tp_comm_overlap"] is True and "--tp-comm-overlap" in row["command"]
        rerun = json.loads(_cli("estimate", *row["command"].split()[2:], "--json", "--no-ops").stdout)
        assert rerun["iteration_s"] == row["iteration_s"] and rerun["layout"]["tp_comm_overlap"] is True


def test_tp_comm_overlap_is_searched_where_the_layout_allows_it():
    """By default the overlap is a searched dimension (Calculon searches it too): off everywhere, and on
    for every 1D layout with sequence parallel whose TP group sits inside one NVLink domain (domain 2
    here: tp 4 groups span two and cannot overlap). The pruned search equals the brute force."""
    opt = Options(schedules=("1f1b", "zb-h1"), zero=(1,), mbs=(1,), recompute=("none",), nvlink_placements=False)
    g = gpu("h100-sxm", nvlink_domain=2)
    ests = _all_layouts(TINY, g, 8, 16, opt)
    seen = {(e.layout.tp, e.layout.sequence_parallel, e.layout.tp_comm_overlap) for e in ests}
    assert seen == {(1, False, False), (2, False, False), (2, True, False), (2, True, True), (4, False, False),
                    (4, True, False)}  # fmt: skip
    want, fit = _ranked(ests, g.hbm_bytes, 6)
    got = ppviz.search(TINY, g, 8, 16, top=6, options=opt, pareto_within=1e9)
    assert got.searched == len(ests) and got.complete
    assert [(e.iteration_s, e.layout.tp_comm_overlap) for e in want] == [
        (r["iteration_s"], r["tp_comm_overlap"]) for r in got.layouts]  # fmt: skip
    assert [(r["iteration_s"], max(r["peak_bytes"])) for r in got.pareto] == _front(fit)
    assert space.Options(tp_comm_overlap=True).tp_comm_overlap == (True,)
    assert space.Options(tp_comm_overlap=[False, True, True]).tp_comm_overlap == (False, True)
    with pytest.raises(ValueError, match="true, false or both"):
        space.Options(tp_comm_overlap="yes")


@pytest.mark.parametrize(("flag", "want"), [([], None), (["--tp-comm-overlap"], (True,)),
                                            (["--tp-comm-overlap", "on"], (True,)),
                                            (["--tp-comm-overlap", "off"], (False,)),
                                            (["--tp-comm-overlap", "both"], None)])  # fmt: skip
def test_the_tp_overlap_flag_searches_or_pins_it(flag, want):
    """Searched by default; the bare flag (as before) or `on` pins it on where allowed, `off` pins it off."""
    from ppviz.__main__ import _parser
    from ppviz.search import cli

    args = _parser().parse_args(["search", "--model", "tiny-x", "--gpu", "h100-sxm", "--gpus", "8", "--gbs", "8",
                                 *flag, "--json"])  # fmt: skip
    assert cli.options(args).tp_comm_overlap == want and args.budget_ops == engine.BUDGET_OPS
    assert "tp_comm_overlap" in cli.CSV_FIELDS


def test_the_progress_bar_rate_counts_only_what_it_saw():
    """The bar appears after a second with what is already decided as its start, so its first rate is
    not every layout decided before it showed divided by no time (the issue's "1335676108.80 layouts/s")."""
    from ppviz.search import cli

    bar = cli._Bar()
    bar.start -= 2.0  # the search has run two seconds
    bar(150_000, 237_276)
    try:
        assert bar.bar.initial == 150_000 and bar.bar.n == 150_000 and bar.bar.total == 237_276
        bar(160_000, 237_276)
        assert bar.bar.n - bar.bar.initial == 10_000
    finally:
        bar.close()
