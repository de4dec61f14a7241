"""Saving charts offline: HTML (JavaScript inlined), PNG and SVG (vl-convert), written atomically.

The zero-FLOP kernels of a run (:func:`rooflake.render.tables.zero_flop_table`) follow the chart: an HTML
table in a page, a text list drawn under the chart in PNG/SVG. Files are written by the rule of :mod:`rooflake.render.files`.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import polars as pl

from rooflake.render import engine
from rooflake.render.files import write_file
from rooflake.render.formats import duration, share, truncate_text
from rooflake.render.inputs import values
from rooflake.render.page import ScriptJSONEncoder, text
from rooflake.schema import UsageError

# Altair is imported where a chart object is built or read: a spec dict saved as PNG or SVG needs none
if TYPE_CHECKING:
    import altair as alt

__all__ = ["SAVE_SUFFIXES", "chart_html", "save_chart", "spec_dict"]

#: Suffixes :func:`save_chart` writes.
SAVE_SUFFIXES = (".html", ".png", ".svg")

MAX_BELOW_ROWS = 25  # zero-FLOP kernels listed under a PNG/SVG chart
_BELOW_COLUMNS: tuple[tuple[str, Literal["left", "right"], int], ...] = (
    ("name", "left", 0),
    ("duration", "right", 720),
    ("share", "right", 800),
)


def _inline(df: pl.DataFrame) -> alt.InlineData:
    import altair as alt

    return alt.InlineData(values=values(df))


def _below_total(below: pl.DataFrame) -> float | None:
    """The zero-FLOP share of time over the runs in ``below`` (one total per run, summed)."""
    if "run_id" not in below.columns or "total_share_of_time" not in below.columns:
        return None
    return float(below.unique("run_id").get_column("total_share_of_time").fill_null(float("nan")).sum())


def _below_html(below: pl.DataFrame, noun: str = "kernel") -> str:
    total = _below_total(below)
    rows = []
    for r in below.iter_rows(named=True):
        full = r.get("name") or ""
        rows.append(
            "<tr>"
            f'<td title="{text(full)}"><code>{text(truncate_text(full))}</code></td>'
            f"<td>{text(r.get('short_name') or '')}</td>"
            f'<td class="num">{duration(r.get("duration_ns"))}</td>'
            f'<td class="num">{share(r.get("share_of_time"))}</td>'
            "</tr>"
        )
    foot = (
        f'<tfoot><tr><td colspan="3">{below.height} {noun}(s)</td>'
        f'<td class="num">{share(total)}</td></tr></tfoot>'
        if total is not None
        else ""
    )
    return (
        '\n<section class="rl-zero-flops" style="font-family: sans-serif; margin: 1.5em 0 0 0.5em;">\n'
        "<style>.rl-zero-flops table{border-collapse:collapse;font-size:13px}"
        ".rl-zero-flops td,.rl-zero-flops th{border-bottom:1px solid #ddd;padding:3px 10px;text-align:left}"
        ".rl-zero-flops .num{text-align:right}</style>\n"
        f"<h3>{noun.capitalize()}s without FLOPs (no place on a log-AI axis)</h3>\n"
        "<table><thead><tr><th>name</th><th>short name</th><th>duration</th>"
        "<th>share of time</th></tr></thead>\n"
        f"<tbody>{''.join(rows)}</tbody>{foot}</table>\n</section>\n"
    )


def _below_chart(below: pl.DataFrame, noun: str = "kernel") -> alt.LayerChart:
    import altair as alt

    total = _below_total(below)
    shown = below.head(MAX_BELOW_ROWS)
    lines = [
        {
            "row": i,
            "name": truncate_text(r.get("name")),
            "duration": duration(r.get("duration_ns")),
            "share": share(r.get("share_of_time")),
        }
        for i, r in enumerate(shown.iter_rows(named=True))
    ]
    if below.height > MAX_BELOW_ROWS:
        lines.append(
            {
                "row": len(lines),
                "name": f"… and {below.height - MAX_BELOW_ROWS} more",
                "duration": "",
                "share": "",
            }
        )
    data = pl.DataFrame(
        lines, schema={"row": pl.Int64, "name": pl.String, "duration": pl.String, "share": pl.String}
    )
    cols = [
        alt.Chart(_inline(data), name=f"zero_flops_{field}")
        .mark_text(align=align, fontSize=11, font="monospace" if field == "name" else "sans-serif")
        .encode(x=alt.XValue(x), y=alt.Y("row:O", axis=None), text=alt.Text(f"{field}:N"))
        for field, align, x in _BELOW_COLUMNS
    ]
    return alt.LayerChart(layer=cols).properties(
        view=alt.ViewBackground(stroke=None),
        width=800,
        height=16 * len(lines),
        title=alt.TitleParams(
            f"{noun.capitalize()}s without FLOPs (no place on a log-AI axis)",
            subtitle=f"{below.height} {noun}(s), {share(total)} of the run's time "
            "· name, duration, share of time",
            anchor="start",
            fontSize=13,
        ),
    )


@functools.cache
def _composites() -> tuple[type[alt.LayerChart], type[alt.HConcatChart], type[alt.VConcatChart]]:
    """Altair's compound chart classes."""
    import altair as alt

    return (alt.LayerChart, alt.HConcatChart, alt.VConcatChart)


