"""The search view in a real browser: a background search whose progress bar moves and whose cancel
button stops it (its job process ends), and a small search whose table, scatter and row click work.
"""

from __future__ import annotations

import psutil
import pytest
from layout_checks import wait_for

import ppviz
from ppviz.estimate import model
from ppviz.units import duration

pytestmark = pytest.mark.browser


def progress(duo) -> tuple[float, float]:
    return tuple(duo.driver.execute_script(
        "const p = document.querySelector('#progress-search'); return [p.value, p.max];"))  # fmt: skip


def jobs() -> set[int]:
    """The live background jobs of the server thread: children of this process's job server."""
    out = set()
    for server in psutil.Process().children(recursive=True):
        try:
            if "forkserver" not in " ".join(server.cmdline()):
                continue
            out |= {c.pid for c in server.children() if c.status() != psutil.STATUS_ZOMBIE}
        except psutil.Error:
            continue
    return out


def watch_then_cancel(page, before: set[int]) -> None:
    """The running search's bar moves; cancel hides it, says so and ends the job's process."""
    wait_for(lambda: page.find_element("#box-search").is_displayed(), "the progress box", timeout=15)
    first = wait_for(lambda: (p := progress(page))[1] > 1 and p[0] > 0 and p, "progress with a total", timeout=30)
    later = wait_for(lambda: (p := progress(page))[0] > first[0] and p, "the progress bar moves", timeout=30)
    assert later[1] == first[1] and 0 < first[0] < later[0] < later[1]
    assert "layouts decided" in page.find_element("#status-search").text
    running = jobs() - before
    assert running, "no job process found"
    page.find_element("#cancel-search").click()
    wait_for(lambda: not page.find_element("#box-search").is_displayed(), "the progress box goes away", timeout=15)
    page.wait_for_contains_text("#summary-search", "cancelled")
    wait_for(lambda: not (running & jobs()), "the job process ends", timeout=20)
    assert page.driver.execute_script("return document.querySelectorAll('#grid-search .ag-row').length;") == 0
    assert not page.find_element("#run-search").get_attribute("disabled")


def test_a_search_shows_a_moving_progress_bar_and_cancel_stops_it(page):
    before = jobs()
    # Llama-3 70B on 1,024 H100s over every schedule: tens of seconds here, so there is time to watch it.
    every = ",".join(ppviz.REGISTRY)
    link = f"/search#model=llama3-70b&gpu=h100-sxm&gpus=1024&gbs=1024&seq=8192&schedules={every}"
    page.driver.get(page.server_url + link)
    page.driver.refresh()  # a shared link: it reruns the search
    watch_then_cancel(page, before)
    page.find_element("#run-search").click()  # the same inputs again, from the button
    watch_then_cancel(page, before)
    assert "/search#" in page.driver.current_url and "gpus=1024" in page.driver.current_url


def test_a_small_search_ranks_layouts_and_a_row_opens_in_the_model_view(page):
    expected = ppviz.search(
        model("llama3-8b", seq=4096), "h100-sxm", 16, 32, top=20, schedules=["1f1b", "zb-v"], headroom=0.1
    )
    link = "/search#model=llama3-8b&gpu=h100-sxm&gpus=16&gbs=32&seq=4096&schedules=1f1b,zb-v"
    page.driver.get(page.server_url + link + "&headroom=10&top=20")  # a shared link reruns the search
    page.driver.refresh()  # opened as a new page, not as a hash change of the one already open
    count = (
        "return new Set([...document.querySelectorAll('#grid-search .ag-row')]"
        ".map(r => r.getAttribute('row-index'))).size;"
    )
    wait_for(lambda: page.driver.execute_script(count) == len(expected.layouts), "the ranked rows", timeout=60)
    page.wait_for_contains_text("#summary-search", f"{expected.searched:,} layouts in the space")
    names = page.driver.execute_script(
        "const gd = document.querySelector('#scatter-search .js-plotly-plot'); return gd.data.map(t => t.name);"
    )
    assert names == ["layouts", "Pareto front", "usable 68.68 GiB"]  # 79.65 GiB less 3 GiB and 10%

    # Sorting by a column reorders the table in the browser.
    page.find_element("#grid-search .ag-header-cell[col-id=peak_gib]").click()
    first = '#grid-search .ag-row[row-index="0"] [col-id=peak_gib]'
    lowest = min(round(max(r["peak_bytes"]) / 2**30, 1) for r in expected.layouts)
    cell = "const c = document.querySelector(arguments[0]); return c ? c.textContent : '';"
    wait_for(lambda: page.driver.execute_script(cell, first) == f"{lowest:.1f}", "sorted by peak GiB")

    rank = int(page.driver.execute_script(cell, '#grid-search .ag-row[row-index="0"] [col-id=rank]'))
    page.find_element('#grid-search .ag-row[row-index="0"] [col-id=schedule]').click()
    wait_for(lambda: page.find_elements("#model-view"), "the model page opens")
    assert not page.find_elements("#search-view")  # the page left is gone from the DOM
    best = expected.layouts[rank - 1]
    page.wait_for_contains_text("#card-iteration-model", duration(best["iteration_s"]), timeout=20)
    title = page.driver.execute_script(
        "const gd = document.querySelector('#gantt-model .js-plotly-plot'); return gd.layout.xaxis2.title.text;"
    )
    assert title == "time (ms)"  # the time axis under the memory chart, in the Gantt's figure
    assert "/model#" in page.driver.current_url and "gpus=" not in page.driver.current_url
    assert "gpus=16" in page.find_element("#nav-search").get_attribute("href")  # the link back keeps the search
    assert page.get_logs() == []


