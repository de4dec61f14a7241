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


def parameters(name: str) -> list[str]:
    """Named parameters a query declares in its header (``-- Parameters: $a, $b.``); such queries are run with
    :func:`run_with`, not exposed as views."""
    for line in load(name).splitlines():
        if line.startswith("-- Parameters:"):
            return [p.strip(" .$") for p in line.split(":", 1)[1].split(",")]
        if not line.startswith("--"):
            break
    return []


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
    """``{name: sql}`` of every parameter-free query, each after the query views it reads (DuckDB binds a view
    when it is created)."""
    return _needed_views(" ".join(n for n in names() if not parameters(n)))


def macros() -> str:
    """SQL creating the macros the queries share (``macros/*.sql``: ``nvtx_layer``)."""
    folder = resources.files(__name__).joinpath("macros")
    files = sorted((p for p in folder.iterdir() if p.name.endswith(".sql")), key=lambda p: p.name)
    return "\n".join(p.read_text(encoding="utf-8") for p in files)


def connect(store: Any, sql: str | None = None):  # -> duckdb.DuckDBPyConnection
    """A DuckDB connection over ``store`` (a :class:`rooflake.store.Store`) with the shared macros and every query as
    a view; with ``sql``, only the query views that SQL names (and the ones they read), which keeps a cold ``rl sql``
    fast."""
    return store.connect(extra_views=views() if sql is None else _needed_views(sql), setup=macros())


def _needed_views(sql: str) -> dict[str, str]:
    """The query views ``sql`` refers to by name, with the views they refer to, in dependency order."""
    import re

    all_views = {n: load(n) for n in names() if not parameters(n)}
    needed: list[str] = []
    seen: set[str] = set()

    def visit(text: str) -> None:
        code = re.sub(r"--[^\n]*", "", text)  # names in comments (a query's own header) do not count
        for name, body in all_views.items():
            if name not in seen and re.search(rf"\b{name}\b", code):
                seen.add(name)
                visit(body)
                needed.append(name)

    visit(sql)
    return {n: all_views[n] for n in needed}


def run(store: Any, name: str, params: dict[str, Any] | None = None, where: str | None = None) -> Any:
    """Run query ``name`` over ``store``; returns a ``pyarrow.Table`` with the columns its header documents.

    ``where`` is an SQL predicate using named parameters (e.g. ``"run_id = $run_id"``) bound from ``params``.
    Raises :class:`QueryError` for an unknown query or a failing SQL statement.
    """
    if name not in names():
        raise QueryError(f"no query named {name!r} (known: {', '.join(names())})")
    return execute(store, f"SELECT * FROM {name}" + (f" WHERE {where}" if where else ""), params)


def execute(store: Any, sql: str, params: dict[str, Any] | None = None) -> Any:
    """Run ad-hoc SQL over the store's views and every named query; returns a ``pyarrow.Table``.

    Raises :class:`QueryError` with DuckDB's message (syntax errors, unknown columns or tables).
    """
    import duckdb

    con = connect(store, sql)
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
    from rooflake.schema import RooflineDataError
    from rooflake.schema.catalog import COLLECT_HINT

    run_id = store.resolve(run_id)
    con = connect(store)
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
    store: Any,
    run_id: str | None,
    depth: int = 1,
    match: str | None = None,
    device: int | None = None,
    with_run: str | None = None,
) -> dict[str, Any]:
    """The layer view of one run: ``{"run_id", "table": pa.Table (layer_summary rows at ``depth`` whose layer
    matches the regex ``match``, on ``device`` if given), "coverage": pa.Table (run_id, device_id, attribution,
    ops, gpu_time_ns, share_of_ops, share_of_gpu_time: kernels + memops per attribution reason)}``.

    ``run_id`` may be a prefix; None = the latest run. With ``with_run`` (an ncu run of the same program) the
    nsys kernels take their FLOPs/bytes from it (:func:`match_runs`; ``"match"`` holds its result).
    Raises :class:`RunNotFoundError`, :class:`QueryError` (bad regex).
    """

    run_id = store.resolve(run_id)
    con = connect(store)
    params: dict[str, Any] = {"run_id": run_id, "depth": depth}
    where = "run_id = $run_id AND depth = $depth"
    if match:
        where += " AND regexp_matches(layer, $match)"
        params["match"] = match
    if device is not None:
        where += " AND device_id = $device"
        params["device"] = device
    import duckdb

    matched = None
    source = "layer_summary"
    if with_run is not None:
        matched = match_runs(store, run_id, with_run)
        _shadow_kernels(con, matched["kernels"])
        source = f"({load('layer_summary')})"
    try:
        table = fetch_arrow(con, f"SELECT * FROM {source} WHERE {where}", params)
        coverage = fetch_arrow(
            con,
            """
            SELECT run_id, device_id, attribution, sum(ops)::BIGINT AS ops, sum(gpu_time_ns)::BIGINT AS gpu_time_ns,
                   (sum(ops) / sum(sum(ops)) OVER (PARTITION BY device_id))::DOUBLE AS share_of_ops,
                   (sum(gpu_time_ns) / sum(sum(gpu_time_ns)) OVER (PARTITION BY device_id))::DOUBLE
                       AS share_of_gpu_time
            FROM main.coverage WHERE run_id = $run_id GROUP BY run_id, device_id, attribution ORDER BY device_id, attribution
            """,
            {"run_id": run_id},
        )
    except duckdb.Error as e:
        raise QueryError(f"layers of run {run_id}: {' '.join(str(e).split())}") from e
    return {"run_id": run_id, "table": table, "coverage": coverage, "match": matched}


