"""A batch's recourse LP solved in parts (planner.solve.recourse.split_parts): with the purchases fixed the LP is the
direct sum of its blocks' LPs, so runs of whole blocks solved as LPs of their own give the batch's optimum. The
oracle is the same batch solved as one LP (``parts=None``): the same costs, cuts, column values and shadow-price
sums, warm or cold, the demand scaled; bases that travel between the two forms; a decomposed plan priced in parts
equal to the monolithic model."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from planner import load_inputs, make_plan
from planner.solve import recourse
from conftest import price, write_case

INV = {"option": "reserved_1y", "start": "2026-06-01T00:00", "end": "2028-01-01T00:00"}


def _batch(tmp_path, monkeypatch, columns: int = 40, owned: int = 4, hours: int = 12):
    """Three pools of one GPU (owned GPUs ``owned`` a pool, fewer than the work: on-demand at the margin every hour,
    so the duals are unique), four classes, ``hours`` hours, two scenarios; a reserved term to buy; its one batch,
    built with parts of about ``columns`` columns."""
    from planner.solve.decompose import chunk_index, cut_groups

    monkeypatch.setattr(recourse, "PART_COLUMNS", columns)
    rng = np.random.default_rng(4)
    regions = ["r0", "r1", "r2"]
    prices = [price("A", r, hourly=4.0 + i) for i, r in enumerate(regions)]
    prices += [price("A", "r0", "reserved_1y", 2.0, term_months=12)]
    inv = [dict(INV, gpu_type="A", region=r, gpus=owned) for r in regions]
    demand = {f"c{k}": list(np.round(5 + 3 * rng.random(hours), 3)) for k in range(4)}
    m = write_case(tmp_path, demand, prices, {k: {} for k in demand}, inventory=inv,
                   extra_top='[term]\njudge = "horizon"')
    import pandas as pd

    d = pd.read_csv(tmp_path / "demand.csv")
    pd.concat([d.assign(scenario="lo"), d.assign(scenario="hi", gpus=d["gpus"] * 1.3)]).to_csv(
        tmp_path / "demand.csv", index=False)
    m.write_text(m.read_text() + "\n[scenarios]\nlo = 0.7\nhi = 0.3\n")
    inp = load_inputs(m)
    return inp, recourse.build_batch(inp, chunk_index(inp, "week")[0], cut_groups(inp))


def _cuts(p) -> dict:
    return {(int(g), int(r)): float(c) for g, r, c in zip(p.group, p.row, p.coef)}


def _same(a, b, solution: bool = True) -> None:
    assert np.allclose(a.values, b.values, rtol=1e-9, atol=1e-7)
    ca, cb = _cuts(a), _cuts(b)
    assert ca.keys() == cb.keys()
    assert np.allclose([ca[k] for k in ca], [cb[k] for k in ca], rtol=1e-9, atol=1e-7)
    if solution:
        assert np.allclose(a.solution, b.solution, atol=1e-7)
        for key in a.dual_sums:
            assert np.allclose(a.dual_sums[key], b.dual_sums[key], rtol=1e-9, atol=1e-7), key


def test_a_batch_in_parts_prices_as_the_batch_solved_whole(tmp_path, monkeypatch):
    inp, b = _batch(tmp_path, monkeypatch)
    assert b.parts is not None
    col, row = b.parts
    k = int(col.max()) + 1
    assert k >= 3  # (several parts: the case is split)
    assert (col[b.ncols] == -1).all() and (np.delete(col, b.ncols) >= 0).all() and (row >= 0).all()
    whole = replace(b, parts=None)
    n = np.array([3.0])
    for scale in (1.0, 0.8):
        for how in (False, True, "costs"):
            ours, theirs = (recourse.price(x, n, solution=how, scale=scale) for x in (b, whole))
            _same(ours, theirs, solution=how is True)
            if how == "costs":
                for key in ("rented", "covered", "short"):
                    assert np.allclose(ours.costs[key], theirs.costs[key], rtol=1e-9, atol=1e-7)
    plan = recourse.price(b, n, solution=True)
    assert plan.values.sum() > 100 and plan.solution[b.owned[0]].sum() > 10  # on-demand bought, owned GPUs run
    assert any(np.abs(np.asarray(v)).sum() > 1 for v in plan.dual_sums.values())
    both, both_whole = (recourse.price(x, n, solution="plan+cuts") for x in (b, whole))
    _same(both, both_whole)
    _same(both.cut, both_whole.cut, solution=False)


def test_a_batch_in_parts_keeps_its_bases_and_reads_a_whole_lps(tmp_path, monkeypatch):
    """A basis of the parts (kept as HiGHS's objects, or as the batch's arrays) starts the parts again with no
    iteration and is an optimal basis of the whole LP too; a whole LP's basis starts the parts (a part whose share
    is not a basis starts cold) to the same answer; a move of the purchases and the demand priced warm equals it
    priced cold."""
    inp, b = _batch(tmp_path, monkeypatch)
    whole = replace(b, parts=None)
    n = np.array([3.0])
    kept = recourse.price(b, n, solution=True, portable=False)
    assert isinstance(kept.basis, recourse.PartBases) and kept.iterations > 0
    again = recourse.price(b, n, kept.basis, solution=True, portable=False)
    assert again.iterations == 0
    _same(again, kept)
    arrays = recourse.portable_basis(kept.basis)
    assert arrays[0].shape == (b.shape[0],) and arrays[1].shape == (b.shape[1],)
    assert int((arrays[0] == 1).sum() + (arrays[1] == 1).sum()) == b.shape[1]  # a basis of the whole LP
    assert recourse.price(b, n, arrays, solution=True).iterations == 0
    on_whole = recourse.price(whole, n, arrays, solution=True)
    assert on_whole.iterations == 0
    _same(on_whole, kept)
    from_whole = recourse.price(b, n, recourse.price(whole, n).basis, solution=True)
    _same(from_whole, kept)
    moved = np.array([1.0])
    warm = recourse.price(b, moved, kept.basis, scale=0.7)
    cold = recourse.price(b, moved, scale=0.7)
    assert warm.iterations > 0
    _same(warm, cold, solution=False)


def test_split_parts_runs_whole_blocks_and_splits_nothing_it_cannot():
    """Parts are runs of whole blocks of about the size asked; a row with no recourse column goes to part 0; one
    part (at most 1.5 x the size) or an LP that does not separate by block is not split."""
    colblock = np.array([-1, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5])  # column 0: a purchase
    rowblock = np.array([0, 1, 2, 3, 4, 5, -1])
    col, row = recourse.split_parts(colblock, [0], rowblock, columns=4)
    assert col[0] == -1 and row[-1] == 0
    for b in range(6):  # a block's columns and rows in one part
        assert len(set(col[colblock == b]) | set(row[rowblock == b])) == 1
    sizes = np.bincount(col[col >= 0])
    assert len(sizes) == 3 and sizes.max() <= 5  # 11 columns in parts of about 4
    assert np.all(np.diff(col[1:]) >= 0)  # runs: blocks in order
    assert recourse.split_parts(colblock, [0], rowblock, columns=8) is None  # 11 <= 1.5 x 8: one LP
    assert recourse.split_parts(colblock, [0], None, columns=4) is None


@pytest.mark.parametrize("seed,scenarios", [(2, False), (3, True)])
def test_a_decomposed_plan_priced_in_parts_equals_the_monolithic_model(tmp_path, monkeypatch, seed, scenarios):
    from test_decompose import _case, tied
    from planner.solve.decompose import solve_benders

    inp = _case(tmp_path, seed, scenarios)
    mono = make_plan(inp, mip_gap=0.0, risk=False)
    monkeypatch.setattr(recourse, "PART_COLUMNS", 60)
    bd = solve_benders(inp, mip_gap=1e-7)
    assert bd.status == "optimal"
    assert bd.upper == pytest.approx(tied(mono), rel=1e-6)
    planned = make_plan(inp, risk=False, fixed_reserved=mono.purchases["units"].to_numpy(float))
    assert planned.cost["total"] == pytest.approx(mono.cost["total"], rel=1e-9)


def test_split_parts_leaves_a_column_in_no_block_whole():
    colblock = np.array([-1, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, -1])  # column 11: in no block, not a purchase
    rowblock = np.array([0, 1, 2, 3, 4])
    assert recourse.split_parts(colblock, [0], rowblock, columns=4) is None
    assert recourse.split_parts(colblock, [0, 11], rowblock, columns=4) is not None


def test_a_block_larger_than_a_part_leaves_no_part_empty():
    colblock = np.array([-1] + [0] * 9 + [1, 2])  # block 0: 9 of 11 columns, parts of about 4
    rowblock = np.array([0, 0, 1, 2])
    col, row = recourse.split_parts(colblock, [0], rowblock, columns=4)
    assert sorted(set(col[1:])) == list(range(int(col.max()) + 1)) and set(row) <= set(col[1:])


def test_a_basis_of_another_shape_starts_a_batch_in_parts_cold(tmp_path, monkeypatch):
    """As HiGHS does for a whole LP: another batch's basis (longer or shorter) is no basis of this one."""
    inp, b = _batch(tmp_path, monkeypatch)
    n = np.array([3.0])
    cold = recourse.price(b, n, solution=True)
    col, row = recourse.portable_basis(cold.basis)
    for wrong in ((col[:-3], row), (np.r_[col, col[:5]], row), (col, row[:-2])):
        out = recourse.price(b, n, wrong, solution=True)
        assert out.iterations == cold.iterations
        _same(out, cold)
