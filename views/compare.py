"""Two runs side by side (queries ``compare_layers`` and ``compare_kernels``), with the verdict ``rl compare``
prints and its exit status under a slowdown limit."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rooflake.queries import connect, fetch
from rooflake.schema import BadArgument, RooflakeError, UsageError
from rooflake.views.display import Displayed


@dataclass(frozen=True)
class Comparison(Displayed):
    """``new_run`` against ``base_run`` (full run ids).

    - ``depth``: the NVTX depth of a layer.
    - ``layers``: compare_layers rows (layer, status both | new | removed, base/new_time_ns (ns, GPU time),
      time_change (new / base - 1), base/new_launches, base/new_flops_per_s (FLOP/s), base/new_ai_* (FLOP/byte),
      base/new_bound, base/new_share).
    - ``kernels``: compare_kernels rows (nvtx_path, name, status, base/new_launches, base/new_time_ns (ns),
      time_change, base/new_flops_per_s, base/new_ai_*, base/new_bound).
    - ``base_time_ns``, ``new_time_ns``: total GPU time of kernels and memops (ns; None for a run without any);
      ``time_change``: new / base - 1 (None unless both).
    - ``limit``: the slowdown allowed (0.05 = 5 %) or None; ``slower_layers``: the layers whose time grew past it;
      ``failed``: the total or a layer grew past it.
    - ``verdict``: one line saying it all (what ``rl compare`` prints last).
    - ``ceilings``: the roofs the bounds are taken against (``default``: each run's own report peaks, as stored;
      else the source asked for, as :func:`rooflake.views.ceilings.run_roofs` takes it).
    """

    base_run: str
    new_run: str
    depth: int
    layers: Any
    kernels: Any
    base_time_ns: float | None
    new_time_ns: float | None
    time_change: float | None
    limit: float | None
    slower_layers: list[str]
    failed: bool
    verdict: str
    ceilings: str = "default"


def compare(
    store: Any,
    base_run: str,
    new_run: str,
    depth: int = 1,
    fail_if_slower: float | None = None,
    ceilings: str = "default",
    roofs: dict[str, Any] | None = None,
) -> Comparison:
    """Compare ``new_run`` with ``base_run`` (ids or unique prefixes) per NVTX layer at ``depth`` and per kernel;
    ``fail_if_slower``: the slowdown in percent past which the comparison fails (the total or any layer).
    ``ceilings``: the roofs each kernel's bound and fraction of roof (and so a layer's bound) are taken against:
    ``default``, each run's own report peaks as kernel_roofline holds them; ``report``, ``datasheet``, ``ert`` or
    ``measured``, each run's roofs from that source as ``rl roofline --ceilings`` takes them
    (:func:`rooflake.views.ceilings.run_roofs`, shadowing kernel_roofs:
    :func:`rooflake.views.time_roofline.chosen_kernel_roofs`). Times, FLOP/s and AI do not depend on it. ``roofs``:
    run id -> its ``run_roofs`` of ``ceilings`` already taken (a :class:`~rooflake.views.ceilings.RunRoofs`, or the
    :class:`RooflakeError` it raised: raised here), as a report holds them; the two runs' missing ones are taken
    here.

    Raises :class:`RunNotFoundError`, :class:`QueryError`, :class:`BadArgument` (``ceilings`` ``all``),
    :class:`UsageError` (an unknown ``ceilings``; a run without GPU kernels or memory operations),
    :class:`RooflineDataError` (a run's machine has no ceiling from that source)."""
    base_run, new_run = store.resolve(base_run), store.resolve(new_run)
    con = connect(store)
    shadow = (
        None if ceilings == "default" else _shadow(con, store, sorted({base_run, new_run}), ceilings, roofs)
    )
    what = f"comparing {base_run} and {new_run}"
    totals = {
        r["run_id"]: r["gpu_time_ns"]
        for r in fetch(con, "gpu_time_totals", {"run_ids": [base_run, new_run]}, what=what).to_pylist()
    }
    for run in (base_run, new_run):
        if run not in totals:  # (its total was printed as 0.000 ms)
            raise UsageError(
                f"run {run} has no GPU kernels or memory operations: a comparison compares GPU time (an nsys export "
                "without CUDA trace, an ERT or estimate run has none)"
            )
    b, n = totals[base_run], totals[new_run]
    p = {"base_run": base_run, "new_run": new_run}
    layers = fetch(con, "compare_layers", {**p, "depth": depth}, tables=shadow, what=what)
    kernels = fetch(con, "compare_kernels", p, tables=shadow, what=what)
    change = (n / b - 1) if b and n is not None else None
    limit = None if fail_if_slower is None else fail_if_slower / 100
    lrows = layers.to_pylist()
    slower = [r["layer"] for r in lrows if limit is not None and (r["time_change"] or 0) > limit]
    failed = limit is not None and ((change is not None and change > limit) or bool(slower))
    verdict = _verdict(base_run, new_run, depth, b, n, change, lrows, kernels.to_pylist())
    if ceilings != "default":
        verdict += f"; bounds against --ceilings {ceilings}"
    if failed:
        verdict += f"; FAIL: more than {fail_if_slower:g} % slower" + (
            f" ({', '.join(slower[:5])})" if slower else " in total"
        )
    return Comparison(
        base_run, new_run, depth, layers, kernels, b, n, change, limit, slower, failed, verdict, ceilings
    )


def _shadow(con: Any, store: Any, ids: list[str], ceilings: str, roofs: dict[str, Any] | None) -> Any:
    """``tables`` shadowing kernel_roofs for the runs ``ids`` against their roofs of ``ceilings`` (not ``default``;
    ``roofs``: those already taken, see :func:`compare`). Raises as :func:`compare`."""
    # pyarrow: only when asked
    from rooflake.views.ceilings import run_roofs
    from rooflake.views.time_roofline import chosen_kernel_roofs

    if ceilings == "all":
        raise BadArgument(
            "--ceilings all draws several sources' roofs; a bound is taken against one: choose report, "
            "datasheet, ert or measured"
        )
    taken = {r: (roofs or {}).get(r) for r in ids}
    errors = [got for got in taken.values() if isinstance(got, RooflakeError)]
    if errors:
        raise errors[0]
    return chosen_kernel_roofs(
        con, ids, {r: got or run_roofs(store, r, ceilings) for r, got in taken.items()}
    )


def _verdict(
    base_run: str,
    new_run: str,
    depth: int,
    b: float | None,
    n: float | None,
    change: float | None,
    lrows: list[dict[str, Any]],
    krows: list[dict[str, Any]],
) -> str:
    def count(rows: list[dict[str, Any]], status: str) -> int:
        return sum(1 for r in rows if r["status"] == status)

    total = f"{(b or 0) / 1e6:.3f} ms -> {(n or 0) / 1e6:.3f} ms" + (
        f" ({change:+.1%})" if change is not None else ""
    )
    return (
        f"{new_run} vs {base_run}: total GPU time {total}; layers at depth {depth}: "
        f"{sum(1 for r in lrows if (r['time_change'] or 0) > 0)} slower, "
        f"{sum(1 for r in lrows if (r['time_change'] or 0) < 0)} faster, {count(lrows, 'new')} new, "
        f"{count(lrows, 'removed')} removed; kernels: {count(krows, 'new')} new, {count(krows, 'removed')} removed"
    )