def match_runs(store: Any, nsys_run: str, ncu_run: str) -> dict[str, Any]:
    """Join an Nsight Systems run with an Nsight Compute run of the same program (query ``nsys_ncu_match``).

    Returns ``{"nsys_run", "ncu_run", "kernels": pa.Table (nsys kernels with ncu FLOPs/bytes, ncu_kernel_id,
    match), "summary": pa.Table (match, launches, gpu_time_ns, share_of_launches, share_of_gpu_time),
    "unmatched_nsys": pa.Table (name, launches, gpu_time_ns: nsys kernels ncu never profiled),
    "unmatched_ncu": pa.Table (ncu kernel_id, name, nvtx_path: profiled kernels no nsys launch took)}``.
    Run ids may be prefixes. Raises :class:`RunNotFoundError`, :class:`QueryError`.
    """
    import duckdb

    nsys_run, ncu_run = store.resolve(nsys_run), store.resolve(ncu_run)
    con = connect(store)
    p = {"nsys_run": nsys_run, "ncu_run": ncu_run}
    formats = dict(
        con.execute(
            "SELECT run_id, source_format FROM runs WHERE run_id IN ($nsys_run, $ncu_run)", p
        ).fetchall()
    )
    if not formats[nsys_run].startswith("nsys"):
        raise QueryError(
            f"run {nsys_run} is a {formats[nsys_run]} run: the layer run must come from Nsight Systems"
        )
    if formats[ncu_run] != "ncu-rep":
        raise QueryError(
            f"run {ncu_run} (--with) is a {formats[ncu_run]} run: it must be an Nsight Compute run of the same program"
        )
    try:
        con.execute(f"CREATE TEMP TABLE matched AS {load('nsys_ncu_match')}", p)
        kernels = fetch_arrow(con, "SELECT * FROM matched")
        summary = fetch_arrow(
            con,
            """
            SELECT coalesce(match, 'unmatched') AS match, count(*) AS launches,
                   sum(duration_ns) AS gpu_time_ns,
                   count(*) / sum(count(*)) OVER () AS share_of_launches,
                   sum(duration_ns) / sum(sum(duration_ns)) OVER () AS share_of_gpu_time
            FROM matched GROUP BY 1 ORDER BY 1
            """,
        )
        unmatched_nsys = fetch_arrow(
            con,
            "SELECT name, count(*) AS launches, sum(duration_ns) AS gpu_time_ns FROM matched "
            "WHERE match IS NULL GROUP BY name ORDER BY gpu_time_ns DESC",
        )
        unmatched_ncu = fetch_arrow(
            con,
            "SELECT kernel_id, name, nvtx_path FROM kernels WHERE run_id = $ncu_run AND kernel_id NOT IN "
            "(SELECT ncu_kernel_id FROM matched WHERE ncu_kernel_id IS NOT NULL) ORDER BY kernel_id",
            {"ncu_run": ncu_run},
        )
    except duckdb.Error as e:
        raise QueryError(f"matching runs {nsys_run} and {ncu_run}: {' '.join(str(e).split())}") from e
    return {
        "nsys_run": nsys_run,
        "ncu_run": ncu_run,
        "kernels": kernels,
        "summary": summary,
        "unmatched_nsys": unmatched_nsys,
        "unmatched_ncu": unmatched_ncu,
    }


