"""Golden tests of `range_times` and `range_roofline` on tiny runs built in code (no fixture, no torch):
inclusive and exclusive time per NVTX range path, steps, per-layer FLOPs from estimates (a module's own and its
children's), measured roofs, T_min, inefficiency, bound and the above-roof flag, all to the exact value."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pytest

from rooflake import queries
from rooflake.schema import CEILINGS, ESTIMATES, RANGES, RUNS
from rooflake.store import Store

KEY = "host | cpu | 1 threads"


def _table(schema: pa.Schema, rows: list[dict], **defaults: object) -> pa.Table:
    return pa.table(
        {f.name: [r.get(f.name, defaults.get(f.name)) for r in rows] for f in schema}, schema=schema
    )


def _publish(store: Store, run_id: str, fmt: str, **tables: pa.Table) -> None:
    runs = _table(
        RUNS,
        [{"run_id": run_id, "source_path": f"/tiny/{run_id}", "source_format": fmt, "n_kernels": 0}],
        ingested_at=datetime(2026, 1, 1, tzinfo=timezone.utc),
        labels=[],
        schema_version="1",
    )
    store.publish(run_id, {"runs": runs, **tables})


# two steps of forward(conv(), block(inner())) on one thread: (range_id, parent, name, start, end)
RANGES_ROWS = [
    (1, None, "forward", 0, 100),
    (2, 1, "conv", 10, 40),
    (3, 1, "block", 50, 90),
    (4, 3, "block.inner", 55, 65),
    (5, None, "forward", 200, 300),
    (6, 5, "conv", 210, 230),
    (7, 5, "block", 240, 290),
    (8, 7, "block.inner", 250, 270),
    (9, None, "never_closed", 400, None),
]


@pytest.fixture()
def store(tmp_path: Path) -> Store:
    s = Store(tmp_path / "store")
    depth = {None: -1}
    rows = []
    for rid, parent, name, start, end in RANGES_ROWS:
        depth[rid] = depth[parent] + 1
        rows.append(
            {"range_id": rid, "parent_id": parent, "name": name, "text": name, "start_ns": start, "end_ns": end,
             "depth": depth[rid], "domain": "m", "kind": "push_pop", "thread": 7, "process": 1}
        )  # fmt: skip
    rows.append({"range_id": 10, "name": "tick", "domain": "m", "kind": "mark", "start_ns": 5, "end_ns": 5})
    _publish(s, "r1", "nsys-sqlite", ranges=_table(RANGES, rows, run_id="r1"))
    est = [
        {"op_id": 0, "module_path": "conv", "phase": "forward", "flops": 1000.0, "bytes_compulsory": 100},
        {
            "op_id": 1,
            "module_path": "block.inner",
            "phase": "forward",
            "flops": 400.0,
            "bytes_compulsory": 400,
        },
        {"op_id": 2, "module_path": "block", "phase": "forward", "flops": 100.0, "bytes_compulsory": 100},
        {"op_id": 3, "module_path": "", "phase": "forward", "flops": None, "bytes_compulsory": 0},
        {"op_id": 4, "module_path": "conv", "phase": "backward", "flops": 2000.0, "bytes_compulsory": 200},
    ]
    _publish(s, "e1", "torch-model", estimates=_table(ESTIMATES, est, run_id="e1", dtype="float32"))
    ceil = [
        {"ceiling": "FP32", "kind": "compute", "value": 50.0e9, "unit": "FLOP/s", "source": "measured"},
        {"ceiling": "FP32", "kind": "compute", "value": 40.0e9, "unit": "FLOP/s", "source": "measured"},
        {"ceiling": "L2", "kind": "bandwidth", "value": 10.0e9, "unit": "byte/s", "source": "measured"},
        {"ceiling": "FP32", "kind": "compute", "value": 1.0, "unit": "FLOP/s", "source": "datasheet"},
    ]
    _publish(s, "c1", "measured-json", ceilings=_table(CEILINGS, ceil, run_id="c1", machine_key=KEY))
    return s


def test_range_times(store: Store) -> None:
    rows = queries.execute(store, "SELECT * FROM range_times ORDER BY layer").to_pylist()
    got = {
        r["layer"]: (
            r["depth"],
            r["calls"],
            r["unclosed"],
            r["inclusive_ns"],
            r["exclusive_ns"],
            r["parent_layer"],
        )
        for r in rows
    }
    assert got == {
        "m:forward": (1, 2, 0, 200, 200 - 50 - 90, None),
        "m:forward/conv": (2, 2, 0, 50, 50, "m:forward"),
        "m:forward/block": (2, 2, 0, 90, 90 - 30, "m:forward"),
        "m:forward/block/block.inner": (3, 2, 0, 30, 30, "m:forward/block"),
        "m:never_closed": (1, 0, 1, 0, 0, None),
    }
    by = {r["layer"]: r for r in rows}
    assert by["m:forward/block/block.inner"]["stack"] == ["forward", "block", "block.inner"]
    assert by["m:forward/block"]["share_of_top"] == 90 / 200
    assert by["m:forward"]["mean_inclusive_ns"] == 100
    assert by["m:never_closed"]["mean_inclusive_ns"] is None


def test_range_roofline(store: Store) -> None:
    rows = queries.execute(store, "SELECT * FROM range_roofline('r1', 'e1', $k) ORDER BY layer", {"k": KEY})
    by = {r["layer"]: r for r in rows.to_pylist()}
    assert set(by) == {"m:forward", "m:forward/conv", "m:forward/block", "m:forward/block/block.inner"}
    conv = by["m:forward/conv"]
    # 2 steps: 25 ns and 1000 FLOP, 100 byte per step; the roof is the best measured FP32 (50 GFLOP/s) and L2
    assert (conv["steps"], conv["calls"], conv["time_ns"], conv["flops"], conv["bytes"]) == (
        2,
        2,
        25.0,
        1000.0,
        100,
    )
    assert conv["ai"] == 10.0 and conv["flops_per_s"] == 1000 / 25e-9
    assert conv["peak_flops_per_s"] == 50e9 and conv["bw"] == 10e9
    assert conv["attainable_flops_per_s"] == min(50e9, 10.0 * 10e9)
    assert conv["t_min_ns"] == pytest.approx(max(1000 / 50e9, 100 / 10e9) * 1e9)  # 20 ns, compute
    assert conv["inefficiency"] == pytest.approx(25 / 20) and conv["bound"] == "compute"
    assert conv["above_roof"] is False
    block = by["m:forward/block"]  # its own FLOPs and its child's
    assert (block["flops"], block["bytes"], block["time_ns"]) == (500.0, 500, 45.0)
    assert block["bound"] == "L2" and block["t_min_ns"] == pytest.approx(500 / 10e9 * 1e9)
    inner = by[
        "m:forward/block/block.inner"
    ]  # 400 FLOP in 15 ns: 26.7 GFLOP/s above its L2 roof of 10 GFLOP/s
    assert inner["ai"] == 1.0 and inner["above_roof"] is True and inner["inefficiency"] < 1
    whole = by["m:forward"]  # the whole model: every forward row, one of which has no FLOP formula
    assert (whole["flops"], whole["ops_without_flops"], whole["time_ns"]) == (1500.0, 1, 100.0)
