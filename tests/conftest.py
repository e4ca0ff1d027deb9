"""Shared fixtures. Browser tests add their hooks (e.g. ``pytest_setup_options``) here too."""

from __future__ import annotations

import pytest
from hypothesis import settings

import ppviz

# Property tests are never timed. A developer's loop draws 20 examples per property; scripts/test.sh (and so
# CI) selects `--hypothesis-profile=full`, 60 each. The web fuzz tests keep their own counts and are `slow`.
settings.register_profile("ppviz", max_examples=20, deadline=None)
settings.register_profile("full", max_examples=60, deadline=None)
settings.load_profile("ppviz")


BROWSER_TESTS = "tests/browser/"


def pytest_collection_modifyitems(config, items):
    """The browser tests first, then the `slow` ones (stable otherwise): under pytest-xdist the longest
    work starts early, so none ends the run alone on one worker while the other has finished."""
    items.sort(key=lambda item: (not item.nodeid.startswith(BROWSER_TESTS), item.get_closest_marker("slow") is None))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """pytest-xdist's `--dist loadfile` (`scripts/test.sh`) with tests/browser/ as one file: a worker takes
    a whole file (its module fixtures, such as the handbook build, are made once) and all the browser tests
    (one Chromium and one app server)."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class BrowserTestsAsOneFile(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return BROWSER_TESTS if nodeid.startswith(BROWSER_TESTS) else super()._split_scope(nodeid)

    return BrowserTestsAsOneFile(config, log)


@pytest.fixture
def fresh_run_cache():
    """The abstract view's run cache emptied before and after the test, so it simulates its views itself."""
    from ppviz.web.pages.abstract import render  # Dash only for the tests that ask

    render.clear_run_cache()
    yield
    render.clear_run_cache()


@pytest.fixture
def tiny_1f1b() -> ppviz.Schedule:
    """1F1B on 2 devices with 2 microbatches: the smallest order with a warm-up and a steady state."""
    return ppviz.build("1f1b", 2, 2)
