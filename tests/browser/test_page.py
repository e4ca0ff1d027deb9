"""What only a real browser shows: the page reacts to sliders, the picker, bad input, links and downloads.

Each test starts its own Chromium (a few seconds), so there are few of them and each checks a lot.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from selenium.webdriver.common.keys import Keys

import ppviz

pytestmark = pytest.mark.browser


def title(duo) -> str:
    """The Gantt chart's title as drawn ('' while it is not drawn yet)."""
    return duo.driver.execute_script(
        "const gd = document.querySelector('#gantt .js-plotly-plot');"
        "return (gd && gd.layout && gd.layout.title && gd.layout.title.text) || '';"
    )


def pick(duo, dropdown: str, name: str) -> None:
    """Choose a schedule in a Dash 4 dropdown the way a user does: open it, click the option."""
    duo.find_element(dropdown).click()
    options = duo.find_elements(".dash-dropdown-option")
    next(o for o in options if o.text.split(":")[0] == name).click()


def wait_title(duo, text: str, timeout: float = 15) -> None:
    deadline = time.time() + timeout
    while text not in title(duo):
        assert time.time() < deadline, f"chart title {title(duo)!r} never showed {text!r}"
        time.sleep(0.1)


def test_slider_picker_and_an_invalid_combination(page):
    """A slider step redraws chart and cards; the picker switches schedule; a bad size shows the core's message."""
    assert title(page).startswith("1f1b · 4 devices · 8 microbatches")
    page.find_element("#microbatches [role=slider]").send_keys(Keys.ARROW_RIGHT)
    wait_title(page, "9 microbatches")
    page.wait_for_contains_text("#card-makespan", "36")  # (m+p−1)(f+b+w) = 12·3
    assert "microbatches=9" in page.driver.current_url

    pick(page, "#schedule", "zb-h1")
    wait_title(page, "zb-h1 · 4 devices · 9 microbatches")
    page.wait_for_contains_text("#schedule-info", "Zero Bubble")
    zb = ppviz.simulate("zb-h1", 4, 9).metrics.makespan
    page.wait_for_contains_text("#card-makespan", f"{zb:g}")

    pick(page, "#schedule", "interleaved-1f1b")
    page.find_element("#microbatches [role=slider]").send_keys(Keys.ARROW_LEFT, Keys.ARROW_LEFT, Keys.ARROW_LEFT)
    page.wait_for_contains_text("#row-microbatches .msg-error", "multiple of devices")
    page.wait_for_contains_text("#gantt", "Nothing to draw")
    assert page.get_logs() == []


def test_a_shared_link_restores_the_view(page):
    """Every control shows the link's values, the charts draw them, a reload keeps them, and the
    copy-link button copies them."""
    query = "#schedule=interleaved-1f1b&devices=6&microbatches=12&f=1.5&interleaved-1f1b.chunks=3&stage_times=2:2:1:1"
    query += "&host_overhead=0,0,0.5,0,0,0"
    page.driver.get(page.server_url + "/" + query)
    for reload in (False, True):
        if reload:
            page.driver.refresh()
        wait_title(page, "interleaved-1f1b · 6 devices · 12 microbatches")
        assert page.find_element("#devices input").get_attribute("value") == "6"
        assert page.find_element("#microbatches input").get_attribute("value") == "12"
        assert page.find_element("#f input").get_attribute("value") == "1.5"
        chunks = page.driver.execute_script(
            "return [...document.querySelectorAll('[role=slider]')]"
            ".filter(e => e.closest('.param-block') && e.offsetParent).map(e => e.getAttribute('aria-valuenow'))"
        )
        assert chunks[0] == "3"
        open_section(page, "stages")
        page.wait_for_text_to_equal('#stage-table .ag-row[row-index="2"] .ag-cell[col-id="f"]', "2")
        page.wait_for_text_to_equal('#stage-table .ag-row[row-index="2"] .ag-cell[col-id="host_overhead"]', "0.5")
        assert "chunks=3" in page.driver.current_url

    # The copy-link button puts this exact view's link on the clipboard.
    permissions = ["clipboardReadWrite", "clipboardSanitizedWrite"]
    page.driver.execute_cdp_cmd("Browser.grantPermissions", {"permissions": permissions, "origin": page.server_url})
    page.find_element("#copy-link").click()
    read = "const done = arguments[0]; navigator.clipboard.readText().then(done, e => done('failed: ' + e));"
    deadline = time.time() + 10
    while (copied := page.driver.execute_async_script(read)) != page.driver.current_url:
        assert time.time() < deadline, f"the clipboard holds {copied!r}, not {page.driver.current_url!r}"
        time.sleep(0.2)
    assert "stage_times=2:2:1:1" in copied and "interleaved-1f1b.chunks=3" in copied
    assert "host_overhead=0,0,0.5,0,0,0" in copied


