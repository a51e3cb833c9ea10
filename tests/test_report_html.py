"""``planner report PLAN_JSON --html OUT.html``: one offline page whose figures hold plan.json's numbers.

Two small plans are solved once per module: an hourly fortnight (two pools, reserved + on-demand + spot,
inventory) and a daily three-year ladder (monthly purchase dates). The browser tests use Debian's
chromium, headless, and skip without it.
"""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from planner import load_inputs, make_plan
from planner.cli import cli
from planner.pipeline.run import period_csv
from planner.report import plan_json as plan_text
from conftest import price, write_case

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FIGURE_RX = re.compile(r'<script type="application/json" class="figure" data-target="(fig-\d+)">(.*?)</script>',
                       re.S)


def _hourly_case(folder: Path) -> Path:
    n = 14 * 24
    h = np.arange(n)
    base = 20 + 12 * np.clip(np.sin((h % 24 - 6) / 24 * 2 * np.pi), 0, None)  # a diurnal load
    burst = np.where((h // 24) % 7 < 2, 30.0, 0.0)                              # two busy days a week
    prices = [price("A", "r1", "on_demand", 4.0), price("A", "r1", "spot", 1.5, interruptions_per_hour=0.02),
              price("A", "r1", "reserved_1y", 2.0, term_months=12),
              price("B", "r2", "on_demand", 2.0), price("B", "r2", "reserved_1y", 1.2, term_months=12)]
    classes = {"serve": {"spot": False, "gpu_types": {"A": 1.0}, "regions": ["r1"]},
               "batch": {"spot": True, "max_spot_share": 0.8, "gpu_types": {"A": 1.0}, "regions": ["r1"],
                         "job_gpus": 1, "checkpoint_minutes": 1, "restart_minutes": 2},
               "small": {"spot": False, "gpu_types": {"B": 1.0}, "regions": ["r2"]}}
    inventory = [{"gpu_type": "A", "region": "r1", "option": "reserved_1y", "gpus": 4,
                  "start": "2026-06-01T00:00", "end": "2027-06-01T00:00"}]
    return write_case(folder, {"serve": list(base), "batch": list(burst), "small": [3.0 + (i % 24 > 12) for i in h]},
                      prices, classes, inventory=inventory, name="html-hourly")


def _ladder_case(folder: Path) -> Path:
    n = 3 * 365
    demand = [10.0] * 180 + [25.0] * (n - 180)
    prices = [price("A", "r", "on_demand", 4.0), price("A", "r", "reserved_1y", 2.0, term_months=12),
              price("A", "r", "reserved_3y", 1.0, term_months=36)]
    return write_case(folder, {"a": demand}, prices, {"a": {"spot": False}}, hours=24.0, start="2027-01-01",
                      extra_top='[commitments]\npurchase_every = "month"\n', name="html-ladder")


def _solve(model: Path, out: Path) -> Path:
    import warnings

    with warnings.catch_warnings():  # pandas FutureWarnings of the solve (planner.inputs.commitments, ladder): not the report's
        warnings.simplefilter("ignore", FutureWarning)
        plan = make_plan(load_inputs(model), mip_gap=0.0)
        out.mkdir(parents=True)                      # what `planner plan` publishes, less the workbook
        (out / "plan.json").write_text(plan_text(plan), encoding="utf-8")
        period_csv(plan.fleet, out / "fleet.csv")
        return out / "plan.json"


def solved_and_reported(model: Path, root: Path) -> tuple[Path, Path, str]:
    """``model`` solved into root/plan and drawn by ``planner report`` into root/report.html: (plan.json, the
    page, the command's output)."""
    plan_json = _solve(model, root / "plan")
    out = root / "report.html"
    res = CliRunner().invoke(cli, ["report", str(plan_json), "--html", str(out)])
    assert res.exit_code == 0, res.output
    return plan_json, out, res.output


@pytest.fixture(scope="module")
def hourly(tmp_path_factory):
    root = tmp_path_factory.mktemp("hourly")
    return solved_and_reported(_hourly_case(root / "case"), root)


@pytest.fixture(scope="module")
def ladder(tmp_path_factory):
    root = tmp_path_factory.mktemp("ladder")
    return solved_and_reported(_ladder_case(root / "case"), root)


def _figures(page: str) -> list[dict]:
    return [json.loads(text.replace("<\\/", "</")) for _, text in FIGURE_RX.findall(page)]


def _title(fig) -> str:
    return fig["layout"]["title"]["text"]


def _by_title(figs, start: str) -> list[dict]:
    return [f for f in figs if _title(f).startswith(start)]


def _trace(fig, start: str) -> dict:
    found = [t for t in fig["data"] if t["name"].startswith(start)]
    assert len(found) == 1, [t["name"] for t in fig["data"]]
    return found[0]


def _fleet(plan_json: Path) -> pd.DataFrame:
    f = pd.read_csv(plan_json.with_name("fleet.csv"), parse_dates=["period"])
    f["served"] = f["reserved_used"] + f["on_demand"] + f["spot"]
    return f


# ---- the page: offline, one plotly.js -------------------------------------------------------------------------
def test_the_page_loads_nothing_from_the_network_and_holds_one_plotly(hourly):
    import plotly.offline

    _, out, output = hourly
    page = out.read_text(encoding="utf-8")
    js = plotly.offline.get_plotlyjs()
    assert not re.search(r"<script[^>]*\bsrc\s*=", page, re.I)          # every script is inline
    ours = page.replace(js, "")                                           # (plotly.js has links in its strings)
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", ours, re.I)
    assert not re.search(r"<link\b", ours, re.I) and "http://" not in ours and "https://" not in ours
    assert page.count(js[:400]) == 1 and page.count(js[-400:]) == 1       # plotly.js once, whole
    assert len(FIGURE_RX.findall(page)) >= 5
    size = out.stat().st_size
    assert size < 5_000_000 and size - len(js) < 300_000                  # the data part stays small
    assert f"wrote {out}" in output
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")]  # the temporary file was renamed


def test_the_header_and_the_purchases_table_show_the_plan(hourly):
    plan_json, out, _ = hourly
    plan = json.loads(plan_json.read_text())
    page = out.read_text(encoding="utf-8")
    assert f"${plan['cost_usd']['total']:,.0f}" in page
    assert f"${plan['savings_usd']:,.0f}" in page and plan["status"] in page
    table = re.search(r"<table class='fit' id='purchases'>(.*?)</table>", page, re.S).group(1)
    bought = [r for r in plan["reserved_purchases"] if r["instances"] > 0]
    assert bought and table.count("<tr>") == 1 + len(bought)             # header + the rows that buy
    for r in bought:
        assert f"<td>{r['instances']:,}</td>" in table


# ---- the figures hold plan.json's numbers ---------------------------------------------------------------------
def test_cash_bars_add_up_to_the_cash_schedule(hourly, ladder):
    for plan_json, out, _ in (hourly, ladder):
        plan = json.loads(plan_json.read_text())
        (fig,) = _by_title(_figures(out.read_text()), "Cash by month")
        bars = [t for t in fig["data"] if t["type"] == "bar"]
        months = [r["month"] for r in plan["cash_schedule"]]
        assert all(t["x"] == months for t in bars)
        total = sum(r["total_usd"] for r in plan["cash_schedule"])
        assert sum(sum(t["y"]) for t in bars) == pytest.approx(total, abs=0.01 * len(months) * len(bars))
        assert _trace(fig, "total")["y"] == pytest.approx([r["total_usd"] for r in plan["cash_schedule"]], abs=0.01)


def test_the_reserved_level_of_each_pool_is_its_purchases_plus_inventory(hourly):
    plan_json, out, _ = hourly
    plan = json.loads(plan_json.read_text())
    curves = _by_title(_figures(out.read_text()), "")
    seen = 0
    for gt, rg in (("A", "r1"), ("B", "r2")):
        (fig,) = [f for f in curves if _title(f).startswith(f"{gt} {rg}: load-duration")]
        bought = sum(r["gpus"] for r in plan["reserved_purchases"] if (r["gpu_type"], r["region"]) == (gt, rg))
        owned = sum(r["gpus"] for r in plan["inventory"] if (r["gpu_type"], r["region"]) == (gt, rg))
        if bought + owned:
            seen += 1
            assert _trace(fig, "reserved owned")["y"] == pytest.approx([bought + owned] * 2)
    assert seen >= 1


def test_the_load_duration_curve_is_the_pools_hours_sorted_with_the_break_even_line(hourly):
    plan_json, out, _ = hourly
    plan = json.loads(plan_json.read_text())
    H = plan["horizon"]["hours"]
    fleet = _fleet(plan_json)
    (fig,) = _by_title(_figures(out.read_text()), "A r1: load-duration")
    curve = _trace(fig, "demand served")
    y = np.array(curve["y"])
    served = np.sort(fleet[(fleet.gpu_type == "A") & (fleet.region == "r1")]["served"].to_numpy())[::-1]
    assert y[0] == pytest.approx(served[0], abs=1e-3) and y[-1] == pytest.approx(served[-1], abs=1e-3)
    assert (np.diff(y) <= 1e-9).all()                                      # sorted descending
    assert curve["x0"] == 0 and curve["dx"] * (len(y) - 1) == pytest.approx(H)
    k = len(y) // 3                                                        # a sample is the sorted hour it lands on
    assert y[k] == pytest.approx(served[min(int(k * curve["dx"]), len(served) - 1)], abs=1e-3)
    bought = [r for r in plan["reserved_purchases"] if r["gpu_type"] == "A" and r["instances"] > 0]
    od = next(r["on_demand_usd_per_gpu_hour"] for r in plan["spot_economics"] if r["gpu_type"] == "A")
    eff = (sum(r["gpus"] * r["effective_usd_per_gpu_hour"] for r in bought) / sum(r["gpus"] for r in bought)
           if bought else 2.0)
    line = _trace(fig, "break-even vs on-demand")
    assert line["x"] == pytest.approx([eff * H / od] * 2) and eff * H / od == pytest.approx(0.5 * H)


def test_the_fleet_mix_holds_the_fleets_gpu_hours(hourly, ladder):
    for (plan_json, out, _), step_ms in ((hourly, 3_600_000), (ladder, 86_400_000)):
        fleet = _fleet(plan_json)
        (fig,) = _by_title(_figures(out.read_text()), "Fleet mix")
        for name, col in (("reserved used", "reserved_used"), ("on-demand", "on_demand"), ("spot", "spot"),
                          ("reserved owned", "reserved_owned")):
            t = _trace(fig, name)
            assert t["dx"] == step_ms
            step_h = step_ms / 3_600_000
            want = float((fleet[col] * fleet["hours"]).sum())
            assert sum(t["y"]) * step_h == pytest.approx(want, rel=1e-4, abs=0.01 * len(t["y"]) * step_h)


def test_the_ladder_of_vintages_adds_up_to_the_gpus_owned_in_fleet_csv(hourly, ladder):
    for plan_json, out, _ in (hourly, ladder):
        plan = json.loads(plan_json.read_text())
        fleet = _fleet(plan_json)
        owned = fleet.groupby("period")["reserved_owned"].sum()
        (fig,) = _by_title(_figures(out.read_text()), "GPUs owned by vintage")
        when = pd.to_datetime(fig["data"][0]["x"])
        total = np.sum([t["y"] for t in fig["data"]], axis=0)
        for t, v in zip(when[:-1], total[:-1]):                             # each value holds to the next date
            assert owned.loc[t] == pytest.approx(v, abs=1e-6)
        bought_dates = {r["purchase_date"][:10] for r in plan["reserved_purchases"] if r["instances"] > 0}
        names = {t["name"] for t in fig["data"]}
        assert {f"bought {d}" for d in bought_dates} <= names
    plan = json.loads(ladder[0].read_text())
    assert len({r["purchase_date"] for r in plan["reserved_purchases"] if r["instances"] > 0}) >= 2  # a real ladder


def test_without_fleet_csv_the_curves_are_monthly_and_the_page_says_so(hourly, tmp_path):
    plan_json, _, _ = hourly
    lone = tmp_path / "plan.json"
    shutil.copy(plan_json, lone)
    out = tmp_path / "r.html"
    res = CliRunner().invoke(cli, ["report", str(lone), "--html", str(out)])
    assert res.exit_code == 0, res.output
    assert "fleet.csv not found" in res.output
    figs = _figures(out.read_text())
    assert any("monthly means" in _title(f) for f in figs)
    (cash_fig,) = _by_title(figs, "Cash by month")
    assert cash_fig["data"]


# ---- bad input ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("content,message", [
    (None, "no such file"), ("{not json", "is not JSON"), ("[1, 2]", "holds a JSON list"),
    ('{"status": "optimal"}', "missing key(s) horizon, cost_usd, reserved_purchases, cash_schedule"),
    ('{"status": "optimal", "horizon": 3, "cost_usd": {}, "reserved_purchases": [], "cash_schedule": []}',
     "unexpected value of horizon"),
    (b"\xff\xfe\x00bin", "is not text")])
