"""The words around a chart: its title (machine, file, run), the provenance of its numbers, and the roofs it is
drawn against, as ``rl`` prints them and the report writes them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rooflake.schema.duck import Rows

__all__ = ["roofline_title", "roofs_note", "roofs_text", "titled"]


def roofline_title(run: dict[str, Any], run_id: str, grain: str, depth: int, prefix: str = "") -> str:
    """A chart title: GPU · source file · run (· NVTX layers at depth d)."""
    machine = run["gpu_name"] or (f"CPU of {run['host']}" if run.get("host") else "GPU")
    title = f"{prefix}{machine} · {Path(run['source_path']).name} · run {run_id}"
    return title + (f" · NVTX layers at depth {depth}" if grain == "layer" else "")


def titled(title: str, provenance: str | None) -> str | list[str]:
    """A chart's title with the provenance of its numbers (what is measured, what modelled) under it, wrapped: on
    the title's line it made the PNG ~4,100 px wide, the plot squeezed into a third of it."""
    import textwrap

    return [title, *textwrap.wrap(provenance, 110)] if provenance else title


def _dicts(rows: Any) -> list[dict[str, Any]]:
    """``rows`` (an Arrow table, or :class:`rooflake.schema.duck.Rows` without pyarrow) as dicts."""
    if not isinstance(rows, Rows):
        return list(rows.to_pylist())
    return [dict(zip(rows.names, row, strict=True)) for row in rows.rows]


def roofs_text(rows: Any) -> str:
    """``, roofs: <source> (<machine>)[; dashed: <sources>]`` for a view's ceilings rows
    (:func:`rooflake.views.ceilings.run_roofs`: an Arrow table, or DuckDB rows where ``roofline(..., as_rows=True)``
    gave them), or ``, no roofs`` when there are none."""
    dicts = _dicts(rows)
    own = {r["source"]: r["machine_key"] for r in dicts if not r.get("overlay")}
    more = list(dict.fromkeys(r["source"] for r in dicts if r.get("overlay")))
    if not own and not more:
        return ", no roofs"
    named = ", ".join(f"{s} ({m})" if s != "ncu-report" else s for s, m in own.items())
    return f", roofs: {named}" + (f"; dashed: {', '.join(more)}" if more else "")


def roofs_note(rows: Any, asked: Any) -> str:
    """:func:`roofs_text` where the roofs were asked for (``asked``: a ``--ceilings`` value) or are not the run's
    own report peaks (a run without them falls back to the datasheet's or measured roofs: say so); else ``""``."""
    own = {r["source"] for r in rows.to_pylist() if not r.get("overlay")} if rows is not None else set()
    return roofs_text(rows) if asked or own - {"ncu-report"} else ""
