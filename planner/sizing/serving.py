"""LLM serving sized in tokens: replicas per GPU type from requests, tokens, memory and latency SLOs.

Pure functions; the CLI is ``planner serving`` (planner/cli/sizing_cmd.py), docs in
docs/slo-and-pooling.md.

One request of a size bucket has ``i`` input and ``o`` output tokens. On a GPU type (a replica of
``gpus_per_replica`` GPUs):

- **Memory bounds concurrency.** A running request holds ``(i + o) * kv_bytes_per_token`` of KV
  cache; the replica has ``memory_gb - weights_gb`` free, so at most
  ``B_mem = floor(free / ((i + o) * kv_bytes_per_token))`` requests run at once.
- **The batch sets the time per output token.** A decode step of a batch of ``B`` takes
  ``t0 + t1 * B`` (a roofline fitted to the engine's measurements), and that is each request's
  TPOT, so the TPOT SLO allows ``B_slo = floor((tpot - t0) / t1)``. The batch run is
  ``B = min(B_mem, B_slo)`` (none: the type cannot serve the bucket).
- **A request holds a batch slot** for its prefill and decode:
  ``S = i / prefill_tokens_per_s + o * (t0 + t1 * B)`` seconds (at the full batch: conservative).
- **Time to first token** is the wait for a slot plus the prefill. The slots of all replicas form one
  M/M/c queue (a router with one queue, as llm-d's): the wait's tail is Erlang C,
  ``P(W > x) = C(c, a) exp(-(c/S - lam) x)`` (:mod:`planner.sizing.queueing`), and the slots are the
  smallest ``c`` with ``P(W > ttft - i / prefill) <= 1 - percentile / 100``. Replicas are
  ``ceil(c / B)``.

Prefill interfering with decode (chunked prefill) is not modelled: fold it into ``t0``/``t1``.
With several GPU types each bucket goes to the type that serves it cheapest within the SLOs
(Mélange, Griggs et al. 2024: a mix of types beats any single type on mixed request sizes).
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from planner.sizing import queueing
from planner.core.errors import InputError, Problem

GB = 1e9


@dataclass(frozen=True)
class Bucket:
    """A size bucket of requests: its share of the arrivals and its tokens per request."""

    name: str
    share: float
    input_tokens: float
    output_tokens: float


@dataclass(frozen=True)
class GpuProfile:
    """How one GPU type serves the model (per replica of ``gpus_per_replica`` GPUs)."""

    name: str
    price_per_gpu_hour: float
    memory_gb: float
    weights_gb: float
    kv_bytes_per_token: float
    prefill_tokens_per_s: float
    decode_t0_ms: float
    decode_t1_ms: float
    gpus_per_replica: int = 1


@dataclass(frozen=True)
class Service:
    """A serving class: arrivals, size buckets and SLOs (TTFT at a percentile, TPOT at the batch)."""

    name: str
    requests_per_s: float
    ttft_ms: float
    tpot_ms: float
    buckets: tuple[Bucket, ...]
    percentile: float = 99.0


def slots_for_wait(lam, service_s, budget_s, tail):
    """Smallest slot counts c > lam*S with C(c, a) exp(-(c/S - lam) budget) <= tail (arrays)."""
    lam, service_s, budget_s = np.broadcast_arrays(np.asarray(lam, float), np.asarray(service_s, float),
                                                   np.asarray(budget_s, float))
    a = lam * service_s
    out = np.zeros(a.shape, dtype=np.int64)
    for idx in np.flatnonzero(lam > 0):  # one search per (bucket, type) pair, vectorised over candidates
        ai, si, bi = a.flat[idx], service_s.flat[idx], budget_s.flat[idx]
        lo = int(math.floor(ai)) + 1
        width = int(math.ceil(12 * math.sqrt(ai))) + 30
        while True:
            c = np.arange(lo, lo + width)
            p = queueing.erlang_c_array(c, ai) * np.exp(-(c / si - lam.flat[idx]) * bi)
            ok = np.flatnonzero(p <= tail)
            if ok.size:
                out.flat[idx] = c[ok[0]]
                break
            lo += width
    return out


PREFILL_MAX_UTILISATION = 0.8  # a replica's prefill engine is kept below this load (it queues past it)


def size_buckets(service: Service, gpus: list[GpuProfile]) -> pd.DataFrame:
    """One row per (bucket, GPU type): batch, slots, replicas, GPUs, USD/h, TTFT tail, feasibility."""
    bk = pd.DataFrame([b.__dict__ for b in service.buckets]).rename(columns={"name": "bucket"})
    gp = pd.DataFrame([g.__dict__ for g in gpus]).rename(columns={"name": "gpu_type"})
    df = bk.merge(gp, how="cross")
    tokens = df.input_tokens + df.output_tokens
    free = (df.memory_gb - df.weights_gb) * GB
    df["batch_by_memory"] = np.floor(np.maximum(free, 0) / (tokens * df.kv_bytes_per_token)).astype(np.int64)
    with np.errstate(divide="ignore"):
        b_slo = np.floor((service.tpot_ms - df.decode_t0_ms) / df.decode_t1_ms)
    df["batch_by_tpot"] = np.where(np.isfinite(b_slo), np.maximum(b_slo, 0), 1e12).astype(np.int64)
    df["batch"] = np.minimum(df.batch_by_memory, df.batch_by_tpot)
    df["tpot_ms"] = df.decode_t0_ms + df.decode_t1_ms * df.batch
    df["prefill_s"] = df.input_tokens / df.prefill_tokens_per_s
    df["service_s"] = df.prefill_s + df.output_tokens * df.tpot_ms / 1000.0
    df["requests_per_s"] = service.requests_per_s * df.share
    budget = service.ttft_ms / 1000.0 - df.prefill_s
    df["feasible"] = (df.batch >= 1) & (budget > 0)
    tail = 1.0 - service.percentile / 100.0
    slots = np.zeros(len(df), dtype=np.int64)
    f = df.feasible.to_numpy()
    slots[f] = slots_for_wait(df.requests_per_s[f], df.service_s[f], budget[f], tail)
    # a replica prefills at prefill_tokens_per_s in all (one engine its batch shares, not one per slot): its
    # prefill load lambda x input tokens / rate stays at or below PREFILL_MAX_UTILISATION, else the queue for
    # prefill grows without bound whatever the slots
    prefill_load = df.requests_per_s * df.input_tokens / df.prefill_tokens_per_s
    by_prefill = np.where(f, np.ceil(prefill_load / PREFILL_MAX_UTILISATION - 1e-9), 0)
    replicas = np.where(f, np.maximum(np.ceil(slots / np.maximum(df.batch, 1)), by_prefill), 0).astype(np.int64)
    df["replicas"] = replicas
    df["slots"] = slots  # the slots the TTFT tail needs (the replicas hold at least these; the tail is bounded on them)
    df["prefill_utilisation"] = np.where(replicas > 0, prefill_load / np.maximum(replicas, 1), 0.0)
    df["gpus"] = df.replicas * df.gpus_per_replica
    df["usd_per_hour"] = np.where(f, df.gpus * df.price_per_gpu_hour, np.inf)
    a = df.requests_per_s * df.service_s
    erl = queueing.erlang_c_array(np.maximum(slots, 1), a)
    with np.errstate(over="ignore", invalid="ignore"):
        df["p_ttft_above_slo"] = np.where(f & (df.requests_per_s > 0),
                                          erl * np.exp(-(slots / df.service_s - df.requests_per_s) * budget),
                                          np.where(f, 0.0, 1.0))
    df["utilisation"] = np.where(df.replicas > 0, a / np.maximum(df.replicas.astype(float) * df.batch, 1), 0.0)
    return df[["bucket", "gpu_type", "share", "input_tokens", "output_tokens", "requests_per_s", "batch_by_memory",
               "batch_by_tpot", "batch", "tpot_ms", "prefill_s", "service_s", "slots", "replicas", "gpus",
               "usd_per_hour", "p_ttft_above_slo", "utilisation", "prefill_utilisation", "feasible"]]


def choose(table: pd.DataFrame) -> pd.DataFrame:
    """Each bucket's cheapest feasible GPU type (ties: fewer GPUs, then the name); unservable buckets kept."""
    order = {b: i for i, b in enumerate(pd.unique(table.bucket))}
    t = table.assign(_o=table.bucket.map(order))
    t = t.sort_values(["_o", "usd_per_hour", "gpus", "gpu_type"], kind="stable")
    return t.groupby("bucket", sort=False).head(1).drop(columns="_o").reset_index(drop=True)


