"""rooflake.render: Altair chart specs (a view's tables in, chart out), the static HTML report, and saving them
offline (HTML, PNG, SVG).

Charts: :func:`roofline_chart` (:mod:`.roofline`), :func:`time_roofline_chart` and its two halves
(:mod:`.time_roofline`), :func:`trajectory_chart` (:mod:`.trajectory`); the report: :func:`write_report`
(:mod:`.report`). Helpers every chart uses, public: :mod:`.axes` (log axes, ranges, encodings), :mod:`.roofs`
(which ceilings are drawn, roof lines, labels, layers), :mod:`.marks` (one marker per memory level, bound markers,
flag outlines), :mod:`.formats` (numbers and names as text), :mod:`.inputs` (input tables), :mod:`.tables` (rows
drawn, zero-FLOP kernels), :mod:`.page` (escaping for HTML), :mod:`.files` (the rule for output files).
"""

from rooflake.render.report import write_report
from rooflake.render.roofline import LEVELS, PRECISIONS, roofline_chart
from rooflake.render.save import SAVE_SUFFIXES, chart_html, save_chart, spec_dict
from rooflake.render.tables import zero_flop_table
from rooflake.render.time_roofline import (
    TIME_LEVELS,
    complexity_plane_chart,
    time_roofline_chart,
    time_vs_complexity_chart,
)
from rooflake.render.trajectory import TRAJECTORY_LEVELS, trajectory_chart

__all__ = [
    "LEVELS",
    "PRECISIONS",
    "SAVE_SUFFIXES",
    "TIME_LEVELS",
    "TRAJECTORY_LEVELS",
    "chart_html",
    "complexity_plane_chart",
    "roofline_chart",
    "save_chart",
    "spec_dict",
    "time_roofline_chart",
    "time_vs_complexity_chart",
    "trajectory_chart",
    "write_report",
    "zero_flop_table",
]
