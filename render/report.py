"""The static HTML report: one self-contained page (Vega, Vega-Lite, vega-embed and every chart's data inlined: it
opens offline) plus a PNG and an SVG of each chart, written atomically into a directory.

Input: a list of run sections, each ``{"title": str, "meta": dict, "charts": [(name, chart)], "tables":
[(heading, pa.Table | pl.DataFrame)], "notes": [str]}`` (built by :func:`rooflake.queries.report_data`); this
module only lays them out and writes files.
"""

from __future__ import annotations

import html
import json
import os
import secrets
import shutil
from pathlib import Path
from typing import Any

import polars as pl

from rooflake.render.save import spec_dict

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
section { border-top: 1px solid #ccc; margin-top: 2em; padding-top: 1em; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #ddd; padding: 2px 6px; text-align: left; }
.note { color: #8a4b00; } .meta { color: #555; font-size: 0.9em; }
"""


def _table_html(table: Any, max_rows: int = 20) -> str:
    df = table if isinstance(table, pl.DataFrame) else pl.from_arrow(table)
    assert isinstance(df, pl.DataFrame)
    if df.height == 0:
        return "<p class='meta'>(none)</p>"
    df = df.head(max_rows)
    head = "".join(f"<th>{html.escape(c)}</th>" for c in df.columns)
    rows = []
    for row in df.iter_rows():
        cells = []
        for v in row:
            text = "" if v is None else (f"{v:.4g}" if isinstance(v, float) else str(v))
            cells.append(f"<td>{html.escape(text[:160])}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _js_bundle() -> str:
    """Vega, Vega-Lite and vega-embed as one inline script (from vl-convert: no network)."""
    import vl_convert as vlc

    bundle: str = vlc.javascript_bundle()  # type: ignore[call-arg]  # the stub marks the optional snippet required
    return bundle


def write_report(
    sections: list[dict[str, Any]], out_dir: str | Path, *, title: str = "rooflake report"
) -> dict[str, Any]:
    """Write ``index.html`` and ``charts/<name>.png|svg`` for every chart into ``out_dir``, atomically.

    The directory is built beside ``out_dir`` and renamed into place, so a reader (or a cron run that fails)
    never sees half a report. Returns ``{"index": Path, "charts": int}``. Raises ``OSError`` on write failures.
    """
    import vl_convert as vlc

    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_dir.parent / f".{out_dir.name}.tmp-{secrets.token_hex(4)}"
    (tmp / "charts").mkdir(parents=True)
    try:
        parts = [f"<h1>{html.escape(title)}</h1>"]
        embeds = []
        n_charts = 0
        for s_i, sec in enumerate(sections):
            parts.append(f"<section><h2>{html.escape(sec['title'])}</h2>")
            meta = " · ".join(
                f"{html.escape(str(k))}: {html.escape(str(v))}" for k, v in sec.get("meta", {}).items()
            )
            parts.append(f"<p class='meta'>{meta}</p>")
            for note in sec.get("notes", []):
                parts.append(f"<p class='note'>{html.escape(note)}</p>")
            for c_i, (name, chart) in enumerate(sec.get("charts", [])):
                spec = spec_dict(chart)
                div = f"chart-{s_i}-{c_i}"
                parts.append(f"<h3>{html.escape(name)}</h3><div id='{div}' class='chart'></div>")
                embeds.append(
                    f"vegaEmbed('#{div}', {json.dumps(spec)}, {{renderer: 'svg', actions: false}});"
                )
                stem = f"{s_i:02d}-{c_i:02d}-{''.join(ch if ch.isalnum() else '_' for ch in name)}"
                (tmp / "charts" / f"{stem}.svg").write_text(vlc.vegalite_to_svg(spec), encoding="utf-8")
                (tmp / "charts" / f"{stem}.png").write_bytes(vlc.vegalite_to_png(spec, scale=1))
                n_charts += 1
            for heading, table in sec.get("tables", []):
                parts.append(f"<h3>{html.escape(heading)}</h3>{_table_html(table)}")
            parts.append("</section>")
        page = (
            "<!DOCTYPE html><html><head><meta charset='utf-8'>"
            f"<title>{html.escape(title)}</title><style>{_STYLE}</style>"
            f"<script>{_js_bundle()}</script></head><body>"
            + "\n".join(parts)
            + "<script>\n"
            + "\n".join(embeds)
            + "\n</script></body></html>"
        )
        (tmp / "index.html").write_text(page, encoding="utf-8")
        old = out_dir.parent / f".{out_dir.name}.old-{secrets.token_hex(4)}"
        if out_dir.exists():
            os.rename(out_dir, old)
        os.rename(tmp, out_dir)
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return {"index": out_dir / "index.html", "charts": n_charts}