def single_type_costs(table: pd.DataFrame) -> pd.Series:
    """USD/h of serving every bucket on one GPU type (inf where a bucket cannot run on it)."""
    return table.groupby("gpu_type")["usd_per_hour"].sum().sort_values()


def plan(service: Service, gpus: list[GpuProfile]) -> dict:
    """The sizing table, each bucket's choice, the mix's cost against each single type's."""
    table = size_buckets(service, gpus)
    chosen = choose(table)
    singles = single_type_costs(table)
    mix = float(chosen.usd_per_hour.sum())
    best_single = float(singles.iloc[0]) if len(singles) else math.inf
    return {"service": service.name, "table": table, "chosen": chosen, "mix_usd_per_hour": mix,
            "single_type_usd_per_hour": singles, "best_single_type": singles.index[0] if len(singles) else None,
            "saving_vs_best_single": (1 - mix / best_single) if math.isfinite(best_single) and best_single > 0
            else None,
            "gpus_by_type": chosen[chosen.feasible].groupby("gpu_type")["gpus"].sum()}


# ------------------------------------------------------------------ input file (TOML)

_SERVICE_KEYS = {"name": str, "requests_per_s": float, "ttft_ms": float, "tpot_ms": float, "percentile": float}
_BUCKET_KEYS = {"name": str, "share": float, "input_tokens": float, "output_tokens": float}
_GPU_KEYS = {"name": str, "price_per_gpu_hour": float, "memory_gb": float, "weights_gb": float,
             "kv_bytes_per_token": float, "prefill_tokens_per_s": float, "decode_t0_ms": float,
             "decode_t1_ms": float, "gpus_per_replica": int}
