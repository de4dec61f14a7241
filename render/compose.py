"""Layered and concatenated Altair charts built without Altair's copies.

``alt.LayerChart(layer=...)``, ``alt.HConcatChart(hconcat=...)`` and ``alt.VConcatChart(vconcat=...)`` deep-copy
every sub-chart (twice for layers) to lift selection parameters and hoist shared data; a concatenation of layered
charts copies every layer once more to rename it ``<name>_<position>``. A time-based roofline (three levels,
~20 layers) spent 0.1 s of CPU in those copies. The charts of this package have no parameters, and their layers
carry their own data and no size, so those steps change nothing but the names: :func:`layer_chart`,
:func:`hconcat_chart` and :func:`vconcat_chart` make the same chart objects (Altair's own classes, same
properties, same names) without the copies, and fall back to Altair's constructor whenever a sub-chart has
parameters, shares one data object with all its siblings, or sets a size or view of its own. Sub-charts are
used, and concatenated layers renamed, in place: pass charts built for this chart only.
tests/test_render_speed.py checks that Altair's ``to_dict()`` (which rebuilds every chart with its own
constructor) gives the same spec for every chart kind.
"""

from __future__ import annotations

from typing import Any

import altair as alt

__all__ = ["altair_chart", "hconcat_chart", "layer_chart", "vconcat_chart"]

_LAYER_PROPS = ("height", "width", "view")


def _get(chart: Any, prop: str) -> Any:
    """``chart``'s property ``prop``; Undefined where its class has no such property."""
    try:
        return chart[prop]
    except KeyError:
        return alt.Undefined


def _plain(parts: list[Any], props: tuple[str, ...] = ()) -> bool:
    """No part has parameters or any of ``props``, and the parts do not all share one data object (which
    Altair would hoist into the parent)."""
    if any(_get(p, "params") is not alt.Undefined for p in parts):
        return False
    if any(_get(p, prop) is not alt.Undefined for p in parts for prop in props):
        return False
    first = parts[0].data if parts else alt.Undefined
    return first is alt.Undefined or not all(p.data is first for p in parts)


def _made(cls: Any, **kwds: Any) -> Any:
    """An instance of the chart class ``cls`` holding ``kwds``, its constructor's copying skipped."""
    chart = cls.__new__(cls)
    alt.SchemaBase.__init__(chart, **kwds)
    return chart


def _renamed(parts: list[Any]) -> None:
    """Name the layers of each layered part ``<name>_<position>``, as Altair's concatenation does."""
    if len(parts) < 2:
        return
    for i, part in enumerate(parts):
        if not isinstance(part, alt.LayerChart):
            continue
        for layer in part.layer:
            if isinstance(layer, alt.Chart) and layer.name is not alt.Undefined:
                base, _, tail = layer.name.rpartition("_")
                layer.name = f"{base if tail.isdigit() and base else layer.name}_{i}"


def layer_chart(layers: list[Any], **props: Any) -> alt.LayerChart:
    """``alt.LayerChart(layer=layers, **props)`` without the copies (see the module docstring)."""
    layers = list(layers)
    if not _plain(layers, _LAYER_PROPS):
        return alt.LayerChart(layer=layers, **props)
    return _made(alt.LayerChart, data=alt.Undefined, layer=layers, **props)  # type: ignore[no-any-return]


def hconcat_chart(parts: list[Any], **props: Any) -> alt.HConcatChart:
    """``alt.HConcatChart(hconcat=parts, **props)`` without the copies (see the module docstring)."""
    parts = list(parts)
    if not _plain(parts):
        return alt.HConcatChart(hconcat=parts, **props)
    _renamed(parts)
    return _made(alt.HConcatChart, data=alt.Undefined, hconcat=parts, **props)  # type: ignore[no-any-return]


def vconcat_chart(parts: list[Any], **props: Any) -> alt.VConcatChart:
    """``alt.VConcatChart(vconcat=parts, **props)`` without the copies (see the module docstring)."""
    parts = list(parts)
    if not _plain(parts):
        return alt.VConcatChart(vconcat=parts, **props)
    _renamed(parts)
    return _made(alt.VConcatChart, data=alt.Undefined, vconcat=parts, **props)  # type: ignore[no-any-return]


def altair_chart(spec: dict[str, Any]) -> Any:
    """The Altair chart of a Vega-Lite ``spec`` dict built by this package (layers of ``data`` by name, ``mark``,
    ``encoding``, ``name``; ``layer``, ``hconcat`` and ``vconcat`` of them): Altair's own classes holding the
    spec's dicts, so that ``to_dict()`` gives ``spec`` again (validated) and the chart composes, saves and
    displays as any Altair chart; its marks, channels and titles are those dicts, not Altair's objects
    (``chart.to_dict()["title"]``, not ``chart.title.subtitle``). ``$schema`` and ``config`` are left to Altair's
    ``to_dict``, which adds its own (the default theme's config, as the spec holds it). ``alt.Chart.from_dict`` does the same in 0.5-0.8 s for a
    time-based roofline, resolving every property against the schema."""
    return _altair_part({k: v for k, v in spec.items() if k not in ("$schema", "config")})


def _altair_part(part: dict[str, Any]) -> Any:
    """One (sub-)chart of :func:`altair_chart`."""
    for key, make in (("layer", layer_chart), ("hconcat", hconcat_chart), ("vconcat", vconcat_chart)):
        if key in part:
            props = {k: v for k, v in part.items() if k != key}
            return make([_altair_part(p) for p in part[key]], **props)
    data = alt.NamedData(name=part["data"]["name"])
    encoding = alt.FacetedEncoding(**part["encoding"])  # an object: Altair's layering reads its channels
    rest = {k: v for k, v in part.items() if k not in ("data", "mark", "encoding")}
    return alt.Chart(data, mark=part["mark"], encoding=encoding, **rest)
