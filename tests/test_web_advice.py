"""The model page's advice card through Dash's real dispatch: a layout that does not fit shows why and the
nearest layouts that fit (``ppviz.search.advice``'s), each opened by its button; a layout that fits shows none."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest
from web_dispatch import Page, answer

import app as page_app
from ppviz.search.advice import advise
from ppviz.units import duration, gib
from ppviz.web.common import cluster, url_hash
from ppviz.web.pages.model import advice as model_advice
from ppviz.web.pages.model import render as model_render
from ppviz.web.pages.model.ids import advice_id, card_id

SERVER = page_app.server
VIEW = "drawn-model.data"
ADVICE = "advice-model.style"
PP2 = cluster.ModelState(pp=2)  # Llama-3 70B, tp 8, pp 2 on H100s: weights and optimizer alone fill the card


@pytest.fixture
def page() -> Page:
    model_render.clear_cache()
    model_advice.clear_cache()
    p = Page.open(SERVER, cluster.MODEL_PATH)
    p.load()
    return p


def hash_of(state: cluster.ModelState) -> str:
    return url_hash.write_hash(cluster.encode(state))


def open_state(page: Page, state: cluster.ModelState) -> None:
    """Open the view at ``state`` by its link, then the advice callback its drawing triggers."""
    answer(page.fire(page.callback(VIEW), [("url-model", "hash")], {("url-model", "hash"): hash_of(state)}))
    answer(page.fire(page.callback(ADVICE), [("drawn-model", "data")]))


def apply_callback(page: Page) -> dict:
    (dep,) = [d for d in page.server_callbacks() if advice_id("apply", 0) in str(d["inputs"])]
    return dep


def test_a_layout_that_does_not_fit_shows_why_and_three_layouts_that_fit(page):
    open_state(page, PP2)
    assert page.value("advice-model", "style") == {}
    why = page.text("advice-why-model")
    assert why.startswith("weights + gradients + optimizer take") and "ZeRO-1 over dp 1 shards nothing" in why
    est = model_render.estimate_of(cluster.derive(PP2), "1f1b")
    expected = advise(est.model, est.gpu, est.layout, est=est)
    texts = [page.text(advice_id("text", i)) for i in range(3)]
    assert [t.split(":")[0] for t in texts] == [", ".join(a.changes) for a in expected.advice]
    for t, a in zip(texts, expected.advice, strict=True):
        assert duration(a.iteration_s) in t and f"{gib(a.peak_bytes)} of {gib(a.usable_bytes)} usable" in t
    assert page.text(card_id("detail", "mfu")).startswith("(does not fit)")
    assert page.text(card_id("detail", "tokens")).startswith("(does not fit)")


def test_an_advice_button_opens_its_layout_which_fits(page):
    open_state(page, PP2)
    first = page.text(advice_id("text", 0))
    clicked = apply_callback(page)
    response = page.fire(clicked, [(advice_id("apply", 0), "n_clicks")], {(advice_id("apply", 0), "n_clicks"): 1})
    new_hash = page.value("url-model", "hash")
    assert answer(response) and new_hash != hash_of(PP2)
    state = cluster.parse(new_hash).state
    changed = {"pp": state.pp != PP2.pp, "cp": state.cp != PP2.cp, "recompute": state.recompute != PP2.recompute}
    assert any(changed.values())
    for name, now in (("pp", state.pp), ("cp", state.cp), ("recompute", state.recompute)):
        assert (f"{name} {getattr(PP2, name)} → {now}" in first) == changed[name]
    answer(page.fire(page.callback(VIEW), [("url-model", "hash")]))  # the hash change redraws the view
    assert page.value("pp-model", "value") == state.pp and page.value("cp-model", "value") == state.cp
    assert "fits with" in page.text(card_id("detail", "peak"))
    answer(page.fire(page.callback(ADVICE), [("drawn-model", "data")]))
    assert page.value("advice-model", "style") == {"display": "none"}


def test_a_button_without_advice_behind_it_changes_nothing(page):
    open_state(page, replace(PP2, pp=8))  # fits: no advice, no targets
    assert page.value("advice-model", "style") == {"display": "none"}
    before = page.value("url-model", "hash")
    clicked = apply_callback(page)
    response = page.fire(clicked, [(advice_id("apply", 1), "n_clicks")], {(advice_id("apply", 1), "n_clicks"): 1})
    assert response.status_code == 204 or not response.get_json().get("response")
    assert page.value("url-model", "hash") == before


def test_advice_is_cached_and_the_view_s_own_answer_does_not_wait_for_it(page):
    """The view's callback never searches; the advice callback searches once per layout (then its cache)."""
    hash_ = hash_of(PP2)
    started = time.perf_counter()
    answer(page.fire(page.callback(VIEW), [("url-model", "hash")], {("url-model", "hash"): hash_}))
    view_s = time.perf_counter() - started
    assert not model_advice.ADVICE.held  # nothing advised by the view itself
    started = time.perf_counter()
    answer(page.fire(page.callback(ADVICE), [("drawn-model", "data")]))
    first_s = time.perf_counter() - started
    assert model_advice.ADVICE.held == 1
    started = time.perf_counter()
    answer(page.fire(page.callback(ADVICE), [("drawn-model", "data")]))
    again_s = time.perf_counter() - started
    assert model_advice.ADVICE.held == 1  # the second answer came from the cache
    print(f"view {view_s * 1e3:.0f} ms, advice {first_s * 1e3:.0f} ms, advice cached {again_s * 1e3:.0f} ms")


def test_each_applied_layout_shows_the_time_and_peak_its_advice_gave(page):
    """The view of an applied layout is the advice's layout: its iteration card and peak are the advice's."""
    state = replace(PP2, pp=4, sp=False, recompute="none", zero=0)  # one change away: SP on, or full recompute
    est = model_render.estimate_of(cluster.derive(state), "1f1b")
    expected = advise(est.model, est.gpu, est.layout, est=est).advice
    assert any(a.layout.schedule != "1f1b" for a in expected)  # a schedule change among them
    for i, a in enumerate(expected):
        open_state(page, state)
        page.fire(apply_callback(page), [(advice_id("apply", i), "n_clicks")], {(advice_id("apply", i), "n_clicks"): 1})
        answer(page.fire(page.callback(VIEW), [("url-model", "hash")]))
        assert page.text(card_id("value", "iteration")) == duration(a.iteration_s)
        shown = model_render.estimate_of(cluster.read(page.value("url-model", "hash")), a.layout.schedule)
        assert shown.iteration_s == a.iteration_s and float(shown.peak_bytes.max()) == a.peak_bytes
