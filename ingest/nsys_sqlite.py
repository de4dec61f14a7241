"""Reader for Nsight Systems SQLite exports (``nsys export --type sqlite``), any schema version seen so far.

Entry point: :func:`read`. Tables and columns are selected by name and may be missing (an export without CUDA trace
has no kernel table: the run gets 0 kernels). NVTX text is inline (``text``) or a ``textId`` into ``StringIds``.
Reading goes through ADBC (Arrow-native, ~5x faster than ``sqlite3`` row tuples); the attribution of every kernel,
memcpy and memset to the NVTX ranges open on its launching thread is DuckDB SQL (``nsys_attribution.sql``).
"""

from __future__ import annotations

import logging
import time
from importlib import resources
from pathlib import Path
from typing import Any

import pyarrow as pa

from rooflake.schema import COVERAGE, KERNELS, MEMOPS, RANGES, InputError
from rooflake.store import fetch_arrow

# source columns: (table, column, DuckDB type, our name); "NAME" = an id into StringIds or inline text
# columns every GPU operation table (kernel, memcpy, memset) has
_GPU_OP_COLS = [
    ("start", "BIGINT", "start"),
    ("end", "BIGINT", "end"),
    ("deviceId", "BIGINT", "device_id"),
    ("contextId", "BIGINT", "context_id"),
    ("streamId", "BIGINT", "stream_id"),
    ("correlationId", "BIGINT", "correlation_id"),
    ("globalPid", "BIGINT", "process"),
]
_KERNEL_COLS = _GPU_OP_COLS + [
    ("demangledName", "NAME", "name"),
    ("shortName", "NAME", "short_name"),
    ("mangledName", "NAME", "mangled_name"),
    *((f"{d}{a}", "BIGINT", f"{d}_{a.lower()}") for d in ("grid", "block") for a in "XYZ"),
    ("registersPerThread", "BIGINT", "registers"),
    ("staticSharedMemory", "BIGINT", "smem_static"),
    ("dynamicSharedMemory", "BIGINT", "smem_dynamic"),
    ("graphId", "BIGINT", "graph_id"),
    ("graphNodeId", "BIGINT", "graph_node_id"),
]
_MEMOP_COLS = _GPU_OP_COLS + [("bytes", "BIGINT", "bytes"), ("copyKind", "BIGINT", "copy_kind")]
_API_COLS = [
    ("start", "BIGINT", "start"),
    ("end", "BIGINT", "end"),
    ("globalTid", "BIGINT", "thread"),
    ("correlationId", "BIGINT", "correlation_id"),
    ("nameId", "NAME", "api"),
]
_NVTX_COLS = [
    ("rowid", "BIGINT", "src_row"),
    ("start", "BIGINT", "start"),
    ("end", "BIGINT", "end"),
    ("eventType", "BIGINT", "event_type"),
    ("text", "VARCHAR", "text_inline"),
    ("textId", "BIGINT", "text_id"),
    ("globalTid", "BIGINT", "thread"),
    ("endGlobalTid", "BIGINT", "end_thread"),
    ("domainId", "BIGINT", "domain_id"),
]
_GPU_COLS = [
    ("id", "BIGINT", "device_id"),
    ("name", "VARCHAR", "gpu_name"),
    ("computeMajor", "BIGINT", "cc_major"),
    ("computeMinor", "BIGINT", "cc_minor"),
]
log = logging.getLogger(__name__)
_NO_COUNTERS = "NULL: Nsight Systems records no hardware counters (ingest an ncu report of the same program)"


def _columns(cur: Any, table: str) -> dict[str, str] | None:
    cur.execute(f"PRAGMA table_info('{table}')")
    rows = cur.fetchall()
    return {r[1]: (r[2] or "").upper() for r in rows} if rows else None


