"""Power caps per site (issue 33's proof): `[sites.<name>] max_mw` with `site` and `kw_per_gpu` on reserved rows.

Hand oracle: two sites, one cap binding; the same plan from the Benders decomposition (method = "benders");
every first-stage family reaches the Benders master; the bundled ladder with a binding cap (slow)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from planner import load_inputs, make_plan
from planner.model import FAMILIES, build_model, stages
from conftest import price, write_case

ROOT = Path(__file__).resolve().parent.parent
H = 48.0  # two days of hourly periods


def case(folder: Path, cap_s1=0.04, cap_s2=1.0, method=None, resale=False) -> Path:
    rows = [price("A", "r1", hourly=3.0), price("B", "r2", hourly=3.0),
            price("A", "r1", option="reserved_1y", hourly=1.0, term_months=12, site="s1", kw_per_gpu=1.0),
            price("B", "r2", option="reserved_1y", hourly=1.5, term_months=12, site="s2", kw_per_gpu=2.0)]
    if resale:
        rows[2]["resale_haircut"] = 0.1
    m = write_case(folder, {"c": [100.0] * int(H)}, rows,
                   {"c": {"gpu_types": {"A": 1.0, "B": 1.0}, "regions": ["r1", "r2"]}},
                   solver={"method": method} if method else None,
                   extra_top=f'[commitments]\naccounting = "amortised"\n'
                             f'[sites.s1]\nmax_mw = {cap_s1}\n[sites.s2]\nmax_mw = {cap_s2}\n')
    pd.DataFrame(rows).to_csv(folder / "prices.csv", index=False)
    return m


def test_two_sites_one_cap_binding_by_hand(tmp_path):
    # uncapped: 100 reserved A at 1.00/h. s1 holds 0.04 MW = 40 GPUs of 1 kW; the other 60 are reserved B
    # at 1.50/h (s2: 60 x 2 kW = 0.12 MW of its 1 MW), cheaper than on-demand at 3.00/h
    plan = make_plan(load_inputs(case(tmp_path)), mip_gap=0.0)
    bought = plan.purchases.set_index("gpu_type")["instances"]
    assert bought["A"] == 40 and bought["B"] == 60
    assert plan.cost["total"] == pytest.approx((40 * 1.0 + 60 * 1.5) * H)
    assert build_model(plan.inputs).rows["site_power"] == 2  # one row per capped site (one set of rows active together)


def test_without_a_binding_cap_the_plan_is_unchanged(tmp_path):
    plan = make_plan(load_inputs(case(tmp_path, cap_s1=1.0)), mip_gap=0.0)
    assert plan.purchases.set_index("gpu_type")["instances"]["A"] == 100
    assert plan.cost["total"] == pytest.approx(100 * 1.0 * H)


def test_plan_json_reports_mw_at_each_peak(tmp_path):
    from click.testing import CliRunner
    from planner.cli import cli

    out = tmp_path / "out"
    r = CliRunner().invoke(cli, ["plan", str(case(tmp_path)), "--out", str(out), "--no-memo"])
    assert r.exit_code == 0, r.output
    sites = json.loads((out / "plan.json").read_text())["sites"]
    assert sites["s1"]["max_mw"] == 0.04 and sites["s1"]["peak_mw"] == pytest.approx(0.04)
    assert sites["s2"]["peak_mw"] == pytest.approx(0.12) and len(sites["s2"]["mw"]) == int(H)


def test_a_site_without_kw_per_gpu_is_exit_2(tmp_path):
    from click.testing import CliRunner
    from planner.cli import cli

    m = case(tmp_path)
    p = pd.read_csv(tmp_path / "prices.csv")
    p.loc[2, "kw_per_gpu"] = np.nan
    p.to_csv(tmp_path / "prices.csv", index=False)
    r = CliRunner().invoke(cli, ["plan", str(m), "--out", str(tmp_path / "o"), "--no-memo"])
    assert r.exit_code == 2 and "kw_per_gpu" in r.output


def test_every_first_stage_family_is_a_model_family_and_reaches_the_master(tmp_path):
    import highspy
    from planner.solve.decompose import add_first_stage_rows

    assert {n for n, s in stages.STAGE.items() if s == stages.FIRST} == set(stages.FIRST_STAGE)
    assert set(stages.FIRST_STAGE) <= {n for n, _d in FAMILIES}
    assert {n for n, _d in FAMILIES} <= set(stages.STAGE)  # every family declares its stage
    inp = load_inputs(case(tmp_path, resale=True))
    master = highspy.Highs()
    master.setOptionValue("output_flag", False)
    master.addVars(len(inp.commitments), np.zeros(len(inp.commitments)), np.full(len(inp.commitments), 1e9))
    fams = add_first_stage_rows(master, inp, highspy.kHighsInf)
    model = build_model(inp)
    for name in stages.FIRST_STAGE:  # the master holds exactly the monolithic model's rows of each family
        assert len(fams[name]) == model.rows[name], name
    assert master.getNumRow() == sum(model.rows[n] for n in stages.FIRST_STAGE) > 0


@pytest.mark.parametrize("resale", [False, True])
def test_decomposed_equals_monolithic(tmp_path, resale):
    mono = make_plan(load_inputs(case(tmp_path / "m", resale=resale)), mip_gap=0.0)
    dec = make_plan(load_inputs(case(tmp_path / "b", method="benders", resale=resale)), mip_gap=0.0)
    assert "benders" in dec.stats and "benders" not in mono.stats  # decomposed indeed
    assert dec.cost["total"] == pytest.approx(mono.cost["total"], rel=1e-6)
    np.testing.assert_allclose(dec.purchases["units"], mono.purchases["units"], rtol=1e-6, atol=1e-6)


@pytest.mark.slow
def test_bundled_ladder_with_a_binding_site_cap_decomposes_to_the_monolithic_plan(tmp_path):
    """models/ladder.toml's first four months (the full three years do not solve monolithic in minutes; the owned
    H100s of us-central1 arrive after their 3-month lead time, so in three months none is held), those owned H100s
    at one site of 0.25 MW (uncapped they peak at 0.3584 MW in these four months, 0.7168 MW in six): monolithic and
    Benders on two processes give the same plan within 1e-6."""
    from planner.core.executors import LocalExecutor
    from planner.model.sites import site_power_used

    src = ROOT / "data" / "ladder"
    d = pd.read_csv(src / "demand.csv")
    d[pd.to_datetime(d["period"]) < pd.Timestamp("2027-05-01")].to_csv(tmp_path / "demand.csv", index=False)
    p = pd.read_csv(src / "prices.csv")
    owned = p["option"].eq("reserved_owned")
    p["site"] = np.where(owned, "council-bluffs", "")
    p["kw_per_gpu"] = np.where(owned, 1.4, np.nan)
    p.to_csv(tmp_path / "prices.csv", index=False)
    (tmp_path / "inventory.csv").write_bytes((src / "inventory.csv").read_bytes())
    text = (ROOT / "models" / "ladder.toml").read_text().replace("../data/ladder/", "")
    cap = 0.25
    text = text.replace("[solver]", f'[sites.council-bluffs]\nmax_mw = {cap}\n\n[solver]', 1)
    plans = {}
    for method, executor in (("monolithic", None), ("benders", LocalExecutor(2))):
        m = tmp_path / f"{method}.toml"
        m.write_text(text.replace("[solver]", f'[solver]\nmethod = "{method}"', 1))
        plans[method] = make_plan(load_inputs(m), risk=False, executor=executor)  # no outputs: the plans compared
        assert plans[method].status.has_plan
    mono, dec = plans["monolithic"], plans["benders"]
    assert "benders" in dec.stats and "benders" not in mono.stats and dec.stats["benders"]["workers"] == 2
    peak = {k: site_power_used(p.inputs, p.purchases["units"].to_numpy(float))["council-bluffs"]["peak_mw"]
            for k, p in plans.items()}
    step = 8 * 1.4 / 1000  # one instance: 8 GPUs of 1.4 kW; the cap binds: one more instance would break it
    assert cap - step < peak["monolithic"] <= cap + 1e-9
    assert peak["benders"] <= cap + 1e-9
    # both stop within the model's gap (1e-4), each proven: the plans agree within their proven gaps, and the
    # decomposition's bound (a relaxation's) is no higher than the monolithic plan's cost
    assert dec.solve.status == "optimal" and dec.solve.mip_gap <= 1e-4
    slack = (dec.solve.mip_gap + mono.solve.mip_gap + 1e-6) * abs(mono.objective)
    assert abs(dec.objective - mono.objective) <= slack
    assert dec.solve.best_bound is None or dec.solve.best_bound <= mono.objective * (1 + 1e-9)
    units = [p.purchases["instances"].to_numpy(float) for p in (mono, dec)]
    assert abs(units[1].sum() - units[0].sum()) <= 0.02 * units[0].sum()  # within the gap: nearly the same fleet


def test_a_long_horizon_whose_aggregate_start_breaks_the_cap_still_decomposes(tmp_path):
    """800 hours (the Benders warm start aggregates every 2nd period from 768 on): terms of 23.5 hours bought
    monthly, 100 GPUs wanted, 40 allowed at the site. The aggregate's purchases broke the cap in the periods it
    skipped, and the batches' LPs were infeasible (issue 33 review); the start is now dropped when it breaks a
    first-stage row, and the decomposed plan costs what the whole model's does, within the cap."""
    from planner.model.sites import site_power_used

    T = 800
    rows = [price("A", "r1", hourly=3.0),
            price("A", "r1", option="reserved_x", hourly=1.0, term_months=23.5 / 730, site="s1", kw_per_gpu=1.0)]
    plans = {}
    for method in ("monolithic", "benders"):
        folder = tmp_path / method
        m = write_case(folder, {"c": [100.0] * T}, rows, {"c": {"gpu_types": {"A": 1.0}, "regions": ["r1"]}},
                       start="2027-01-31T01:00", solver={"method": method},
                       extra_top='[commitments]\naccounting = "amortised"\npurchase_every = "month"\n'
                                 '[sites.s1]\nmax_mw = 0.04\n')
        pd.DataFrame(rows).to_csv(folder / "prices.csv", index=False)
        plans[method] = make_plan(load_inputs(m), mip_gap=0.0, risk=False)
    mono, dec = plans["monolithic"], plans["benders"]
    assert "benders" in dec.stats and "benders" not in mono.stats
    assert dec.objective == pytest.approx(mono.objective, rel=1e-9)
    for p in (mono, dec):  # 40 GPUs at most at the site (two optima: which of the first two dates buys them)
        assert site_power_used(p.inputs, p.purchases["units"].to_numpy(float))["s1"]["peak_mw"] <= 0.04 + 1e-12
        assert p.purchases["instances"].sum() == 80


