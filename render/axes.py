"""Log axes shared by every chart: decade ticks, ranges that cover the data, encodings, on-screen slopes.

Every rooflake chart is log-log (Williams et al., CACM 2009: the roofline's lines are straight on log axes). The
x axis of a roofline is arithmetic intensity (FLOP/byte), the y axis FLOP/s; the time-based views use time (s),
work (FLOP) and data moved (byte).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where an encoding is built: the *_spec dicts need no Altair (start-up)
    import altair as alt

__all__ = [
    "AI_RANGE",
    "LogAxis",
    "ai_x",
    "ai_x_spec",
    "decades",
    "flops_y",
    "flops_y_spec",
    "half_decade_range",
    "padded_range",
    "roofline_ai_range",
    "roofline_y_range",
    "slope_angle",
]

#: FLOP/byte, the least x range of a roofline (extended to the data and the ridge points).
AI_RANGE = (1e-3, 1e4)

_AI_LABELS = (
    "datum.value >= 1e5 || datum.value < 1e-4 ? format(datum.value, '.0e') : format(datum.value, '~g')"
)


def decades(lo: float, hi: float) -> list[float]:
    """The powers of ten from ``lo`` to ``hi`` (both > 0), ends included when they are powers of ten."""
    return [10.0**e for e in range(math.ceil(math.log10(lo) - 1e-9), math.floor(math.log10(hi) + 1e-9) + 1)]


def _finite_positive(vals: list[float | None]) -> list[float]:
    return [v for v in vals if v is not None and v > 0 and math.isfinite(v)]


def roofline_y_range(
    vals: list[float | None], lo: float | None = None, hi: float | None = None
) -> tuple[float, float]:
    """Decade-aligned range covering ``vals`` (and ``lo``/``hi`` if given), the top with 50 % headroom."""
    ok = _finite_positive(vals)
    if not ok:
        return (lo or 1.0, hi or 10.0)
    a = 10.0 ** math.floor(math.log10(min(ok)))
    b = 10.0 ** math.ceil(math.log10(max(ok) * 1.5))
    return (min(a, lo) if lo else a, max(b, hi) if hi else b)


def roofline_ai_range(ai: list[float | None], ridges: list[float]) -> tuple[float, float]:
    """:data:`AI_RANGE`, extended by a decade beyond the points' AI and the ridge points."""
    ok = _finite_positive([*ai, *ridges])
    lo, hi = AI_RANGE
    if ok:
        lo = min(lo, 10.0 ** (math.floor(math.log10(min(ok))) - 1))
        hi = max(hi, 10.0 ** (math.ceil(math.log10(max(ok))) + 1))
    return lo, hi


def padded_range(vals: list[float | None], pad: float = 0.5) -> tuple[float, float]:
    """Decade-aligned range around ``vals`` (> 0), padded by ``pad`` decades; (1, 10) when none is > 0."""
    ok = _finite_positive(vals)
    if not ok:
        return 1.0, 10.0
    lo = 10.0 ** math.floor(math.log10(min(ok)) - pad)
    hi = 10.0 ** math.ceil(math.log10(max(ok)) + pad)
    return lo, hi


def half_decade_range(vals: list[float | None], min_decades: float = 2.0) -> tuple[float, float]:
    """A range covering ``vals`` with a little room (more on top, for labels), its ends on half decades, at
    least ``min_decades`` wide (widened on both sides)."""
    ok = _finite_positive(vals)
    if not ok:
        return (1.0, 10.0**min_decades)
    lo = math.floor((math.log10(min(ok)) - 0.15) * 2) / 2
    hi = math.ceil((math.log10(max(ok)) + 0.3) * 2) / 2
    while hi - lo < min_decades:
        lo, hi = lo - 0.5, hi + 0.5
    return 10.0**lo, 10.0**hi


def slope_angle(x: tuple[float, float], y: tuple[float, float], width: int, height: int) -> float:
    """On-screen angle (degrees, counter-clockwise from +x) of a slope-1 line (y = k x) on these log-log axes of
    ``width`` x ``height`` px. Vega's text ``angle`` turns clockwise: pass ``-slope_angle(...)``."""
    xd, yd = math.log10(x[1] / x[0]), math.log10(y[1] / y[0])
    return math.degrees(math.atan((height / yd) / (width / xd)))


def ai_x(level_text: str, lo: float, hi: float, field: str = "ai") -> alt.X:
    """The x encoding of a roofline: arithmetic intensity at ``level_text`` (FLOP/byte), log, ticks per decade."""
    import altair as alt

    return alt.X(
        f"{field}:Q",
        scale=alt.Scale(type="log", domain=[lo, hi], nice=False),
        axis=alt.Axis(
            title=f"Arithmetic intensity at {level_text} (FLOP/byte)",
            values=decades(lo, hi),
            labelExpr=_AI_LABELS,
        ),
    )


def flops_y(field: str, lo: float, hi: float) -> alt.Y:
    """The y encoding of a roofline: performance (FLOP/s) of ``field``, log, SI ticks per decade."""
    import altair as alt

    return alt.Y(
        f"{field}:Q",
        scale=alt.Scale(type="log", domain=[lo, hi], nice=False),
        axis=alt.Axis(title="Performance (FLOP/s)", format="~s", values=decades(lo, hi)),
    )


def ai_x_spec(level_text: str, lo: float, hi: float, field: str = "ai") -> dict[str, Any]:
    """:func:`ai_x` as the Vega-Lite dict Altair's ``to_dict`` gives of it (same keys, same order), without Altair
    (tests/test_png_spec.py checks them equal)."""
    return {
        "axis": {
            "labelExpr": _AI_LABELS,
            "title": f"Arithmetic intensity at {level_text} (FLOP/byte)",
            "values": decades(lo, hi),
        },
        "field": field,
        "scale": {"domain": [lo, hi], "nice": False, "type": "log"},
        "type": "quantitative",
    }


def flops_y_spec(field: str, lo: float, hi: float) -> dict[str, Any]:
    """:func:`flops_y` as the Vega-Lite dict Altair's ``to_dict`` gives of it, without Altair."""
    return {
        "axis": {"format": "~s", "title": "Performance (FLOP/s)", "values": decades(lo, hi)},
        "field": field,
        "scale": {"domain": [lo, hi], "nice": False, "type": "log"},
        "type": "quantitative",
    }


@dataclass(frozen=True)
class LogAxis:
    """A log axis (title, domain) that makes the x or y encoding of any field on it (SI ticks, grid), as the
    Vega-Lite dict Altair's ``to_dict`` gives of ``alt.X(field + ":Q", scale=alt.Scale(type="log", ...),
    axis=alt.Axis(...))``: keys in name order, built without importing Altair."""

    title: str
    dom: tuple[float, float]

    def x(self, field: str) -> dict[str, Any]:
        """The x encoding of ``field`` (quantitative) on this axis."""
        return {
            "axis": {"format": "~s", "grid": True, "title": self.title, "values": decades(*self.dom)},
            "field": field,
            "scale": {"domain": list(self.dom), "nice": False, "type": "log"},
            "type": "quantitative",
        }

    def y(self, field: str) -> dict[str, Any]:
        """The y encoding of ``field`` (quantitative) on this axis: the same dict as :meth:`x`."""
        return self.x(field)