def test_an_export_downloads(page):
    """The PyTorch order CSV downloads (a background job) named after the view and reads back as the schedule."""
    assert not page.find_element("#export-torch-csv").is_displayed()  # its section starts closed
    open_section(page, "export")
    page.find_element("#export-torch-csv").click()
    target = Path(page.download_path) / "1f1b_p4_m8_order.csv"
    deadline = time.time() + 15
    while not target.exists():
        assert time.time() < deadline, f"no download in {page.download_path}"
        time.sleep(0.1)
    time.sleep(0.2)
    assert ppviz.from_torch_csv(target.read_text()).order == ppviz.build("1f1b", 4, 8).order

    # A memory limit is patched into the memory chart.
    page.find_element("#limit").send_keys("3", Keys.ENTER)
    names = "return gd.data.map(t => t.name);"
    wait_for(page, lambda: "limit 3" in (plotted(page, "memory", names) or []), "the limit line is drawn")

    # The image format applies at once to both camera buttons, named after the view.
    page.find_element("#image-format input[value=png]").click()
    script = "return document.querySelector('#{} .js-plotly-plot')._context.toImageButtonOptions;"
    wait_for(page, lambda: page.driver.execute_script(script.format("gantt"))["format"] == "png", "PNG at once")
    assert page.driver.execute_script(script.format("gantt")) == {"format": "png", "filename": "1f1b_p4_m8", "scale": 2}
    assert page.driver.execute_script(script.format("memory"))["filename"] == "1f1b_p4_m8_memory"

    # A file past the upload limit gets a message instead of being dropped.
    big = Path(page.download_path) / "big.csv"
    big.write_text("0F0," * 80_000)
    page.driver.find_element("css selector", "#upload input[type=file]").send_keys(str(big))
    page.wait_for_contains_text("#upload-error", "larger than 256 KB", timeout=10)
    # The limit is the decoded size (base64's padding counted out): exactly 256 KiB is taken, a byte more is not.
    order = ppviz.to_torch_csv(ppviz.build("1f1b", 3, 4))
    exact = Path(page.download_path) / "exact.csv"
    exact.write_text(order + "\n" * (256 * 1024 - len(order)))  # trailing blank rows are not rows
    page.driver.find_element("css selector", "#upload input[type=file]").send_keys(str(exact))
    page.wait_for_contains_text("#upload-error", "showing exact.csv", timeout=20)
    wait_title(page, "3 devices")
    over = Path(page.download_path) / "over.csv"
    over.write_text(order + "\n" * (256 * 1024 + 1 - len(order)))
    page.driver.find_element("css selector", "#upload input[type=file]").send_keys(str(over))
    page.wait_for_contains_text("#upload-error", "over.csv is 262,145 bytes, larger than 256 KB", timeout=10)
    assert page.get_logs() == []


