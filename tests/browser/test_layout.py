"""Screenshot layout tests at a laptop's 1280×800 and a desktop's 1920×1080: in every view nothing
overlaps anything else, and at 8 devices both charts' time axes are on screen without scrolling.

Screenshots are saved under pytest's tmp dir (``.../layout-shots/``) for a human to look at.
"""

from __future__ import annotations

import time

import pytest
from layout_checks import assert_axes_visible, assert_no_overlaps, chart, screenshot, set_viewport, wait_for

pytestmark = pytest.mark.browser

SCREENS = ((1280, 800), (1920, 1080))


@pytest.fixture
def shots(tmp_path_factory):
    return tmp_path_factory.mktemp("layout-shots")


def wait_drawn(duo, gantt: str, memory: str, title: str) -> None:
    """The Gantt's title shows ``title`` and the memory chart has its curves, then the page settles."""
    wait_for(
        lambda: (
            title
            in (chart(duo, gantt, "return (gd && gd.layout && gd.layout.title && gd.layout.title.text) || '';") or "")
        ),
        title,
    )
    wait_for(lambda: chart(duo, memory, "return gd && gd.data.length;"), f"{memory} drawn")
    time.sleep(0.8)  # let plotly finish the legend and ticks after a resize


@pytest.mark.parametrize("width,height", SCREENS)
def test_the_abstract_view_at_8_and_32_devices(page, shots, width, height):
    """The longest legends (ZB-V's and DualPipe's overlapped pairs, interleaved 1F1B's four chunk patterns)
    at 8 devices, and the memory band at 32 with a device picked as a line."""
    set_viewport(page.driver, width, height)
    for schedule, devices, extra in (
        ("zb-v", 8, ""),
        ("dualpipe", 8, ""),
        ("interleaved-1f1b", 8, "&interleaved-1f1b.chunks=4"),
        ("zb-v", 32, "&lines=3,20"),
    ):
        page.driver.get(page.server_url + f"/#schedule={schedule}&devices={devices}&microbatches=16{extra}")
        wait_drawn(page, "gantt", "memory", f"{schedule} · {devices} devices")
        screenshot(page.driver, shots, f"abstract_{schedule}_p{devices}_{width}x{height}")
        assert_no_overlaps(page.driver)
        assert_axes_visible(page.driver, ("gantt", "memory"))
    names = chart(page, "memory", "return gd.data.map(t => t.name);")
    assert "device 3" in names and "device 20" in names  # the picked lines over the band
    assert page.find_element("#lines").text.count("device") == 2
    page.find_element("#lines").click()  # a user adds device 7
    next(o for o in page.find_elements(".dash-dropdown-option") if o.text.strip() == "device 7").click()
    wait_for(lambda: "device 7" in chart(page, "memory", "return gd.data.map(t => t.name);"), "device 7 drawn")
    assert "lines=3,7,20" in page.driver.current_url
    assert page.get_logs() == []


@pytest.mark.parametrize("width,height", SCREENS)
def test_the_model_view_at_8_and_16_devices(page, shots, width, height):
    set_viewport(page.driver, width, height)
    # Llama-3 8B's 32 layers split into pp 8 × vpp 4 stages; 70B's 80 do not
    for model, pp, schedule in ((70, 8, "zb-v"), (8, 8, "interleaved-1f1b&vpp=4"), (70, 16, "1f1b")):
        link = f"/model#model=llama3-{model}b&gpu=h100-sxm&tp=4&pp={pp}&gbs=64&schedule={schedule}"
        page.driver.get(page.server_url + link)
        page.driver.refresh()  # a new page, not a hash change of the one open
        wait_drawn(page, "gantt-model", "gantt-model", f"{pp} devices")  # one figure: the memory under the Gantt
        wait_for(lambda: chart(page, "gantt-model", "return gd.data.some(t => t.yaxis === 'y2');"), "memory drawn")
        screenshot(page.driver, shots, f"model_{schedule.split('&')[0]}_pp{pp}_{width}x{height}")
        assert_no_overlaps(page.driver)
        assert_axes_visible(page.driver, ("gantt-model",))
    assert page.get_logs() == []


@pytest.mark.parametrize("width,height", SCREENS)
def test_the_search_view_with_its_results(page, shots, width, height):
    set_viewport(page.driver, width, height)
    link = "/search#model=llama3-8b&gpu=h100-sxm&gpus=16&gbs=32&seq=4096&schedules=1f1b,zb-v"
    page.driver.get(page.server_url + link)
    page.driver.refresh()  # a shared link reruns the search
    rows = "return document.querySelectorAll('#grid-search .ag-row').length;"
    wait_for(lambda: page.driver.execute_script(rows) > 0, "the ranked rows", timeout=120)
    wait_for(lambda: chart(page, "scatter-search", "return gd && gd.data.length;"), "the scatter")
    time.sleep(0.8)
    screenshot(page.driver, shots, f"search_{width}x{height}")
    assert_no_overlaps(page.driver)
    assert page.get_logs() == []


LINES = "return ((gd && gd.data) || []).filter(t => t.mode === 'lines+markers').map(t => t.name + ':' + t.yaxis);"
TITLES = "return ((gd && gd.layout && gd.layout.annotations) || []).map(a => a.text).join(' ');"


