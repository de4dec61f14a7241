"""``rl doctor``: find what is wrong with a store's files (damaged or missing partitions, leftovers)."""

from __future__ import annotations

import typer

from rooflake.cli.common import (
    Fmt,
    FmtOpt,
    OutOpt,
    StoreOpt,
    app,
    emit,
    err,
    existing_store,
    guard,
    need_out,
    on_terminal,
)


@app.command()
@guard
def doctor(store: StoreOpt = None, fmt: FmtOpt = Fmt.table, out: OutOpt = None) -> None:
    """Check every file of the store; list damaged or missing partitions and leftovers of killed writers.

    One row per problem: table, run_id, path, problem (damaged: a Parquet file DuckDB cannot read whole, which
    fails every query of its table; missing: a run's kernels or metrics file is gone; unpublished: rows of a run
    without a runs row, invisible; stale-staging: a dead writer's folder) and the reader's error. Exit 1 when
    there is any problem, 0 for a healthy store (with --format or --out: its empty table, as asked).
    """
    from rooflake.store import Store

    need_out(fmt, out)
    s = Store(store)
    existing_store(s)
    problems = s.doctor()
    if problems.num_rows == 0:
        if not on_terminal(fmt, out):  # what was asked for, with no rows: a JSON [], a CSV header, a file
            emit(problems, fmt, out)
            return
        typer.echo(f"store {s.root}: {len(s.run_ids())} runs, every file reads whole")
        return
    emit(problems, fmt, out)
    err(f"store {s.root}: {problems.num_rows} problem(s) found")
    raise typer.Exit(1)
