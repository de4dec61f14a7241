"""Test helpers: where the real fixture reports are (read in place), and a store snapshot for 'unchanged' checks."""

from __future__ import annotations

import hashlib
import math
import os
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(os.environ.get("RL_FIXTURES", ROOT.parent / "shared" / "fixtures"))
NCU = FIXTURES / "ncu"
GOLDEN = FIXTURES / "golden"

# Without the fixtures only the modules that need none are collected (conftest.py); RL_REQUIRE_FIXTURES=1 makes a
# missing folder an error instead (CI sets it: there every reader test must run on the real reports).
FIXTURES_PRESENT = NCU.is_dir()
if not FIXTURES_PRESENT and os.environ.get("RL_REQUIRE_FIXTURES") == "1":
    raise RuntimeError(f"fixture reports not found at {NCU} (set RL_FIXTURES to the shared fixtures folder)")

NCU_REPORTS = sorted(NCU.glob("*.ncu-rep"))


def fixture(name: str) -> Path:
    """Path of the fixture report whose file name starts with ``name``."""
    hits = [p for p in NCU_REPORTS if p.name.startswith(name)]
    if len(hits) != 1:
        raise KeyError(f"{name!r} matches {len(hits)} fixture reports")
    return hits[0]


def snapshot(root: Path) -> dict[str, str]:
    """Relative path -> SHA-256 of every file under ``root`` (the store's exact state)."""
    if not root.exists():
        return {}
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != ".lock"
    }


def same_table(a: Any, b: Any) -> None:
    """Assert that two Arrow tables are equal: names, types and every value, row for row (NaN equal to NaN)."""
    assert a.schema == b.schema
    assert a.num_rows == b.num_rows
    for x, y in zip(a.to_pylist(), b.to_pylist(), strict=True):
        for k in x:
            u, v = x[k], y[k]
            both_nan = isinstance(u, float) and isinstance(v, float) and math.isnan(u) and math.isnan(v)
            assert u == v or both_nan, (k, u, v)


def tiny_run(
    store_root: Path,
    run_id: str,
    kernels: list[dict],
    ceilings: list[dict],
    metrics: list[dict] | None = None,
    source_format: str = "test",
) -> None:
    """Publish a tiny hand-built run: ``kernels``/``ceilings``/``metrics`` rows hold only the columns that matter
    (the rest NULL); ceilings rows default to kernel 0's clocks and source 'test'."""
    from datetime import datetime, timezone

    import pyarrow as pa

    from rooflake.schema import CEILINGS, KERNELS, METRICS, RUNS
    from rooflake.store import Store

    def table(schema: pa.Schema, rows: list[dict], **defaults: object) -> pa.Table:
        cols = {f.name: [r.get(f.name, defaults.get(f.name)) for r in rows] for f in schema}
        return pa.table(cols, schema=schema)

    for r in ceilings:
        r.setdefault("kind", "bandwidth" if r["ceiling"] in ("DRAM", "L2", "L1") else "compute")
        r.setdefault("unit", "byte/s" if r["kind"] == "bandwidth" else "FLOP/s")
    runs = table(
        RUNS,
        [
            {
                "run_id": run_id,
                "source_path": f"/tiny/{run_id}",
                "source_format": source_format,
                "n_kernels": len(kernels),
            }
        ],
        ingested_at=datetime(2026, 1, 1, tzinfo=timezone.utc),
        labels=[],
        schema_version="1",
    )
    Store(store_root).publish(
        run_id,
        {
            "runs": runs,
            "kernels": table(KERNELS, kernels, run_id=run_id, provenance=[], flags=[]),
            "ceilings": table(CEILINGS, ceilings, run_id=run_id, kernel_id=0, source="test", clock_hz=1e9),
            "metrics": table(METRICS, metrics or [], run_id=run_id),
        },
    )


_API_DUMP = r"""
import json, math, sys, ncu_report
ctx = ncu_report.load_report(sys.argv[1])
f = lambda v: v if not isinstance(v, float) or math.isfinite(v) else repr(v)
out = []
kid = -1
for r in range(ctx.num_ranges()):
    rng = ctx.range_by_idx(r)
    for a in range(rng.num_actions()):
        act = rng.action_by_idx(a)
        kid += 1
        for n in act.metric_names():
            m = act.metric_by_name(n)
            k = m.num_instances()
            ids = None
            if k and m.has_correlation_ids():
                c = m.correlation_ids()
                ids = [str(c.value(i)) for i in range(c.num_instances())]
            out.append([kid, n, m.unit(), m.kind(), f(m.value()), [f(m.value(i)) for i in range(k)] or None, ids])
print(json.dumps(out))
"""