def _select(cur: Any, table: str, cols: list[tuple[str, str, str]]) -> tuple[str, pa.Table | None]:
    """SELECT the present ``cols`` of ``table`` through ADBC (missing ones as NULL).

    Returns (a DuckDB select list over the Arrow table aliased ``a``, typed; the Arrow table, or None when the
    table is missing). NAME columns become ``<ours>_id`` (id into StringIds) and ``<ours>_text`` (inline text).
    SQLite is dynamically typed: every column is CAST in SQLite, so ADBC infers one type per column.
    """
    present = _columns(cur, table)
    if present is not None:
        present.setdefault("rowid", "INTEGER")  # SQLite's implicit row id: stable identity of a row
    duck: list[str] = []
    sql: list[str] = []
    for src, typ, ours in cols:
        declared = (present or {}).get(src)
        if typ == "NAME":
            if declared is None:
                duck += [f"NULL::BIGINT AS {ours}_id", f"NULL::VARCHAR AS {ours}_text"]
            elif "TEXT" in declared or "CHAR" in declared:
                sql.append(f'CAST("{src}" AS TEXT) AS "{ours}_text"')
                duck += [f"NULL::BIGINT AS {ours}_id", f"a.{ours}_text::VARCHAR AS {ours}_text"]
            else:
                sql.append(f'CAST("{src}" AS INTEGER) AS "{ours}_id"')
                duck += [f"a.{ours}_id::BIGINT AS {ours}_id", f"NULL::VARCHAR AS {ours}_text"]
        elif declared is None:
            duck.append(f"NULL::{typ} AS {ours}")
        else:
            sql.append(f'CAST("{src}" AS {"TEXT" if typ == "VARCHAR" else "INTEGER"}) AS "{ours}"')
            duck.append(f"a.{ours}::{typ} AS {ours}")
    if present is None or not sql:
        return ", ".join(duck), None
    cur.execute(f'SELECT {", ".join(sql)} FROM "{table}"')
    return ", ".join(duck), cur.fetch_arrow_table()


def _meta(cur: Any) -> dict[str, str]:
    for table in ("META_DATA_EXPORT", "EXPORT_META_DATA"):
        if _columns(cur, table) is not None:
            cur.execute(f'SELECT CAST(name AS TEXT), CAST(value AS TEXT) FROM "{table}"')
            return {str(k): str(v) for k, v in cur.fetchall()}
    return {}


def _load(con: Any, name: str, select: str, arrow: pa.Table | None) -> None:
    """Create DuckDB table ``name`` from the Arrow table, or empty with the same typed columns when it is None."""
    if arrow is None:
        con.execute(f"CREATE TABLE {name} AS SELECT {select} FROM (SELECT NULL AS _) AS a WHERE false")
        return
    con.register(f"{name}_arrow", arrow)  # zero-copy: a view over the Arrow table
    con.execute(f"CREATE VIEW {name} AS SELECT {select} FROM {name}_arrow AS a")