def open_section(duo, key: str) -> None:
    """Open a collapsible group of controls by clicking its title, as a user does."""
    if duo.find_element(f"#section-{key}").get_attribute("open") is None:
        duo.find_element(f"#section-{key} summary").click()
    wait_for(duo, lambda: duo.find_element(f"#section-{key}").get_attribute("open") is not None, f"{key} opens")


def test_controls_enter_picks_history_batch_and_iterations(page):
    """Enter commits a number box; a quick pick sets microbatches; slider moves replace the history entry
    while a schedule change pushes one, so Back is the previous view; global batch ÷ micro-batch size
    sets the count or says why not beside the boxes; iterations draw their ends on the Gantt."""
    box = page.find_element("#microbatches input")
    box.send_keys(Keys.CONTROL, "a")
    box.send_keys("24", Keys.ENTER)
    wait_title(page, "24 microbatches")
    entries = page.driver.execute_script("return history.length")
    page.find_element("#devices [role=slider]").send_keys(Keys.ARROW_RIGHT)
    wait_title(page, "5 devices · 24 microbatches")
    assert not [e for e in page.find_elements(".dash-slider-tooltip") if e.is_displayed()]  # no lingering tooltip
    page.find_element("#microbatch-picks button[title='16 microbatches']").click()
    wait_title(page, "5 devices · 16 microbatches")
    assert page.driver.execute_script("return history.length") == entries  # replaced, not pushed
    pick(page, "#schedule", "zb-h1")
    wait_title(page, "zb-h1 · 5 devices · 16 microbatches")
    assert page.driver.execute_script("return history.length") == entries + 1
    page.find_element("#devices [role=slider]").send_keys(Keys.ARROW_RIGHT)
    wait_title(page, "zb-h1 · 6 devices")
    page.driver.back()  # the previous view: 1F1B as last seen, not zb-h1 at 5 devices
    wait_title(page, "1f1b · 5 devices · 16 microbatches")
    assert "schedule=1f1b" in page.driver.current_url and "devices=5" in page.driver.current_url

    gbs, mbs = page.find_element("#gbs"), page.find_element("#mbs")
    gbs.send_keys("96", Keys.ENTER)
    page.wait_for_contains_text("#row-gbs .msg-reason", "give both")
    mbs.send_keys("8", Keys.ENTER)
    wait_title(page, "12 microbatches")
    page.wait_for_contains_text("#row-gbs", "96 ÷ 8 = 12 microbatches")
    assert page.find_element("#microbatches input").get_attribute("value") == "12"
    assert "gbs=96" in page.driver.current_url and "mbs=8" in page.driver.current_url
    gbs.send_keys(Keys.BACKSPACE, Keys.BACKSPACE, "100", Keys.ENTER)
    page.wait_for_contains_text("#row-gbs .msg-error", "global batch 100 is not a multiple of micro-batch size 8")
    page.wait_for_contains_text("#gantt", "Nothing to draw")
    wait_for(page, lambda: not page.find_element("#memory-box").is_displayed(), "one empty state, no memory frame")

    page.driver.get(page.server_url + "/#schedule=1f1b&devices=4&microbatches=8")
    wait_title(page, "1f1b · 4 devices · 8 microbatches")
    # the cursor over forward 2 on device 0 (from 2 to 3), near its middle, then near its lower left corner
    for x, y in ((2.5, 0.0), (2.05, 0.35)):
        plotted(page, "gantt", "Plotly.Fx.unhover(gd);")
        plotted(page, "gantt", f"const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;"
                               f"Plotly.Fx.hover(gd, {{xpx: xa.c2p({x}), ypx: ya.c2p({y})}});")  # fmt: skip
        page.wait_for_contains_text("#gantt .hoverlayer", "start 2 units · end 3 units")
        assert "duration 1 units" in page.find_element("#gantt .hoverlayer").text
        assert "device 0" in page.find_element("#gantt .hoverlayer").text

    page.driver.get(page.server_url + "/#schedule=gpipe&devices=4&microbatches=4&gpipe.iterations=3")
    wait_title(page, "gpipe · 4 devices · 12 microbatches")
    names = plotted(page, "gantt", "return gd.data.map(t => t.name);")
    assert "iteration end (3 iterations)" in names
    legend = page.driver.execute_script(
        "return [...document.querySelectorAll('#gantt .legendtext')].map(e => e.textContent)"
    )
    assert "iteration end (3 iterations)" in legend
    assert page.get_logs() == []


