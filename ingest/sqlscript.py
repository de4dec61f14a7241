"""Run the readers' ``.sql`` files in DuckDB, statement by statement, with named parameters.

A file (package data of :mod:`rooflake.ingest`) is split into statements by DuckDB's own parser
(``duckdb.extract_statements``, which also finds the ``$name`` parameters each statement uses outside comments).
:func:`run` executes them in order, binding each statement to exactly the parameters it uses (DuckDB refuses
extra ones). With debug logging on, each statement's time and the process's resident memory are logged.
"""

from __future__ import annotations

import functools
import logging
import time
from importlib import resources
from typing import Any

log = logging.getLogger(__name__)


@functools.cache
def statements(name: str) -> tuple[Any, ...]:
    """The statements (``duckdb.Statement``: ``.query``, ``.named_parameters``) of the file ``name`` of
    :mod:`rooflake.ingest`, in order. Raises ``FileNotFoundError`` for an unknown file."""
    import duckdb

    text = resources.files("rooflake.ingest").joinpath(name).read_text(encoding="utf-8")
    return tuple(duckdb.extract_statements(text))


def text(name: str) -> str:
    """The text of the file ``name`` of :mod:`rooflake.ingest` (for a statement run elsewhere than DuckDB)."""
    return resources.files("rooflake.ingest").joinpath(name).read_text(encoding="utf-8")


def bind(stmt: Any, params: dict[str, Any], source: str = "") -> dict[str, Any]:
    """The values of the parameters ``stmt`` uses, from ``params``. Raises ``ValueError`` naming ``source`` and the
    parameter when one has no value (a mistake in the SQL file or its caller)."""
    missing = sorted(set(stmt.named_parameters) - params.keys())
    if missing:
        raise ValueError(f"{source or 'SQL'}: no value for ${', $'.join(missing)}")
    return {n: params[n] for n in stmt.named_parameters}


def run(con: Any, name: str, **params: Any) -> Any:
    """Execute every statement of the file ``name`` on DuckDB connection ``con``, in order, each bound to the
    ``params`` it uses. Returns ``con`` after the last statement (fetch its result from it, if a query). Raises
    ``ValueError`` for a parameter without a value, ``duckdb.Error`` when a statement fails."""
    for stmt in statements(name):
        _execute(con, stmt, bind(stmt, params, name))
    return con


def arrow(con: Any, name: str, **params: Any) -> Any:
    """:func:`run` the file ``name`` on ``con`` but for its last statement, a query, whose result is returned as a
    ``pyarrow.Table`` (through a relation: the DB-API result's Arrow export copies the rows once more). Raises as
    :func:`run` does."""
    from rooflake.schema.duck import fetch_arrow

    return fetch_arrow(con, *_last_query(con, name, params))


def batches(con: Any, name: str, batch_rows: int, **params: Any) -> Any:
    """As :func:`arrow`, but the last statement's result as a ``pyarrow.RecordBatchReader`` of ``batch_rows``-row
    batches that DuckDB computes as they are read (no whole result in memory; the connection takes no other
    statement until the reader is exhausted or closed). Raises as :func:`run` does."""
    query, values = _last_query(con, name, params)
    rel = con.sql(query, params=values or None)
    return (getattr(rel, "to_arrow_reader", None) or rel.fetch_arrow_reader)(batch_rows)


def _last_query(con: Any, name: str, params: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Execute every statement of the file ``name`` but the last, a query; returns that query's text and the
    parameter values it uses."""
    *first, last = statements(name)
    for stmt in first:
        _execute(con, stmt, bind(stmt, params, name))
    return last.query, bind(last, params, name)


def _execute(con: Any, stmt: Any, values: dict[str, Any]) -> None:
    """Execute one statement with its parameter ``values``; with debug logging on, log its time and the process's
    resident memory."""
    t0 = time.perf_counter()
    con.execute(stmt, values) if values else con.execute(stmt)
    if log.isEnabledFor(logging.DEBUG):
        log.debug(
            "%.3f s  %4d MB  %s", time.perf_counter() - t0, _rss_mb(), " ".join(stmt.query.split())[:60]
        )


def _rss_mb() -> int:
    """Current resident memory of this process in MB (Linux; 0 elsewhere), for the debug log."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * 4096 >> 20
    except OSError:
        return 0