def read(path: str | Path, *, run_id: str, **_: Any) -> dict[str, Any]:
    """Read one Nsight Systems SQLite export into Arrow tables.

    Returns ``{"kernels": KERNELS, "memops": MEMOPS, "ranges": RANGES, "coverage": COVERAGE (pa.Tables),
    "run": dict}``; ``run`` holds producer (``nsys <EXPORT_PRODUCT_VERSION>``), source_schema_version
    (``EXPORT_SCHEMA_VERSION`` or ``none``), gpu_name, compute_capability, n_kernels, n_metrics (0), derivation.
    Kernel durations are integer ns (``end - start``) stored exactly; FLOP and byte columns are NULL (nsys has no
    counters) with that reason in ``provenance``. Raises :class:`InputError` when the file is not a readable
    SQLite database.
    """
    import adbc_driver_sqlite.dbapi as adbc
    import duckdb

    path = Path(path)
    try:
        conn = adbc.connect(f"file:{path}?mode=ro")
    except Exception as e:  # noqa: BLE001 - the driver raises its own error types
        raise InputError(f"{path}: cannot open as SQLite ({e})") from e
    try:
        cur = conn.cursor()
        try:
            cur.execute("SELECT count(*) FROM sqlite_master")
            cur.fetchall()
        except Exception as e:  # noqa: BLE001
            raise InputError(f"{path}: not a readable SQLite database ({str(e).splitlines()[0]})") from e
        meta = _meta(cur)
        sources = {
            "k_raw": _select(cur, "CUPTI_ACTIVITY_KIND_KERNEL", _KERNEL_COLS),
            "mc_raw": _select(cur, "CUPTI_ACTIVITY_KIND_MEMCPY", _MEMOP_COLS),
            "ms_raw": _select(cur, "CUPTI_ACTIVITY_KIND_MEMSET", _MEMOP_COLS),
            "api_raw0": _select(cur, "CUPTI_ACTIVITY_KIND_RUNTIME", _API_COLS),
            "api_raw1": _select(cur, "CUPTI_ACTIVITY_KIND_DRIVER", _API_COLS),
            "nvtx_raw": _select(cur, "NVTX_EVENTS", _NVTX_COLS),
            "gpus": _select(cur, "TARGET_INFO_GPU", _GPU_COLS),
            "strings": _select(cur, "StringIds", [("id", "BIGINT", "id"), ("value", "VARCHAR", "value")]),
        }
        has_kernel_table = sources["k_raw"][1] is not None
        if sources["strings"][1] is None and not meta:
            raise InputError(
                f"{path}: an SQLite database, but not an Nsight Systems export (no StringIds table)"
            )
    except InputError:
        raise
    except Exception as e:  # noqa: BLE001
        raise InputError(f"{path}: cannot read the Nsight Systems tables ({str(e).splitlines()[0]})") from e
    finally:
        conn.close()

    con = duckdb.connect(config={"preserve_insertion_order": False})
    for table, (select, arrow) in sources.items():
        _load(con, table, select, arrow)
    con.execute(
        """
        CREATE VIEW src_kernel AS
        SELECT
            row_number() OVER (ORDER BY k.start, k.correlation_id, k.process, k.device_id) - 1 AS idx,
            k.* EXCLUDE (name_id, name_text, short_name_id, short_name_text, mangled_name_id, mangled_name_text),
            coalesce(k.name_text, s1.value) AS name,
            coalesce(k.short_name_text, s2.value) AS short_name,
            coalesce(k.mangled_name_text, s3.value) AS mangled_name
        FROM k_raw AS k
        LEFT JOIN strings AS s1 ON s1.id = k.name_id
        LEFT JOIN strings AS s2 ON s2.id = k.short_name_id
        LEFT JOIN strings AS s3 ON s3.id = k.mangled_name_id
        """
    )
    con.execute(
        """
        CREATE VIEW src_memop AS
        SELECT row_number() OVER (ORDER BY start, kind, correlation_id, process, device_id) - 1 AS idx, *
        FROM (SELECT 'memcpy' AS kind, * FROM mc_raw UNION ALL SELECT 'memset' AS kind, * FROM ms_raw)
        """
    )
    con.execute(
        "CREATE VIEW src_api AS "
        + " UNION ALL ".join(
            f'SELECT a.start, a."end", a.thread, a.correlation_id, coalesce(a.api_text, s.value) AS api '
            f"FROM api_raw{i} AS a LEFT JOIN strings AS s ON s.id = a.api_id"
            for i in range(2)
        )
    )
    con.execute(
        """
        CREATE VIEW src_nvtx AS
        SELECT n.src_row, n.start, n."end", n.event_type, coalesce(n.text_inline, s.value) AS text, n.thread,
               n.end_thread, n.domain_id
        FROM nvtx_raw AS n LEFT JOIN strings AS s ON s.id = n.text_id
        """
    )
    con.execute(
        "CREATE VIEW src_domain AS SELECT domain_id, any_value(text) AS domain FROM src_nvtx "
        "WHERE event_type = 75 GROUP BY domain_id"
    )
    sql = resources.files("rooflake.ingest").joinpath("nsys_attribution.sql").read_text(encoding="utf-8")
    for stmt in _statements(sql):
        t0 = time.perf_counter()
        con.execute(stmt)
        log.debug("%.3f s  %s", time.perf_counter() - t0, " ".join(stmt.split())[:60])

    kernels = fetch_arrow(
        con,
        f"""
        SELECT
            '{run_id}' AS run_id,
            k.idx AS kernel_id,
            k.name,
            k.short_name,
            k.mangled_name,
            k.grid_x, k.grid_y, k.grid_z, k.block_x, k.block_y, k.block_z,
            k.grid_x * k.grid_y * k.grid_z AS grid_size,
            k.block_x * k.block_y * k.block_z AS block_size,
            k.registers AS registers_per_thread,
            k.smem_static AS shared_mem_static_bytes,
            k.smem_dynamic AS shared_mem_dynamic_bytes,
            k.device_id, k.context_id, k.stream_id,
            g.gpu_name,
            CASE WHEN g.cc_major IS NOT NULL THEN g.cc_major::VARCHAR || '.' || g.cc_minor::VARCHAR END
                AS compute_capability,
            o.nvtx_path, o.nvtx_stack, o.nvtx_domain,
            k.start AS start_ns, k."end" AS end_ns,
            (k."end" - k.start)::DOUBLE AS duration_ns,
            k.correlation_id, k.graph_id, k.graph_node_id, k.process AS process_id,
            o.launch_thread, o.launch_start_ns, o.launch_api, o.attribution, o.nvtx_start_end
        FROM ops_out AS o
        JOIN src_kernel AS k ON o.op_kind = 'kernel' AND k.idx = o.idx
        LEFT JOIN gpus AS g ON g.device_id = k.device_id
        ORDER BY k.idx
        """,
    )
    memops = fetch_arrow(
        con,
        f"""
        SELECT '{run_id}' AS run_id, m.idx AS op_id, m.kind, m.copy_kind, m.bytes, m.start AS start_ns,
               m."end" AS end_ns, m."end" - m.start AS duration_ns, m.device_id, m.context_id, m.stream_id,
               m.correlation_id, m.process AS process_id, o.launch_thread, o.launch_start_ns, o.nvtx_path,
               o.nvtx_stack, o.nvtx_domain, o.attribution
        FROM ops_out AS o JOIN src_memop AS m ON o.op_kind = m.kind AND m.idx = o.idx
        ORDER BY m.idx
        """,
    )
    ranges = fetch_arrow(
        con,
        f"""
        SELECT '{run_id}' AS run_id, r.range_id, d.domain, range_name(n.text) AS name, n.text, r.kind, r.start_ns,
               r.end_ns, r.thread, r.process, r.end_thread, r.depth, r.parent_id
        FROM ranges_out AS r
        JOIN src_nvtx AS n ON n.src_row = r.range_id
        LEFT JOIN domain_names AS d ON d.domain_id = r.domain_id
        ORDER BY r.range_id
        """,
    )
    coverage = fetch_arrow(
        con,
        f"""
        SELECT '{run_id}' AS run_id, device_id, op_kind, attribution, count(*) AS ops,
               sum("end" - start)::BIGINT AS gpu_time_ns, count(graph_node_id) AS graph_ops
        FROM (SELECT o.op_kind, o.attribution, x.device_id, x."end", x.start, x.graph_node_id
              FROM ops_out AS o JOIN ops AS x USING (uid))
        GROUP BY ALL ORDER BY device_id, op_kind, attribution
        """,
    )
    gpu = con.execute("SELECT gpu_name, cc_major, cc_minor FROM gpus ORDER BY device_id LIMIT 1").fetchall()
    con.close()

    kernels = _conform(_arrow(kernels), KERNELS, defaults={"provenance": _provenance(), "flags": []})
    n = kernels.num_rows
    version = meta.get("EXPORT_PRODUCT_VERSION")
    return {
        "kernels": kernels,
        "memops": _conform(_arrow(memops), MEMOPS),
        "ranges": _conform(_arrow(ranges), RANGES),
        "coverage": _conform(_arrow(coverage), COVERAGE),
        "run": {
            "source_format": "nsys-sqlite",
            "producer": f"nsys {version}" if version else "nsys (export records no product version)",
            "source_schema_version": meta.get("EXPORT_SCHEMA_VERSION", "none (no META_DATA_EXPORT table)"),
            "command_line": None,
            "host": None,
            "gpu_name": gpu[0][0] if gpu else None,
            "compute_capability": f"{gpu[0][1]}.{gpu[0][2]}" if gpu and gpu[0][1] is not None else None,
            "n_kernels": n,
            "n_metrics": 0,
            "derivation": '{"all": ["' + _NO_COUNTERS + '"]}',
            "fp16_convention": None,
            "has_kernel_table": has_kernel_table,
        },
    }


