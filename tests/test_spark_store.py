"""Spark over a compacted store and over object storage (issue 15): after `rl compact` and a `--force` re-ingest
of a compacted run, Spark reads each run once, from where DuckDB reads it (Store.files names the compacted files,
Store.published says which runs they serve); a store on s3:// without Hadoop's S3A connector on Spark's classpath
is one clear error naming the jars and settings. Skipped without pyspark, sqlglot or Java."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="the Spark tests need pyspark (pip install 'rooflake[spark]')")
pytest.importorskip("sqlglot", reason="the Spark tests need sqlglot (pip install 'rooflake[spark]')")
if not (shutil.which("java") or os.environ.get("JAVA_HOME")):
    pytest.skip("the Spark tests need Java 17 (java on PATH or JAVA_HOME)", allow_module_level=True)

from typer.testing import CliRunner  # noqa: E402

from rooflake import queries  # noqa: E402
from rooflake import spark as rs  # noqa: E402
from rooflake.cli import app  # noqa: E402
from rooflake.pipeline import ingest_paths  # noqa: E402
from rooflake.schema import QueryError  # noqa: E402
from rooflake.store import Store, compact  # noqa: E402

from _support import fixture  # noqa: E402

REPORTS = [
    "AveryClapp__ESMM-Research__profile_output",
    "AlpriElse__cs599k__silu",
    "NVIDIA__nsight-training__cuda__nsight_compute__sample_reports__manual_nvtx",
]
PER_RUN = (
    "SELECT r.run_id, count(k.kernel_id) AS n, sum(k.duration_ns) AS t FROM runs r "
    "LEFT JOIN kernels k ON k.run_id = r.run_id GROUP BY r.run_id ORDER BY r.run_id"
)


@pytest.fixture(scope="module")
def spark() -> Any:
    s = rs.session("local[2]")
    s.conf.set("spark.sql.shuffle.partitions", "1")
    s.conf.set("spark.sql.adaptive.enabled", "false")
    s.sparkContext.setLogLevel("ERROR")
    return s


def _rows(table: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r.values()) for r in table.to_pylist())


def test_spark_reads_a_compacted_store_with_a_reingested_run_once(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "store"
    paths = [fixture(r) for r in REPORTS]
    assert all(r.status == "ingested" for r in ingest_paths(paths, root, workers=2))
    before = _rows(Store(root).query(PER_RUN))
    compact.compact(root)
    (again,) = list(ingest_paths(paths[:1], root, force=True))
    assert again.status == "replaced"
    assert sorted(Store(root).published().values()) == ["compacted", "compacted", "partition"]
    assert len(Store(root).files("kernels")) == 2  # the re-ingested run's partition, the compacted file
    assert _rows(Store(root).query(PER_RUN)) == before
    on_spark = _rows(rs.execute(Store(root), PER_RUN, spark=spark))
    assert [(r, n, float(t)) for r, n, t in on_spark] == [(r, n, float(t)) for r, n, t in before]
    kr = "SELECT count(*) AS n FROM kernel_roofline"
    assert _rows(rs.execute(Store(root), kr, spark=spark)) == _rows(queries.execute(Store(root), kr))


def test_spark_over_s3_without_the_s3a_connector_is_one_clear_error(spark: Any) -> None:
    with pytest.raises(QueryError, match=r"hadoop-aws-[0-9.]+\.jar .* AWS SDK v2 bundle .*fs\.s3a\.endpoint"):
        rs.execute(Store("s3://rooflake-bucket/store"), "SELECT count(*) FROM runs", spark=spark)
    r = CliRunner().invoke(
        app,
        ["sql", "--engine", "spark", "--store", "s3://rooflake-bucket/store", "SELECT count(*) FROM runs"],
    )
    assert r.exit_code == 1
    assert r.stderr.count("Error:") == 1 and "hadoop-aws" in r.stderr and "Traceback" not in r.stderr


def test_spark_reads_every_generation_of_an_incrementally_compacted_store(spark: Any, tmp_path: Path) -> None:
    """Two generations (compact, ingest more, compact again) and a run re-ingested since: Spark reads each run
    once, with the same rows as DuckDB."""
    root = tmp_path / "store"
    paths = [fixture(r) for r in REPORTS]
    assert all(r.status == "ingested" for r in ingest_paths(paths, root, workers=2))
    compact.compact(root)
    (more,) = list(ingest_paths([fixture("LakshyaSingh354__CudaCode__gemm__reps__naive")], root))
    assert more.status == "ingested"
    assert compact.compact(root).segments == 2  # 3 runs > 2 x 1: the first generation is kept
    assert all(r.status == "replaced" for r in ingest_paths(paths[:1], root, force=True))
    assert len(Store(root).files("kernels")) == 3  # the re-ingested run's partition, two generations
    before = _rows(Store(root).query(PER_RUN))
    assert len(before) == 4
    on_spark = _rows(rs.execute(Store(root), PER_RUN, spark=spark))
    assert [(r, n, float(t)) for r, n, t in on_spark] == [(r, n, float(t)) for r, n, t in before]
    kr = "SELECT run_id, count(*) AS n FROM kernel_roofline GROUP BY run_id"
    assert _rows(rs.execute(Store(root), kr, spark=spark)) == _rows(queries.execute(Store(root), kr))
