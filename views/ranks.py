"""The ranks of one distributed job side by side (query ``ranks``): per rank and profiler step, compute,
communication and idle GPU time, the straggler of each step and its gap to the median rank."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rooflake.queries import connect, fetch
from rooflake.schema import InputError, RunNotFoundError
from rooflake.views.display import Displayed
from rooflake.views.runs import row_dicts


@dataclass(frozen=True)
class Ranks(Displayed):
    """The ranks of job ``job``.

    - ``table``: the ``ranks`` rows (job, run_id, rank, world_size, step, step_number, kernels, collectives,
      span_ns, gpu_time_ns, compute_time_ns, comm_time_ns, overlap_time_ns, idle_time_ns (ns), idle_share,
      comm_overlap_share, median_compute_time_ns, gap_to_median_ns (ns), straggler), by step then rank.
    - ``ranks``: the ranks present, sorted; ``world_size``: the job's world size (the largest a run states; None
      when none does); ``missing``: the ranks below ``world_size`` that no run holds.
    - ``note``: what the table cannot say, in one line (ranks missing, runs without a rank, world sizes that
      disagree), or None.
    """

    job: str
    table: Any
    ranks: list[int]
    world_size: int | None
    missing: list[int]
    note: str | None


def spans(numbers: list[int]) -> str:
    """Sorted integers as ranges: ``[1, 2, 3, 7]`` -> ``1-3, 7``."""
    out: list[str] = []
    for n in numbers:
        if out and out[-1].rsplit("-", 1)[-1] == str(n - 1):
            out[-1] = f"{out[-1].split('-')[0]}-{n}"
        else:
            out.append(str(n))
    return ", ".join(out)


def _clashes(job: str, runs: list[dict[str, Any]]) -> None:
    """Raises :class:`InputError` naming the runs and files of the first rank that two runs of ``job`` claim."""
    seen: dict[int, dict[str, Any]] = {}
    for r in runs:
        if r["rank"] is None:
            continue
        if r["rank"] in seen:
            a, b = seen[r["rank"]], r
            raise InputError(
                f"job {job}: runs {a['run_id']} ({a['source_path']}) and {b['run_id']} ({b['source_path']}) both "
                f"claim rank {r['rank']}; ingest one again with --force --label rank=N (or --label job=OTHER) "
                "to say which rank or job it is"
            )
        seen[r["rank"]] = r


def _note(runs: list[dict[str, Any]], world: int | None, missing: list[int]) -> str | None:
    """The one line of what the job's table lacks (see :class:`Ranks`), or None."""
    said = []
    if missing:
        said.append(f"ranks {spans(missing)} of world size {world} missing ({len(missing)} of {world})")
    unranked = [r["run_id"] for r in runs if r["rank"] is None]
    if unranked:
        said.append(
            f"{len(unranked)} run(s) without a rank ({', '.join(unranked)}): --label rank=N at ingest"
        )
    sizes = sorted({r["world_size"] for r in runs if r["world_size"] is not None})
    if len(sizes) > 1:
        said.append(f"the runs disagree on the world size ({', '.join(map(str, sizes))})")
    return "; ".join(said) or None


def ranks(store: Any, job: str) -> Ranks:
    """The ranks of distributed job ``job`` (``runs.job``: the trace folder's name, or ``--label job=NAME``).
    Raises :class:`RunNotFoundError` when no run is of ``job`` (naming the jobs the store holds),
    :class:`InputError` when two runs claim the same rank (naming both files)."""
    con = connect(store)
    runs = row_dicts(fetch(con, "job_runs", {"job": job}, as_pylist=True))
    if not runs:
        jobs = [f"{r['job']} ({r['runs']} runs)" for r in row_dicts(fetch(con, "job_list", as_pylist=True))]
        raise RunNotFoundError(
            f"no run of job {job!r} in the store; jobs: {', '.join(jobs) or 'none'} (a torch.profiler trace with "
            "distributedInfo is of the job named by its folder; --label job=NAME at ingest names it)"
        )
    _clashes(job, runs)
    present = sorted(r["rank"] for r in runs if r["rank"] is not None)
    sizes = [r["world_size"] for r in runs if r["world_size"] is not None]
    world = max(sizes) if sizes else None
    missing = sorted(set(range(world)) - set(present)) if world is not None else []
    table = fetch(con, "ranks", {"job": job}, what=f"ranks of job {job}")
    return Ranks(job, table, present, world, missing, _note(runs, world, missing))
