"""``rl roofline``: fetch one run's roofline inputs, draw, save."""

from __future__ import annotations

from pathlib import Path


def draw(store_dir: Path | None, run_id: str | None, out: Path, level: str, precision: str) -> str:
    """Draw the roofline of ``run_id`` into ``out``; returns the one-line summary the CLI prints."""
    from rooflake import queries
    from rooflake.store import Store

    data = queries.roofline_inputs(Store(store_dir), run_id, level)
    from rooflake.render import roofline_chart, save_chart, zero_flop_table

    run = data["run"]
    title = f"{run['gpu_name']} · {Path(run['source_path']).name} · run {data['run_id']}"
    chart = roofline_chart(data["points"], data["ceilings"], level=level, precision=precision, title=title)
    zero = zero_flop_table(data["points"])
    save_chart(chart, out, below=zero)
    return f"wrote {out} (run {data['run_id']}, level {level}, precision {precision}, {zero.height} zero-FLOP kernels)"
