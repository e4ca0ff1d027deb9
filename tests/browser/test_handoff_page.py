"""The model page's hand-off in a real browser: a command copies with its spaces (from a chart's message
and from the copy button), and an uploaded config.json is the model, kept by a reload."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from layout_checks import wait_for

pytestmark = pytest.mark.browser

HF = Path(__file__).resolve().parents[1] / "data" / "hf"
READ_CLIPBOARD = "const done = arguments[0]; navigator.clipboard.readText().then(done, e => done('failed: ' + e));"


def open_model(page, query: str) -> None:
    page.driver.get(page.server_url + "/model#" + query.lstrip("&"))
    wait_for(lambda: page.find_element("#model-view").is_displayed(), "the model view is shown")


def clipboard(page, button: str) -> str:
    permissions = ["clipboardReadWrite", "clipboardSanitizedWrite"]
    page.driver.execute_cdp_cmd("Browser.grantPermissions", {"permissions": permissions, "origin": page.server_url})
    page.find_element(button).click()
    deadline = time.time() + 10
    while not (copied := page.driver.execute_async_script(READ_CLIPBOARD)).startswith("ppviz"):
        assert time.time() < deadline, f"the clipboard holds {copied!r}"
        time.sleep(0.2)
    return copied


def test_a_command_in_a_chart_copies_with_its_spaces(page):
    """A view past the page's limits names the command in the chart area, wrapped over lines that plotly
    draws as one <tspan> each: the chart's text (what a copy of it holds) keeps a space between its words."""
    open_model(page, "&model=llama3-70b&gpu=h100-sxm&tp=8&pp=8&gbs=4096")
    css = "#gantt-model .annotation-text"
    wait_for(lambda: "ppviz estimate" in page.find_element(css).text, "the chart names the command")
    copied = page.driver.execute_script("return document.querySelector(arguments[0]).textContent", css)
    command = copied[copied.index("ppviz estimate") :]
    assert "--model llama3-70b --gpu h100-sxm --tp 8 --pp 8" in command
    assert "--gbs 4096" in command and "70b--" not in command


def test_the_copy_button_copies_the_command_with_its_spaces(page):
    open_model(page, "&model=llama3-8b&gpu=h100-sxm&tp=2&pp=4&gbs=16")
    wait_for(lambda: "--tp 2 --pp 4" in page.find_element("#command-model").text, "the command is shown")
    shown = page.find_element("#command-model").text
    copied = clipboard(page, "#copy-command-model")
    assert copied.strip() == shown.strip()
    assert copied.startswith("ppviz estimate --model llama3-8b --gpu h100-sxm --tp 2 --pp 4")


def test_an_uploaded_config_is_the_model_and_a_reload_keeps_it(page):
    open_model(page, "&model=llama3-70b&gpu=h100-sxm&tp=2&pp=4&gbs=16")
    page.wait_for_contains_text("#card-iteration-model", "ms", timeout=30)
    config = HF / "qwen3_8b_config.json"
    layers = json.loads(config.read_text())["num_hidden_layers"]
    page.find_element("#hf-upload-model input[type=file]").send_keys(str(config))
    wait_for(lambda: "model from qwen3_8b_config.json" in page.find_element("#upload-msg-model").text, "a note")
    wait_for(lambda: page.find_element("#layers-model").get_attribute("value") == str(layers), "its layers")
    wait_for(lambda: f"layers={layers}" in page.driver.current_url, "the link carries it")
    page.wait_for_contains_text("#card-iteration-model", "ms", timeout=30)
    page.driver.refresh()
    wait_for(lambda: page.find_element("#layers-model").get_attribute("value") == str(layers), "kept by a reload")
    assert page.find_element("#kv_heads-model").get_attribute("value") == "8"


def test_a_calibration_profile_fills_the_gpu_and_a_file_too_large_is_refused_before_it_travels(page, tmp_path):
    from ppviz.estimate import profile
    from ppviz.web.common.profile_upload import MAX_BYTES

    open_model(page, "&model=llama3-8b&gpu=h100-sxm&tp=2&pp=4&gbs=16")
    page.wait_for_contains_text("#card-iteration-model", "ms", timeout=30)
    eff = {"matmul_efficiency": 0.58, "hbm_efficiency": 0.85, "nvlink_efficiency": 0.75, "network_efficiency": 0.6}
    good = tmp_path / "jean-zay.json"
    profile.Profile("v100-sxm2-32gb", tuple(eff.items()), ("matmul_efficiency",), ({},), 0.004).save(good)
    page.find_element("#calibration-upload-model input[type=file]").send_keys(str(good))
    wait_for(lambda: "calibrated: jean-zay.json, v100-sxm2-32gb;" in page.find_element("#calibration-msg-model").text,
             "the summary")  # fmt: skip
    wait_for(lambda: page.find_element("#matmul_efficiency-model").get_attribute("value") == "0.58", "the box")
    wait_for(lambda: "matmul_efficiency=0.58" in page.driver.current_url, "the link carries it")
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (MAX_BYTES + 1))
    page.find_element("#calibration-upload-model input[type=file]").send_keys(str(big))
    wait_for(lambda: "larger than" in page.find_element("#calibration-msg-model").text, "the refusal")
    assert "matmul_efficiency=0.58" in page.driver.current_url  # nothing else changed


def test_no_chart_button_sends_a_chart_out(page):
    open_model(page, "&model=llama3-8b&gpu=h100-sxm&tp=2&pp=4&gbs=16")
    page.wait_for_contains_text("#card-iteration-model", "ms", timeout=30)
    titles = "return [...document.querySelectorAll('.modebar-btn')].map(b => b.getAttribute('data-title'))"
    wait_for(lambda: page.driver.execute_script(titles), "the charts' toolbars are drawn")
    shown = page.driver.execute_script(titles)
    assert "Download plot" in shown  # the image, saved by the browser
    assert not [t for t in shown if t and ("share" in t.lower() or "chart studio" in t.lower())], shown
