"""Links made before the views became Dash pages open the same view with the same state.

``assets/old_links.js`` rewrites them in the browser before Dash's renderer reads the URL; here it
runs under Node with a stand-in ``window`` (each old form and what it becomes), and each rewritten
link is then opened through Dash's real dispatch to check that the page shows that state.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from web_dispatch import Page

import app as page_app
from ppviz.web.common import cluster

SCRIPT = Path(__file__).resolve().parents[1] / "assets" / "old_links.js"
RUN = """
const [href, prefix, script] = process.argv.slice(1);
let replaced = null;
globalThis.document = {getElementById: () => ({textContent: JSON.stringify({requests_pathname_prefix: prefix})})};
globalThis.window = {location: new URL(href, "http://ppviz.test"), history: {state: null,
    replaceState: (state, title, url) => { replaced = url; }}};
require("vm").runInThisContext(require("fs").readFileSync(script, "utf8"));
console.log(JSON.stringify(replaced));
"""
OLD = [
    ("/?schedule=zb-v&devices=8&microbatches=16", "/#schedule=zb-v&devices=8&microbatches=16"),
    ("/?mode=compare&compare=1f1b,zb-v#view=abstract&tp=8", "/#mode=compare&compare=1f1b,zb-v"),
    ("/#view=model&model=llama3-8b&tp=2&pp=4&gbs=32&s.gpus=16", "/model#model=llama3-8b&tp=2&pp=4&gbs=32"),
    ("/?schedule=gpipe#view=model&model=llama3-8b&pp=4", "/model#model=llama3-8b&pp=4"),
    ("/#view=model", "/model"),
    ("/#view=search&s.model=llama3-8b&s.gpus=16&s.gbs=32&tp=8", "/search#model=llama3-8b&gpus=16&gbs=32"),
    ("/#view=abstract", "/"),
    ("/#schedule=zb-v&devices=8", None),  # new links are left as they are
    ("/model#tp=2", None),
    ("/search#gpus=16", None),
    ("/", None),
]


def rewritten(href: str, prefix: str = "/") -> str | None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("Node.js is not installed (the browser test covers the rewrite too)")
    out = subprocess.run([node, "-e", RUN, href, prefix, str(SCRIPT)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


@pytest.mark.parametrize(("old", "new"), OLD)
def test_each_old_link_form_is_rewritten_to_its_page(old, new):
    assert rewritten(old) == new


def test_the_rewrite_keeps_the_app_s_path_prefix():
    assert rewritten("/ppviz/?schedule=zb-v", "/ppviz/") == "/ppviz/#schedule=zb-v"
    assert rewritten("/ppviz/#view=model&tp=2", "/ppviz/") == "/ppviz/model#tp=2"
    assert rewritten("/other/?schedule=zb-v", "/ppviz/") is None


def opened(link: str) -> Page:
    path, _, hash_ = link.partition("#")
    page = Page.open(page_app.server, path, "#" + hash_ if hash_ else "")
    page.load()
    return page


def test_an_old_abstract_link_opens_its_view():
    page = opened(OLD[0][1])
    assert page.value("gantt", "figure")["layout"]["title"]["text"].startswith("zb-v · 8 devices · 16 microbatches")
    page = opened(OLD[1][1])
    assert page.value("mode", "value") == "compare" and page.value("compare", "value") == ["1f1b", "zb-v"]


def test_an_old_model_link_opens_its_view():
    page = opened(OLD[2][1])
    state = cluster.parse("#model=llama3-8b&tp=2&pp=4&gbs=32").state
    assert page.value("drawn-model", "data") == cluster.link(state).removeprefix(cluster.MODEL_PATH)
    assert page.value("tp-model", "value") == 2 and page.value("model-model", "value") == "llama3-8b"


def test_an_old_search_link_sets_the_search_inputs_and_runs_it():
    page = opened(OLD[5][1])
    assert page.value("gpus-search", "value") == 16 and page.value("model-search", "value") == "llama3-8b"
    assert page.value("request-search", "data")["search"].startswith("model=llama3-8b")
