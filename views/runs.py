"""The runs of a store: one run's ``runs`` row, and the listing ``rl runs`` prints."""

from __future__ import annotations

from typing import Any

from rooflake.queries import connect, fetch
from rooflake.schema.duck import Rows


def run_info(con: Any, run_id: str) -> dict[str, Any]:
    """The ``runs`` row of ``run_id`` (a full id) as a dict, on cursor ``con`` (from :func:`rooflake.queries.connect`):
    every column of the ``runs`` table (``source_path``, ``gpu_name``, ``labels`` as (key, value) pairs, ...)."""
    # DuckDB's own values, as pyarrow's to_pylist() gives them (fetch_pylist): a TIMESTAMPTZ through pyarrow
    # imports pandas (+0.4 s CPU of every rl roofline)
    return row_dicts(fetch(con, "run_info", {"run_id": run_id}, as_pylist=True))[0]


def row_dicts(got: Any) -> list[dict[str, Any]]:
    """The rows of ``fetch(..., as_pylist=True)`` as dicts (column name -> value), the values ``to_pylist`` gives:
    :class:`rooflake.schema.duck.Rows` without pyarrow, or a table of a type ``fetch_pylist`` leaves to Arrow."""
    if not isinstance(got, Rows):
        return list(got.to_pylist())
    return [dict(zip(got.names, row, strict=True)) for row in got.rows]


def run_list(store: Any, *, as_rows: bool = False) -> Any:
    """The runs of ``store``, oldest first (step ``run_list``): a ``pyarrow.Table`` of run_id, source (file name),
    gpu_name, kernels (launches), labels ('k=v,k=v'), ingested_at (text, UTC); ``as_rows``: the same as
    :class:`rooflake.schema.duck.Rows` (no pyarrow: what ``rl runs`` prints). Raises :class:`QueryError` when the
    store cannot be read."""
    return fetch(connect(store), "run_list", as_rows=as_rows)


def rows_where(table: Any, column: str, value: Any) -> Any:
    """The rows of Arrow ``table`` whose ``column`` equals ``value`` (a Python value), in their order; no rows
    when none does. The value compared is the column's own Arrow scalar: converting a Python value to Arrow
    (``pc.equal(col, "x")``) imports pandas wherever it is installed (~0.1 s CPU of every report)."""
    import pyarrow.compute as pc

    col = table[column]
    try:
        i = col.to_pylist().index(value)
    except ValueError:
        return table.slice(0, 0)
    return table.filter(pc.equal(col, col[i]))
