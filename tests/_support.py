"""Test helpers: where the real fixture reports are (read in place), and a store snapshot for 'unchanged' checks."""

from __future__ import annotations

import hashlib
import math
import os
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