def wait_compared(duo, name: str, schedules, show: str) -> None:
    """Compare mode has drawn: each schedule's titled Gantt + memory block, or the sweep's lines (one per
    schedule in each of its three panels); then the page settles."""
    if show == "sweep":
        wait_for(lambda: len(chart(duo, name, LINES) or []) == 3 * len(schedules), "the sweep's lines", timeout=60)
    else:
        # each block titled by its schedule, e.g. "<b>interleaved-1f1b (chunks=4)</b>"
        wait_for(lambda: all(f"<b>{s}" in (chart(duo, name, TITLES) or "") for s in schedules), "titled", timeout=60)
    time.sleep(0.8)


def ranking_text(duo, selector: str) -> tuple[list[str], str]:
    """The ranking's column headers and its body's text, once checked that it fits its box: a table
    scrolled sideways hid the deltas' last column at 1280 px."""
    heads, body, clipped = duo.driver.execute_script(
        "const box = document.querySelector(arguments[0]);"
        "const heads = [...box.querySelectorAll('th, .ag-header-cell-text')].map(h => h.textContent.trim());"
        "const body = [...box.querySelectorAll('td, .ag-cell')].map(c => c.textContent.trim()).join(' | ');"
        # a grid's own parts overhang by design; its text must not
        "const grid = e => e.closest('.ag-root-wrapper, .ag-measurement-container, .ag-aria-description-container');"
        "const clipped = [box, ...box.querySelectorAll('*')].filter(e => e.scrollWidth > e.clientWidth + 1"
        "  && (grid(e) ? e.matches('.ag-header-cell-text, .ag-cell-value, .ag-body-horizontal-scroll-viewport')"
        "      : ['auto', 'scroll', 'hidden'].includes(getComputedStyle(e).overflowX)))"
        "  .map(e => `${e.className}: ${e.scrollWidth} > ${e.clientWidth}`);"
        "return [heads, body, clipped];",
        selector,
    )
    assert not clipped, f"the ranking is wider than its box: {clipped}"
    return heads, body


def assert_one_line_per_schedule(duo, name: str, schedules) -> None:
    drawn = chart(duo, name, LINES)
    assert sorted(drawn) == sorted(f"{s}:{y}" for s in schedules for y in ("y", "y2", "y3")), drawn
    legend = chart(duo, name, "return [...gd.querySelectorAll('.legendtext')].map(e => e.textContent);")
    assert [s for s in schedules if s in legend] == list(schedules), legend


@pytest.mark.parametrize("width,height", SCREENS)
def test_the_abstract_compare_and_its_sweep(page, shots, width, height):
    """Two schedules at 8 devices (1F1B vs ZB-V; DualPipe vs interleaved 1F1B at 4 chunks, the longest
    legend), their Gantt + memory blocks then their sweep: nothing overlaps, the compare chart's time axis is
    on screen unscrolled, the ranking gives each schedule's delta against the baseline."""
    set_viewport(page.driver, width, height)
    for pair, extra in ((("1f1b", "zb-v"), ""), (("dualpipe", "interleaved-1f1b"), "&interleaved-1f1b.chunks=4")):
        for show in ("charts", "sweep"):
            link = f"/#devices=8&microbatches=16&mode=compare&compare={','.join(pair)}{extra}"
            page.driver.get(page.server_url + link + ("&show=sweep" if show == "sweep" else ""))
            wait_compared(page, "gantt", pair, show)
            screenshot(page.driver, shots, f"compare_{'_'.join(pair)}_{show}_{width}x{height}")
            assert_no_overlaps(page.driver)
            if show == "charts":
                assert_axes_visible(page.driver, ("gantt",))
            else:
                assert_one_line_per_schedule(page, "gantt", pair)
            heads, body = ranking_text(page, "#ranking")
            assert "vs baseline" in heads, heads
            assert "baseline" in body and "% makespan" in body, body
    assert page.get_logs() == []


@pytest.mark.parametrize("width,height", SCREENS)
def test_the_model_compare_and_its_sweep(page, shots, width, height):
    """The model & cluster view comparing 1F1B and ZB-V (Llama-3 70B, pp 8): charts, then the sweep; then
    four schedules (vpp 2), whose iteration breakdown's legend wraps to more rows."""
    set_viewport(page.driver, width, height)
    four = ("1f1b", "zb-v", "interleaved-1f1b", "dualpipe")
    for names, show in ((four[:2], "charts"), (four[:2], "sweep"), (four, "charts")):
        link = f"/model#mode=compare&compare={','.join(names)}&vpp=2" + f"&show={show}" * (show == "sweep")
        page.driver.get(page.server_url + link)
        page.driver.refresh()  # a new page, not a hash change of the one open
        wait_compared(page, "gantt-model", names, show)
        screenshot(page.driver, shots, f"model_compare_{len(names)}_{show}_{width}x{height}")
        assert_no_overlaps(page.driver)
        if show == "sweep":
            assert_one_line_per_schedule(page, "gantt-model", names)
        elif len(names) == 2:
            assert_axes_visible(page.driver, ("gantt-model",))
        heads, body = ranking_text(page, "#ranking-model")
        assert "vs baseline" in heads, heads
        assert body.count("baseline") == 1 and body.count("% iteration") == len(names) - 1, body
    assert page.get_logs() == []
