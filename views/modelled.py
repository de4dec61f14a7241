"""The layers of a roofline whose work is modelled (``rl roofline --by layer --with ESTIMATE_RUN``) as the table
printed beside its chart: which numbers are measured and which modelled, said in the headers."""

from __future__ import annotations

from typing import Any

__all__ = ["modelled_table"]


def modelled_table(points: Any, top: int | None = None) -> Any:
    """The layers of a roofline with an ``rl estimate`` run (:func:`rooflake.views.roofline.estimate_roofline`'s points) as a
    ``pyarrow.Table`` whose headers say which numbers are measured and which modelled: layer, time_ns_measured (ns),
    flops_modelled (FLOPs), bytes_modelled (compulsory bytes), ai (FLOP/byte: the first of L1, L2, DRAM the points
    have), flops_per_s and attainable_flops_per_s (FLOP/s), bound. ``top``: only that many points, the most time
    first."""
    import pyarrow.compute as pc

    if top is not None:  # the points that took the most time
        points = points.take(pc.sort_indices(points, [("duration_ns", "descending")])[:top])
    return (
        points.select(["name", "duration_ns", "flops", "bytes_compulsory"])
        .rename_columns(["layer", "time_ns_measured", "flops_modelled", "bytes_modelled"])
        .append_column("ai", pc.coalesce(points["ai_l1"], points["ai_l2"], points["ai_dram"]))
        .append_column("flops_per_s", points["achieved_flops_per_s"])
        .append_column("attainable_flops_per_s", points["attainable_flops_per_s"])
        .append_column("bound", points["bound"])
    )
