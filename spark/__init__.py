"""rooflake.spark: the store and the named queries on Apache Spark (extra ``rooflake[spark]``: pyspark, sqlglot).

- :func:`register` ``(spark, store)``: Spark temp views of every store table (the same Parquet files, published runs
  only) and of every parameter-free named query, translated from the same ``queries/*.sql`` files from DuckDB's
  dialect to Spark SQL with sqlglot (:mod:`rooflake.spark.translate`; the hand fixes sqlglot needs are its
  ``REWRITES``). Then ``spark.sql("SELECT ... FROM kernel_roofline")`` on a cluster over the same store.
- :func:`query` ``(spark, name, **params)``: a parameterized named query (a table macro in DuckDB) as a DataFrame.
- :func:`execute` ``(store, sql, params)``: a user's Spark SQL as a ``pyarrow.Table`` (``rl sql --engine spark``).
- :func:`session`: ``local[*]``, or ``$RL_SPARK_MASTER``, or Spark Connect at ``$SPARK_REMOTE``.
- :func:`ingest` ``(spark, paths, store, ingest_file)``: report files ingested on the executors, one task per file,
  each with the same reader code (``rooflake.pipeline.ingest_file``) into the shared store.
"""

from __future__ import annotations

from rooflake.spark.catalog import execute, query, register, session
from rooflake.spark.fanout import ingest
from rooflake.spark.translate import REWRITES, to_spark

__all__ = ["REWRITES", "execute", "ingest", "query", "register", "session", "to_spark"]