def plotted(duo, chart: str, script: str):
    return duo.driver.execute_script(f"const gd = document.querySelector('#{chart} .js-plotly-plot'); {script}")


def wait_for(duo, check, what: str, timeout: float = 15):
    deadline = time.time() + timeout
    while not check():
        assert time.time() < deadline, f"never: {what}"
        time.sleep(0.1)


def test_zooming_into_an_overview_draws_the_bars_in_view(page):
    """A schedule too big for bars is an overview; zooming in redraws the window as bars, a reset goes back."""
    page.driver.get(page.server_url + "/#schedule=1f1b&devices=16&microbatches=512")
    wait_title(page, "overview · zoom in for bars")
    # The page draws twice as it loads (the link sets the controls, which redraw); a zoom that
    # lands in between is drawn over, as a user would see, so zoom until the detail stays.
    deadline = time.time() + 20
    while "ops in view" not in title(page):
        assert time.time() < deadline, f"zooming never drew the bars in view ({title(page)!r})"
        plotted(page, "gantt", "Plotly.relayout(gd, {'xaxis.range': [300, 330]});")
        time.sleep(1.5)
    kinds = plotted(page, "gantt", "return gd.data.map(t => t.type + (t.fill === 'toself' ? ' bars' : ''));")
    assert "scatter bars" in kinds and "heatmap" not in kinds
    assert plotted(page, "gantt", "return gd.layout.xaxis.range;") == [300, 330]
    wait_for(page, lambda: plotted(page, "memory", "return gd._fullLayout.xaxis.range;") == [300, 330],
             "the memory chart follows the zoom")  # fmt: skip
    run = ppviz.simulate("1f1b", 16, 512)
    inside = int(((run.result.end > 300) & (run.result.start < 330)).sum())
    assert f"{inside:,} ops in view" in title(page)
    page.wait_for_contains_text("#card-size", f"{inside:,} in view, drawn as bars")  # the card is true too

    plotted(page, "gantt", "Plotly.relayout(gd, {'xaxis.autorange': true});")
    wait_title(page, "overview · zoom in for bars")
    assert plotted(page, "gantt", "return gd.data.map(t => t.type);") == ["heatmap"]
    page.wait_for_contains_text("#card-size", "16,384 ops, drawn as an overview")
    assert page.get_logs() == []


def test_a_heavy_search_runs_in_the_background_with_progress(page):
    """v-auto at 64 × 128 is past the synchronous budget: a background job shows its progress, then the chart."""
    page.driver.get(page.server_url + "/#schedule=v-auto&devices=64&microbatches=128")
    page.wait_for_contains_text("#gantt", "in the background", timeout=15)
    page.wait_for_contains_text("#job-status", "v-auto", timeout=15)
    assert page.find_element("#job-box").is_displayed()
    wait_title(page, "v-auto · 64 devices · 128 microbatches", timeout=90)
    wait_for(page, lambda: not page.find_element("#job-box").is_displayed(), "the progress box goes away")
    page.wait_for_contains_text("#card-size", "49,152 ops")
    assert page.get_logs() == []


