"""rooflake.queries: named SQL questions kept as documented ``*.sql`` files, and the runner that loads them.

Each file starts with a ``-- name: what it answers`` header and one comment per output column with its unit.
Queries take no string formatting: they read the store's views (``runs``, ``kernels``, ``metrics``,
``ceilings``) and each other (every query is also a view of the same name), and callers filter with named
parameters (``$run_id``).
"""

from __future__ import annotations

from importlib import resources
from typing import Any

from rooflake.schema import QueryError


def names() -> list[str]:
    """Names of the bundled queries (file stems), sorted."""
    return sorted(
        p.name[:-4] for p in resources.files(__name__).iterdir() if p.name.endswith(".sql") and p.is_file()
    )


def load(name: str) -> str:
    """SQL text of query ``name`` (without a trailing semicolon). Raises :class:`QueryError` if unknown."""
    if name not in names():
        raise QueryError(f"no query named {name!r} (known: {', '.join(names())})")
    return resources.files(__name__).joinpath(f"{name}.sql").read_text(encoding="utf-8").strip().rstrip(";")


def header(name: str) -> str:
    """The first comment line of a query, without its ``-- name:`` prefix."""
    first = load(name).splitlines()[0].lstrip("- ").strip()
    return first.split(":", 1)[1].strip() if first.startswith(f"{name}:") else first


def views() -> dict[str, str]:
    """``{name: sql}`` of every query, in dependency-safe order (queries only read the base views)."""
    return {n: load(n) for n in names()}


def connect(store: Any):  # -> duckdb.DuckDBPyConnection
    """A DuckDB connection over ``store`` (a :class:`rooflake.store.Store`) with every query as a view."""
    return store.connect(extra_views=views())


def run(store: Any, name: str, params: dict[str, Any] | None = None, where: str | None = None) -> Any:
    """Run query ``name`` over ``store``; returns a ``pyarrow.Table`` with the columns its header documents.

    ``where`` is an SQL predicate using named parameters (e.g. ``"run_id = $run_id"``) bound from ``params``.
    Raises :class:`QueryError` for an unknown query or a failing SQL statement.
    """
    import duckdb

    con = connect(store)
    sql = f"SELECT * FROM {name}" + (f" WHERE {where}" if where else "")
    if name not in names():
        raise QueryError(f"no query named {name!r} (known: {', '.join(names())})")
    try:
        return con.execute(sql, params or {}).fetch_arrow_table()
    except duckdb.Error as e:
        raise QueryError(f"query {name}: {e}") from e
