"""Marks shared by every chart: one marker and one line style per memory level, bound markers, flag outlines.

A memory level looks the same on every chart (the README's legend): L1 ▲ (``triangle-up``, dotted line), L2 ■
(``square``, dashed), DRAM ● (``circle``, solid). The time-based roofline marks a point by its bound: a level bound
with that level's marker, a compute bound (any pipe or Tensor-Core roof) with a cross, launch overhead a diamond.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where an encoding is built: the *_spec dicts need no Altair (start-up)
    import altair as alt

__all__ = [
    "BOUND_SHAPE_COMPUTE",
    "BOUND_SHAPE_OVERHEAD",
    "BOUND_SHAPE_UNKNOWN",
    "FLAG_STROKE",
    "LEVEL_DASH",
    "LEVEL_LABEL",
    "LEVEL_ORDER",
    "LEVEL_SHAPE",
    "LEVEL_SYMBOL",
    "bound_order",
    "bound_shape",
    "flag_outline",
    "flag_outline_spec",
    "level_shape",
    "level_shape_spec",
    "level_styles_text",
]

#: Memory levels as the queries name them, innermost first (expect AI_L1 <= AI_L2 <= AI_DRAM).
LEVEL_ORDER = ("l1", "l2", "dram")
#: Their names on a chart (and in ``run_ceilings.ceiling``).
LEVEL_LABEL = {"l1": "L1", "l2": "L2", "dram": "DRAM"}
#: Vega marker of each level, by chart name.
LEVEL_SHAPE = {"L1": "triangle-up", "L2": "square", "DRAM": "circle"}
#: The same markers as text (subtitles, legends written in prose).
LEVEL_SYMBOL = {"L1": "▲", "L2": "■", "DRAM": "●"}
#: Line dash of each level where lines of several levels share a chart (trajectories).
LEVEL_DASH = {"L1": [2, 2], "L2": [6, 3], "DRAM": [1, 0]}
_DASH_NAME = {"L1": "dotted", "L2": "dashed", "DRAM": "solid"}

BOUND_SHAPE_COMPUTE = "cross"
BOUND_SHAPE_OVERHEAD = "diamond"
BOUND_SHAPE_UNKNOWN = "triangle-down"
_OVERHEAD = "launch_overhead"
_UNKNOWN = "unknown"

#: Outline colour of a flagged point (above its roof, below its time bound, or flagged at ingest).
FLAG_STROKE = "#e31a1c"


def flag_outline() -> dict[str, Any]:
    """Point encodings that outline flagged points in red (rows with a boolean ``flagged`` column: above their
    roof, below their time bound, or flagged at ingest), the others in a thin white line. Every chart uses this."""
    import altair as alt

    return {
        "stroke": alt.StrokeValue("white", condition={"test": "datum.flagged", "value": FLAG_STROKE}),
        "strokeWidth": alt.StrokeWidthValue(0.7, condition={"test": "datum.flagged", "value": 2.5}),
    }


def level_shape(*, legend: alt.Legend | None = None) -> alt.Shape:
    """The ``shape`` encoding of a ``level`` column holding chart names (L1, L2, DRAM): :data:`LEVEL_SHAPE`."""
    import altair as alt

    extra: dict[str, Any] = {} if legend is None else {"legend": legend}
    return alt.Shape(
        "level:N",
        title="Level",
        scale=alt.Scale(domain=list(LEVEL_SHAPE), range=list(LEVEL_SHAPE.values())),
        **extra,
    )


def flag_outline_spec() -> dict[str, Any]:
    """:func:`flag_outline` as the Vega-Lite dicts Altair's ``to_dict`` gives of it (same keys, same order),
    without Altair (tests/test_png_spec.py checks them equal)."""
    flagged = "datum.flagged"
    return {
        "stroke": {"condition": {"test": flagged, "value": FLAG_STROKE}, "value": "white"},
        "strokeWidth": {"condition": {"test": flagged, "value": 2.5}, "value": 0.7},
    }


def level_shape_spec(legend: dict[str, Any] | None = None) -> dict[str, Any]:
    """:func:`level_shape` as the Vega-Lite dict Altair's ``to_dict`` gives of it, ``legend`` as a dict; without
    Altair."""
    return {
        "field": "level",
        **({} if legend is None else {"legend": legend}),
        "scale": {"domain": list(LEVEL_SHAPE), "range": list(LEVEL_SHAPE.values())},
        "title": "Level",
        "type": "nominal",
    }


def level_styles_text() -> str:
    """``'L1 dotted (▲), L2 dashed (■), DRAM solid (●)'``: the line style and marker of each level."""
    return ", ".join(f"{lv} {_DASH_NAME[lv]} ({LEVEL_SYMBOL[lv]})" for lv in LEVEL_SHAPE)


def bound_shape(bound: str | None) -> str:
    """Marker of a time-roofline bound: a level's own marker, a diamond for launch overhead, a triangle-down for
    an unknown bound, a cross for every compute bound (FP64, FP32, FP16, TENSOR and any Tensor-Core roof)."""
    if bound in LEVEL_SHAPE:
        return LEVEL_SHAPE[bound]
    if bound == _OVERHEAD:
        return BOUND_SHAPE_OVERHEAD
    if bound is None or bound == _UNKNOWN:
        return BOUND_SHAPE_UNKNOWN
    return BOUND_SHAPE_COMPUTE


def bound_order(bounds: set[str]) -> list[str]:
    """The bounds present, in legend order: FP64, FP32, FP16, TENSOR, other compute roofs (sorted), DRAM, L2, L1,
    launch overhead, unknown."""
    head = ["FP64", "FP32", "FP16", "TENSOR"]
    tail = ["DRAM", "L2", "L1", _OVERHEAD, _UNKNOWN]
    others = sorted(b for b in bounds if b not in head and b not in tail)
    return [b for b in head if b in bounds] + others + [b for b in tail if b in bounds]