def layer_points(
    store: Any, run_id: str | None, depth: int = 1, with_run: str | None = None
) -> dict[str, Any]:
    """Per-layer roofline points of one run (with ``with_run``: an nsys run whose kernels take the FLOPs/bytes of
    the ncu run ``with_run``, time-weighted by nsys's real durations).

    Returns ``{"run_id", "points": pa.Table with kernel_roofline's columns (one row per layer x precision with
    FLOPs; kernel_id = layer number, name = layer), "ceilings": pa.Table (run_ceilings of the run that holds
    the counters), "match": dict | None (see :func:`match_runs`)}``. AI_l = sum F / sum Q_l over the layer's
    kernels; FLOP/s = sum F / sum kernel time (Wang et al., arXiv 2009.04598). Raises :class:`RunNotFoundError`,
    :class:`RooflineDataError` when no layer has FLOPs and bytes.
    """
    from rooflake.schema import RooflineDataError
    from rooflake.schema.catalog import COLLECT_HINT

    run_id = store.resolve(run_id)
    con = connect(store)
    match = None
    counters_run = run_id
    if with_run is not None:
        match = match_runs(store, run_id, with_run)
        counters_run = match["ncu_run"]
        _shadow_kernels(con, match["kernels"])
    layers_sql = load("layer_summary")
    rows = fetch_arrow(
        con,
        f"""
        WITH l AS (SELECT * FROM ({layers_sql}) WHERE run_id = $run_id AND depth = $depth AND flops IS NOT NULL),
        c AS (
            SELECT bw_l1, bw_l2, bw_dram, peak_fp64 AS p_fp64, peak_fp32 AS p_fp32, peak_fp16 AS p_fp16,
                   peak_tensor AS p_tensor
            FROM main.run_roofs WHERE run_id = $counters_run
        ),
        p AS (
            SELECT
                l.run_id, dense_rank() OVER (ORDER BY l.layer, l.device_id) - 1 AS kernel_id,
                l.layer AS name, l.layer AS short_name, l.layer AS nvtx_path, pr.precision, pr.ord,
                l.counted_time_ns AS duration_ns,
                CASE pr.precision WHEN 'fp64' THEN l.flops_fp64 WHEN 'fp32' THEN l.flops_fp32
                    WHEN 'fp16' THEN l.flops_fp16 ELSE l.flops_tensor END AS flops,
                CASE pr.precision WHEN 'fp64' THEN c.p_fp64 WHEN 'fp32' THEN c.p_fp32
                    WHEN 'fp16' THEN c.p_fp16 ELSE c.p_tensor END AS peak,
                l.bytes_l1, l.bytes_l2, l.bytes_dram, c.bw_l1, c.bw_l2, c.bw_dram, l.counters_complete
            FROM l, c, (VALUES ('fp64', 1), ('fp32', 2), ('fp16', 3), ('tensor', 4)) AS pr (precision, ord)
        )
        SELECT
            run_id, kernel_id, name, short_name, nvtx_path, precision,
            row_number() OVER (PARTITION BY kernel_id ORDER BY flops DESC NULLS LAST, ord) = 1 AS is_dominant,
            duration_ns, flops, bytes_l1, bytes_l2, bytes_dram,
            flops / nullif(bytes_l1, 0) AS ai_l1, flops / nullif(bytes_l2, 0) AS ai_l2,
            flops / nullif(bytes_dram, 0) AS ai_dram,
            flops * 1e9 / nullif(duration_ns, 0) AS achieved_flops_per_s,
            peak AS peak_flops_per_s, bw_l1, bw_l2, bw_dram,
            CASE WHEN bytes_l1 > 0 AND bw_l1 IS NOT NULL THEN least(peak, flops / bytes_l1 * bw_l1) END
                AS attainable_l1,
            CASE WHEN bytes_l2 > 0 AND bw_l2 IS NOT NULL THEN least(peak, flops / bytes_l2 * bw_l2) END
                AS attainable_l2,
            CASE WHEN bytes_dram > 0 AND bw_dram IS NOT NULL THEN least(peak, flops / bytes_dram * bw_dram) END
                AS attainable_dram,
            flops = 0 AS zero_flops,
            CASE WHEN counters_complete THEN [] ELSE ['counters_incomplete'] END AS flags
        FROM p WHERE flops IS NOT NULL
        ORDER BY kernel_id, ord
        """,
        {"run_id": run_id, "depth": depth, "counters_run": counters_run},
    )
    rows = _with_bounds(con, rows)
    ceilings = fetch_arrow(con, "SELECT * FROM main.run_ceilings WHERE run_id = $r", {"r": counters_run})
    if rows.num_rows == 0:
        hint = (
            "this run has no FLOP counters (an nsys run: add --with NCU_RUN, an ncu run of the same program)"
            if with_run is None
            else f"no kernel of run {run_id} matched a kernel of run {counters_run} with counters"
        )
        raise RooflineDataError(
            f"run {run_id}: no layer at depth {depth} has FLOPs: {hint}. To collect them, {COLLECT_HINT}."
        )
    return {"run_id": run_id, "points": rows, "ceilings": ceilings, "match": match}


