"""Every ``.sql`` file of ``queries/`` documents its output: a ``-- Columns:`` block with one comment per column, and
those are exactly the columns the query returns, names and order (in the style of the module checker of Perfetto's
trace processor standard library). Each query runs on tiny tables built in code; no fixture needed."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from rooflake import queries
from rooflake.schema import CEILINGS, KERNELS, METRICS, RUNS, TABLES, QueryError
from rooflake.store import Store

NCU, NSYS = "a" * 16, "b" * 16
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
# a value for every parameter any query declares (tests fail on a new parameter until it is added here)
PARAMS: dict[str, Any] = {
    "run_id": NCU,
    "run_ids": [NCU, NSYS],
    "base_run": NCU,
    "new_run": NCU,
    "nsys_run": NSYS,
    "ncu_run": NCU,
    "counters_run": NCU,
    "depth": 1,
    "grain": "op",
    "launch_overhead_ns": 1000.0,
    "launch_overhead_source": "test",
    "launch_overheads_ns": [1000.0, 2000.0],
    "launch_overhead_sources": ["test", "test"],
    "min_pairs": 1,
    "vary": "batch",
    "entity_kind": "kernel",
    "series": [""],
    "level": None,
    "layer": None,
    "label_keys": [],
    "label_values": [],
    "since": EPOCH,
    "quantities": ["flops_fp32", "bytes_dram"],
    "match": None,
    "pattern": "conv[0-9]",
    "device": None,
    "top": 10,
    "job": "job",
    "names": ["GPU X"],
    "runs": [NCU],
    "datasheet_gpu": None,
    "estimates_run_id": NCU,
    "machine_key": "GPU X|8.0|1000",
    "ceiling": "DRAM",
    "machine": "GPU X",
    "sources": ["ncu-report", "datasheet"],
    "primary": "ncu-report",
    "precision": "fp32",
    "timed_by": "ranges",
    "host": "vm",
    "threads": None,
}
# how to build each table a step says it is given (-- Given:), from the tiny store
GIVEN: dict[str, Any] = {
    "matched": lambda con: queries.fetch(con, "nsys_ncu_match", PARAMS),
    "datasheet_ceilings": lambda con: _datasheet_ceilings(),
    "machine_ceiling_rows": lambda con: queries.fetch(
        con, "machine_ceilings", PARAMS, tables={"datasheet_ceilings": _datasheet_ceilings()}
    ),
    "run_ceiling_rows": lambda con: queries.fetch(con, "run_ceilings"),
    "layer_roofs": lambda con: queries.fetch(con, "host_measured_ceilings", PARAMS),
    "layer_points": lambda con: queries.fetch(
        con, "estimate_layer_roofline", PARAMS, tables={"layer_roofs": GIVEN["layer_roofs"](con)}
    ),
    "chosen_ceilings": lambda con: queries.fetch(
        con,
        "source_run_ceilings",
        PARAMS,
        tables={g: GIVEN[g](con) for g in ("run_ceiling_rows", "machine_ceiling_rows")},
    ),
    "layer_rows": lambda con: pa.table(
        {"position": [0], "layer": ["d:model"], "time_ns": [1e3], "flops": [2e9], "counters_complete": [True]}
    ),  # fmt: skip
    "op_layer_rows": lambda con: queries.fetch(con, "op_layers", {"run_id": NCU, "depth": 1}),
}


def _datasheet_ceilings() -> Any:
    from rooflake.schema import datasheets

    return datasheets.ceilings()


def _table(schema: pa.Schema, rows: list[dict[str, Any]], **defaults: Any) -> pa.Table:
    return pa.table(
        {f.name: [r.get(f.name, defaults.get(f.name)) for r in rows] for f in schema}, schema=schema
    )


def _publish(
    root: Path, run_id: str, fmt: str, labels: dict[str, str], kernels: list[dict[str, Any]]
) -> None:
    run = {"run_id": run_id, "source_path": f"/tiny/{run_id}", "source_format": fmt, "n_kernels": len(kernels),
           "ingested_at": datetime(2026, 1, 1, tzinfo=timezone.utc), "labels": list(labels.items()),
           "schema_version": "1"}  # fmt: skip
    ceilings = [
        {"kernel_id": k["kernel_id"], "ceiling": c, "kind": "bandwidth" if c == "DRAM" else "compute", "value": v,
         "unit": "byte/s" if c == "DRAM" else "FLOP/s", "source": "test", "clock_hz": 1e9}
        for k in kernels for c, v in (("DRAM", 1e12), ("FP32", 1e13))
    ] if fmt == "ncu-rep" else []  # fmt: skip
    Store(root).publish(
        run_id,
        {
            "runs": _table(RUNS, [run]),
            "kernels": _table(KERNELS, kernels, run_id=run_id, provenance=[], flags=[]),
            "ceilings": _table(CEILINGS, ceilings, run_id=run_id),
            "metrics": _table(METRICS, [], run_id=run_id),
        },
    )


def _kernel(kid: int, **kw: Any) -> dict[str, Any]:
    return {"kernel_id": kid, "name": f"k{kid}", "short_name": f"k{kid}", "device_id": 0, "duration_ns": 1e3,
            "nvtx_domain": "d", "nvtx_stack": ["model", "layer"], "nvtx_path": "d:model/layer", **kw}  # fmt: skip


@pytest.fixture(scope="module")
def con(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("columns")
    counters = {"flops_fp32": 1e9, "bytes_l1": 1e8, "bytes_l2": 1e8, "bytes_dram": 1e7}
    _publish(root, NCU, "ncu-rep", {"batch": "8"}, [_kernel(0, **counters), _kernel(1, **counters)])
    timeline = [
        _kernel(i, start_ns=i * 2000, end_ns=i * 2000 + 1000, launch_start_ns=i * 2000 - 500) for i in (0, 1)
    ]
    _publish(root, NSYS, "nsys-sqlite", {"batch": "16"}, timeline)
    return queries.connect(Store(root))


def _expected(name: str) -> list[str]:
    """The documented columns of ``name``, ``<table>.*`` / ``<query>.*`` expanded."""
    out: list[str] = []
    for col in queries.columns(name):
        if col.endswith(".*"):
            src = col[:-2]
            out += TABLES[src].names if src in TABLES else _expected(src)
        else:
            out.append(col)
    return out


def _given(con: Any, name: str) -> dict[str, Any]:
    """The tables step ``name`` reads that its caller gives (``-- Given:``)."""
    missing = [g for g in queries.query(name).given if g not in GIVEN]
    assert not missing, f"{name}.sql is given {missing}: add a builder to GIVEN"
    return {g: GIVEN[g](con) for g in queries.query(name).given}


@pytest.mark.parametrize("name", queries.all_names())
def test_columns_block_equals_the_real_columns(con: Any, name: str) -> None:
    documented = _expected(name)
    assert documented, f"{name}.sql has no -- Columns: block (one '--   <column>  <unit, meaning>' line each)"
    q = queries.query(name)
    missing = [p for p in q.parameters if p not in PARAMS and p not in q.defaults]
    assert not missing, f"{name}.sql takes {missing}: add a value to PARAMS"
    params = {p: PARAMS[p] for p in q.parameters if p in PARAMS}
    got = queries.fetch(con, name, params, tables=_given(con, name))
    assert got.column_names == documented, (
        f"{name}.sql: -- Columns: says {documented}, the query gives {got.column_names}"
    )


@pytest.mark.parametrize("name", queries.all_names())
def test_header_names_the_query(name: str) -> None:
    assert queries.load(name).startswith(f"-- {name}: "), (
        f"{name}.sql must start with '-- {name}: what it answers'"
    )


def test_the_check_can_fail() -> None:
    """The parser reads one column per line (continuation lines are deeper), and a wrong block is caught."""
    from rooflake.queries.runner import Query

    text = "-- q: x\n-- Columns:\n--   a    unit\n--        more text\n--   b    unit\nSELECT 1 AS a, 2 AS c"
    q = queries.runner.parse("q", text, public=False)
    assert isinstance(q, Query) and q.columns == ("a", "b")
    two_lines = (
        "-- q: x\n-- Parameters: $a, $b = 1,\n-- $c = 'x'.\n-- Columns:\n--   a    unit\nSELECT $a AS a"
    )
    q = queries.runner.parse("q", two_lines, public=True)
    assert q.parameters == ("a", "b", "c") and q.defaults == {"b": "1", "c": "'x'"}
    with pytest.raises(QueryError, match="not a \\$name"):
        queries.runner.parse("q", "-- q: x\n-- Parameters: a.\nSELECT 1", public=True)


@pytest.mark.parametrize("name", queries.all_names())
def test_no_column_is_a_decimal(con: Any, name: str) -> None:
    """DuckDB's sum of integers is a HUGEINT, an Arrow decimal128 that `rl … -f json` writes as a string
    (compare's layer launches were "4"): every count a query returns is cast back to an integer."""
    q = queries.query(name)
    params = {p: PARAMS[p] for p in q.parameters if p in PARAMS}
    got = queries.fetch(con, name, params, tables=_given(con, name))
    decimals = [f.name for f in got.schema if pa.types.is_decimal(f.type)]
    assert not decimals, f"{name}.sql returns {decimals} as decimals"


#: the queries the render side reads: every column of theirs declares its DuckDB type and unit
RENDERED = ("kernel_roofline", "run_ceilings", "own_run_ceilings", "source_run_ceilings")


def _duck(t: str) -> str:
    """A declared type as DuckDB prints it."""
    return t.replace("TIMESTAMPTZ", "TIMESTAMP WITH TIME ZONE")


@pytest.mark.parametrize("name", [n for n in queries.all_names() if queries.column_types(n)])
def test_declared_types_are_the_real_types(con: Any, name: str) -> None:
    """A ``-- Columns:`` line that gives a type (``--   duration_ns  DOUBLE  ns  ...``) gives DuckDB's own."""
    q = queries.query(name)
    params = {p: PARAMS[p] for p in q.parameters if p in PARAMS}
    got = queries.fetch(con, name, params, tables=_given(con, name), as_rows=True)
    real = dict(zip(got.names, map(str, got.types), strict=True))
    wrong = {c: (t, real.get(c)) for c, t in queries.column_types(name).items() if _duck(t) != real.get(c)}
    assert not wrong, f"{name}.sql: declared type, DuckDB's: {wrong}"


@pytest.mark.parametrize("name", RENDERED)
def test_the_rendered_queries_type_every_column(name: str) -> None:
    untyped = [c.name for c in queries.query(name).typed if c.type is None]
    assert not untyped, f"{name}.sql: give these a type and a unit ('-' for none): {untyped}"


def test_the_render_side_reads_declared_columns_of_their_types() -> None:
    """The columns of kernel_roofline and run_ceilings that the charts read (rooflake.render.inputs) are columns
    the queries declare, of the polars type their declared DuckDB type becomes: a column renamed or retyped in the
    .sql file fails here, not silently in a chart."""
    from rooflake.render import inputs, rows

    def polars_of(duck: str) -> Any:
        return inputs._polars_type(duck, "test")  # the render side's own DuckDB -> polars map

    for name, required, optional in (
        ("kernel_roofline", inputs.POINT_REQUIRED, inputs.POINT_OPTIONAL),
        (
            "run_ceilings",
            inputs.CEILING_REQUIRED,
            {k: v for k, v in inputs.CEILING_OPTIONAL.items() if k != "label"},
        ),
    ):
        declared = queries.column_types(name)
        assert set(required) <= set(declared), set(required) - set(declared)
        assert {c: polars_of(declared.get(c, "VARCHAR")) for c in optional} == optional
    read = queries.column_types("kernel_roofline")
    assert set(rows.POINT_COLUMNS) <= set(read)
    assert {c: read[c] for c in rows.POINT_OPTIONAL_TYPES} == rows.POINT_OPTIONAL_TYPES
    long_from_query = {c: t for c, t in rows.LONG_COLUMNS.items() if c in read and t is not None}
    python = {"VARCHAR": str, "BIGINT": int, "DOUBLE": float}
    assert {c: python[read[c]] for c in long_from_query} == long_from_query


def test_a_typed_column_line_parses() -> None:
    text = (
        "-- q: x\n-- Columns:\n--   a    DOUBLE  ns, the time\n--        more\n--   b    VARCHAR[]  -  flags\n"
        "--   c    DRAM | L2 (untyped)\nSELECT 1"
    )
    q = queries.runner.parse("q", text, public=False)
    assert [(c.name, c.type, c.unit, c.text) for c in q.typed] == [
        ("a", "DOUBLE", "ns", "the time more"),
        ("b", "VARCHAR[]", None, "flags"),
        ("c", None, None, "DRAM | L2 (untyped)"),
    ]
    assert q.columns == ("a", "b", "c") and queries.column_types("kernel_roofline")["flags"] == "VARCHAR[]"
