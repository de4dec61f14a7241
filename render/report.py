"""The static HTML report: one self-contained page (Vega, Vega-Lite, vega-embed and every chart's data inlined: it
opens offline) plus a PNG and an SVG of each chart, written atomically into a directory.

Input: run sections (any iterable: a section's charts start rendering as soon as it is taken, while the caller
still builds the next ones; a chart given to :func:`lay_out` earlier is laid out already), each ``{"title": str,
"meta": dict, "charts": [(name, chart)] (an Altair chart or a Vega-Lite spec dict), "tables": [(heading, pa.Table |
pl.DataFrame)], "notes": [str]}``, which the ``rl report`` command builds from the report view
(:func:`rooflake.views.report.report`); this module only lays them out and writes files. Every string of a section
reaches the page escaped (:mod:`rooflake.render.page`): text through ``html.escape``, chart specs as script-safe
JSON.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import polars as pl

from rooflake.render import engine
from rooflake.render.files import write_dir
from rooflake.render.page import script_json, text
from rooflake.render.save import spec_dict

__all__ = ["lay_out", "report_page", "write_report"]

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
section { border-top: 1px solid #ccc; margin-top: 2em; padding-top: 1em; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #ddd; padding: 2px 6px; text-align: left; }
.note { color: #8a4b00; } .meta { color: #555; font-size: 0.9em; }
"""
MAX_ROWS = 20  # rows of a table shown
MAX_CELL = 160  # characters of a cell shown


def _table_html(table: Any, max_rows: int = MAX_ROWS) -> str:
    """The first ``max_rows`` rows of ``table`` as an HTML table (floats to 4 significant digits), escaped."""
    df = table if isinstance(table, pl.DataFrame) else pl.from_arrow(table)
    assert isinstance(df, pl.DataFrame)
    if df.height == 0:
        return "<p class='meta'>(none)</p>"
    head = "".join(f"<th>{text(c)}</th>" for c in df.columns)
    rows = []
    for row in df.head(max_rows).iter_rows():
        cells = ("" if v is None else (f"{v:.4g}" if isinstance(v, float) else str(v)) for v in row)
        rows.append("<tr>" + "".join(f"<td>{text(c[:MAX_CELL])}</td>" for c in cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _chart_stem(s_i: int, c_i: int, name: str) -> str:
    """File name (no suffix) of chart ``c_i`` of section ``s_i``: its name with every non-alphanumeric as ``_``."""
    return f"{s_i:02d}-{c_i:02d}-{''.join(ch if ch.isalnum() else '_' for ch in name)}"


def _spec_json(chart: Any) -> str:
    """The Vega-Lite spec of ``chart`` (an Altair chart or a spec dict) as the JSON text the renderers are given."""
    return json.dumps(spec_dict(chart), allow_nan=False)


def lay_out(chart: Any) -> None:
    """Start laying out the SVG of ``chart`` (an Altair chart or a Vega-Lite spec dict) in a renderer now
    (:func:`rooflake.render.engine.lay_out`): a section of :func:`write_report` holding the same chart then writes
    its files from it. ``rl report`` lays out each run's charts as soon as their rows are read, while the rest of
    the report is read. Nothing without renderer processes."""
    engine.lay_out(_spec_json(chart))


def _section(s_i: int, sec: dict[str, Any], charts_dir: Path, embeds: list[str], rendering: list[Any]) -> str:
    """The HTML of one section; submits its charts' SVG and PNG into ``charts_dir`` (their futures appended to
    ``rendering``) and appends their ``vegaEmbed`` calls (spec as script-safe JSON) to ``embeds``."""
    parts = [f"<section><h2>{text(sec['title'])}</h2>"]
    meta = " · ".join(f"{text(k)}: {text(v)}" for k, v in sec.get("meta", {}).items())
    parts.append(f"<p class='meta'>{meta}</p>")
    parts += [f"<p class='note'>{text(note)}</p>" for note in sec.get("notes", [])]
    for c_i, (name, chart) in enumerate(sec.get("charts", [])):
        spec = spec_dict(chart)  # a spec dict as it is: a report imports no Altair
        div = f"chart-{s_i}-{c_i}"
        parts.append(f"<h3>{text(name)}</h3><div id='{div}' class='chart'></div>")
        embeds.append(f"vegaEmbed('#{div}', {script_json(spec)}, {{renderer: 'svg', actions: false}});")
        stem = _chart_stem(s_i, c_i, name)
        outputs = [
            (str(charts_dir / f"{stem}.svg"), "svg", 1.0),
            (str(charts_dir / f"{stem}.png"), "png", 1.0),
        ]
        rendering.append(engine.render(_spec_json(spec), outputs))
    parts += [f"<h3>{text(heading)}</h3>{_table_html(table)}" for heading, table in sec.get("tables", [])]
    parts.append("</section>")
    return "".join(parts)


def report_page(
    sections: Iterable[dict[str, Any]], charts_dir: Path, *, title: str = "rooflake report"
) -> str:
    """The report's ``index.html`` (every section's strings escaped); writes the charts' SVG and PNG files
    (``<section>-<chart>-<name>.svg|png``) into ``charts_dir``, each section's charts submitted to the renderers
    (:mod:`rooflake.render.engine`) as soon as the section is taken from ``sections``."""
    embeds: list[str] = []
    rendering: list[Any] = []
    bundle = engine.submit(engine.javascript_bundle)
    body = [f"<h1>{text(title)}</h1>"] + [
        _section(i, sec, charts_dir, embeds, rendering) for i, sec in enumerate(sections)
    ]
    engine.wait(rendering)  # every chart's files written (or the first error raised)
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{text(title)}</title><style>{_STYLE}</style>"
        f"<script>{bundle.result()}</script></head><body>"
        + "\n".join(body)
        + "<script>\n"
        + "\n".join(embeds)
        + "\n</script></body></html>"
    )


def write_report(
    sections: Iterable[dict[str, Any]], out_dir: str | Path, *, title: str = "rooflake report"
) -> dict[str, Any]:
    """Write ``index.html`` (:func:`report_page`) and ``charts/<name>.png|svg`` for every chart into ``out_dir``,
    the charts rendered on every core when the caller started renderer processes first
    (:func:`rooflake.render.engine.start`, as ``rl report`` does; they are spawned, so a script calling it needs
    the ``if __name__ == "__main__":`` guard), else here, one after another.

    The directory is built beside ``out_dir`` and renamed into place (:func:`rooflake.render.files.write_dir`:
    missing parents created), so a reader, or a cron run that fails, never sees half a report. Returns
    ``{"index": Path, "charts": int}``. Raises :class:`rooflake.schema.OutputError` naming the directory when it
    cannot be written (or a file of that name exists).
    """

    taken: list[dict[str, Any]] = []  # the sections as report_page takes them (a generator is read once)

    def keep() -> Iterator[dict[str, Any]]:
        for sec in sections:
            taken.append(sec)
            yield sec

    def fill(tmp: Path) -> None:
        (tmp / "charts").mkdir()
        page = report_page(keep(), tmp / "charts", title=title)
        (tmp / "index.html").write_text(page, encoding="utf-8")

    written = write_dir(out_dir, fill)
    n_charts = sum(len(sec.get("charts", [])) for sec in taken)
    return {"index": written / "index.html", "charts": n_charts}