def test_a_file_that_is_not_a_plan_json_exits_2_naming_it(tmp_path, content, message):
    path = tmp_path / "plan.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    out = tmp_path / "r.html"
    res = CliRunner().invoke(cli, ["report", str(path), "--html", str(out)])
    assert res.exit_code == 2, res.output
    assert str(path) in res.output and message in res.output and "expected a plan.json" in res.output
    assert not out.exists()


def test_html_out_must_be_a_new_file_not_a_folder_or_the_plan(hourly, tmp_path):
    plan_json, _, _ = hourly
    before = plan_json.read_bytes()
    res = CliRunner().invoke(cli, ["report", str(plan_json), "--html", str(plan_json)])
    assert res.exit_code == 2 and "never overwrites an input" in res.output
    assert plan_json.read_bytes() == before
    res = CliRunner().invoke(cli, ["report", str(plan_json), "--html", str(tmp_path)])
    assert res.exit_code == 2, res.output
    res = CliRunner().invoke(cli, ["report", str(plan_json)])
    assert res.exit_code == 2 and "--html" in res.output


def test_a_broken_fleet_csv_exits_2_naming_it(hourly, tmp_path):
    plan_json, _, _ = hourly
    shutil.copy(plan_json, tmp_path / "plan.json")
    (tmp_path / "fleet.csv").write_text("scenario,period\nbase,2027-01-04T00:00\n")
    res = CliRunner().invoke(cli, ["report", str(tmp_path / "plan.json"), "--html", str(tmp_path / "r.html")])
    assert res.exit_code == 2 and "fleet.csv" in res.output and "missing column" in res.output


