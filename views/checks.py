"""Physics checks (docs/architecture.md section 5): the findings a roofline view must show, never hide or correct."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rooflake.queries import connect, fetch
from rooflake.views.display import Displayed


@dataclass(frozen=True)
class Checks(Displayed):
    """The physics_checks findings of one run (``run_id``) or of every run (``run_id`` None).

    ``table``: run_id, kernel_id (NULL for run-level findings), name, check (above_roof | ai_order_violated |
    gemm_without_flops | nan_duration | zero_peak | missing_roof | instrumented_duration | low_attribution_coverage),
    detail (the numbers behind it, as text), ordered by run, kernel (run-level first) and check.
    """

    run_id: str | None
    table: Any


def checks(store: Any, run_id: str | None = None) -> Checks:
    """The findings of ``run_id`` (a unique prefix; None = every run). Raises :class:`RunNotFoundError`."""
    full = store.resolve(run_id) if run_id else None
    return Checks(full, fetch(connect(store), "run_checks", {"run_id": full}))
