"""Issue 35 item 9: the HTML report carries the purchase memo (sign-now lines with the whole commitment, NPV and
payment options with their break-even rate, cash by year, each tranche's own use), and the Purchases table fits
the page (checked in headless Chromium)."""

from __future__ import annotations

import re

import pytest

from test_memo_finance import payment_case
from test_payment_options import implied_rate
from test_report_html import CHROMIUM, _chromium, solved_and_reported


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    root = tmp_path_factory.mktemp("html_memo")
    return solved_and_reported(payment_case(root / "case"), root)[1]


def _table(text: str, tid: str) -> list[list[str]]:
    body = re.search(rf"<table class='fit' id='{tid}'>(.*?)</table>", text, re.S).group(1)
    return [re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", tr) for tr in re.findall(r"<tr>(.*?)</tr>", body, re.S)]


def test_the_memo_shows_what_to_sign_with_the_whole_commitment(page):
    text = page.read_text()
    sign = _table(text, "memo-sign")
    rows = {r[0]: r for r in sign[1:]}
    a = rows["10 A reserved_1y_all_upfront in r1"]
    assert a[1] == "$80,000" and a[3] == "$80,000" and a[-1] == "pays"  # whole commitment, all of it upfront
    sp = next(r for k, r in rows.items() if k.startswith("savings plan"))
    assert sp[1] == f"${4.0 * 8760:,.0f}"  # 4.00 USD/h (B's 5 GPUs at 0.80) x 8,760 h
    pay = _table(text, "memo-payments")
    assert pay[1][-1] == f"{100 * implied_rate():.1f} %"  # the hand IRR of 8,000 now against 1.00/h for a year
    assert _table(text, "memo-cash")[1][0] == "2027"
    tr = _table(text, "memo-tranches")
    assert len(tr) == 2 and tr[1][7] == "100.0 %"  # constant demand: the tranche is always fully used
    # the savings plan to commit now: its NPV and break-even too (the Summary's row has them), and the verdict
    assert sp[2].startswith("$") and sp[7].endswith("%") and sp[-1] in ("pays", "DOES NOT PAY")
    # the memo's headline figures, as the Summary gives them
    head = {r[0]: r[1] for r in _table(text, "memo-headline")}
    assert head["Cash out in the next 12 months (fees of the commitments already owned included)"].startswith("$")
    assert head["Coverage, spot not counted"].endswith("%")


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")
def test_chromium_fits_the_purchases_table_in_the_page(page, tmp_path):
    probe = tmp_path / "probe.html"
    script = ("<script>window.addEventListener('load',function(){var t=document.getElementById('purchases');"
              "document.body.setAttribute('data-fit',String(t.scrollWidth<=document.documentElement.clientWidth));"
              "document.body.setAttribute('data-memo',String(document.querySelectorAll('#memo-sign tr').length));"
              "});</script></body>")
    probe.write_text(page.read_text().replace("</body>", script))
    dom = _chromium("--dump-dom", "--window-size=1000,900", probe.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert 'data-fit="true"' in dom.stdout
    assert 'data-memo="3"' in dom.stdout  # the header and two lines to sign


def test_the_memo_cash_by_year_carries_the_owned_fees_and_the_total(example_plan):
    """Review of issue 35: the HTML memo's cash by year read keys plan.json does not write (empty columns)."""
    import json

    from planner.report.html import render_html

    _, paths = example_plan
    doc = json.loads(paths["json"].read_text())
    page, _, _ = render_html(paths["json"])
    first = doc["cash_by_year"][0]
    assert first["owned_recurring_usd"] > 0
    for key in ("owned_recurring_usd", "total_usd"):
        assert f"${first[key]:,.0f}" in page
