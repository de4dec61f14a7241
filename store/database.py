"""A store's DuckDB database: one view per table over its Parquet files, read-only unless asked otherwise.

The statements are the ``store/*.sql`` files: ``table_view`` (+ ``where_published``), ``empty_table``,
``named_view``, ``failing_view``, ``lock_down``.

Read-only means two things. The database itself (:func:`build`, ``unsafe=False``) can read the store's files and
nothing else — no other file, no ``COPY … TO``, no ``ATTACH``, no ``INSTALL``/``LOAD``, no setting changed after
it is built (DuckDB's ``enable_external_access``, ``allowed_directories``, ``lock_configuration``). And a user's
SQL (:func:`run_read_only`) may hold only queries — ``SELECT`` (with ``WITH``, ``FROM``, ``DESCRIBE``, ``SHOW``,
``SUMMARIZE``, ``VALUES``) and ``EXPLAIN`` — so ``CREATE``, ``INSERT``, ``COPY`` (even into the store's own
folder, which the views must be able to read), ``ATTACH``, ``SET`` are refused before anything runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

from rooflake.schema import TABLES, QueryError
from rooflake.schema.duck import duck_type, fetch_arrow, sql_file, sql_str, sql_template
from rooflake.store.layout import ALL_TABLES, DATA_TABLES, PART, has_files, partition, table_glob
from rooflake.store.remote import Snapshot

PKG = "rooflake.store"
READ_ONLY_STATEMENTS = ("SELECT", "EXPLAIN")


def _sources(root: Path | Snapshot, only_runs: list[str] | None) -> dict[str, str | None]:
    """Per table, the ``read_parquet`` file argument of its view (a glob, or a list of paths when ``only_runs``;
    on object storage the list of committed files, :meth:`Snapshot.sources`), or None when the table has no file
    (or no run is published)."""
    if isinstance(root, Snapshot):
        return root.sources(only_runs)
    if only_runs is not None:
        files = {
            t: [str(p) for r in only_runs if (p := partition(root, t, r) / PART).exists()] for t in ALL_TABLES
        }
        out = {
            t: "[" + ", ".join(f"'{sql_str(f)}'" for f in fs) + "]" if fs else None for t, fs in files.items()
        }
    else:
        out = {t: f"'{sql_str(table_glob(root, t))}'" if has_files(root, t) else None for t in ALL_TABLES}
    if out["runs"] is None:
        out = dict.fromkeys(ALL_TABLES)
    return out


def _create_failing_view(con: Any, table: str, error: str) -> None:
    """View ``table`` with the table's columns whose every read raises ``error`` plus a pointer to ``rl doctor``
    (``failing_view.sql``)."""
    message = sql_str(f"{error} (Store.doctor / `rl doctor` lists every damaged file of the store)")
    cols = ", ".join(
        f"CAST(error('{message}') AS {duck_type(f.type)}) AS \"{f.name}\"" for f in TABLES[table]
    )
    con.execute(sql_template(PKG, "failing_view.sql", table=table, columns=cols, message=f"'{message}'"))


def _create_views(con: Any, root: Path | Snapshot, only_runs: list[str] | None) -> None:
    """Views ``runs`` and one per data table: a data view keeps only rows whose run has a ``runs`` row; a table
    without files is an empty table with the declared columns; a table whose files DuckDB cannot bind (a damaged
    footer) a view that fails when read, naming the file (:func:`_create_failing_view`)."""
    import duckdb

    where = sql_template(PKG, "where_published.sql")
    sources = _sources(root, only_runs)
    for t in ("runs", *DATA_TABLES):  # runs first: the data views read it
        files = sources[t]
        if files is None:
            cols = ", ".join(f'"{f.name}" {duck_type(f.type)}' for f in TABLES[t])
            con.execute(sql_template(PKG, "empty_table.sql", table=t, columns=cols))
        else:
            clause = where if t in DATA_TABLES else ""
            try:
                con.execute(sql_template(PKG, "table_view.sql", table=t, files=files, where=clause))
            except duckdb.Error as e:  # a damaged footer: this table fails when read, the others work
                _create_failing_view(con, t, f"store table {t} cannot be read: {' '.join(str(e).split())}")


def lock_down(con: Any, root: Path | Snapshot) -> None:
    """Let ``con``'s database read files under ``root`` only, and change no setting from now on (``lock_down.sql``)."""
    params = {"dirs": [root.allowed_directory() if isinstance(root, Snapshot) else str(root.resolve()) + "/"]}
    for stmt in con.extract_statements(sql_file(PKG, "lock_down.sql")):
        con.execute(stmt.query, {k: params[k] for k in stmt.named_parameters})


def build(
    root: Path | Snapshot,
    only_runs: list[str] | None = None,
    extra_views: dict[str, str] | None = None,
    setup: str = "",
    *,
    after: str = "",
    unsafe: bool = False,
) -> Any:  # -> duckdb.DuckDBPyConnection
    """An in-memory DuckDB database with one view per store table (``runs``, ``kernels``, ``metrics``,
    ``ceilings``, ``ranges``, ``memops``, ``coverage``, ``estimates``), each reading ``root/<table>/*/*.parquet`` (or only the
    files of ``only_runs``). An empty store gives empty views with the declared columns. ``setup`` is run first
    (macros, persistent so that every cursor sees them); ``extra_views`` maps view names to SQL bodies created
    after the table views; ``after`` runs once they exist (table macros bind to them when created). Unless
    ``unsafe``, the database is then locked down (:func:`lock_down`). ``root`` a :class:`Snapshot`: a store on
    object storage, read through its fsspec filesystem registered with the database. Raises
    ``duckdb.Error`` when a statement fails."""
    import duckdb

    con = duckdb.connect()
    if isinstance(root, Snapshot):
        root.register(con)
    if setup:
        con.execute(setup)
    _create_views(con, root, only_runs)
    for name, body in (extra_views or {}).items():
        con.execute(sql_template(PKG, "named_view.sql", name=name, body=body))
    if after:
        con.execute(after)
    if not unsafe:
        lock_down(con, root)
    return con


def refuse_writes(con: Any, sql: str) -> None:
    """Raise :class:`QueryError` unless every statement of ``sql`` is a query (``SELECT``, ``EXPLAIN``; see the
    module docstring). Raises :class:`QueryError` for SQL DuckDB cannot parse, with its message."""
    import duckdb

    try:
        statements = con.extract_statements(sql)
    except duckdb.Error as e:
        raise QueryError(f"SQL failed: {' '.join(str(e).split())}") from e
    for s in statements:
        kind = s.type.name
        if kind not in READ_ONLY_STATEMENTS:
            first = " ".join(s.query.split())[:40]
            raise QueryError(
                f"the store is opened read-only: a {kind} statement ({first!r}) is refused; queries "
                f"(SELECT, EXPLAIN) only, unless unsafe (rl sql --unsafe)"
            )


def run_read_only(
    con: Any, sql: str, params: dict[str, Any] | None = None, *, unsafe: bool = False
) -> pa.Table:
    """Run a user's ``sql`` with named ``params`` on ``con``; the result as a ``pyarrow.Table``. Unless ``unsafe``,
    statements other than queries are refused first (:func:`refuse_writes`). Raises :class:`QueryError` with
    DuckDB's message on one line (a damaged Parquet file is named in it, as DuckDB reports it)."""
    import duckdb

    if not unsafe:
        refuse_writes(con, sql)
    try:
        return fetch_arrow(con, sql, params)
    except duckdb.Error as e:
        raise QueryError(f"SQL failed: {' '.join(str(e).split())}") from e
