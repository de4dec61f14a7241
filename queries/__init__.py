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
from rooflake.store import fetch_arrow


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
        return fetch_arrow(con, sql, params or {})
    except duckdb.Error as e:
        raise QueryError(f"query {name}: {e}") from e


def execute(store: Any, sql: str, params: dict[str, Any] | None = None) -> Any:
    """Run ad-hoc SQL over the store's views and every named query; returns a ``pyarrow.Table``.

    Raises :class:`QueryError` with DuckDB's message (syntax errors, unknown columns or tables).
    """
    import duckdb

    con = connect(store)
    try:
        return fetch_arrow(con, sql, params or {})
    except duckdb.Error as e:
        msg = str(e).strip().replace("\n", " ")
        raise QueryError(f"SQL failed: {msg}") from e


def roofline_inputs(store: Any, run_id: str | None, level: str) -> dict[str, Any]:
    """What a roofline chart of one run needs, or a :class:`RooflineDataError` that says what is missing.

    Returns ``{"run_id": str, "run": dict (runs row), "points": pa.Table (kernel_roofline rows of the run),
    "ceilings": pa.Table (run_ceilings rows of the run)}``. ``run_id`` may be a unique prefix; None = latest
    ingested run. Raises :class:`RunNotFoundError` (unknown run, empty store) and :class:`RooflineDataError`
    when no kernel of the run has FLOP counters, bytes at ``level`` and a duration (message: the metrics that are
    missing, from ``kernels.provenance``, and how to collect them).
    """
    from rooflake.schema import RooflineDataError, RunNotFoundError
    from rooflake.schema.catalog import COLLECT_HINT

    if run_id is None:
        ids = store.run_ids()
        if not ids:
            raise RunNotFoundError(
                f"store {store.root} holds no runs (ingest one with `rl ingest FILE.ncu-rep`)"
            )
    con = connect(store)
    if run_id is None:
        run_id = con.execute("SELECT run_id FROM runs ORDER BY ingested_at DESC, run_id LIMIT 1").fetchall()[
            0
        ][0]
    else:
        run_id = store.resolve(run_id)
    p = {"run_id": run_id}
    run = fetch_arrow(con, "SELECT * FROM runs WHERE run_id = $run_id", p).to_pylist()[0]
    points = fetch_arrow(con, "SELECT * FROM kernel_roofline WHERE run_id = $run_id", p)
    ceilings = fetch_arrow(con, "SELECT * FROM run_ceilings WHERE run_id = $run_id", p)
    levels = ["l1", "l2", "dram"] if level == "all" else [level]
    cond = " OR ".join(f"bytes_{lv} IS NOT NULL" for lv in levels)
    usable = con.execute(
        f"SELECT count(*) FROM kernel_roofline WHERE run_id = $run_id AND flops IS NOT NULL AND ({cond})", p
    ).fetchall()[0][0]
    if usable == 0:
        qty = ["flops_fp64", "flops_fp32", "flops_fp16", "flops_tensor"] + [f"bytes_{lv}" for lv in levels]
        rows = con.execute(
            """
            SELECT DISTINCT e.key AS quantity, e.value AS reason
            FROM (SELECT unnest(map_entries(provenance)) AS e FROM kernels WHERE run_id = $run_id)
            WHERE e.value LIKE 'NULL:%' AND list_contains($qty, e.key)
            ORDER BY 1, 2
            """,
            {**p, "qty": qty},
        ).fetchall()
        missing = (
            "; ".join(f"{q}: {r[5:].strip()}" for q, r in rows) or "no kernel has FLOP and byte counters"
        )
        raise RooflineDataError(
            f"run {run_id} ({run['source_path']}) has no counters for a {level.upper()} roofline: {missing}. "
            f"To collect them, {COLLECT_HINT}."
        )
    return {"run_id": run_id, "run": run, "points": points, "ceilings": ceilings}


def layers(
    store: Any, run_id: str | None, depth: int = 1, match: str | None = None, device: int | None = None
) -> dict[str, Any]:
    """The layer view of one run: ``{"run_id", "table": pa.Table (layer_summary rows at ``depth`` whose layer
    matches the regex ``match``, on ``device`` if given), "coverage": pa.Table (run_id, device_id, attribution,
    ops, gpu_time_ns, share_of_ops, share_of_gpu_time: kernels + memops per attribution reason)}``.

    ``run_id`` may be a prefix; None = the latest run. Raises :class:`RunNotFoundError`, :class:`QueryError`
    (bad regex).
    """
    from rooflake.schema import RunNotFoundError

    con = connect(store)
    if run_id is None:
        rows = con.execute("SELECT run_id FROM runs ORDER BY ingested_at DESC, run_id LIMIT 1").fetchall()
        if not rows:
            raise RunNotFoundError(f"store {store.root} holds no runs (ingest one with `rl ingest FILE`)")
        run_id = rows[0][0]
    else:
        run_id = store.resolve(run_id)
    params: dict[str, Any] = {"run_id": run_id, "depth": depth}
    where = "run_id = $run_id AND depth = $depth"
    if match:
        where += " AND regexp_matches(layer, $match)"
        params["match"] = match
    if device is not None:
        where += " AND device_id = $device"
        params["device"] = device
    import duckdb

    try:
        table = fetch_arrow(con, f"SELECT * FROM layer_summary WHERE {where}", params)
        coverage = fetch_arrow(
            con,
            """
            SELECT run_id, device_id, attribution, sum(ops)::BIGINT AS ops, sum(gpu_time_ns)::BIGINT AS gpu_time_ns,
                   (sum(ops) / sum(sum(ops)) OVER (PARTITION BY device_id))::DOUBLE AS share_of_ops,
                   (sum(gpu_time_ns) / sum(sum(gpu_time_ns)) OVER (PARTITION BY device_id))::DOUBLE
                       AS share_of_gpu_time
            FROM coverage WHERE run_id = $run_id GROUP BY run_id, device_id, attribution ORDER BY device_id, attribution
            """,
            {"run_id": run_id},
        )
    except duckdb.Error as e:
        raise QueryError(f"layers of run {run_id}: {' '.join(str(e).split())}") from e
    return {"run_id": run_id, "table": table, "coverage": coverage}
