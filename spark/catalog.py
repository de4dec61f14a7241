"""Spark temp views of a store and of the named queries; a parameterized query as a DataFrame; a user's Spark SQL.

:func:`register` gives a Spark session what :func:`rooflake.queries.connect` gives DuckDB: one temp view per store
table, and one per parameter-free named query (``kernel_roofline``, ``layer_summary``, ...), translated from the
same ``queries/*.sql`` files by :mod:`rooflake.spark.translate`. A parameterized query (a DuckDB table macro,
``time_roofline($run_id, $launch_overhead_ns, ...)``) is :func:`query` with its parameters. :func:`execute` runs a
user's Spark SQL over all of them (``rl sql --engine spark``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa

from rooflake import queries
from rooflake.schema import QueryError, datasheets
from rooflake.spark.tables import table_frames
from rooflake.spark.translate import query_sql
from rooflake.store import Store

MASTER_ENV = "RL_SPARK_MASTER"
REMOTE_ENV = "SPARK_REMOTE"
LOCAL_MASTER = "local[*]"
# a CLI session over one store: few shuffle partitions (Spark's default, 200, is for cluster-sized data), no UI,
# times in UTC (the store's timestamps are UTC), and the JVM's quick JIT only (C1: a process that runs a few queries
# never repays C2's compile time; the named queries ran in half the time in tests/test_spark.py), with room for its
# code (C1 alone reserves 48 MB: a session running every named query filled it and the JVM stopped compiling, then
# failed a task with "Out of space in CodeCache for adapters")
LOCAL_CONF = {
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=256m",
    "spark.sql.shuffle.partitions": "4",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
}

# set by register() on the session it is given. Spark 4 fails to analyze a recursive CTE that joins a table on its
# partition column (range_times: `ranges` on run_id) when dynamic partition pruning is on: "[INTERNAL_ERROR] Found
# the unresolved operator: 'Filter (... dynamicpruning ...)". Static pruning (WHERE run_id = ...) still applies.
REGISTER_CONF = {
    "spark.sql.optimizer.dynamicPartitionPruning.enabled": "false",
    # Spark 4.1's RemoveRedundantAliases leaves an invalid plan for ranks' union of interval rows
    # (PLAN_VALIDATION_FAILED_RULE_IN_BATCH): the rule is left out; the rows are the same without it
    "spark.sql.optimizer.excludedRules": "org.apache.spark.sql.catalyst.optimizer.RemoveRedundantAliases",
}


def session(master: str | None = None) -> Any:  # -> pyspark.sql.SparkSession
    """A Spark session for rooflake: Spark Connect at ``$SPARK_REMOTE`` when set (pyspark's own rule), else the
    master URL ``master`` or ``$RL_SPARK_MASTER``, else ``local[*]`` (a local master with :data:`LOCAL_CONF`, its
    Python workers on this interpreter unless ``$PYSPARK_PYTHON``). Raises
    :class:`QueryError` when pyspark is not installed (the fix: ``pip install 'rooflake[spark]'``, and Java 17)."""
    try:
        from pyspark.sql import SparkSession
    except ImportError as e:
        raise QueryError("the Spark engine needs pyspark: pip install 'rooflake[spark]' (and Java 17)") from e
    builder = SparkSession.builder.appName("rooflake")
    if REMOTE_ENV not in os.environ:
        url = master or os.environ.get(MASTER_ENV) or LOCAL_MASTER
        builder = builder.master(url)
        if url.startswith("local"):
            for k, v in LOCAL_CONF.items():
                builder = builder.config(k, v)
            # Python workers on this interpreter (where rooflake is installed), not the first python3 on PATH
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    return builder.getOrCreate()


def _store(store: Store | str | Path | None) -> Store:
    return store if isinstance(store, Store) else Store(store)


def register(spark: Any, store: Store | str | Path | None) -> list[str]:
    """Create (or replace) on ``spark`` a temp view per store table (``runs``, ``kernels``, ``metrics``,
    ``ceilings``, ``ranges``, ``memops``, ``coverage``, ``estimates``, ``ops``: the store's Parquet files,
    published runs only, columns of ``rooflake.schema.TABLES``), the datasheet catalog's ``datasheets`` and
    ``datasheet_gpus`` (:func:`rooflake.schema.datasheets.tables`), and one per parameter-free named query (columns: its
    ``-- Columns:`` block, as in DuckDB). Sets :data:`REGISTER_CONF` on the session (a Spark bug). Returns the view names, in creation order. Raises :class:`QueryError`
    naming a query Spark refuses."""
    st = _store(store)
    for k, v in REGISTER_CONF.items():
        spark.conf.set(k, v)
    names = []
    for t, df in table_frames(spark, st).items():
        df.createOrReplaceTempView(t)
        names.append(t)
    for name, table in datasheets.tables().items():  # the package's catalog, as DuckDB's connections see it
        spark.createDataFrame(table).createOrReplaceTempView(name)
        names.append(name)
    for name in queries.views():
        _sql(spark, query_sql(name), {}, name).createOrReplaceTempView(name)
        names.append(name)
    return names


def _sql(spark: Any, text: str, args: dict[str, Any], what: str) -> Any:
    """``spark.sql(text, args)``; Spark's analysis errors as :class:`QueryError` after ``what``."""
    from pyspark.errors import PySparkException

    try:
        return spark.sql(text, args=args or None)
    except PySparkException as e:
        raise QueryError(f"{what} on Spark: {' '.join(str(e).split())[:2000]}") from e


def query(spark: Any, name: str, **params: Any) -> Any:  # -> pyspark.sql.DataFrame
    """Named query ``name`` on ``spark`` (after :func:`register`), its ``$parameters`` bound from ``params``
    (those with a declared default may be left out), as a DataFrame with the columns of its ``-- Columns:``
    block. Raises :class:`QueryError` for an unknown query, a missing or unknown parameter, or SQL Spark refuses."""
    q = queries.query(name)
    unknown = set(params) - set(q.parameters)
    missing = set(q.parameters) - set(params) - set(q.defaults)
    if unknown or missing:
        raise QueryError(
            f"{name} takes {', '.join(f'${p}' for p in q.parameters) or 'no parameters'}"
            + (f"; missing {', '.join(sorted(missing))}" if missing else "")
            + (f"; unknown {', '.join(sorted(unknown))}" if unknown else "")
        )
    return _sql(spark, query_sql(name, frozenset(params)), params, name)


def _check_query(sql: str, unsafe: bool) -> set[str]:
    """The ``:name`` parameter markers of ``sql`` (Spark SQL, parsed by sqlglot). Unless ``unsafe``, raises
    :class:`QueryError` when ``sql`` is not one query (``SELECT``, ``WITH``, ``VALUES``, a set operation,
    ``DESCRIBE``): ``rl sql`` never writes (as on DuckDB, :func:`rooflake.store.refuse_writes`)."""
    import sqlglot
    from sqlglot import exp

    try:
        stmts = [s for s in sqlglot.parse(sql, read="spark") if s is not None]
    except sqlglot.errors.ParseError as e:
        raise QueryError(f"SQL failed: {' '.join(str(e).split())}") from e
    if not unsafe and (len(stmts) != 1 or not isinstance(stmts[0], (exp.Query, exp.Values, exp.Describe))):
        raise QueryError(
            "the store is opened read-only: rl sql --engine spark runs one query (SELECT, WITH, DESCRIBE), "
            "unless unsafe (rl sql --unsafe)"
        )
    return {p.name for s in stmts for p in s.find_all(exp.Placeholder) if p.name}


def execute(
    store: Store | str | Path | None,
    sql: str,
    params: dict[str, Any] | None = None,
    *,
    spark: Any = None,
    unsafe: bool = False,
) -> pa.Table:
    """Run a user's Spark SQL ``sql`` over ``store``'s tables and named queries (:func:`register`); returns a
    ``pyarrow.Table`` with the columns it selects. ``params`` bind Spark's ``:name`` markers in ``sql``, and a
    parameterized named query whose parameters they all give (or default) is a view of that name too (``rl sql
    --engine spark -p run_id=ID -p launch_overhead_ns=2000 'SELECT * FROM time_roofline'``). ``spark``: a session
    (default :func:`session`). Unless ``unsafe``, only one query runs. Raises :class:`QueryError` for a refused
    statement, an unbound marker, or Spark's error."""
    used = _check_query(sql, unsafe)
    params = dict(params or {})
    unbound = used - set(params)
    if unbound:
        raise QueryError(
            f"no value for parameter(s) {', '.join(f':{m}' for m in sorted(unbound))} (give -p NAME=VALUE)"
        )
    spark = spark or session()
    register(spark, store)
    for name in queries.names():
        q = queries.query(name)
        if q.parameters and set(q.parameters) <= set(params) | set(q.defaults):
            bound = {k: params[k] for k in q.parameters if k in params}
            query(spark, name, **bound).createOrReplaceTempView(name)
    return _sql(spark, sql, {k: params[k] for k in used}, "SQL").toArrow()