def test_a_misspelt_site_or_a_cap_on_nothing_exits_2_naming_them(tmp_path):
    """Review of issue 33: `S1` on a row against [sites.s1] silently lifted the cap (100 GPUs bought, 40 allowed)."""
    from click.testing import CliRunner
    from planner.cli import cli

    m = case(tmp_path)
    p = pd.read_csv(tmp_path / "prices.csv")
    p.loc[p["site"].eq("s1"), "site"] = "S1"
    p.to_csv(tmp_path / "prices.csv", index=False)
    r = CliRunner().invoke(cli, ["validate", str(m)])
    assert r.exit_code == 2, r.output
    assert "site is not one of the model file's [sites]" in r.output and "'S1'" in r.output and "row 4" in r.output
    assert "[sites.s1] caps no row of the price sheet" in r.output


def test_a_first_stage_family_registered_once_binds_both_solve_paths(tmp_path, monkeypatch):
    """A new first-stage family is one function in stages.FIRST_STAGE (review of issue 33: it also had to be
    listed in model.FAMILIES, else the whole model ignored it while the master honoured it): here at most 70 GPUs
    bought per purchase date; uncapped the plan buys 100 reserved A. Both paths buy 70, at the same cost."""
    from planner.model.rows import FirstStageRows

    def date_gpu_cap(inp):
        res = inp.commitments
        dates = res["date_index"].to_numpy(int)
        members = [np.flatnonzero(dates == d) for d in np.unique(dates)]
        return FirstStageRows((np.unique(dates),), members, [res["m"].to_numpy(float)[m] for m in members],
                              np.full(len(members), 70.0))

    monkeypatch.setitem(stages.FIRST_STAGE, "date_gpu_cap", date_gpu_cap)
    mono = make_plan(load_inputs(case(tmp_path / "m", cap_s1=1.0)), mip_gap=0.0)
    dec = make_plan(load_inputs(case(tmp_path / "b", cap_s1=1.0, method="benders")), mip_gap=0.0)
    assert "benders" in dec.stats and "benders" not in mono.stats
    for p in (mono, dec):
        assert p.purchases["gpus"].sum() == 70
    # 70 reserved A at 1.00/h (s1 uncapped) and 30 on-demand at 3.00/h
    assert mono.objective == pytest.approx((70 * 1.0 + 30 * 3.0) * H)
    assert dec.objective == pytest.approx(mono.objective, rel=1e-9)