def _spec_dict(chart: Any) -> dict[str, Any]:
    """``chart.to_dict(validate=False)``, the same dict, without Altair's copies of compound charts.

    Altair's ``to_dict`` re-creates every layered or concatenated chart before serialising it (a shallow copy
    re-runs the constructor, which deep-copies every sub-chart), once per level of nesting: a time-based
    roofline (three levels, ~20 layers) took 0.1 s, more than its own building. Here a compound chart without
    data of its own is serialised the way ``to_dict`` does it (same context, ``$schema``, theme, datasets) but
    in place; single-view charts and channels are Altair's own ``to_dict``. The top-level ``datasets`` (plain
    JSON rows from :func:`rooflake.render.inputs.values`) are put in unvisited: Altair visits every value of
    every row, seconds for a run of a few thousand kernels. Validating against the Vega-Lite schema took a third
    of a report's time; the charts are built by this package, and tests/test_render_speed.py checks for every
    kind that the spec validates and equals Altair's ``to_dict()``.
    """
    if isinstance(chart, dict):  # a spec built as a dict (roofline_spec, time_roofline_spec): as it is
        return chart
    import altair as alt

    if not isinstance(chart, _composites()) or chart.data is not alt.Undefined:
        return _altair_spec(chart)
    context: dict[str, Any] = {"datasets": {}}
    spec = _compound(chart, context)
    spec.setdefault("$schema", alt.SCHEMA_URL)
    theme: Any = alt.theme.get()  # the active theme's config under the spec, as to_dict puts it
    spec = dict(alt.utils.update_nested(theme(), spec, copy=True))
    if context["datasets"]:
        spec.setdefault("datasets", {}).update(context["datasets"])
    return spec


def _altair_spec(chart: Any) -> dict[str, Any]:
    """Altair's ``to_dict(validate=False)``, the top-level ``datasets`` set aside while it walks the spec."""
    import altair as alt

    datasets = getattr(chart, "datasets", alt.Undefined)
    if not isinstance(datasets, dict) or not datasets:
        return chart.to_dict(validate=False)
    chart.datasets = alt.Undefined  # set aside, not copied: a deep copy of the chart cost more than the walk
    try:
        spec = chart.to_dict(validate=False)
    finally:
        chart.datasets = datasets
    spec["datasets"] = {**spec.get("datasets", {}), **datasets}
    return spec


def _compound(chart: Any, context: dict[str, Any]) -> dict[str, Any]:
    """A layered or concatenated chart without data of its own as ``to_dict`` gives it below the top level:
    its properties serialised with the context Altair passes (``datasets`` shared, ``top_level`` false)."""
    import altair as alt

    inner = {**context, "top_level": False, "pre_transform": False}
    out: dict[str, Any] = {}
    for key, value in chart._kwds.items():  # the properties as given (what SchemaBase.to_dict serialises)
        if value is alt.Undefined or key in ("shorthand", "_cached_hash"):
            continue
        out[key] = value if key == "datasets" else _serialise(value, inner)
    return out


def _serialise(obj: Any, context: dict[str, Any]) -> Any:
    """One property value: sub-charts (compound ones in place), schema objects by their ``to_dict``, lists and
    dicts element by element (``Undefined`` entries left out), anything else as it is."""
    import altair as alt

    if isinstance(obj, _composites()) and obj.data is alt.Undefined:
        return _compound(obj, context)
    if isinstance(obj, alt.SchemaBase):
        return obj.to_dict(validate=False, context=context)
    if isinstance(obj, (list, tuple)):
        return [_serialise(v, context) for v in obj]
    if isinstance(obj, dict):
        return {k: _serialise(v, context) for k, v in obj.items() if v is not alt.Undefined}
    return obj


