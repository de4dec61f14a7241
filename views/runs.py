"""The runs of a store: one run's ``runs`` row, and the listing ``rl runs`` prints."""

from __future__ import annotations

from typing import Any

from rooflake.queries import connect, fetch
from rooflake.schema.duck import Rows


def run_info(con: Any, run_id: str) -> dict[str, Any]:
    """The ``runs`` row of ``run_id`` (a full id) as a dict, on cursor ``con`` (from :func:`rooflake.queries.connect`):
    every column of the ``runs`` table (``source_path``, ``gpu_name``, ``labels`` as (key, value) pairs, ...)."""
    # DuckDB's own values, as pyarrow's to_pylist() gives them (fetch_pylist): a TIMESTAMPTZ through pyarrow
    # imports pandas (+0.4 s CPU of every rl roofline; issue 14)
    got = fetch(con, "run_info", {"run_id": run_id}, as_pylist=True)
    if not isinstance(got, Rows):  # a type fetch_pylist leaves to Arrow
        return dict(got.to_pylist()[0])
    return dict(zip(got.names, got.rows[0], strict=True))


def run_list(store: Any, *, as_rows: bool = False) -> Any:
    """The runs of ``store``, oldest first (step ``run_list``): a ``pyarrow.Table`` of run_id, source (file name),
    gpu_name, kernels (launches), labels ('k=v,k=v'), ingested_at (text, UTC); ``as_rows``: the same as
    :class:`rooflake.schema.duck.Rows` (no pyarrow: what ``rl runs`` prints). Raises :class:`QueryError` when the
    store cannot be read."""
    return fetch(connect(store), "run_list", as_rows=as_rows)
