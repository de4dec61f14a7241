"""Writing result tables for the CLI: an aligned text table, CSV, JSON or Parquet."""

from __future__ import annotations

import json
import math
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa


def _plain(v: Any) -> Any:
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return str(v)
    if isinstance(v, list):
        if v and isinstance(v[0], tuple) and len(v[0]) == 2:  # Arrow map -> list of (key, value)
            return {k: _plain(x) for k, x in v}
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if hasattr(v, "isoformat"):
        return v.isoformat()
    return v


def _check_dir(path: Path) -> None:
    if not path.parent.is_dir():
        raise ValueError(f"{path}: directory {path.parent} does not exist")


def _atomic_write(path: Path, data: bytes) -> None:
    _check_dir(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; the result is an ordinary file
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def render_text(table: pa.Table) -> str:
    """An aligned text table of every row (values as DuckDB/polars print them)."""
    import polars as pl

    df = pl.from_arrow(table)
    assert isinstance(df, pl.DataFrame)
    with pl.Config(
        tbl_rows=-1,
        tbl_cols=-1,
        fmt_str_lengths=80,
        tbl_width_chars=65_000,  # never squeeze columns: the terminal wraps, pipes keep every column
        tbl_hide_dataframe_shape=True,
        tbl_hide_column_data_types=True,
        tbl_hide_dtype_separator=True,
    ):
        return str(df)


def write_table(table: pa.Table, fmt: str, out: Path | None) -> None:
    """Write ``table`` as ``fmt`` (table | csv | json | parquet) to ``out`` or stdout."""
    if fmt == "parquet":
        import pyarrow.parquet as pq

        if out is None:
            raise ValueError("--format parquet needs --out FILE")
        _check_dir(out)
        tmp = out.with_name(f".{out.name}.tmp")
        pq.write_table(table, tmp)
        os.replace(tmp, out)
        return
    if fmt == "csv":
        import pyarrow.csv as pacsv

        flat = table
        for i, field in enumerate(table.schema):
            if pa.types.is_nested(field.type):  # CSV cannot hold lists/maps: JSON text
                col = [json.dumps(_plain(v)) for v in table.column(i).to_pylist()]
                flat = flat.set_column(i, field.name, pa.array(col, pa.string()))
        buf = pa.BufferOutputStream()
        pacsv.write_csv(flat, buf)
        data = buf.getvalue().to_pybytes()
    elif fmt == "json":
        rows = [{k: _plain(v) for k, v in r.items()} for r in table.to_pylist()]
        data = (json.dumps(rows, indent=None, default=str) + "\n").encode()
    else:
        data = (render_text(table) + "\n").encode()
    if out is None:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    else:
        _atomic_write(out, data)


def render_markdown(table: pa.Table) -> str:
    """A GitHub-flavoured Markdown table of every row (floats to 4 significant digits)."""

    def cell(v: Any) -> str:
        if v is None:
            return ""
        if isinstance(v, float):
            return f"{v:.4g}"
        return str(v).replace("|", "\\|")

    head = "| " + " | ".join(table.column_names) + " |"
    rule = "|" + "---|" * table.num_columns
    body = ["| " + " | ".join(cell(v) for v in row.values()) + " |" for row in table.to_pylist()]
    return "\n".join([head, rule, *body])
