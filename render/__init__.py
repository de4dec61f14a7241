"""rooflake.render: Altair chart specs (table in, chart out) and saving them offline (HTML, PNG, SVG)."""

from rooflake.render.roofline import LEVELS, PRECISIONS, roofline_chart
from rooflake.render.save import SAVE_SUFFIXES, save_chart
from rooflake.render.tables import zero_flop_table
from rooflake.render.trajectory import trajectory_chart

__all__ = [
    "LEVELS",
    "PRECISIONS",
    "SAVE_SUFFIXES",
    "roofline_chart",
    "save_chart",
    "trajectory_chart",
    "zero_flop_table",
]