def _statements(sql: str) -> list[str]:
    """The statements of an SQL file (split on ``;`` at line ends; comments kept)."""
    out, cur = [], []
    for line in sql.splitlines():
        cur.append(line)
        if line.rstrip().endswith(";") and not line.lstrip().startswith("--"):
            stmt = "\n".join(cur).strip()
            if any(x.strip() and not x.strip().startswith("--") for x in cur):
                out.append(stmt)
            cur = []
    return out


def _arrow(x: Any) -> pa.Table:
    return x.read_all() if hasattr(x, "read_all") else x


def _provenance() -> list[tuple[str, str]]:
    # one short entry, not one per quantity: 148k kernels x 7 long strings cost 100 MB of memory (runs.derivation
    # holds the full reason)
    return [("*", "NULL: no counters in Nsight Systems")]


def _conform(table: pa.Table, schema: pa.Schema, defaults: dict[str, Any] | None = None) -> pa.Table:
    """``table`` with exactly ``schema``'s columns, in order, cast; absent columns NULL (or ``defaults``)."""
    cols = []
    for f in schema:
        if f.name in table.column_names:
            cols.append(table.column(f.name).cast(f.type))
        elif defaults and f.name in defaults:
            cols.append(pa.array([defaults[f.name]] * table.num_rows, f.type))
        else:
            cols.append(pa.nulls(table.num_rows, f.type))
    return pa.Table.from_arrays(cols, schema=schema)
