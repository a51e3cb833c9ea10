"""Formula references are built from header names: no column letter is spelled in the workbook code, and
every reference a written workbook holds points at a column whose header is the one the code named."""

from __future__ import annotations

import re

from conftest import ROOT, book
from planner.report.workbook.book import COLUMNS

CROSS = re.compile(r"(?:'([^']+)'|\b([A-Z][A-Za-z]*))!\$([A-Z]{1,3})\$(\d+)")


def test_no_column_letter_is_spelled_in_the_workbook_code():
    spelled = []
    for path in sorted((ROOT / "planner" / "report" / "workbook").glob("*.py")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"[A-Za-z']!\$[A-Z]+\$", line) and not line.lstrip().startswith(('"""', "``")) \
                    and "``" not in line:
                spelled.append(f"{path.name}:{n}: {line.strip()}")
    assert spelled == []


def test_every_reference_points_at_the_header_it_names(example_plan):
    wb = book(example_plan[1]["xlsx"])
    for sheet, columns in COLUMNS.items():  # the headers the references are built from are the headers written
        assert tuple(c.value for c in wb[sheet][1][: len(columns)]) == columns, sheet
    seen = {}
    for ws in wb.worksheets:
        for row in ws.iter_rows():
            for c in row:
                if isinstance(c.value, str) and c.value.startswith("="):
                    for quoted, plain, col, r in CROSS.findall(c.value):
                        target = quoted or plain
                        head = wb[target][f"{col}1"].value
                        assert head, f"{ws.title}!{c.coordinate} -> {target}!{col}{r}: no header there"
                        if target in COLUMNS:
                            assert head in COLUMNS[target]
                        seen.setdefault(target, set()).add(head)
    # what the money figures read, by name
    assert {"hourly_usd", "upfront_usd", "term_months", "effective_usd_per_gpu_hour",
            "gpus_per_instance", "residual_usd"} <= seen["Prices"]
    assert {"instances", "commitment_usd", "hours_active"} <= seen["Purchases"]
    assert "cost_usd" in seen["Costs"] and "value" in seen.get("Summary", {"value"})


def test_the_purchase_liability_reads_price_term_upfront_and_residual(example_plan):
    wb = book(example_plan[1]["xlsx"])
    ws = wb["Purchases"]
    col = COLUMNS["Purchases"].index("commitment_usd") + 1
    formula = ws.cell(row=2, column=col).value
    heads = {wb["Prices"][f"{c}1"].value for _q, _p, c, _r in CROSS.findall(formula)}
    assert heads == {"hourly_usd", "term_months", "upfront_usd", "residual_usd"}


def test_the_memo_reads_the_commitment_and_the_cash_live(example_plan):
    # issue 35 item 2: a sign-now line's value is the whole commitment (not the upfront, $0 on a no-upfront term)
    wb = book(example_plan[1]["xlsx"])
    rows = {r[0].value: r[1].value for r in wb["Summary"].iter_rows(min_row=2) if isinstance(r[0].value, str)}
    sign = [v for k, v in rows.items() if k.startswith("Sign now:")]
    assert sign and all(CROSS.findall(v) for v in sign)
    assert {wb["Purchases"][f"{c}1"].value for v in sign for _q, _p, c, _r in CROSS.findall(v)} == {"commitment_usd"}
    cash = rows["Cash out in the next 12 months"]
    (_q, _p, c, r), = CROSS.findall(cash)
    assert wb["Cash by year"][f"{c}1"].value == "total_with_owned_usd" and wb["Cash by year"][f"A{r}"].value == \
        "next 12 months"


def test_formulas_written_as_is_are_what_xlsxwriter_would_write(example_plan):
    """The sheets skip xlsxwriter's ``_xlfn.`` rewrites for formulas of classic functions only
    (book._Worksheet): every formula the example's workbook holds is unchanged by those rewrites, future
    functions included, so the file is the one xlsxwriter's own path writes."""
    from xlsxwriter.worksheet import Worksheet

    from planner.report.workbook.book import _Worksheet

    plain = Worksheet()
    plain.use_future_functions = True
    wb = book(example_plan[1]["xlsx"])
    formulas = {c.value for ws in wb.worksheets for row in ws.iter_rows() for c in row
                if isinstance(c.value, str) and c.value.startswith("=")}
    assert len(formulas) > 50
    # every rewrite of xlsxwriter's is a re.sub of a function's name then "(", \b or \S before it, each pattern at
    # least 2 characters longer than the text it matches: a formula is rewritten only where such a name ends at one
    # of its "(", so it is unchanged if the `width` characters before each of its "(" are (the text a name matches
    # and the one before it, which decides \b). Those texts are some 200 for the example's 56,000 formulas (6 s one
    # by one); a formula with a text that is rewritten (a \b at a text's cut start may be a false alarm), braces or
    # "_xlfn." already (the function strips them or returns it as it is) is checked alone.
    import inspect

    patterns = re.findall(r're\.sub\(\s*r"([^"]*)"', inspect.getsource(Worksheet._prepare_formula))
    if not patterns:  # xlsxwriter 3.3.4 on: one pattern and a table of names, not a re.sub per name: every formula
        patterns = ["x" * 10 ** 6]  # is checked alone (about 6 s)
    assert (len(patterns) > 100 and all(re.fullmatch(r"\\[bS][A-Z0-9.]+\\\(", p) for p in patterns)) or \
        patterns == ["x" * 10 ** 6], patterns
    width = max(map(len, patterns))
    alone = {f for f in formulas if "_xlfn." in f or f[1:2] == "{" or f.endswith("}") or width >= 10 ** 6}
    texts: dict[str, list[str]] = {}
    for f in formulas - alone:
        for m in re.finditer(r"\(", f):
            texts.setdefault(f[max(1, m.start() - width):m.start() + 1], []).append(f)
    for text, having in texts.items():
        if plain._prepare_formula("=" + text, True) != text:
            alone.update(having)
    for f in alone:
        assert plain._prepare_formula(f, True) == f[1:], f
    fast = _Worksheet()
    assert fast._prepare_formula("=SUM(A1:A3)") == "SUM(A1:A3)"
    assert fast._prepare_formula("=XLOOKUP(A1,B:B,C:C)") == "_xlfn.XLOOKUP(A1,B:B,C:C)"  # not a classic: rewritten
    for odd in ("{=SUM(A1:A3)}", "={SUM(A1:A3)}", "SUM(A1)", "=A1*2", "=if(A1>0,1,0)", "=_xlfn.STDEV.S(A1:A3)"):
        assert fast._prepare_formula(odd) == Worksheet()._prepare_formula(odd), odd