def _shadow_kernels(con: Any, kernels: Any) -> None:
    """Make unqualified ``kernels`` mean ``kernels`` (an Arrow table) on ``con``: the same query SQL (e.g.
    layer_summary) then runs over matched nsys x ncu kernels. ``main.*`` still names the store's views."""
    con.register("matched_arrow", kernels)
    con.execute("CREATE SCHEMA IF NOT EXISTS j")
    con.execute("CREATE OR REPLACE VIEW j.kernels AS SELECT * FROM matched_arrow")
    con.execute("CREATE OR REPLACE VIEW j.memops AS SELECT * FROM main.memops")
    con.execute("SET search_path = 'j,main'")


def _with_bounds(con: Any, rows: Any) -> Any:
    """Add attainable_flops_per_s, fraction_of_roof, bound and above_roof to roofline points (the rules of
    kernel_roofline.sql: the lowest roof at the point's AI over the levels that have bytes and a roof)."""
    con.register("points_arrow", rows)
    return fetch_arrow(
        con,
        """
        WITH b AS (SELECT *, least(attainable_l1, attainable_l2, attainable_dram) AS attainable_flops_per_s
                   FROM points_arrow)
        SELECT
            *,
            achieved_flops_per_s / nullif(attainable_flops_per_s, 0) AS fraction_of_roof,
            CASE
                WHEN attainable_flops_per_s IS NULL OR flops = 0 THEN NULL
                WHEN attainable_flops_per_s >= peak_flops_per_s THEN upper(precision)
                WHEN attainable_flops_per_s = attainable_dram THEN 'DRAM'
                WHEN attainable_flops_per_s = attainable_l2 THEN 'L2'
                ELSE 'L1'
            END AS bound,
            coalesce(NOT isnan(achieved_flops_per_s) AND achieved_flops_per_s > attainable_flops_per_s * 1.001, false)
                AS above_roof
        FROM b
        """,
    )


def compare(store: Any, base_run: str, new_run: str, depth: int = 1) -> dict[str, Any]:
    """Compare two runs (queries ``compare_layers`` and ``compare_kernels``).

    Returns ``{"base_run", "new_run", "layers": pa.Table, "kernels": pa.Table, "base_time_ns": float,
    "new_time_ns": float, "time_change": float | None}`` (total GPU time of kernels and memops; time_change =
    new / base - 1). Run ids may be prefixes. Raises :class:`RunNotFoundError`, :class:`QueryError`.
    """
    import duckdb

    base_run, new_run = store.resolve(base_run), store.resolve(new_run)
    con = connect(store)
    p = {"base_run": base_run, "new_run": new_run}
    try:
        layers = fetch_arrow(con, load("compare_layers"), {**p, "depth": depth})
        kernels = fetch_arrow(con, load("compare_kernels"), p)
        totals = dict(
            con.execute(
                """
                SELECT run_id, sum(t) FROM (
                    SELECT run_id, duration_ns AS t FROM kernels WHERE NOT isnan(duration_ns)
                    UNION ALL SELECT run_id, duration_ns FROM memops)
                WHERE run_id IN ($base_run, $new_run) GROUP BY run_id
                """,
                p,
            ).fetchall()
        )
    except duckdb.Error as e:
        raise QueryError(f"comparing {base_run} and {new_run}: {' '.join(str(e).split())}") from e
    b, n = totals.get(base_run), totals.get(new_run)
    return {
        "base_run": base_run,
        "new_run": new_run,
        "layers": layers,
        "kernels": kernels,
        "base_time_ns": b,
        "new_time_ns": n,
        "time_change": (n / b - 1) if b and n is not None else None,
    }