def api_values(path: Path) -> list[list]:
    """What ncu_report gives for every metric of ``path``, read in a fresh process (the library carries state from
    one report to the next, so the test process cannot be the reference): rows of
    [kernel_id, name, unit, kind, value, instance values, correlation ids]; non-finite floats as repr strings."""
    import json
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", _API_DUMP, str(path)], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)


# columns of NVIDIA's CSV export that describe the launch rather than name a metric: the CSV reader's list (a
# format fact, not a value) and the NVTX columns (every column naming a "Domain:")
def _non_metric(name: str) -> bool:
    from rooflake.ingest.ncu_csv import LAUNCH_COLUMNS

    return name in LAUNCH_COLUMNS or "Domain:" in name


# launch columns Nsight Compute 2025 prints before the metrics, and the kernels column(s) each one must equal
LAUNCH = {
    "Block Size": "'(' || block_x || ', ' || block_y || ', ' || block_z || ')'",
    "Grid Size": "'(' || grid_x || ', ' || grid_y || ', ' || grid_z || ')'",
    "Device": "device_id::VARCHAR",
    "CC": "compute_capability",
}
# Nsight Compute 2025 prints some derived__ values with thousands separators (16,896) even with base units
GROUPED_RE = re.compile(r"-?\d{1,3}(,\d{3})+(\.\d+)?")
INT_RE = re.compile(r"-?\d+")
DEC_RE = re.compile(r"-?\d+\.\d+")


def assert_store_equals_ncu_csv(con: Any, run: str, rows: list[list[str]]) -> None:
    """Every metric value of run ``run`` in the store (DuckDB connection ``con``) equals NVIDIA's own export of the
    report, ``rows`` of ``ncu --import X --csv --page raw --print-units base`` (header, units, one row per kernel).
    The CSV prints integers exactly and rounds other numbers to two decimals: values compare to the printed
    precision. The launch columns newer versions print (block and grid size, device, CC) equal the kernels row."""
    header, body = rows[0], rows[2:]
    stored: dict[tuple[int, str], tuple] = {
        (k, n): (d, s, u, inst)
        for k, n, d, s, u, inst in con.execute(
            "SELECT kernel_id, metric_name, value_double, value_string, value_uint64, "
            "coalesce(len(instance_values), len(instance_strings), 0) FROM metrics WHERE run_id = ?",
            [run],
        ).fetchall()
    }
    n_kernels = con.execute("SELECT count(*) FROM kernels WHERE run_id = ?", [run]).fetchone()[0]
    assert n_kernels == len(body)
    launch = [h for h in header if h in LAUNCH]
    if launch:
        sql = f"SELECT kernel_id, {', '.join(LAUNCH[h] for h in launch)} FROM kernels WHERE run_id = ?"
        kernels = {r[0]: list(r[1:]) for r in con.execute(sql, [run]).fetchall()}
        for row in body:
            want = [row[header.index(h)] for h in launch]
            assert kernels[int(row[header.index("ID")])] == want, (row[header.index("ID")], launch, want)
    metric_cols = [(i, h) for i, h in enumerate(header) if not _non_metric(h) and h not in LAUNCH]
    compared = {"int": 0, "dec": 0, "str": 0, "empty": 0}
    for row in body:
        kid = int(row[header.index("ID")])
        for i, name in metric_cols:
            assert (kid, name) in stored, f"kernel {kid}: metric {name} of the CSV is missing from the store"
            d, s, u, inst = stored[(kid, name)]
            text = row[i].replace(",", "") if GROUPED_RE.fullmatch(row[i]) else row[i]
            if INT_RE.fullmatch(text) and s is None:
                if u is not None:
                    assert u == int(text), (kid, name, u, text)
                else:
                    assert d is not None and d == int(text), (kid, name, d, text)
                compared["int"] += 1
            elif DEC_RE.fullmatch(text) and s is None:
                decimals = len(text.split(".")[1])
                assert d is not None and math.isclose(
                    d, float(text), rel_tol=1e-12, abs_tol=0.5 * 10**-decimals + 1e-9
                ), (
                    kid,
                    name,
                    d,
                    text,
                )
                compared["dec"] += 1
            elif text in ("", "no data", "n/a"):
                # instanced metrics and metrics without a value (kind 0) print nothing or 'no data'
                assert inst > 0 or (d is None and s is None), (kid, name, d, s, text)
                compared["empty"] += 1
            else:
                # string metrics; ncu may print a shortened enum (cudaFuncCachePreferNone -> CachePreferNone)
                assert s is not None and (s == text or s.endswith(text)), (kid, name, s, text)
                compared["str"] += 1
    assert compared["int"] + compared["dec"] > 100 * len(body) * 0.5
