"""``rl demo``: rooflake on real reports it ships, with nothing else at hand.

Two Nsight Compute reports of the project's own (an NVIDIA H100 running a bf16 transformer block under
``rooflake.instrument.annotate``'s NVTX ranges; the test data ``tests/data/gpu/`` describes how they were made) are
package data, ``xz``-compressed (``rooflake/data/*.ncu-rep.xz``, 0.37 MB). :func:`demo` decompresses them into a
temporary folder, ingests them into a store and writes the HTML report of their runs and the hierarchical
roofline of the training step as a PNG.
"""

from __future__ import annotations

import lzma
import tempfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

__all__ = ["REPORTS", "DemoResult", "demo", "report_bytes"]

#: the reports shipped (``rooflake/data/<name>.ncu-rep.xz``) -> the labels their runs get
REPORTS: dict[str, dict[str, str]] = {
    "block_fwd": {"model": "block", "profile": "forward, first four kernels"},
    "block_train": {"model": "block", "profile": "training step, GEMMs and attention"},
}
#: the run :func:`demo` draws the roofline of
ROOFLINE_OF = "block_train"


@dataclass(frozen=True)
class DemoResult:
    """What :func:`demo` did: ``store`` (its location), ``ingested`` (an
    :class:`rooflake.pipeline.IngestResult` per report: status ``ingested``, or ``exists`` when the store held it
    already), ``report`` (:class:`rooflake.reporting.ReportWritten`), ``roofline`` (the PNG written) and
    ``roofline_run`` (its run id)."""

    store: Path
    ingested: list[Any]
    report: Any
    roofline: Path
    roofline_run: str


def report_bytes(name: str) -> bytes:
    """The decompressed bytes of shipped report ``name`` (a key of :data:`REPORTS`)."""
    packed = resources.files("rooflake").joinpath("data").joinpath(f"{name}.ncu-rep.xz").read_bytes()
    return lzma.decompress(packed)


def demo(out: str | Path = "rl-demo", store: str | Path | None = None) -> DemoResult:
    """Ingest the shipped reports into ``store`` (default ``OUT/store``; a store holding them already is left as it
    is), write the report of their two runs into ``OUT/report/`` (:func:`rooflake.reporting.report_html`)
    and the training step's hierarchical roofline, every level and precision, into ``OUT/roofline.png``. Raises
    :class:`rooflake.schema.RooflakeError` subclasses as ingest and the report do (an unwritable ``out`` or
    ``store``)."""
    from rooflake.pipeline import ingest_file
    from rooflake.reporting import report_html
    from rooflake.store import Store

    out = Path(out)
    where = Path(store) if store is not None else out / "store"
    ingested = []
    with tempfile.TemporaryDirectory(prefix="rl-demo-") as tmp:
        for name, labels in REPORTS.items():
            rep = Path(tmp) / f"{name}.ncu-rep"
            rep.write_bytes(report_bytes(name))
            ingested.append(ingest_file(rep, where, labels))
    run_ids = [
        r.run_id for r in ingested if r.run_id is not None
    ]  # (ingest_file raises rather than give none)
    report = report_html(Store(where), out / "report", run_ids=run_ids)
    drawn = run_ids[list(REPORTS).index(ROOFLINE_OF)]
    png = _roofline_png(Store(where), drawn, out / "roofline.png")
    return DemoResult(where, ingested, report, png, drawn)


def _roofline_png(store: Any, run_id: str, path: Path) -> Path:
    """The hierarchical roofline of ``run_id`` (every level, each kernel's dominant precision) written to ``path``,
    as ``rl roofline RUN --level all --out path`` draws it."""
    from rooflake.render.captions import roofline_title
    from rooflake.render.rows import save_roofline
    from rooflake.views.roofline import roofline

    v = roofline(store, run_id, "all", as_rows=True)
    title = roofline_title(v.run, v.run_id, v.grain, 1)
    save_roofline(v.points, v.ceilings, path, level="all", precision="all", title=title)
    return path
