"""The quota replay on real teams (Helios virtual clusters, ../shared/data/real); skipped when absent."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

helios = pytest.importorskip("quotas_helios")
if not helios.DATA.exists():
    pytest.skip("../shared/data/real not present", allow_module_level=True)


@pytest.mark.slow
def test_helios_replay():
    out = helios.run()
    assert out["teams"] == 16 and out["gpus"] == 856
    pool = {p["policy"]: p for p in out["pool"]}
    for p in pool.values():
        assert 0 < p["utilisation"] <= 1 + 1e-9 and 0 < p["jain_index"] <= 1 + 1e-9
    # borrowing under quotas beats Helios's own static VC quotas: less waiting, no guarantee missed
    assert pool["quota"]["waiting_gpu_hours"] < pool["helios_static_quotas"]["waiting_gpu_hours"]
    assert pool["quota"]["hours_below_guarantee"] == 0
    assert pool["quota"]["utilisation"] >= pool["helios_static_quotas"]["utilisation"]
