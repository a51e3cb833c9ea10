"""The purchase memo and the workbook on the bundled models: seconds to compute the memo (its re-solves), to
write plan.xlsx, its formula count, and (with LibreOffice and poppler) its printed pages and any '###'.

    python benchmarks/workbook.py [--models example ladder] [--repeat 1]

Prints one line per model; the machine's load average is printed first (these machines are shared).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _pages(xlsx: Path, tmp: Path) -> tuple[int | None, int | None]:
    soffice = shutil.which("soffice") or shutil.which("libreoffice")
    if not soffice or not shutil.which("pdfinfo"):
        return None, None
    subprocess.run([soffice, f"-env:UserInstallation=file://{tmp / 'lo'}", "--headless", "--convert-to", "pdf",
                    "--outdir", str(tmp), str(xlsx)], check=True, capture_output=True, timeout=900)
    pdf = tmp / (xlsx.stem + ".pdf")
    info = subprocess.run(["pdfinfo", str(pdf)], check=True, capture_output=True, text=True).stdout
    pages = int(next(x.split()[-1] for x in info.splitlines() if x.startswith("Pages:")))
    text = subprocess.run(["pdftotext", str(pdf), "-"], check=True, capture_output=True, text=True).stdout
    return pages, text.count("###")


def main() -> None:
    """Plan each model, then time its memo and its workbook."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--models", nargs="+", default=["example", "ladder"])
    ap.add_argument("--repeat", type=int, default=1, help="workbook writes per model (the median is printed)")
    args = ap.parse_args()
    from planner.pipeline.run import load_inputs, make_plan, with_memo
    from planner.report.workbook import write_workbook

    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} on {os.cpu_count()} cores")
    for name in args.models:
        inp = load_inputs(ROOT / "models" / f"{name}.toml")
        t0 = time.perf_counter()
        plan = make_plan(inp, shadow=False)
        solve = time.perf_counter() - t0
        t0 = time.perf_counter()
        with_memo(plan)
        memo = time.perf_counter() - t0
        with tempfile.TemporaryDirectory() as d:
            tmp = Path(d)
            times = []
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                write_workbook(plan, tmp / "plan.xlsx")
                times.append(time.perf_counter() - t0)
            with zipfile.ZipFile(tmp / "plan.xlsx") as z:
                formulas = sum(z.read(n).count(b"<f>") for n in z.namelist() if n.startswith("xl/worksheets/"))
            pages, hashes = _pages(tmp / "plan.xlsx", tmp)
        print(f"{name}: solve {solve:.1f} s, memo {memo:.1f} s ({', '.join(f'{k} {v:.1f}' for k, v in plan.memo.seconds.items())}), "
              f"plan.xlsx {statistics.median(times):.1f} s (median of {len(times)}), {formulas:,} formulas, "
              f"{pages if pages is not None else 'n/a'} printed pages, {hashes if hashes is not None else 'n/a'} '###'")


if __name__ == "__main__":
    main()