# ---- in a real browser ----------------------------------------------------------------------------------------
def _png_colours(path: Path) -> int:
    """Distinct RGB colours of an 8-bit RGB/RGBA PNG (a small decoder: no imaging library needed)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat = 8, b""
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    assert depth == 8 and ctype in (2, 6)
    bpp = 3 if ctype == 2 else 4
    raw = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(h, w * bpp + 1)
    img = np.zeros((h, w * bpp), np.uint8)
    prev = np.zeros(w * bpp, np.uint8)
    for y in range(h):
        f, line = raw[y, 0], raw[y, 1:]
        if f == 0:
            row = line.copy()
        elif f == 1:
            row = np.cumsum(line.reshape(w, bpp), axis=0, dtype=np.uint8).reshape(-1)
        elif f == 2:
            row = line + prev
        else:
            row, up = bytearray(line.tobytes()), prev.tobytes()
            for i in range(len(row)):
                a = row[i - bpp] if i >= bpp else 0
                b = up[i]
                if f == 3:
                    row[i] = (row[i] + ((a + b) >> 1)) & 255
                else:
                    c = up[i - bpp] if i >= bpp else 0
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    row[i] = (row[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
            row = np.frombuffer(bytes(row), np.uint8)
        img[y], prev = row, row
    rgb = img.reshape(h, w, bpp)[:, :, :3].astype(np.uint32)
    return len(np.unique((rgb[..., 0] << 16) | (rgb[..., 1] << 8) | rgb[..., 2]))


def _chromium(*args, timeout=120) -> subprocess.CompletedProcess:
    return subprocess.run([CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                           "--enable-logging=stderr", "--v=0", "--virtual-time-budget=10000", *args],
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")
def test_chromium_draws_every_figure_without_console_errors(hourly, tmp_path):
    _, out, _ = hourly
    n = len(FIGURE_RX.findall(out.read_text()))
    shot = tmp_path / "page.png"
    # one chromium run dumps the page's DOM and takes its screenshot (a start is seconds)
    dom = _chromium("--dump-dom", f"--screenshot={shot}", "--window-size=1000,1100", out.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert dom.stdout.count('class="main-svg"') >= n                     # plotly drew every figure
    assert len(re.findall(r'class="js-line"[^>]*d="M', dom.stdout)) >= n   # with lines in them
    logs = dom.stderr
    assert "Uncaught" not in logs and not re.search(r"CONSOLE", logs), \
        [line for line in logs.splitlines() if "CONSOLE" in line or "Uncaught" in line]
    assert shot.is_file() and _png_colours(shot) > 200                   # not blank: lines, fills, text


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")
def test_chromium_draws_the_ladder_page(ladder):
    _, out, _ = ladder
    n = len(FIGURE_RX.findall(out.read_text()))
    dom = _chromium("--dump-dom", out.as_uri())
    assert dom.stdout.count('class="main-svg"') >= n
    assert "Uncaught" not in dom.stderr and "CONSOLE" not in dom.stderr


def test_png_decoder_counts_colours(tmp_path):
    """The decoder the browser test relies on, on a PNG written by hand (filters None, Sub, Up, Average, Paeth)."""
    w, h = 5, 5
    rng = np.random.default_rng(1)
    img = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
    raw, prev = b"", np.zeros(w * 3, np.int32)
    for y in range(h):
        line = img[y].reshape(-1).astype(np.int32)
        f = y % 5
        out = []
        for i in range(len(line)):
            a = line[i - 3] if i >= 3 else 0
            b, c = prev[i], (prev[i - 3] if i >= 3 else 0)
            p = a + b - c
            pred = [0, a, b, (a + b) // 2,
                    a if abs(p - a) <= abs(p - b) and abs(p - a) <= abs(p - c) else b if abs(p - b) <= abs(p - c)
                    else c][f]
            out.append((line[i] - pred) % 256)
        raw += bytes([f]) + bytes(out)
        prev = line

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
    (tmp_path / "t.png").write_bytes(png)
    want = len({tuple(px) for px in img.reshape(-1, 3)})
    assert _png_colours(tmp_path / "t.png") == want


def test_a_plan_without_a_solution_still_gets_a_page(tmp_path):
    """An infeasible run's plan.json (no purchases, no cash, no fleet.csv): the page says so and draws empty figures."""
    path = tmp_path / "plan.json"
    path.write_text(json.dumps({"status": "infeasible", "horizon": {"start": "2027-01-01T00:00:00", "hours": 24,
                                                                     "periods": 24},
                                "cost_usd": {}, "reserved_purchases": [], "cash_schedule": []}))
    out = tmp_path / "r.html"
    res = CliRunner().invoke(cli, ["report", str(path), "--html", str(out)])
    assert res.exit_code == 0, res.output
    page = out.read_text()
    assert "infeasible" in page and "Nothing is bought" in page and len(_figures(page)) == 3


def test_another_runs_fleet_csv_is_not_used(hourly, ladder, tmp_path):
    shutil.copy(hourly[0], tmp_path / "plan.json")
    shutil.copy(ladder[0].with_name("fleet.csv"), tmp_path / "fleet.csv")
    out = tmp_path / "r.html"
    res = CliRunner().invoke(cli, ["report", str(tmp_path / "plan.json"), "--html", str(out)])
    assert res.exit_code == 0 and "does not match this plan.json" in res.output
    assert any("monthly means" in _title(f) for f in _figures(out.read_text()))
