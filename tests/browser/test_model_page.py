"""The model & cluster view in a real browser: the view switch, presets chosen in the dropdowns, the
Gantt in ms and memory in GiB with the capacity line, the cards, and a reload that keeps it all.
"""

from __future__ import annotations

import dataclasses

import pytest
from layout_checks import chart, wait_for

import ppviz
from ppviz import figures
from ppviz.estimate import Layout
from ppviz.units import GIB, duration

pytestmark = pytest.mark.browser


def pick(duo, dropdown: str, name: str) -> None:
    """Choose an option of a Dash 4 dropdown as a user does: open it, click the option."""
    duo.find_element(dropdown).click()
    options = duo.find_elements(".dash-dropdown-option")
    next(o for o in options if o.text.split(":")[0] == name).click()


def drag_across(driver, element, start: float, end: float) -> None:
    """A user's mouse drag across ``element``'s middle, from ``start`` to ``end`` of its width (the
    browser's own input events: plotly ignored selenium's synthesized drag)."""
    left, top, width, height = driver.execute_script(
        "const r = arguments[0].getBoundingClientRect(); return [r.left, r.top, r.width, r.height];", element
    )
    y = top + height / 2

    def mouse(kind: str, fraction: float, **extra) -> None:
        event = dict(type=kind, x=left + fraction * width, y=y, button="left", **extra)
        driver.execute_cdp_cmd("Input.dispatchMouseEvent", event)

    mouse("mouseMoved", start)
    mouse("mousePressed", start, clickCount=1, buttons=1)
    for i in range(1, 11):
        mouse("mouseMoved", start + (end - start) * i / 10, buttons=1)
    mouse("mouseReleased", end, clickCount=1)


def card(duo, key: str) -> str:
    return duo.find_element(f"#card-{key}-model").text