def _vconcat(top: dict[str, Any], bottom: dict[str, Any]) -> dict[str, Any]:
    """Two top-level Vega-Lite specs stacked vertically (datasets, config and schema hoisted to the top)."""
    top, bottom = dict(top), dict(bottom)
    out: dict[str, Any] = {"$schema": top.pop("$schema", bottom.get("$schema"))}
    bottom.pop("$schema", None)
    out["config"] = {**bottom.pop("config", {}), **top.pop("config", {})}
    out["datasets"] = {**bottom.pop("datasets", {}), **top.pop("datasets", {})}
    out["vconcat"] = [top, bottom]
    out["spacing"] = 24
    return out


def chart_html(spec: dict[str, Any], below: pl.DataFrame | None = None, noun: str = "kernel") -> str:
    """The page of one chart: what ``chart.save(path, inline=True)`` writes (Vega, Vega-Lite and vega-embed
    JavaScript inlined), the spec embedded as script-safe JSON (:mod:`rooflake.render.page`: no name in the data
    can end the script), and the HTML table of ``below`` (escaped) after the chart when it has rows."""
    import altair as alt

    page = alt.utils.spec_to_html(
        spec,
        mode="vega-lite",
        vegalite_version=alt.VEGALITE_VERSION,
        vegaembed_version=alt.VEGAEMBED_VERSION,
        vega_version=alt.VEGA_VERSION,
        template="inline",
        json_kwds={"cls": ScriptJSONEncoder},
    )
    if below is not None and below.height > 0:
        table = _below_html(below, noun)
        at = page.rfind("</body>")
        page = page[:at] + table + page[at:] if at >= 0 else page + table
    return page


def save_chart(
    chart: alt.TopLevelMixin | dict[str, Any],
    path: str | os.PathLike[str],
    *,
    below: pl.DataFrame | None = None,
    noun: str = "kernel",
) -> None:
    """Write ``chart`` (an Altair chart or a Vega-Lite spec dict) to ``path``, the format chosen by the suffix;
    works offline.

    - ``.html``: :func:`chart_html` (JavaScript embedded, no CDN); when ``below`` (the :func:`zero_flop_table` of
      the run) has rows, an HTML table "Kernels without FLOPs (no place on a log-AI axis)" follows the chart:
      name (truncated, full name on hover), short name, duration, share of time, and the total share.
    - ``.png`` (scale 2) / ``.svg``: rendered by vl-convert (``vegalite_to_png`` / ``vegalite_to_svg``), no
      browser, in a renderer process when :func:`rooflake.render.engine.start` was called (its JavaScript engine
      warmed up meanwhile); a non-empty ``below`` is drawn under the chart as a text list (first 25 kernels).

    ``below`` columns: ``name``, ``short_name``, ``duration_ns`` (ns), ``share_of_time`` (0..1),
    ``total_share_of_time`` and ``run_id`` (for the total); ``noun``: what one row is (kernel, or layer). The file
    is written by the rule of :mod:`rooflake.render.files`: atomically, missing parent directories created.

    Raises :class:`rooflake.schema.UsageError` for a suffix other than .html, .png, .svg (the message names the path);
    :class:`rooflake.schema.OutputError` (naming the path) if the file cannot be written.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in SAVE_SUFFIXES:
        raise UsageError(
            f"cannot save a chart to {str(path)!r}: unknown suffix {path.suffix!r} "
            f"(allowed: {', '.join(SAVE_SUFFIXES)})"
        )
    spec = _spec_dict(chart)
    if suffix == ".html":
        write_file(path, chart_html(spec, below, noun).encode("utf-8"))
        return
    if below is not None and below.height > 0:
        spec = _vconcat(spec, _spec_dict(_below_chart(below, noun)))
    spec_json = json.dumps(spec, allow_nan=False)
    fmt, scale = ("png", 2.0) if suffix == ".png" else ("svg", 1.0)
    engine.submit(engine.render_files, spec_json, [(str(path), fmt, scale)]).result()


def spec_dict(chart: Any) -> dict[str, Any]:
    """The Vega-Lite spec of ``chart`` (an Altair chart, or a spec dict, returned as it is) as a dict (fast path for
    charts with large top-level datasets)."""
    return _spec_dict(chart)
