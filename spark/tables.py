"""The store's tables as Spark DataFrames: the same Parquet files the DuckDB views read (``Store.files``), published
runs only.

Each table is read with its declared schema (``rooflake.schema.TABLES`` through pyspark's Arrow type mapping), so
an empty table has its columns, a file written before a column existed reads NULL there, and ``run_id`` stays text
whatever Spark would infer from the partition folder names (``run_id=<16 hex digits>``). A data table keeps only
the rows whose run has a ``runs`` row (a left-semi join on ``run_id``): a run being published, whose tables are
in place before its ``runs`` file, is never seen (docs/architecture.md §3; the DuckDB views: ``store/table_view.sql``).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from rooflake.schema import TABLES, QueryError
from rooflake.store import Store
from rooflake.store.layout import ALL_TABLES, DATA_TABLES

# Spark reads a Parquet UINT_64 column as DECIMAL(20, 0) (it has no unsigned type); metrics.value_uint64 is one
UINT64_AS = pa.decimal128(20, 0)


def spark_schema(table: str) -> Any:  # -> pyspark.sql.types.StructType
    """The Spark schema of store table ``table``: its Arrow schema (``rooflake.schema.TABLES``) mapped by
    pyspark (``from_arrow_schema``; timestamps with a time zone stay ``TIMESTAMP``, ``uint64`` becomes
    ``DECIMAL(20,0)`` as Spark's Parquet reader gives it)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    arrow = TABLES[table]
    fields = [pa.field(f.name, UINT64_AS, f.nullable) if pa.types.is_uint64(f.type) else f for f in arrow]
    return from_arrow_schema(pa.schema(fields), prefer_timestamp_ntz=False)


def spark_path(path: str) -> str:
    """``path`` as Spark's Hadoop filesystems name it: ``s3://`` → ``s3a://`` (Hadoop's S3 connector; the
    cluster supplies its endpoint and credentials, ``spark.hadoop.fs.s3a.*``); a local path as it is."""
    return "s3a://" + path[len("s3://") :] if path.startswith("s3://") else path


def read_table(
    spark: Any, store: Store, table: str, published: dict[str, str] | None = None
) -> Any:  # -> pyspark.sql.DataFrame
    """The rows of ``table``'s files of the published runs (:meth:`Store.files`: one file per run, the
    committed generation on object storage, then the compacted files of ``rl compact``), ``run_id`` a Hive
    partition column of ``STORE/<table>`` (and a column of the compacted files); an empty DataFrame with the
    table's columns when it has no file. A run read from its partitions (:meth:`Store.published`, or
    ``published`` when given: one listing for every table) is not read from the compacted files too (a
    ``--force`` re-ingest after a compaction: a left-anti join). On a local store a run's data files are moved in
    before its ``runs`` file: :func:`table_frames` filters those rows. Raises :class:`QueryError` for a store on
    object storage when the session has no S3A filesystem (:func:`check_s3a`)."""
    schema = spark_schema(table)
    if store.is_remote:
        check_s3a(spark, str(store.root))
    files = [spark_path(f) for f in store.files(table)]
    base = spark_path(f"{store.root}/{table}")
    parts = [f for f in files if f.startswith(f"{base}/run_id=")]
    others = [f for f in files if not f.startswith(f"{base}/run_id=")]  # merged files hold run_id as a column
    frames = [spark.read.schema(schema).option("basePath", base).parquet(*parts)] if parts else []
    if others:
        compacted = spark.read.schema(schema).parquet(*others)
        published = store.published() if published is None else published
        as_parts = sorted(r for r, where in published.items() if where == "partition")
        if as_parts:
            ids = spark.createDataFrame([(r,) for r in as_parts], "run_id string")
            compacted = compacted.join(ids, "run_id", "left_anti")
        frames.append(compacted)
    if not frames:
        return spark.createDataFrame([], schema)
    return frames[0] if len(frames) == 1 else frames[0].unionByName(frames[1])


def check_s3a(spark: Any, url: str) -> None:
    """Raise :class:`QueryError` when ``spark`` (a classic session; Spark Connect is the server's business) has no
    ``org.apache.hadoop.fs.s3a.S3AFileSystem`` on its classpath: pyspark ships without Hadoop's S3 connector, so
    reading ``s3a://`` needs the ``hadoop-aws`` jar of Spark's Hadoop version and the AWS SDK v2 bundle it names
    (``spark.jars.packages=org.apache.hadoop:hadoop-aws:<version>``, or the jars in ``spark.jars``), and
    ``spark.hadoop.fs.s3a.*`` settings for a non-AWS endpoint (README: Spark)."""
    jvm = getattr(spark, "_jvm", None)
    if jvm is None:
        return
    try:
        jvm.java.lang.Class.forName("org.apache.hadoop.fs.s3a.S3AFileSystem")
    except Exception:  # noqa: BLE001 - py4j's error for a missing class
        hadoop = str(jvm.org.apache.hadoop.util.VersionInfo.getVersion())
        raise QueryError(
            f"reading {url} with Spark needs Hadoop's S3A connector, which pyspark does not ship: put "
            f"hadoop-aws-{hadoop}.jar (Spark's Hadoop is {hadoop}) and the AWS SDK v2 bundle it depends on "
            f"(software.amazon.awssdk:bundle) on Spark's classpath (spark.jars, or spark.jars.packages="
            f"org.apache.hadoop:hadoop-aws:{hadoop} with network access), and set spark.hadoop.fs.s3a.endpoint, "
            "spark.hadoop.fs.s3a.path.style.access=true and the credentials for a non-AWS endpoint; or use "
            "--engine duckdb"
        ) from None


def table_frames(spark: Any, store: Store) -> dict[str, Any]:
    """``{table: DataFrame}`` for every store table (``runs``, ``kernels``, ``metrics``, ``ceilings``, ``ranges``,
    ``memops``, ``coverage``, ``estimates``); data tables hold published runs only. Columns: those of
    ``rooflake.schema.TABLES``, in order. Raises :class:`QueryError` for a store on object storage when the session
    has no S3A filesystem (:func:`check_s3a`)."""
    if store.is_remote:
        check_s3a(spark, str(store.root))
    published = store.published()
    runs = read_table(spark, store, "runs", published)
    out = {"runs": runs}
    ids = runs.select("run_id")
    for t in DATA_TABLES:
        df = read_table(spark, store, t, published)
        out[t] = df.join(ids, df["run_id"] == ids["run_id"], "left_semi")
    return {t: out[t] for t in ALL_TABLES}
