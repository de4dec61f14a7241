"""rooflake.render: Altair chart specs (table in, chart out) and saving them offline (HTML, PNG, SVG)."""

from rooflake.render.roofline import LEVELS, PRECISIONS, roofline_chart
from rooflake.render.save import SAVE_SUFFIXES, save_chart
from rooflake.render.tables import zero_flop_table
from rooflake.render.time_roofline import (
    TIME_LEVELS,
    complexity_plane_chart,
    time_roofline_chart,
    time_vs_complexity_chart,
)
from rooflake.render.trajectory import trajectory_chart

__all__ = [
    "LEVELS",
    "PRECISIONS",
    "SAVE_SUFFIXES",
    "TIME_LEVELS",
    "complexity_plane_chart",
    "roofline_chart",
    "save_chart",
    "time_roofline_chart",
    "time_vs_complexity_chart",
    "trajectory_chart",
    "zero_flop_table",
]
