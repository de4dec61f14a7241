"""How a view's result shows itself in Jupyter: :class:`Displayed`, the base of every view dataclass, gives it a
``_repr_html_`` (its scalar fields as a list, each of its tables as an HTML table, every text escaped).

Only stdlib: the tables are the views' own (``pyarrow.Table``, polars frames, or
:class:`rooflake.schema.duck.Rows`), read through their Python values; numbers stay in the store's units.
"""

from __future__ import annotations

import dataclasses
import html
import math
from typing import Any

__all__ = ["ROWS_SHOWN", "Displayed", "html_table"]

#: rows of each table shown in a notebook (the rest counted under it)
ROWS_SHOWN = 50


def _text(v: Any) -> str:
    """One cell as escaped HTML text: floats to 4 significant digits, NULL empty."""
    if v is None:
        return ""
    if isinstance(v, float):
        return "NaN" if math.isnan(v) else f"{v:.4g}"
    return html.escape(str(v))


def _columns_rows(table: Any) -> tuple[list[str], list[tuple[Any, ...]], int] | None:
    """(column names, the first :data:`ROWS_SHOWN` rows as tuples, the number of rows) of an Arrow table, a
    polars frame or a :class:`rooflake.schema.duck.Rows`; None for anything else."""
    if hasattr(table, "names") and hasattr(table, "rows") and hasattr(table, "types"):  # Rows
        return list(table.names), [tuple(r) for r in table.rows[:ROWS_SHOWN]], len(table.rows)
    names = getattr(table, "column_names", None) or getattr(table, "columns", None)
    if (
        names is None
        or not hasattr(table, "slice")
        or not hasattr(table, "to_pydict")
        and not hasattr(table, "to_dict")
    ):
        return None
    head = table.slice(0, ROWS_SHOWN)
    as_dict = head.to_pydict() if hasattr(head, "to_pydict") else head.to_dict(as_series=False)
    n = table.num_rows if hasattr(table, "num_rows") else table.height
    return list(names), list(zip(*(as_dict[c] for c in names), strict=True)), n


def html_table(table: Any, title: str | None = None) -> str | None:
    """``table`` (see :func:`_columns_rows`) as an HTML table under ``title``, every text escaped; None if it is
    not a table."""
    got = _columns_rows(table)
    if got is None:
        return None
    names, rows, n = got
    head = "".join(f"<th>{html.escape(c)}</th>" for c in names)
    body = "".join("<tr>" + "".join(f"<td>{_text(v)}</td>" for v in r) + "</tr>" for r in rows)
    more = f"<p>… {n - len(rows)} more rows</p>" if n > len(rows) else ""
    caption = f"<h4>{html.escape(title)} ({n} rows)</h4>" if title else ""
    return f"{caption}<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{more}"


class Displayed:
    """The base of a view's result dataclass: in Jupyter it shows as its class name, its scalar fields (run ids,
    the verdict, ...) and each table field as an HTML table (:func:`html_table`)."""

    def _repr_html_(self) -> str:
        scalars, tables = [], []
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            table = html_table(value, f.name) if value is not None else None
            if table is not None:
                tables.append(table)
            elif isinstance(value, str | int | float | bool) or value is None:
                scalars.append(f"<li><b>{html.escape(f.name)}</b>: {_text(value)}</li>")
        head = f"<h3>{html.escape(type(self).__name__)}</h3>"
        return head + (f"<ul>{''.join(scalars)}</ul>" if scalars else "") + "".join(tables)