def test_cards_both_charts_and_their_time_axes_fit_a_1280_by_800_screen(page):
    """At 8 and at 32 devices: no scrolling to see the cards, the Gantt, the memory chart and its time axis;
    the memory chart's legend keeps clear of its title."""
    page.driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride", {"width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": False}
    )
    for devices, microbatches in ((8, 16), (32, 64)):
        page.driver.get(page.server_url + f"/#schedule=zb-v&devices={devices}&microbatches={microbatches}")
        wait_title(page, f"zb-v · {devices} devices")
        wait_for(page, lambda: plotted(page, "memory", "return gd.data.length;"), "the memory chart is drawn")
        time.sleep(0.5)
        box = page.driver.execute_script(
            "const r = s => document.querySelector(s).getBoundingClientRect();"
            "const axis = document.querySelector('#memory .xtitle').getBoundingClientRect();"
            "const title = document.querySelector('#memory .gtitle').getBoundingClientRect();"
            "const legend = [...document.querySelectorAll('#memory .legendtext')]"
            ".map(e => e.getBoundingClientRect()).reduce((a, b) => (a.top < b.top ? a : b));"
            "return {cards: r('#cards').bottom, gantt: r('#gantt').bottom, axis: axis.bottom,"
            " title: title.bottom, legend: legend.top, height: window.innerHeight, scroll: window.scrollY};"
        )
        assert box["height"] == 800 and box["scroll"] == 0
        assert box["cards"] < box["gantt"] < box["axis"] <= 800, box
        assert box["title"] <= box["legend"] + 1, box  # the legend below the title, not over it
    assert page.get_logs() == []


def test_compare_shows_gantt_memory_and_axis_on_screen_with_deltas_and_a_sweep(page):
    """Picking compare: both schedules' Gantt and memory and the time axis within 1280×800 without
    scrolling; the ranking's deltas against the first schedule, then against a chosen baseline; the sweep."""
    page.driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride", {"width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": False}
    )
    page.driver.get(page.server_url + "/#schedule=zb-v&devices=8&microbatches=16&compare=1f1b,zb-v")
    wait_title(page, "zb-v · 8 devices · 16 microbatches")
    page.find_element("#mode input[value=compare]").click()
    titles = "return (gd && gd.layout.annotations || []).map(a => a.text).join(' ');"
    wait_for(page, lambda: "<b>1f1b</b> <b>zb-v</b>" in plotted(page, "gantt", titles), "both schedules are drawn")
    peaks = "return gd.data.filter(t => t.name === 'peak').map(t => t.yaxis);"
    assert plotted(page, "gantt", peaks) == ["y2", "y4"]  # a memory plot under each Gantt
    time.sleep(0.5)
    box = page.driver.execute_script(
        "const r = s => document.querySelector(s).getBoundingClientRect();"
        "return {first: r('#gantt .subplot.x2y2').bottom, second: r('#gantt .subplot.x4y4').bottom,"
        " axis: r('#gantt .x4title').bottom, ranking: r('#ranking').bottom, scroll: window.scrollY,"
        " height: window.innerHeight};"
    )
    assert box["height"] == 800 and box["scroll"] == 0
    assert box["ranking"] < box["first"] < box["second"] < box["axis"] <= 800, box

    one, zbv = (ppviz.simulate(n, 8, 16).metrics.makespan for n in ("1f1b", "zb-v"))
    page.wait_for_contains_text("#ranking", f"−{100 * (one - zbv) / one:.1f}% makespan, ±0 peak")  # −25.4%
    pick(page, "#baseline", "zb-v")
    page.wait_for_contains_text("#ranking", f"+{100 * (one - zbv) / zbv:.1f}% makespan, ±0 peak")  # +34.0%
    assert "baseline=zb-v" in page.driver.current_url

    page.find_element("#compare_show input[value=sweep]").click()
    lines = "return gd.data.filter(t => t.mode === 'lines+markers').map(t => t.name + ':' + t.yaxis);"
    wait_for(page, lambda: len(plotted(page, "gantt", lines) or []) == 6, "the sweep's lines are drawn")
    assert sorted(plotted(page, "gantt", lines)) == sorted(
        f"{n}:{y}" for n in ("1f1b", "zb-v") for y in ("y", "y2", "y3")
    )
    assert "show=sweep" in page.driver.current_url
    assert page.get_logs() == []
