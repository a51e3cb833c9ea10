"""What finance signs off: the bill with owned commitments, traceability, the solver settings used."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from openpyxl import load_workbook

from planner.pipeline.run import write_outputs
from conftest import book, edit_numbers, price, solve_case, write_case
from test_workbook import cached_matches_recomputed, named_values, needs_lo, recalc_many


def bill_case(tmp_path):
    """10 one-hour periods of 4 GPUs; 10 GPUs owned at 0.5 $/h + 876 $ upfront (1 year): 0.6 $/GPU-hour.

    The commitment ends 5 hours into the horizon: 10 x 0.6 x 5 = 30 USD already committed in the horizon.
    """
    inventory = [{"gpu_type": "A", "region": "r1", "option": "reserved_1y", "gpus": 10,
                  "start": "2026-01-04T05:00", "end": "2027-01-04T05:00"}]
    return write_case(tmp_path, {"c": [4.0] * 10},
                      [price(hourly=2.0), price(option="reserved_1y", hourly=0.5, upfront_usd=876.0, term_months=12)],
                      {"c": {}}, inventory=inventory, start="2027-01-04T00:00")


def test_the_bill_prices_commitments_already_owned(tmp_path):
    plan = solve_case(bill_case(tmp_path))
    # hours 0-4 served by the inventory, hours 5-9 on demand (4 GPUs x 2 $ x 5 h = 40; a 1-year purchase for
    # 5 hours of use costs 0.6 x 10 h x 4 = 24 amortised over the horizon: buying is cheaper)
    paths = write_outputs(plan, tmp_path / "out")
    data = json.loads(paths["json"].read_text())
    inv = data["inventory"]
    assert len(inv) == 1
    assert inv[0]["hours_in_horizon"] == pytest.approx(5)
    assert inv[0]["effective_usd_per_gpu_hour"] == pytest.approx(0.6)
    assert inv[0]["horizon_cost_usd"] == pytest.approx(30)
    assert inv[0]["expires_in_horizon"] is True
    assert data["bill_usd"]["already_committed_usd"] == pytest.approx(30)
    assert data["bill_usd"]["new_decisions_usd"] == pytest.approx(data["cost_usd"]["total"])
    assert data["bill_usd"]["total_usd"] == pytest.approx(data["cost_usd"]["total"] + 30)
    wb = load_workbook(paths["xlsx"])
    assert "Inventory" in wb.sheetnames
    ws = wb["Inventory"]
    assert ws["A2"].value == "A" and str(ws["J2"].value).startswith("=")


def test_solver_settings_actually_used_and_traceability(tmp_path):
    m = bill_case(tmp_path)
    plan = solve_case(m, time_limit_s=42)  # mip_gap 0 (solve_case), 42 s: not the model file's 60 s
    paths = write_outputs(plan, tmp_path / "out")
    data = json.loads(paths["json"].read_text())
    assert data["solver"]["time_limit_s"] == 42 and data["solver"]["mip_gap_limit"] == 0
    assert data["solver"]["model_file"]["time_limit_s"] == 60
    assert "model.toml" in " ".join(data["inputs"]["sha256"])
    assert all(not p.startswith("/") for p in data["inputs"]["sha256"])
    assert data["created_utc"].endswith("+00:00")
    wb = load_workbook(paths["xlsx"])
    summary = {r[0].value: r[1].value for r in wb["Summary"].iter_rows(min_row=2) if r[0].value}
    note = {r[0].value: r[2].value for r in wb["Summary"].iter_rows(min_row=2) if r[0].value}
    assert summary["Solver used"] == "highs" and note["Solver used"].startswith("time limit 42 s")
    assert summary["Written (UTC)"] == data["created_utc"][:10] and note["Written (UTC)"].startswith(data["created_utc"])
    inputs = {k: v for k, v in summary.items() if str(k).startswith("Input:")}
    assert inputs and all("/" not in str(v) for v in inputs.values())  # the file's name; its path in the note
    assert all(not str(note[k]).startswith("/") and "sha256 " in str(note[k]) for k in inputs)
    notes = " ".join(str(r[0].value) for r in wb["Assumptions"].iter_rows() if r[0].value)
    assert "Solver used: highs, time limit 42 s" in notes


@pytest.fixture(scope="module")
def recomputed(example_plan, tmp_path_factory):
    """The workbooks this file's LibreOffice tests read, recomputed in one LibreOffice start (each start is 2-4 s):
    the example's as written ("example"), with every on-demand price of its Prices sheet raised 10 % ("on_demand"),
    with the price of its first reserved purchase's Prices row raised 0.10 $/GPU-hour ("reserved"), and the bill
    case's ("bill", with its plan and outputs). The edits are the numbers typed over in the sheet, every other part of
    the file as written. Shared: never edit what it returns."""
    from openpyxl import load_workbook

    plan, paths = example_plan
    folder = tmp_path_factory.mktemp("finance-lo")
    wb = load_workbook(paths["xlsx"], read_only=True)  # (read-only: one small sheet of a large workbook)
    rows = list(wb["Prices"].iter_rows(values_only=True))
    wb.close()
    head = list(rows[0])
    assert head[:4] == ["gpu_type", "region", "option", "hourly_usd"]
    bought = plan.purchases[plan.purchases.instances > 0].iloc[0]
    od = {f"D{i}": 1.1 * r[3] for i, r in enumerate(rows[1:], start=2) if r[2] == "on_demand"}
    res = {f"D{i}": r[3] + 0.1 for i, r in enumerate(rows[1:], start=2)
           if tuple(r[:3]) == (bought.gpu_type, bought.region, bought.option)}
    assert od and res
    edited_od = edit_numbers(paths["xlsx"], folder / "edited-on-demand.xlsx", {"Prices": od})
    edited_res = edit_numbers(paths["xlsx"], folder / "edited-reserved.xlsx", {"Prices": res})
    bill_plan = solve_case(bill_case(folder / "bill"))
    bill_paths = write_outputs(bill_plan, folder / "bill" / "out")
    bill_xlsx = folder / "bill.xlsx"  # (a name of its own: the books recomputed together need distinct names)
    bill_xlsx.write_bytes(bill_paths["xlsx"].read_bytes())
    names = ("example", "on_demand", "reserved", "bill")
    again = recalc_many([paths["xlsx"], edited_od, edited_res, bill_xlsx], folder / "lo")
    return dict(zip(names, again)) | {"bill_plan": (bill_plan, bill_paths)}


@needs_lo
def test_libreoffice_recomputes_the_bill(recomputed):
    plan, paths = recomputed["bill_plan"]
    data = json.loads(paths["json"].read_text())
    got = named_values(recomputed["bill"])
    assert got["already_committed_usd"] == pytest.approx(30, abs=0.005)
    assert got["bill_usd"] == pytest.approx(data["bill_usd"]["total_usd"], abs=0.005)


def test_focus_export_has_every_mandatory_column_and_ties_out(tmp_path):
    import pandas as pd
    from click.testing import CliRunner

    from planner.cli import cli
    from planner.export.focus import MANDATORY

    plan = solve_case(bill_case(tmp_path))
    paths = write_outputs(plan, tmp_path / "out")
    data = json.loads(paths["json"].read_text())
    out = tmp_path / "focus.csv"
    result = CliRunner().invoke(cli, ["export", "focus", str(paths["json"]), "--out", str(out),
                                      "--provider", "Example Cloud"])
    assert result.exit_code == 0, result.output
    f = pd.read_csv(out)
    assert len(MANDATORY) == 21
    assert set(MANDATORY) | {"ChargeFrequency"} <= set(f.columns)
    for col in ("BilledCost", "EffectiveCost", "ListCost", "ContractedCost", "PricingQuantity"):
        assert pd.api.types.is_float_dtype(f[col]), col
    for col in ("ChargePeriodStart", "ChargePeriodEnd", "BillingPeriodStart", "BillingPeriodEnd"):
        parsed = pd.to_datetime(f[col], format="%Y-%m-%dT%H:%M:%SZ")  # ISO 8601 UTC, every row
        assert parsed.notna().all()
    assert (pd.to_datetime(f["ChargePeriodEnd"]) > pd.to_datetime(f["ChargePeriodStart"])).all()
    assert set(f["ChargeCategory"]) <= {"Purchase", "Usage"}
    assert (f["BillingCurrency"] == "USD").all() and (f["ProviderName"] == "Example Cloud").all()
    # amortised: the effective cost of every row adds up to the bill; billed = cash in the horizon
    assert f["EffectiveCost"].sum() == pytest.approx(data["bill_usd"]["total_usd"], rel=1e-9)
    purchased = sum(p["gpus"] * (p["monthly_recurring_usd"] / p["gpus"] / 730.0) * 10
                    + p["upfront_usd"] for p in data["reserved_purchases"] if p["instances"])  # 10 h horizon
    cash = purchased + 10 * 0.5 * 5 + data["cost_usd"]["on_demand"] + data["cost_usd"]["spot"]
    assert f["BilledCost"].sum() == pytest.approx(cash, rel=1e-9)
    owned = f[f["x_Source"] == "already committed"]
    assert owned["BilledCost"].sum() == pytest.approx(10 * 0.5 * 5)  # the inventory's hourly fee, 5 hours
    bad = CliRunner().invoke(cli, ["export", "focus", str(tmp_path / "missing.json"), "--out", str(out)])
    assert bad.exit_code == 2 and "plan file not found" in bad.output
    # usage rows name the commitment they use, with a positive quantity; no column twice for SQL readers
    used = f[f["CommitmentDiscountStatus"].notna()]
    assert set(used["CommitmentDiscountId"]) <= set(f.loc[f["ChargeCategory"] == "Purchase", "CommitmentDiscountId"])
    assert (used["CommitmentDiscountQuantity"] > 0).all() and (used["CommitmentDiscountUnit"] == "GPU-Hours").all()
    assert len({c.lower() for c in f.columns}) == len(f.columns)
    broken = dict(data)
    broken["monthly_usage"] = [{"month": "2027-01"}]
    (tmp_path / "broken.json").write_text(json.dumps(broken))
    bad = CliRunner().invoke(cli, ["export", "focus", str(tmp_path / "broken.json"), "--out", str(out)])
    assert bad.exit_code == 2 and "malformed plan.json" in bad.output and "Traceback" not in bad.output


def cap_case(tmp_path, cap=6, headroom=0.1, budget=None, months=None, hours=1.0, n=5, start="2027-01-04T00:00"):
    """One class of 10 GPUs (headroom 10 %): pool A at 2 $/GPU-h with an on-demand cap, pool B at 3 $/GPU-h."""
    top = ""
    if budget is not None or months:
        top = "[budget]\n" + (f"max_total_usd = {budget}\n" if budget is not None else "") + \
              ("".join(f'months."{k}" = {v}\n' for k, v in (months or {}).items()))
    return write_case(tmp_path, {"c": [10.0] * n},
                      [price("A", hourly=2.0, max_gpus=cap), price("B", hourly=3.0)],
                      {"c": {"headroom": headroom, "gpu_types": {"A": 1.0, "B": 1.0}}}, extra_top=top,
                      hours=hours, start=start)


def _shadow(plan, family, name=None):
    sp = plan.shadow_prices
    sel = sp[(sp["family"] == family) & ((sp["name"] == name) if name else True)]
    assert len(sel) == 1, sp
    return float(sel["shadow_price_usd"].iat[0])


def test_shadow_prices_equal_finite_differences_of_re_solves(tmp_path):
    from planner import make_plan, load_inputs

    def solve(folder, **kw):
        return make_plan(load_inputs(cap_case(tmp_path / folder, **kw)), mip_gap=0.0, shadow=True)

    base = solve("base")
    assert base.cost["total"] == pytest.approx(6 * 2 * 5 + 5 * 3 * 5)  # 135
    # one more GPU of on-demand cap in A: 5 hours at 3 - 2 $ saved
    cap = _shadow(base, "od_cap", "A/r1")
    assert cap == pytest.approx(-5.0)
    assert cap == pytest.approx(solve("cap7", cap=7).objective - base.objective, rel=1e-6)
    # one more point of headroom: 0.1 GPU x 5 h at the marginal 3 $
    head = _shadow(base, "headroom", "c")
    assert head == pytest.approx(1.5)
    assert head == pytest.approx(solve("head", headroom=0.11).objective - base.objective, rel=1e-6)
    # a binding budget: 120 $ of 135; one more dollar buys 1/15 GPU for 5 h of B, saving penalty 30 $/GPU-h
    tight = solve("b120", budget=120)
    assert tight.cost["total"] == pytest.approx(120)
    assert tight.shortfall_gpu_hours == pytest.approx(5.0)
    b = _shadow(tight, "budget", "budget_total")
    assert b == pytest.approx(-(30 / 3 - 1))
    assert b == pytest.approx(solve("b121", budget=121).objective - tight.objective, rel=1e-6)
    # a budget that does not bind has no shadow price
    assert solve("b200", budget=200).shadow_prices.query("family == 'budget'").empty


def test_monthly_budget_caps_one_month_and_reports_it(tmp_path):
    from planner import make_plan, load_inputs

    # two days, the first in January, the second in February; only January is capped
    m = cap_case(tmp_path, n=2, hours=24.0, start="2027-01-31T00:00", months={"2027-01": 300})
    plan = make_plan(load_inputs(m), mip_gap=0.0)  # a [budget] turns the shadow prices on by default
    spend = plan.allocation.assign(usd=lambda a: a.gpus * a.hours * a.gpu_type.map({"A": 2.0, "B": 3.0}))
    by_month = spend.groupby(spend.period.dt.strftime("%Y-%m"))["usd"].sum()
    assert by_month["2027-01"] == pytest.approx(300)
    assert by_month["2027-02"] == pytest.approx(6 * 2 * 24 + 5 * 3 * 24)
    assert _shadow(plan, "budget", "budget_month_2027_01") < 0
    paths = write_outputs(plan, tmp_path / "out")
    data = json.loads(paths["json"].read_text())
    assert any(s["name"] == "budget_month_2027_01" for s in data["shadow_prices"])
    wb = load_workbook(paths["xlsx"])
    assert "Shadow prices" in wb.sheetnames


@pytest.mark.parametrize("text, message", [
    ("[budget]\nmax_total_usd = -5\n", "budget.max_total_usd"),
    ('[budget]\nmonths."2027-13" = 5\n', "not a calendar month"),
    ("[budget]\nmax_totl_usd = 5\n", "max_totl_usd"),
])
def test_bad_budget_exits_2(tmp_path, text, message):
    from click.testing import CliRunner

    from planner.cli import cli

    m = cap_case(tmp_path)
    m.write_text(m.read_text().replace("[solver]", text + "[solver]", 1))
    result = CliRunner().invoke(cli, ["plan", str(m), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output


def test_formulas_carry_their_values_for_readers_without_a_calculation_engine(example_plan):
    import pandas as pd

    plan, paths = example_plan
    data = json.loads(paths["json"].read_text())
    summary = pd.read_excel(paths["xlsx"], sheet_name="Summary")  # pandas: no calculation engine
    value = dict(zip(summary["item"], summary["value"]))
    assert float(value["Total expected cost"]) == pytest.approx(data["cost_usd"]["total"], rel=1e-9)
    assert float(value["The bill for the horizon"]) == pytest.approx(data["bill_usd"]["total_usd"], rel=1e-9)
    assert float(value["All on-demand baseline"]) == pytest.approx(data["baselines_usd"]["all_on_demand"], rel=1e-9)
    wb = book(paths["xlsx"], data_only=True)
    costs = [r[8].value for r in wb["Costs"].iter_rows(min_row=2)]
    assert all(isinstance(c, (int, float)) for c in costs)
    assert sum(costs) == pytest.approx(data["cost_usd"]["total"], rel=1e-9)
    buys = [r for r in summary.itertuples() if str(r.item).startswith("Sign now:")]  # the memo opens the sheet
    assert len(buys) == sum(1 for p in data["reserved_purchases"] if p["instances"] and p["firm"]) > 0
    assert str(summary["item"].iloc[0]).startswith("Check:")  # the check cell (issue 35), then what to sign
    assert str(summary["item"].iloc[1]).startswith("Sign now:")


def test_print_setup_fits_the_width_and_repeats_the_header(example_plan):
    plan, paths = example_plan
    wb = book(paths["xlsx"])
    from planner.report.workbook.book import FINANCE_PACK

    for ws in wb.worksheets:
        fits = ws.sheet_properties.pageSetUpPr is not None and ws.sheet_properties.pageSetUpPr.fitToPage
        if ws.title in FINANCE_PACK and not fits:  # too wide for a portrait page at 8 pt: landscape at that size
            assert ws.page_setup.orientation == "landscape" and int(ws.page_setup.scale) == 75, ws.title
        else:
            assert fits, ws.title
            assert ws.page_setup.fitToWidth in (None, 1), ws.title  # 1 is the default: writers may omit it
        assert ws.print_title_rows in ("1:1", "$1:$1"), ws.title
    assert wb["Allocation"].page_setup.orientation == "landscape"
    # 8 pt or more: Purchases' ~34 columns do not fit one page; it prints at 75 % of 11 pt, as wide as it takes
    assert int(wb["Purchases"].page_setup.scale) == 75 and wb["Purchases"].page_setup.orientation == "landscape"
    assert wb["Summary"].page_setup.fitToHeight == 0 and wb["Summary"].page_setup.orientation == "portrait"
    assert wb["Allocation"].page_setup.fitToHeight == 0  # as many pages down as it takes
    assert wb["Fleet"].max_row <= 800  # 2,184 hourly periods averaged per day behind the charts


@needs_lo
def test_cached_values_equal_libreoffice_recomputation_everywhere(example_plan, recomputed, tmp_path):
    plan, paths = example_plan  # (recomputed: LibreOffice's copy made beside this file's others, in one start)
    n, _ = cached_matches_recomputed(paths["xlsx"], tmp_path, strict_blanks=True)
    assert n > 10_000


@needs_lo
def test_raising_on_demand_prices_moves_baseline_and_savings_by_hand(example_plan, recomputed):
    plan, paths = example_plan
    data = json.loads(paths["json"].read_text())
    again = recomputed["on_demand"]  # every on-demand row of Prices at 1.1 x its price, recomputed by LibreOffice
    got = named_values(again)
    base, od = data["baselines_usd"]["all_on_demand"], data["cost_usd"]["on_demand"]
    assert got["all_on_demand_usd"] == pytest.approx(1.1 * base, rel=1e-9)
    assert got["savings_usd"] - data["savings_usd"] == pytest.approx(0.1 * (base - od), rel=1e-6)
    # every on-demand GPU-hour costs 10 % more: the on-demand line and the total move by 0.1 x the on-demand cost
    # (this edit also stands for the single-price edit test it replaced: one recomputation, not two)
    before = named_values(paths["xlsx"])
    assert got["on_demand_cost_usd"] - before["on_demand_cost_usd"] == pytest.approx(0.1 * od, rel=1e-9)
    assert got["total_cost_usd"] - before["total_cost_usd"] == pytest.approx(0.1 * od, rel=1e-9)
    # the note beside the live saving quotes live figures too (it was stored text, stale after an edit: issue 35)
    row = next(r for r in load_workbook(again, data_only=True, read_only=True)["Summary"].iter_rows(values_only=True)
               if r[0] == "Saving against all on-demand")
    saving = got["all_on_demand_usd"] - got["total_cost_usd"]
    assert row[2].startswith(f"{100 * saving / got['all_on_demand_usd']:.1f} % of ${got['all_on_demand_usd']:,.0f};")


def test_focus_file_passes_the_finops_validator_where_it_is_installed(tmp_path):
    import os
    import shutil
    import subprocess
    from pathlib import Path

    tool = os.environ.get("FOCUS_VALIDATOR") or shutil.which("focus-validator")
    if not tool:
        pytest.skip("focus-validator not installed (see docs/workbook.md, FOCUS export)")
    plan = solve_case(bill_case(tmp_path))
    paths = write_outputs(plan, tmp_path / "out")
    from planner.export.focus import write_focus

    out, _ = write_focus(paths["json"], tmp_path / "focus.csv", focus10_names=True)  # the 1.0 names it checks
    site = Path(tool).resolve().parent.parent / "lib"
    cwd = next(site.glob("python3*/site-packages"), Path.cwd())  # it reads its currency list by a relative path
    run = subprocess.run([tool, "--data-file", str(out), "--column-namespace", "x"], cwd=cwd, capture_output=True,
                         text=True, timeout=300)
    assert "Validation succeeded" in run.stdout + run.stderr, run.stdout[-2000:]


def test_chargeback_per_class_and_month_adds_up_to_the_total(tmp_path):
    import pandas as pd

    from planner.report.showback import by_class, by_month

    m = write_case(tmp_path, {"a": [4.0] * 30 + [8.0] * 30, "b": [2.0] * 60},
                   [price(hourly=2.0), price(option="reserved_1y", hourly=1.0, term_months=12)],
                   {"a": {}, "b": {}}, hours=24.0, start="2027-01-15T00:00")
    plan = solve_case(m)
    classes, months = by_class(plan), by_month(plan)
    assert classes["total_usd"].sum() == pytest.approx(plan.cost["total"], rel=1e-9)
    assert months["total_usd"].sum() == pytest.approx(plan.cost["total"], rel=1e-9)
    assert set(months["month"]) == {"2027-01", "2027-02", "2027-03"}
    # on-demand per class and month equals the allocation's own sum
    a = plan.allocation[plan.allocation.option == "on_demand"]
    od = (a.gpus * a.hours * 2.0).groupby([a.period.dt.strftime("%Y-%m"), a.workload_class]).sum()
    got = months.set_index(["month", "workload_class"])["on_demand_usd"]
    for key, v in od.items():
        assert got[key] == pytest.approx(v)
    # the reserved cost of a month is that month's share of the purchase (its active hours there)
    res = months.groupby("month")[["reserved_used_usd", "reserved_idle_usd"]].sum().sum(axis=1)
    bought = plan.purchases[plan.purchases.instances > 0]
    gpus = float(bought["gpus"].sum())
    hours = pd.Series(plan.inputs.hours, index=plan.inputs.periods.strftime("%Y-%m")).groupby(level=0).sum()
    assert res.to_numpy() == pytest.approx((gpus * 1.0 * hours).to_numpy())
    paths = write_outputs(plan, tmp_path / "out")
    data = json.loads(paths["json"].read_text())
    assert sum(r["total_usd"] for r in data["showback_by_month"]) == pytest.approx(data["cost_usd"]["total"])
    assert sum(data["cost_by_class_usd"].values()) == pytest.approx(data["cost_usd"]["total"])


def test_a_sheet_never_passes_excels_row_limit_and_says_what_it_left_out(tmp_path, monkeypatch):
    import planner.report.workbook.book as xlsx

    m = write_case(tmp_path, {"a": [4.0] * 40}, [price(hourly=2.0), price(option="spot", hourly=1.0,
                                                                           interruptions_per_hour=0.01)],
                   {"a": {"spot": True, "max_spot_share": 0.5}})
    plan = solve_case(m)
    monkeypatch.setattr(xlsx, "EXCEL_MAX_ROWS", 30)  # pretend Excel stops at 30 rows
    paths = write_outputs(plan, tmp_path / "out")
    ws = load_workbook(paths["xlsx"])["Allocation"]
    assert ws.max_row == 30
    assert "more rows omitted" in str(ws.cell(row=30, column=1).value)


def test_a_budget_shortfall_names_the_budget_and_the_plan_reports_its_spend(tmp_path):
    from planner import load_inputs, make_plan

    plan = make_plan(load_inputs(cap_case(tmp_path, budget=120)), mip_gap=0.0)
    assert plan.shortfall_gpu_hours > 0
    assert all("total budget 120 USD reached" in c for c in plan.shortfall["cause"])
    b = plan.budget.set_index("name").loc["budget_total"]
    assert b["spend_usd"] == pytest.approx(120) and b["binding"]
    paths = write_outputs(plan, tmp_path / "out")
    data = json.loads(paths["json"].read_text())
    assert data["budget"][0]["name"] == "budget_total" and data["budget"][0]["binding"] is True
    assert "total budget 120 USD reached" in data["shortfall"][0]["causes"]
    summary = {r[0].value: r[1].value for r in load_workbook(paths["xlsx"], data_only=True)["Summary"].iter_rows()}
    assert summary["Budget total"] == pytest.approx(120)


def test_monthly_caps_under_full_term_accounting_count_the_months_cash(tmp_path):
    from planner import load_inputs, make_plan

    # 60 days at 10 GPUs; a 1-year reserved at 0.5 $/h with 100 $ upfront per GPU would cost 10 x 100 upfront in
    # January alone: a January cap of 1,500 $ leaves no room for it (10 x 0.5 x 24 x 17 = 2,040 > 1,500 anyway)
    m = write_case(tmp_path, {"c": [10.0] * 60}, [price(hourly=1.0), price(option="reserved_1y", hourly=0.5,
                                                                           upfront_usd=100.0, term_months=12)],
                   {"c": {}}, hours=24.0, start="2027-01-15T00:00",
                   extra_top='[commitments]\naccounting = "full_term"\n[budget]\nmonths."2027-01" = 4000\n')
    plan = make_plan(load_inputs(m), mip_gap=0.0)
    jan = plan.budget.set_index("name").loc["budget_month_2027_01"]
    assert jan["spend_usd"] <= 4000 + 1e-6
    bought = plan.purchases[plan.purchases.instances > 0]
    a = plan.allocation
    od_jan = float((a[(a.option == "on_demand") & (a.period.dt.month == 1)].gpu_hours * 1.0).sum())
    cash_jan = float((bought.gpus * (100.0 + 0.5 * 17 * 24)).sum()) + od_jan  # upfront + 17 days of fees
    assert jan["spend_usd"] == pytest.approx(cash_jan)


def test_budget_month_outside_the_horizon_exits_2(tmp_path):
    from click.testing import CliRunner

    from planner.cli import cli

    m = cap_case(tmp_path, months={"2026-01": 100})  # a typo'd year
    result = CliRunner().invoke(cli, ["plan", str(m), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and "outside the horizon" in result.output and "2026-01" in result.output


def test_inventory_that_ended_before_the_horizon_did_not_expire_in_it(tmp_path):
    from planner import load_inputs
    from planner.results.bill import inventory_table

    inventory = [{"gpu_type": "A", "region": "r1", "option": "reserved_1y", "gpus": 10,
                  "start": "2025-01-01T00:00", "end": "2026-01-01T00:00"}]
    m = write_case(tmp_path, {"c": [4.0] * 10}, [price(hourly=2.0), price(option="reserved_1y", hourly=0.5)],
                   {"c": {}}, inventory=inventory)
    row = inventory_table(load_inputs(m)).iloc[0]
    assert row["hours_in_horizon"] == 0 and not row["expires_in_horizon"] and row["horizon_cost_usd"] == 0


@needs_lo
def test_showback_stays_whole_after_a_reserved_price_edit(example_plan, recomputed):
    plan, paths = example_plan
    bought = plan.purchases[plan.purchases.instances > 0].iloc[0]
    # the Prices row of the first purchase's pool and option at +0.10 $/GPU-hour, recomputed by LibreOffice
    again = load_workbook(recomputed["reserved"], data_only=True, read_only=True)
    (_, cell), = list(again.defined_names["total_cost_usd"].destinations)
    total = again["Summary"][cell.replace("$", "")].value
    showback = sum(r[9].value for r in again["Showback"].iter_rows(min_row=2) if isinstance(r[9].value, (int, float)))
    before = json.loads(paths["json"].read_text())["cost_usd"]["total"]
    assert total - before == pytest.approx(0.1 * bought.gpus * bought.hours_active, rel=1e-9)
    assert showback == pytest.approx(total, rel=1e-9)  # the classes still add up to the new total
    # the memo's cash: +$0.10 per GPU-hour on a term bought 2027-01-04 00:00 moves calendar 2027 (362 days, 8,688 h)
    # by 0.1 x GPUs x 8,688 and the NPV (rate 0: the whole 26,280-h term) by 0.1 x GPUs x 26,280, live
    assert (bought.purchase_date, bought.term_months) == (pd.Timestamp("2027-01-04"), 36)

    def year(book, label):
        ws = book["Cash by year"]
        head = [c.value for c in ws[1]]
        row = next(r for r in ws.iter_rows(min_row=2, values_only=True) if r[0] == label)
        return row[head.index("total_with_owned_usd")]

    base = book(paths["xlsx"], data_only=True)
    assert year(again, "calendar 2027") - year(base, "calendar 2027") == pytest.approx(0.1 * bought.gpus * 8688, abs=0.01)
    memo_cash = next(r[1] for r in again["Summary"].iter_rows(values_only=True) if r[0] == "Cash out, calendar 2027")
    assert memo_cash == pytest.approx(year(again, "calendar 2027"), abs=0.01)  # the memo's row is the sheet's cell

    def npv(book):
        (_, cell), = list(book.defined_names["npv_usd"].destinations)
        return book["Summary"][cell.replace("$", "")].value

    assert npv(again) - npv(base) == pytest.approx(0.1 * bought.gpus * 26280, abs=0.01)