def test_presets_give_a_gantt_in_ms_memory_in_gib_and_cards(page):
    page.find_element("#view-tabs .tab:nth-child(2)").click()  # "model & cluster"
    wait_for(lambda: page.find_elements("#model-view"), "the model page is shown")
    assert not page.find_elements("#abstract-view")  # only the page on screen is in the DOM
    assert "tab--selected" in page.find_element("#nav-model").get_attribute("class")
    page.wait_for_contains_text("#card-iteration-model", "ms", timeout=20)

    pick(page, "#model-model", "llama3-8b")
    wait_for(lambda: page.find_element("#layers-model").get_attribute("value") == "32", "llama3-8b's 32 layers")
    pick(page, "#gpu-model", "h200")
    wait_for(lambda: "gpu=h200" in page.driver.current_url, "the link carries the GPU")
    assert "model=llama3-8b" in page.driver.current_url and "/model#" in page.driver.current_url

    est = ppviz.estimate("llama3-8b", "h200", Layout(tp=8, pp=8, gbs=64, sequence_parallel=True,
                                                     recompute="selective", zero=1))  # fmt: skip
    for reload in (False, True):
        if reload:
            page.driver.refresh()
        page.wait_for_contains_text("#card-iteration-model", duration(est.iteration_s), timeout=20)
        assert f"{est.tokens_per_s:,.0f}" in card(page, "tokens")
        assert f"{est.mfu:.1%}" in card(page, "mfu")
        assert f"{est.peak_bytes.max() / GIB:,.2f} / 137.40 GiB usable" in card(page, "peak")  # 140.40 less 3
        # one figure: the Gantt, and the memory chart under it on the same time axis in ms
        wait_for(lambda: chart(page, "gantt-model", "return gd && gd.layout.xaxis2.title.text;") == "time (ms)",
                 "the time axis in ms")  # fmt: skip
        end = chart(page, "gantt-model", "return gd._fullLayout.xaxis.range[1];")
        assert end == pytest.approx(est.makespan_s * 1e3, rel=1e-3)
        assert chart(page, "gantt-model", "return gd.layout.yaxis2.title.text;") == "memory (GiB)"
        names = chart(page, "gantt-model", "return gd.data.filter(t => t.yaxis === 'y2').map(t => t.name);")
        assert "capacity 140.40 GiB" in names and "reserve 3.00 GiB" in names
        assert page.find_element("#memory-box-model").is_displayed()  # each device's memory by part
        parts = page.find_element("#breakdown-model").text  # a stacked bar in ms, its parts in words
        assert f"= {est.iteration_s * 1e3:,.1f} ms" in parts and "compute" in parts and "tp comm" in parts
        assert page.find_element("#model-view").is_displayed()  # the link reopens this view
        assert page.find_element("#model-model").text.startswith("llama3-8b")

    # A zoom on the Gantt moves the memory chart's time axis with it, and a zoom on the memory chart the Gantt's.
    chart(page, "gantt-model", "Plotly.relayout(gd, {'xaxis.range': [1000, 2000]});")
    wait_for(lambda: chart(page, "gantt-model", "return gd._fullLayout.xaxis2.range;") == [1000, 2000],
             "the memory chart follows the zoom")  # fmt: skip
    drag_across(page.driver, page.find_element('#gantt-model .nsewdrag[data-subplot="x2y2"]'), 0.25, 0.75)
    span = "const a = gd._fullLayout.xaxis.range, b = gd._fullLayout.xaxis2.range; return [a, b];"
    wait_for(lambda: chart(page, "gantt-model", span)[0][0] > 1100, "the Gantt follows a zoom of the memory chart")
    gantt_range, memory_range = chart(page, "gantt-model", span)
    assert gantt_range == pytest.approx(memory_range) and 1200 < gantt_range[0] < gantt_range[1] < 1800

    # An estimate error shows beside the control to change, and the chart says why it is empty.
    box = page.find_element("#tp-model")
    box.clear()
    box.send_keys("3\t")
    page.wait_for_contains_text("#row-tp-model .msg-error", "tp 3 must divide the 32 attention heads", timeout=15)
    page.wait_for_contains_text("#gantt-model", "Nothing to draw")
    assert page.get_logs() == []


def test_compare_shows_memory_in_gib_per_schedule_deltas_and_a_sweep_in_real_units(page):
    """A compare link: each schedule's Gantt with its memory in GiB and the HBM line on one ms axis, a zoom
    on one Gantt moving every plot, the deltas against the first schedule, then the sweep in ms and GiB."""
    page.driver.get(page.server_url + "/model#mode=compare&compare=1f1b,zb-v")
    titles = "return (gd && gd.layout.annotations || []).map(a => a.text).join(' ');"
    wait_for(lambda: "<b>1f1b</b> <b>zb-v</b>" in chart(page, "gantt-model", titles), "both schedules are drawn")
    axes = "return [gd.layout.yaxis2.title.text, gd.layout.yaxis4.title.text, gd.layout.xaxis4.title.text];"
    assert chart(page, "gantt-model", axes) == ["memory (GiB)", "memory (GiB)", "time (ms)"]
    capacity = "return gd.data.filter(t => t.name.startsWith('capacity')).map(t => t.yaxis + ':' + t.y[0]);"
    assert chart(page, "gantt-model", capacity) == ["y2:79.6474609375", "y4:79.6474609375"]  # 81,559 MiB
    chart(page, "gantt-model", "Plotly.relayout(gd, {'xaxis.range': [1000, 2000]});")
    wait_for(lambda: chart(page, "gantt-model", "return gd._fullLayout.xaxis4.range;") == [1000, 2000],
             "the last memory plot follows a zoom of the first Gantt")  # fmt: skip

    one, zbv = (ppviz.estimate("llama3-70b", "h100-sxm", Layout(tp=8, pp=8, gbs=64, sequence_parallel=True,
                recompute="selective", zero=1, schedule=n)) for n in ("1f1b", "zb-v"))  # fmt: skip
    pct = 100 * (zbv.iteration_s - one.iteration_s) / one.iteration_s
    page.wait_for_contains_text("#ranking-model", f"{'+' if pct > 0 else '−'}{abs(pct):.1f}% iteration", timeout=20)

    page.find_element("#compare_show-model input[value=sweep]").click()
    lines = "return gd.data.filter(t => t.mode === 'lines+markers').length;"
    wait_for(lambda: chart(page, "gantt-model", lines) == 6, "the sweep's lines are drawn")
    titles = "return [gd.layout.yaxis.title.text, gd.layout.yaxis3.title.text];"
    assert chart(page, "gantt-model", titles) == ["iteration (ms)", "peak memory (GiB)"]
    assert "show=sweep" in page.driver.current_url
    assert page.get_logs() == []