#: Each number's range (low, low included, high): wide enough for any engine and model, narrow enough that the
#: sizing stays finite (a batch, slot and replica count fit 64-bit integers; the queue's search ends).
RANGES = {
    "requests_per_s": (0.0, True, 1e6, "requests per second"),
    "ttft_ms": (0.0, False, 3.6e6, "milliseconds, up to an hour"),
    "tpot_ms": (0.0, False, 6e4, "milliseconds, up to a minute a token"),
    "percentile": (0.0, False, 99.9999, "a percentile below 100"),
    "share": (0.0, True, 1.0, "a share of the requests"),
    "input_tokens": (0.0, True, 1e7, "tokens a request, up to 10 million"),
    "output_tokens": (1.0, True, 1e6, "tokens a request, at least one"),
    "price_per_gpu_hour": (0.0, False, 1e4, "USD per GPU-hour"),
    "memory_gb": (0.0, False, 1e5, "GB a replica, up to 100 TB"),
    "weights_gb": (0.0, True, 1e5, "GB a replica, up to 100 TB"),
    "kv_bytes_per_token": (1.0, True, 1e8, "bytes a token, 1 to 100 MB"),
    "prefill_tokens_per_s": (1.0, True, 1e9, "tokens per second a replica, at least 1"),
    "decode_t0_ms": (0.0, True, 6e4, "milliseconds a decode step, up to a minute"),
    "decode_t1_ms": (1e-6, True, 6e4, "milliseconds per request in the batch, 1e-6 to a minute"),
    "gpus_per_replica": (1.0, True, 1024.0, "GPUs a replica"),
}
#: The most requests in flight (arrivals x time each is served) one bucket may need on one GPU type.
MAX_IN_FLIGHT = 1e9


def expected_range(key: str) -> str:
    """The range of ``key`` in words, as an error message gives it."""
    lo, closed, hi, unit = RANGES[key]
    low = f">= {lo:g}" if closed else f"> {lo:g}"
    return (f"a whole number from {lo:g} to {hi:g}" if key == "gpus_per_replica" else
            f"a number {low} and <= {hi:g} ({unit})")


def in_range(key: str, v: float) -> bool:
    """True when ``v`` lies in ``key``'s range (:data:`RANGES`)."""
    lo, closed, hi, _ = RANGES[key]
    return math.isfinite(v) and (v >= lo if closed else v > lo) and v <= hi


def _check_table(file: str, where: str, raw: dict, keys: dict, problems: list,
                 optional=frozenset({"percentile", "gpus_per_replica"})) -> dict:
    out = {}
    for k in raw:
        if k not in keys:
            problems.append(Problem(file, f"unknown key in {where}", column=k, expected=", ".join(keys)))
    for k, typ in keys.items():
        if k not in raw:
            if k not in optional:
                problems.append(Problem(file, f"{where} is missing a key", column=k))
            continue
        v = raw[k]
        if typ is str:
            if not isinstance(v, str) or not v.strip():
                problems.append(Problem(file, f"{where}: not a name", column=k, value=v, expected="text"))
            out[k] = str(v)
            continue
        ok = isinstance(v, (int, float)) and not isinstance(v, bool) and in_range(k, float(v))
        ok = ok and (typ is not int or float(v).is_integer())
        if not ok:
            problems.append(Problem(file, f"{where}: {k} out of range", column=k, value=v, expected=expected_range(k)))
            continue
        out[k] = typ(v)
    return out