def test_the_ranked_table_reads_at_1280_by_800_without_scrolling_sideways(page):
    """Schedule, layout, iteration, tokens/s, MFU, peak (GiB) and fits, all inside the grid's width."""
    page.driver.set_window_size(1280, 800)
    link = "/search#model=llama3-8b&gpu=h100-sxm&gpus=16&gbs=32&seq=4096&schedules=1f1b,zb-v"
    page.driver.get(page.server_url + link + "&top=20")
    page.driver.refresh()
    rows = "return document.querySelectorAll('#grid-search .ag-center-cols-container .ag-row').length;"
    wait_for(lambda: page.driver.execute_script(rows) >= 10, "the ranked rows", timeout=60)
    headers = page.driver.execute_script(
        "return [...document.querySelectorAll('#grid-search .ag-header-cell-text')].map(h => h.textContent);"
    )
    assert headers == ["#", "schedule", "layout", "iteration", "tokens/s", "MFU", "peak (GiB)", "fits"]
    widths = page.driver.execute_script(
        "const g = document.querySelector('#grid-search');"
        "return [...g.querySelectorAll('.ag-center-cols-viewport, .ag-body-horizontal-scroll-viewport')]"
        ".map(v => [v.scrollWidth, v.clientWidth]).concat([[g.scrollWidth, g.clientWidth],"
        "[document.documentElement.scrollWidth, document.documentElement.clientWidth]]);"
    )
    assert len(widths) >= 3 and all(scroll <= client for scroll, client in widths), widths
    cell = (
        "return document.querySelector('#grid-search .ag-row[row-index=\"0\"] [col-id=' + arguments[0] + ']')"
        ".textContent;"
    )
    assert page.driver.execute_script(cell, "iteration").endswith(" ms")
    assert page.driver.execute_script(cell, "layout").startswith("tp ")
    assert page.driver.execute_script(cell, "fits_text") == "yes"
    assert page.get_logs() == []


def test_a_calibration_profile_sets_the_gpu_and_a_file_too_large_is_refused_in_the_browser(page, tmp_path):
    from ppviz.estimate import calibration_v100
    from ppviz.web.common import profile_upload

    prof = tmp_path / "jean-zay.json"
    calibration_v100.fitted_profile().save(prof)
    page.driver.get(page.server_url + "/search")
    page.driver.refresh()
    upload = "#calibration-upload-search input[type=file]"
    page.find_element(upload).send_keys(str(prof))
    page.wait_for_contains_text("#msg-calibration-search", "calibrated: jean-zay.json, v100-sxm2-32gb;", timeout=20)
    assert "matmul 0.58 (fitted)" in page.find_element("#msg-calibration-search").text
    page.wait_for_contains_text("#gpu-search", "v100-sxm2-32gb", timeout=10)
    for name, value in (("gpus", "16"), ("gbs", "32"), ("seq", "2048")):  # a small search
        box = page.find_element(f"#{name}-search")
        box.clear()
        box.send_keys(value)
    page.find_element("#run-search").click()
    wait_for(lambda: "matmul_efficiency=0.58" in page.driver.current_url, "the link carries the efficiencies")
    page.wait_for_contains_text("#command-search", "--gpu v100-sxm2-32gb", timeout=20)
    assert "--matmul-efficiency 0.58 --hbm-efficiency 0.85" in page.find_element("#command-search").text
    # Llama 3 70B on 16 V100s: nothing fits, and the answer says so for the profile's GPU
    page.wait_for_contains_text("#error-search", "no layout fits in 28.75 GiB per GPU", timeout=120)
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (profile_upload.MAX_BYTES + 1))
    page.find_element(upload).send_keys(str(big))
    page.wait_for_contains_text(
        "#msg-calibration-search", f"larger than {profile_upload.MAX_BYTES // 1024} KB", timeout=10
    )
    assert page.get_logs() == []
