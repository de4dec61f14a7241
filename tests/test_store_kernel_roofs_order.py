"""``kernel_roofs`` rows come in a fixed order: by run, then by kernel launch (``kernel_id``, the launch's
index in its report), as a performance engineer reads a report top to bottom. Real fixtures: the H100 PCIe
report (three FP32 SiLU kernels) and the A10G report, ingested into one store."""

from __future__ import annotations

from pathlib import Path

from rooflake import queries
from rooflake.pipeline import ingest_paths
from rooflake.store import Store

from _support import fixture

H100 = fixture("AlpriElse__cs599k")
A10G = fixture("AveryClapp__ESMM-Research__profile_output")


def test_kernel_roofs_ordered_by_run_then_launch(tmp_path: Path) -> None:
    assert all(r.status == "ingested" for r in ingest_paths([H100, A10G], tmp_path, workers=1))
    con = queries.connect(Store(tmp_path))
    rows = queries.fetch(con, "kernel_roofs").to_pylist()
    keys = [(r["run_id"], r["kernel_id"]) for r in rows]
    assert len(keys) > 3
    assert keys == sorted(keys)
    for _ in range(3):  # the same order on every read, not just a lucky hash order
        assert [(r["run_id"], r["kernel_id"]) for r in queries.fetch(con, "kernel_roofs").to_pylist()] == keys
