"""planner serving on extreme inputs (issue 36 item 3): every number out of its range exits 2 naming the table
row and the key with the range expected; nothing in range ends in a traceback."""

from __future__ import annotations

import math

import pytest
from click.testing import CliRunner

from planner.cli import cli
from planner.sizing import serving as sv

BASE = {
    "service": {"name": "chat", "requests_per_s": 20, "ttft_ms": 2000, "tpot_ms": 60, "percentile": 99},
    "buckets": [{"name": "short", "share": 0.7, "input_tokens": 300, "output_tokens": 150},
                {"name": "long", "share": 0.3, "input_tokens": 4000, "output_tokens": 600}],
    "gpus": [{"name": "H100", "gpus_per_replica": 2, "price_per_gpu_hour": 4.5, "memory_gb": 160, "weights_gb": 140,
              "kv_bytes_per_token": 327680, "prefill_tokens_per_s": 15000, "decode_t0_ms": 14, "decode_t1_ms": 0.15}],
}


def _toml_value(v) -> str:
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v == math.inf else ("-inf" if v == -math.inf else repr(v)))
    return str(v)


def _write(path, doc) -> str:
    lines = ["[service]"] + [f"{k} = {_toml_value(v)}" for k, v in doc["service"].items()]
    for table in ("buckets", "gpus"):
        for row in doc[table]:
            lines += ["", f"[[{table}]]"] + [f"{k} = {_toml_value(v)}" for k, v in row.items()]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def _with(table, key, value, row=0):
    doc = {"service": dict(BASE["service"]), "buckets": [dict(b) for b in BASE["buckets"]],
           "gpus": [dict(g) for g in BASE["gpus"]]}
    (doc[table] if table == "service" else doc[table][row])[key] = value
    return doc


def test_the_base_profile_sizes():
    r = CliRunner().invoke(cli, ["serving", _write_tmp(BASE)])
    assert r.exit_code == 0, r.output


def _write_tmp(doc):
    import tempfile
    from pathlib import Path

    return _write(Path(tempfile.mkdtemp()) / "p.toml", doc)


@pytest.mark.parametrize("table,key,value,where", [
    ("service", "requests_per_s", 1e12, "[service]"),  # was: a search over 10^13 slots (memory, hours)
    ("service", "ttft_ms", 1e300, "[service]"),
    ("service", "tpot_ms", 1e300, "[service]"),
    ("service", "percentile", 99.999999999, "[service]"),
    ("buckets", "input_tokens", 1e300, "[[buckets]] #1"),
    ("buckets", "output_tokens", 1e-300, "[[buckets]] #1"),  # was: a batch past 64 bits
    ("gpus", "decode_t1_ms", 1e-300, "[[gpus]] #1"),  # was: a batch past 64 bits
    ("gpus", "prefill_tokens_per_s", 1e-300, "[[gpus]] #1"),  # a throughput of nothing
    ("gpus", "kv_bytes_per_token", 1e-300, "[[gpus]] #1"),
    ("gpus", "memory_gb", 1e300, "[[gpus]] #1"),
    ("gpus", "gpus_per_replica", 10**9, "[[gpus]] #1"),
    ("gpus", "price_per_gpu_hour", 1e300, "[[gpus]] #1"),
])
def test_absurd_numbers_exit_2_naming_the_row_key_and_range(tmp_path, table, key, value, where):
    r = CliRunner().invoke(cli, ["serving", _write(tmp_path / "p.toml", _with(table, key, value))])
    assert r.exit_code == 2, r.output
    assert where in r.output and f"'{key}'" in r.output and "expected" in r.output, r.output
    assert sv.expected_range(key) in r.output


def test_memory_below_the_model_exits_2(tmp_path):
    r = CliRunner().invoke(cli, ["serving", _write(tmp_path / "p.toml", _with("gpus", "weights_gb", 170))])
    assert r.exit_code == 2 and "weights fill the memory" in r.output and "memory_gb = 160" in r.output, r.output


def test_a_load_past_any_service_exits_2(tmp_path):
    """In range one by one, not together: 10^6 requests/s, 70 % of them of 50,000 output tokens at about 60 ms a
    token (a batch of 306 on 10 TB of memory) would hold 2e9 requests in flight."""
    doc = _with("service", "requests_per_s", 1e6)
    doc["buckets"][0]["output_tokens"] = 50_000
    doc["gpus"][0]["memory_gb"] = 10_000
    r = CliRunner().invoke(cli, ["serving", _write(tmp_path / "p.toml", doc)])
    assert r.exit_code == 2 and "requests in flight" in r.output and "'requests_per_s'" in r.output, r.output
    r = CliRunner().invoke(cli, ["serving", _write(tmp_path / "q.toml", BASE), "--requests-per-s", "1e7"])
    assert r.exit_code == 2 and "--requests-per-s" in r.output, r.output


NUMERIC = [("service", k) for k in ("requests_per_s", "ttft_ms", "tpot_ms", "percentile")] + \
          [("buckets", k) for k in ("share", "input_tokens", "output_tokens")] + \
          [("gpus", k) for k in ("gpus_per_replica", "price_per_gpu_hour", "memory_gb", "weights_gb",
                                 "kv_bytes_per_token", "prefill_tokens_per_s", "decode_t0_ms", "decode_t1_ms")]


@pytest.mark.slow
def test_wide_inputs_never_crash():
    """Any numbers in any keys: exit 0 (sized) or 2 (refused, naming the key), never a traceback."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    edges = st.sampled_from([0, -1, 1, 1e-300, 1e-9, 0.5, 1e6, 1e7, 1e9, 1e12, 1e300, 2**63, -2**63,
                             math.nan, math.inf, -math.inf])
    number = st.one_of(edges, st.floats(allow_nan=True, allow_infinity=True),
                       st.floats(min_value=1e-6, max_value=1e8), st.integers(min_value=-10**20, max_value=10**20))
    overrides = st.lists(st.tuples(st.sampled_from(NUMERIC), number), min_size=1, max_size=6)

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(changes=overrides, row=st.integers(0, 1))
    def check(changes, row):
        doc = _with("service", "name", "x")
        for (table, key), value in changes:
            target = doc[table] if table == "service" else doc[table][min(row, len(doc[table]) - 1)]
            target[key] = value
        r = CliRunner().invoke(cli, ["serving", _write_tmp(doc), "--json"])
        assert "Traceback" not in r.output and "Internal error" not in r.output, r.output
        assert r.exit_code in (0, 2), (changes, r.output, r.exception)
        assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)

    check()
