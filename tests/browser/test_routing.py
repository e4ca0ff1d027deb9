"""The three pages in a real browser: old links land on their page with their state, the header's
links keep each page's input, and Back and Forward step between pages.
"""

from __future__ import annotations

import pytest
from layout_checks import chart, wait_for

import ppviz
from ppviz.estimate import Layout
from ppviz.units import duration

pytestmark = pytest.mark.browser
TITLE = "return (gd && gd.layout && gd.layout.title && gd.layout.title.text) || '';"


def iteration_ms(gbs: int) -> str:
    """The iteration card's text for the model page's default view at this global batch."""
    lay = Layout(tp=8, pp=8, gbs=gbs, sequence_parallel=True, recompute="selective", zero=1)
    return duration(ppviz.estimate("llama3-70b", "h100-sxm", lay).iteration_s)


def test_links_made_before_the_pages_open_the_same_view(page):
    """The query string of the abstract view, and the model and search views' `view=` hashes, are
    rewritten to the page's path and hash before the page draws."""
    base = page.server_url
    page.driver.get(base + "/?schedule=zb-v&devices=8&microbatches=16")
    wait_for(lambda: chart(page, "gantt", TITLE).startswith("zb-v · 8 devices · 16 microbatches"), "zb-v at 8 × 16")
    assert page.driver.current_url == base + "/#schedule=zb-v&devices=8&microbatches=16"

    page.driver.get("about:blank")  # a new document: the rewrite runs on a page load
    page.driver.get(base + "/#view=model&model=llama3-70b&gbs=128&s.gpus=16")
    page.wait_for_contains_text("#card-iteration-model", iteration_ms(128), timeout=30)
    assert page.driver.current_url == base + "/model#model=llama3-70b&gbs=128"

    page.driver.get("about:blank")
    page.driver.get(base + "/#view=search&s.model=llama3-8b&s.gpus=16&s.gbs=32&s.seq=4096&s.schedules=1f1b&tp=8")
    rows = "return document.querySelectorAll('#grid-search .ag-row').length;"
    wait_for(lambda: page.driver.execute_script(rows) > 0, "the search reruns", timeout=60)
    assert page.driver.current_url == base + "/search#model=llama3-8b&gpus=16&gbs=32&seq=4096&schedules=1f1b"
    assert page.find_element("#gpus-search").get_attribute("value") == "16"
    assert page.get_logs() == []


def test_the_header_links_keep_each_page_s_input_and_back_steps_between_pages(page):
    """abstract → model → search → model → abstract: each page opens as it was left (its last hash rides
    on its link); only the page on screen is in the DOM; Back and Forward step through the pages."""
    page.find_element("#devices [role=slider]").send_keys("\ue014")  # ArrowRight: 5 devices
    wait_for(lambda: "5 devices" in chart(page, "gantt", TITLE), "5 devices")
    abstract_url = page.driver.current_url
    assert "devices=5" in abstract_url

    page.find_element("#nav-model").click()
    page.wait_for_contains_text("#card-iteration-model", iteration_ms(64), timeout=30)
    assert not page.find_elements("#abstract-view")
    box = page.find_element("#gbs-model")
    box.clear()
    box.send_keys("128\t")
    page.wait_for_contains_text("#card-iteration-model", iteration_ms(128), timeout=30)
    wait_for(lambda: "gbs=128" in page.driver.current_url, "the link carries the global batch")
    model_url = page.driver.current_url

    page.find_element("#nav-search").click()
    wait_for(lambda: page.find_elements("#search-view"), "the search page")
    assert not page.find_elements("#model-view")
    assert page.find_element("#nav-model").get_attribute("href") == model_url
    assert "tab--selected" in page.find_element("#nav-search").get_attribute("class")

    page.find_element("#nav-model").click()
    page.wait_for_contains_text("#card-iteration-model", iteration_ms(128), timeout=30)
    assert page.driver.current_url == model_url
    assert page.find_element("#gbs-model").get_attribute("value") == "128"

    page.find_element("#nav-abstract").click()
    wait_for(lambda: "5 devices" in chart(page, "gantt", TITLE), "the abstract page as it was left")
    assert page.driver.current_url == abstract_url

    page.driver.back()
    page.wait_for_contains_text("#card-iteration-model", iteration_ms(128), timeout=30)
    assert page.driver.current_url == model_url
    page.driver.back()
    wait_for(lambda: page.find_elements("#search-view"), "Back: the search page")
    page.driver.forward()
    page.wait_for_contains_text("#card-iteration-model", iteration_ms(128), timeout=30)
    assert page.find_element("#gbs-model").get_attribute("value") == "128"
    assert page.get_logs() == []
