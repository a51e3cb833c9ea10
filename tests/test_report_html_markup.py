"""Issue 32 item 20: plotly markup (<b>, <br>) in a region or class name is shown as text in the HTML report's
labels, never interpreted (checked in the page's figures and in headless Chromium's DOM)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from planner.cli import cli
from conftest import price, write_case
from test_report_html import CHROMIUM, FIGURE_RX, _chromium, _solve

REGION = "<b>r1</b><br>x"


@pytest.fixture(scope="module")
def marked(tmp_path_factory):
    root = tmp_path_factory.mktemp("markup")
    prices = [price("A", REGION, "on_demand", 4.0), price("A", REGION, "reserved_1y", 2.0, term_months=12)]
    model = write_case(root / "case", {"c": [10.0] * 48}, prices, {"c": {"spot": False}}, name="markup")
    plan_json = _solve(model, root / "plan")
    out = root / "report.html"
    res = CliRunner().invoke(cli, ["report", str(plan_json), "--html", str(out)])
    assert res.exit_code == 0, res.output
    return out


def test_figure_labels_carry_the_markup_escaped(marked):
    figs = [json.loads(t.replace("<\\/", "</")) for _, t in FIGURE_RX.findall(marked.read_text())]
    texts = [f["layout"]["title"]["text"] for f in figs] + [t.get("name", "") for f in figs for t in f["data"]] \
        + [t.get("hovertemplate", "") for f in figs for t in f["data"]]
    assert any("A &lt;b&gt;r1&lt;/b&gt;&lt;br&gt;x" in t for t in texts)
    assert not any("<b>r1" in t for t in texts)


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")
def test_chromium_shows_the_markup_as_text(marked):
    dom = _chromium("--dump-dom", marked.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    svg = dom.stdout[dom.stdout.find('class="main-svg"'):]
    # drawn as the characters (the DOM serialises them back as entities), not as bold text and a line break
    assert "A &lt;b&gt;r1&lt;/b&gt;&lt;br&gt;x: load-duration curve" in svg
    assert "font-weight:bold" not in svg.replace(" ", "")