def check_load(service: Service, gpus: list[GpuProfile], source: str = "the serving profile") -> None:
    """InputError (exit 2) where a bucket would need more than :data:`MAX_IN_FLIGHT` requests in flight on a GPU
    type that can serve it: the rate, tokens and decode times of no single service (and a queue no search ends)."""
    rate = service.requests_per_s
    for b in service.buckets:
        for g in gpus:
            tokens = b.input_tokens + b.output_tokens
            mem = math.floor(max((g.memory_gb - g.weights_gb) * GB, 0.0) / (tokens * g.kv_bytes_per_token))
            slo = math.floor((service.tpot_ms - g.decode_t0_ms) / g.decode_t1_ms)
            batch = min(mem, max(slo, 0))
            prefill = b.input_tokens / g.prefill_tokens_per_s
            if batch < 1 or prefill >= service.ttft_ms / 1000.0:
                continue  # this type cannot serve the bucket: nothing is sized
            in_flight = rate * b.share * (prefill + b.output_tokens * (g.decode_t0_ms + g.decode_t1_ms * batch) / 1000)
            if in_flight > MAX_IN_FLIGHT:
                raise InputError(Problem(source, f"bucket '{b.name}' on '{g.name}' would hold {in_flight:.3g} "
                                         "requests in flight (requests_per_s x share x the time each is served)",
                                         column="requests_per_s", value=rate,
                                         expected=f"at most {MAX_IN_FLIGHT:g} requests in flight: a lower "
                                                  "requests_per_s, or fewer tokens a request"))


def read_profile(path: Path) -> tuple[Service, list[GpuProfile]]:
    """A serving profile: ``[service]``, ``[[buckets]]`` and ``[[gpus]]`` (docs/slo-and-pooling.md); exit 2."""
    name = str(path)
    try:
        doc = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(Problem(name, f"cannot read the serving profile: {exc.strerror}")) from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(Problem(name, f"not valid TOML: {exc}")) from None
    problems: list[Problem] = []
    for k in doc:
        if k not in ("service", "buckets", "gpus"):
            problems.append(Problem(name, "unknown table", column=k, expected="service, buckets, gpus"))
    shapes = (("service", dict, "a [service] table"), ("buckets", list, "[[buckets]] tables"),
              ("gpus", list, "[[gpus]] tables"))
    for key, kind, want in shapes:
        v = doc.get(key, kind())
        if not isinstance(v, kind) or (kind is list and not all(isinstance(x, dict) for x in v)):
            problems.append(Problem(name, f"'{key}' has the wrong shape", column=key, expected=want))
    if problems:
        raise InputError(problems)
    svc = _check_table(name, "[service]", doc.get("service", {}), _SERVICE_KEYS, problems,
                       optional={"name", "percentile"})
    buckets = [_check_table(name, f"[[buckets]] #{i}", b, _BUCKET_KEYS, problems)
               for i, b in enumerate(doc.get("buckets", []), start=1)]
    gpus = [_check_table(name, f"[[gpus]] #{i}", g, _GPU_KEYS, problems)
            for i, g in enumerate(doc.get("gpus", []), start=1)]
    if not buckets:
        problems.append(Problem(name, "no [[buckets]]", expected="at least one size bucket"))
    if not gpus:
        problems.append(Problem(name, "no [[gpus]]", expected="at least one GPU type profile"))
    if problems:
        raise InputError(problems)
    total = sum(b["share"] for b in buckets)
    if abs(total - 1.0) > 1e-6:
        problems.append(Problem(name, "the buckets' shares do not add up to 1", column="share", value=total))
    for label, rows in (("buckets", buckets), ("gpus", gpus)):
        names = [r["name"] for r in rows]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            problems.append(Problem(name, f"[[{label}]] names repeat", column="name", value=sorted(dup)[0]))
    for g in gpus:
        if g["weights_gb"] >= g["memory_gb"]:
            problems.append(Problem(name, f"[[gpus]] {g['name']}: the weights fill the memory",
                                    column="weights_gb", value=g["weights_gb"],
                                    expected=f"less than memory_gb = {g['memory_gb']:g}"))
    if problems:
        raise InputError(problems)
    service = Service(svc.get("name", Path(path).stem), svc["requests_per_s"], svc["ttft_ms"], svc["tpot_ms"],
                      tuple(Bucket(**b) for b in buckets), svc.get("percentile", 99.0))
    profiles = [GpuProfile(**g) for g in gpus]
    check_load(service, profiles, name)
    return service, profiles
