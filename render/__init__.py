"""rooflake.render: Altair chart specs (a view's tables in, chart out), the static HTML report, and saving them
offline (HTML, PNG, SVG).

Charts: :func:`roofline_chart` (:mod:`.roofline`), :func:`time_roofline_chart` and its two halves
(:mod:`.time_roofline`), :func:`trajectory_chart` (:mod:`.trajectory`); the roofline's and the time-based
roofline's Vega-Lite specs as dicts built without Altair, the same dicts :func:`spec_dict` gives of those charts:
:func:`roofline_spec`, :func:`time_roofline_spec`, :func:`time_vs_complexity_spec`, :func:`complexity_plane_spec`
(what ``rl report`` draws); the report: :func:`write_report`
(:mod:`.report`). Helpers every chart uses, public: :mod:`.axes` (log axes, ranges, encodings), :mod:`.roofs`
(which ceilings are drawn, roof lines, labels, layers), :mod:`.marks` (one marker per memory level, bound markers,
flag outlines), :mod:`.formats` (numbers and names as text), :mod:`.inputs` (input tables), :mod:`.tables` (rows
drawn, zero-FLOP kernels), :mod:`.page` (escaping for HTML), :mod:`.files` (the rule for output files).
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rooflake.render.report import write_report
    from rooflake.render.roofline import LEVELS, PRECISIONS, roofline_chart, roofline_spec
    from rooflake.render.save import SAVE_SUFFIXES, chart_html, save_chart, spec_dict
    from rooflake.render.tables import zero_flop_table
    from rooflake.render.time_roofline import (
        TIME_LEVELS,
        complexity_plane_chart,
        complexity_plane_spec,
        time_roofline_chart,
        time_roofline_spec,
        time_vs_complexity_chart,
        time_vs_complexity_spec,
    )
    from rooflake.render.trajectory import TRAJECTORY_LEVELS, trajectory_chart

#: public name -> the module defining it; loaded on first use (Altair and polars take ~0.3 s to import, and
#: ``rooflake.render.files`` is imported by every command that writes a file)
_WHERE = {
    "write_report": "report",
    "LEVELS": "roofline",
    "PRECISIONS": "roofline",
    "roofline_chart": "roofline",
    "roofline_spec": "roofline",
    "SAVE_SUFFIXES": "save",
    "chart_html": "save",
    "save_chart": "save",
    "spec_dict": "save",
    "zero_flop_table": "tables",
    "TIME_LEVELS": "time_roofline",
    "complexity_plane_chart": "time_roofline",
    "complexity_plane_spec": "time_roofline",
    "time_roofline_chart": "time_roofline",
    "time_roofline_spec": "time_roofline",
    "time_vs_complexity_chart": "time_roofline",
    "time_vs_complexity_spec": "time_roofline",
    "TRAJECTORY_LEVELS": "trajectory",
    "trajectory_chart": "trajectory",
}


def __getattr__(name: str) -> Any:
    """Import the module of a public name on first use (PEP 562)."""
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f"{__name__}.{module}"), name)


__all__ = [
    "LEVELS",
    "PRECISIONS",
    "SAVE_SUFFIXES",
    "TIME_LEVELS",
    "TRAJECTORY_LEVELS",
    "chart_html",
    "complexity_plane_chart",
    "complexity_plane_spec",
    "roofline_chart",
    "roofline_spec",
    "save_chart",
    "spec_dict",
    "time_roofline_chart",
    "time_roofline_spec",
    "time_vs_complexity_chart",
    "time_vs_complexity_spec",
    "trajectory_chart",
    "write_report",
    "zero_flop_table",
]
