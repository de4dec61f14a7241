"""``rl roofline``: fetch one run's roofline inputs, draw, save."""

from __future__ import annotations

from pathlib import Path


def draw(
    store_dir: Path | None,
    run_id: str | None,
    out: Path,
    level: str,
    precision: str,
    *,
    by: str = "kernel",
    depth: int = 1,
    with_run: str | None = None,
) -> str:
    """Draw the roofline of ``run_id`` (per kernel, or per NVTX layer at ``depth``) into ``out``; returns the
    one-line summary the CLI prints."""
    from rooflake import queries
    from rooflake.store import Store

    store = Store(store_dir)
    if by == "layer":
        data = queries.layer_points(store, run_id, depth, with_run)
        con = queries.connect(store)
        data["run"] = dict(
            zip(
                ("gpu_name", "source_path"),
                con.execute(
                    "SELECT gpu_name, source_path FROM runs WHERE run_id = ?", [data["run_id"]]
                ).fetchall()[0],
                strict=True,
            )
        )
    else:
        data = queries.roofline_inputs(store, run_id, level)
    from rooflake.render import roofline_chart, save_chart, zero_flop_table

    run = data["run"]
    title = f"{run['gpu_name'] or 'GPU'} · {Path(run['source_path']).name} · run {data['run_id']}"
    if by == "layer":
        title += f" · NVTX layers at depth {depth}"
    chart = roofline_chart(data["points"], data["ceilings"], level=level, precision=precision, title=title)
    zero = zero_flop_table(data["points"])
    save_chart(chart, out, below=zero)
    what = f"layers at depth {depth}" if by == "layer" else "kernels"
    return (
        f"wrote {out} (run {data['run_id']}, {what}, level {level}, precision {precision}, "
        f"{zero.height} zero-FLOP {'layers' if by == 'layer' else 'kernels'})"
    )
