"""The store's DuckDB database started on a second thread while ``rl`` parses a store command's arguments.

Before :func:`rooflake.store.database.build` can read a store, an in-memory DuckDB database must start and hold the
empty stand-in of every table (:func:`~rooflake.store.database.stand_ins`): ~25 ms, mostly inside DuckDB, outside
the GIL, and the same whatever the store. Meanwhile typer builds the command and coerces its arguments (which
imported pydantic, ~60 ms holding the GIL, until :mod:`rooflake.cli.coercion` spared the values that need no
conversion). ``rl``'s :func:`rooflake.cli.main` calls :func:`start` for a
command that reads the store, before typer runs; the next :func:`connect` takes what that thread made instead of
making it again. Nothing that depends on the arguments is done early (which store, which runs, which settings):
the connection handed out holds the stand-ins and nothing else, as a new one would.

Measured on 2 cores, whole processes (CHANGELOG): one run of ``kernel_roofline`` from a 10,000-run
store by ``rl sql``, and ``rl runs``, each ~20 ms sooner; CPU time unchanged.

The seam. :func:`start` and :func:`connect` are the one place a DuckDB database is made on one thread and used on
another. It rests on two things DuckDB does, neither promised: a connection made on a thread works on any other,
and DuckDB releases the GIL while it executes (else the thread only slows typer down). ``tests/test_seams.py``
holds the installed DuckDB to the first (the connection :func:`connect` takes from the thread answers on the
caller's and holds exactly what :func:`~rooflake.store.database.stand_ins` makes there) and to the second (Python
runs on the main thread while a statement runs on another).
"""

from __future__ import annotations

import threading
from typing import Any

_lock = threading.Lock()
_pending: list[tuple[threading.Thread, list[Any]]] = []  # at most one: (thread, [connection] once it is made)


def _open(out: list[Any]) -> None:
    """Append :func:`~rooflake.store.database.stand_ins` to ``out`` (nothing on an error: :func:`connect` then
    makes it on the caller's thread, where the error is raised)."""
    try:
        from rooflake.store.database import stand_ins

        out.append(stand_ins())
    except Exception:  # noqa: BLE001 - raised again when connect() makes it on its caller's thread
        return


def start() -> None:
    """Import DuckDB, then start making :func:`~rooflake.store.database.stand_ins` on a second thread, unless that
    is already pending. (The import holds the GIL throughout: on the second thread it would only slow the main
    thread's imports down.)"""
    import duckdb  # noqa: F401

    with _lock:
        if _pending:
            return
        out: list[Any] = []
        # not a daemon: the interpreter waits for it at exit (a daemon thread still inside DuckDB when the
        # interpreter finalizes aborts the process: `rl layers --help` exits before the database is taken)
        thread = threading.Thread(target=_open, args=(out,), name="rooflake-duckdb-start", daemon=False)
        thread.start()
        _pending.append((thread, out))


def connect() -> Any:
    """A new in-memory DuckDB connection holding the store tables' stand-ins: the one :func:`start` made (waiting
    for it), else :func:`~rooflake.store.database.stand_ins` now. Each connection is handed out once. Raises
    ``duckdb.Error`` as :func:`~rooflake.store.database.stand_ins` does."""
    with _lock:
        pending = _pending.pop() if _pending else None
    if pending is not None:
        thread, out = pending
        thread.join()
        if out:
            return out[0]
    from rooflake.store.database import stand_ins

    return stand_ins()