def test_iterations_draw_each_optimizer_step_between_them(page):
    """A link with 3 iterations of 1F1B: the card gives their average, the Gantt a grey step per
    device between each two (in the legend); back to 1 iteration, the steps and the link key go."""
    link = "/model#model=llama3-8b&tp=2&pp=4&dp=32&gbs=64&schedule=1f1b&iterations=3"
    page.driver.get(page.server_url + link)
    lay = Layout(tp=2, pp=4, dp=32, gbs=64, sequence_parallel=True, recompute="selective", zero=1, schedule="1f1b")
    est = ppviz.estimate("llama3-8b", "h100-sxm", dataclasses.replace(lay, schedule_params={"iterations": 3}))
    page.wait_for_contains_text("#card-iteration-model", duration(est.iteration_s), timeout=20)
    assert "average of 3 iterations" in card(page, "iteration")
    steps = "const t = gd && gd.data.find(t => t.legendgroup === 'optimizer'); return t ? t.y.length : 0;"
    wait_for(lambda: chart(page, "gantt-model", steps) == 2 * 4, "a step per device between the 3 iterations")
    legend = chart(
        page, "gantt-model", "return Array.from(gd.querySelectorAll('.legendtext')).map(e => e.textContent);"
    )
    assert figures.OPTIMIZER_LABEL in legend
    box = page.find_element("#iterations-model")
    box.clear()
    box.send_keys("1\t")
    one = ppviz.estimate("llama3-8b", "h100-sxm", lay)
    page.wait_for_contains_text("#card-iteration-model", duration(one.iteration_s), timeout=20)
    wait_for(lambda: chart(page, "gantt-model", steps) == 0, "no step with one iteration")
    assert "iterations=" not in page.driver.current_url
    assert page.get_logs() == []


def test_a_layout_that_does_not_fit_offers_layouts_that_fit_one_click_away(page):
    """pp 2 of Llama-3 70B: the advice card says why and lists the nearest layouts that fit; a click opens one."""
    page.driver.get(page.server_url + "/model#model=llama3-70b&pp=2")
    wait_for(lambda: page.find_element("#advice-model").is_displayed(), "the advice card", timeout=30)
    assert "ZeRO-1 over dp 1 shards nothing" in page.find_element("#advice-why-model").text
    assert "(does not fit)" in card(page, "mfu")
    text = page.find_element("#advice-text-0-model").text
    before = page.driver.current_url
    page.find_element("#advice-apply-0-model").click()
    wait_for(lambda: page.driver.current_url != before, "the link changes")
    page.wait_for_contains_text("#card-peak-model", "fits with", timeout=20)
    wait_for(lambda: not page.find_element("#advice-model").is_displayed(), "the card goes")
    pp = page.find_element("#pp-model").get_attribute("value")
    cp = page.find_element("#cp-model").get_attribute("value")
    recompute = "full" if "recompute=full" in page.driver.current_url else "selective"
    assert f"pp 2 → {pp}" in text or f"cp 1 → {cp}" in text or f"recompute selective → {recompute}" in text
    assert page.get_logs() == []
