"""The roofline chart draws a Tensor-Core kernel's own tensor roof, its name and value taken from the data
(kernel_roofline.peak_ceiling, the ceiling its tensor roof names; the rule: tests/test_tensor_roofs.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _support import fixture

FA_AFTER = "Bias92__flashattn-cuda__docs__profiling__ncu_sections__db_full_after_n4096_full"
FA_PATH = "sm__ops_path_tensor_src_fp16_dst_fp32_sparsity_off"


@pytest.mark.parametrize("level", ["dram", "all"])
def test_chart_draws_the_tensor_roof_with_its_name_and_value(fixture_store: Path, level: str) -> None:
    """The FlashAttention run's chart draws the TENSOR FP16→FP32 roof at ncu's peak; nothing is reported missing."""
    from rooflake import queries
    from rooflake.render.roofline import roofline_chart
    from rooflake.store import Store

    con = queries.connect(Store(fixture_store))
    p = {"path": str(fixture(FA_AFTER).resolve())}
    run = con.sql("SELECT run_id FROM runs WHERE source_path = $path", params=p).fetchall()[0][0]
    metric = dict(
        con.sql(
            "SELECT metric_name, value_double FROM metrics WHERE run_id = $r", params={"r": run}
        ).fetchall()
    )
    points = con.sql("SELECT * FROM kernel_roofline WHERE run_id = $r", params={"r": run}).to_arrow_table()
    ceilings = con.sql("SELECT * FROM run_ceilings WHERE run_id = $r", params={"r": run}).to_arrow_table()
    assert points.column("peak_ceiling").to_pylist()[-1] == "TENSOR FP16→FP32"
    spec = roofline_chart(points, ceilings, level=level, precision="all").to_dict()
    text = json.dumps(spec, ensure_ascii=False)
    assert "No valid ceiling" not in text
    peak = metric[f"{FA_PATH}.sum.peak_sustained"] * metric["sm__cycles_elapsed.avg.per_second"]
    rows = [
        r for d in spec["datasets"].values() for r in d if isinstance(r, dict) and r.get("kind") == "compute"
    ]
    assert {r["ceiling"] for r in rows} == {"TENSOR FP16→FP32"}
    assert {r["value"] for r in rows} == {peak}
    assert "TENSOR FP16→FP32 40.1 TFLOP/s" in text
