"""The tables a chart takes: types, column checks and normalisation, and rows for Vega-Lite datasets.

Charts take rows of the store's queries (``kernel_roofline``, ``run_ceilings``, ``time_roofline``, ``trajectory``)
as pyarrow.Table, polars.DataFrame or :class:`rooflake.schema.duck.Rows` (DuckDB's own Python values, which need no
pyarrow: ``rl roofline RUN -o x.png`` starts without it); these helpers turn them into polars frames with every column a chart reads
(absent optional columns as nulls, float NaN as null), so the charts never special-case a missing column.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeAlias

import polars as pl

from rooflake.render import rows as dict_rows
from rooflake.schema.duck import Rows

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "CEILING_OPTIONAL",
    "CEILING_REQUIRED",
    "POINT_OPTIONAL",
    "POINT_REQUIRED",
    "Table",
    "ceiling_rows",
    "conform",
    "frame",
    "positive",
    "typed",
    "values",
]

Table: TypeAlias = "pa.Table | pl.DataFrame | Rows"

#: Columns of ``kernel_roofline`` that :func:`rooflake.render.roofline_chart` needs (one list with the dict path:
#: :data:`rooflake.render.rows.POINT_REQUIRED`).
POINT_REQUIRED = dict_rows.POINT_REQUIRED
#: Columns of ``run_ceilings`` every chart needs; ``label`` (optional) is the roof's display name.
CEILING_REQUIRED = ("ceiling", "kind", "value")
CEILING_OPTIONAL: dict[str, pl.DataType] = {
    "run_id": pl.String(),
    "machine_key": pl.String(),
    "value_min": pl.Float64(),
    "value_max": pl.Float64(),
    "clock_hz": pl.Float64(),
    "unit": pl.String(),
    "formula": pl.String(),
    "source": pl.String(),
    "n_kernels": pl.Int64(),
    "n_invalid": pl.Int64(),
    "label": pl.String(),
}


def frame(table: Any, what: str) -> pl.DataFrame:
    """``table`` (pyarrow.Table, RecordBatch(Reader), polars.DataFrame or :class:`Rows`) as a polars DataFrame;
    :class:`Rows` give the frame that the same query's Arrow table gives (:func:`rows_frame`).

    Raises ``TypeError`` (naming ``what``) for any other type."""
    if isinstance(table, pl.DataFrame):
        return table
    if isinstance(table, Rows):
        return rows_frame(table, what)
    import pyarrow as pa

    if isinstance(table, pa.RecordBatchReader):  # DuckDB 2's relation.arrow()
        table = table.read_all()
    elif isinstance(table, pa.RecordBatch):
        table = pa.Table.from_batches([table])
    if isinstance(table, pa.Table):
        out = pl.from_arrow(table)
        assert isinstance(out, pl.DataFrame)  # a Table always converts to a DataFrame
        return out
    raise TypeError(f"{what}: expected a pyarrow.Table or polars.DataFrame, got {type(table).__name__}")


#: DuckDB's types (``str()`` of a :class:`Rows` type) -> the polars type their Arrow column becomes
_POLARS_OF_DUCKDB: dict[str, pl.DataType] = {
    "VARCHAR": pl.String(),
    "BIGINT": pl.Int64(),
    "INTEGER": pl.Int32(),
    "SMALLINT": pl.Int16(),
    "TINYINT": pl.Int8(),
    "UBIGINT": pl.UInt64(),
    "UINTEGER": pl.UInt32(),
    "DOUBLE": pl.Float64(),
    "FLOAT": pl.Float32(),
    "BOOLEAN": pl.Boolean(),
}


def _polars_type(duck: str, what: str) -> pl.DataType:
    """The polars type of a DuckDB column of type ``duck`` (lists of these too: ``VARCHAR[]``)."""
    if duck.endswith("[]"):
        return pl.List(_polars_type(duck[:-2], what))
    if duck not in _POLARS_OF_DUCKDB:
        raise TypeError(
            f"{what}: a column of DuckDB type {duck} has no polars type here (pass an Arrow table)"
        )
    return _POLARS_OF_DUCKDB[duck]


#: The display-only columns of ``kernel_roofline`` (filled with nulls when absent):
#: :data:`rooflake.render.rows.POINT_OPTIONAL_TYPES` with polars types. ``peak_ceiling`` names the row's compute roof
#: and ``peak_flops_per_s`` is its value: when present, the chart draws exactly those roofs.
POINT_OPTIONAL: dict[str, pl.DataType] = {
    c: _polars_type(t, "kernel_roofline") for c, t in dict_rows.POINT_OPTIONAL_TYPES.items()
}


def rows_frame(rows: Rows, what: str = "rows") -> pl.DataFrame:
    """:class:`Rows` (DuckDB's Python values: ``fetch(..., as_pylist=True)``) as the polars DataFrame that
    ``pl.from_arrow`` gives of the same result as Arrow: same columns, order, types and values (NaN kept).

    Raises ``TypeError`` (naming ``what``) for a column type outside :data:`_POLARS_OF_DUCKDB` and its lists."""
    schema = [(n, _polars_type(str(t), what)) for n, t in zip(rows.names, rows.types, strict=True)]
    return pl.DataFrame(rows.rows, schema=schema, orient="row")


def conform(
    df: pl.DataFrame, required: tuple[str, ...], optional: dict[str, pl.DataType], what: str
) -> pl.DataFrame:
    """Check the required columns, add absent optional ones as nulls, turn float NaN into null.

    Raises ``ValueError`` naming ``what`` and the missing columns."""
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise ValueError(
            f"{what} lacks column(s) {', '.join(missing)} (has: {', '.join(df.columns) or 'none'})"
        )
    df = df.with_columns(pl.lit(None, dtype=t).alias(c) for c, t in optional.items() if c not in df.columns)
    floats = [c for c, t in df.schema.items() if t in (pl.Float32, pl.Float64)]
    return df.with_columns(pl.col(c).fill_nan(None) for c in floats)


def ceiling_rows(ceilings: Table, *, one_run: bool = True) -> pl.DataFrame:
    """``run_ceilings`` rows conformed (:data:`CEILING_REQUIRED`, :data:`CEILING_OPTIONAL`).

    Raises ``ValueError`` for a missing column, or with ``one_run`` for rows of several runs."""
    ceil = conform(
        frame(ceilings, "ceilings"), CEILING_REQUIRED, CEILING_OPTIONAL, "ceilings (run_ceilings rows)"
    )
    runs = ceil.get_column("run_id").drop_nulls().unique().to_list()
    if one_run and len(runs) > 1:
        raise ValueError(
            f"ceilings hold {len(runs)} runs ({', '.join(sorted(runs))}): pass the rows of one run"
        )
    return ceil


def typed(df: pl.DataFrame, columns: dict[str, pl.DataType | None]) -> pl.DataFrame:
    """``df`` reduced to ``columns``, in their order, each cast to its type (``None``: kept as it is)."""
    return df.select(pl.col(c) if t is None else pl.col(c).cast(t) for c, t in columns.items())


def positive(col: str) -> pl.Expr:
    """``col`` is a number > 0 (null, NaN, 0 and negatives are not; :func:`conform` made NaN null)."""
    return pl.col(col).fill_null(0.0) > 0


def values(df: pl.DataFrame) -> list[dict[str, Any]]:
    """Rows of ``df`` for a named Vega-Lite dataset (not Altair's data transformer: no 5000-row limit).

    NaN must be null already (JSON has no NaN): :func:`conform` did that.
    """
    return df.to_dicts()
