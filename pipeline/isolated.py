"""Run each job in a fresh process, ``n`` at once, with the next process started before it is needed.

``multiprocessing.Pool(maxtasksperchild=1)`` replaces a worker only once it has fully exited (the kernel unmapping
the hundreds of MB ``ncu_report`` read), then forks its successor, which then prepares itself (the main script run
again, arguments unpickled): a core idles through each of those steps, once per report. Here a process
is started ahead (a spare, blocked reading its job) while the others work, and takes the next job the moment a
result comes back, while its predecessor is still exiting. A process that dies without answering (a crash in a
vendor library) gives a result from ``on_crash`` instead of hanging the batch.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Generator
from multiprocessing.connection import Connection, wait
from typing import Any, cast


def _serve(conn: Connection, fn: Callable[[Any], Any]) -> None:
    """Body of a worker process: one job from ``conn`` (None: none left), its result back; nothing more, without
    a word, when the parent is gone (``rl ingest`` terminated: each worker printed a traceback)."""
    try:
        job = conn.recv()
        if job is not None:
            conn.send(fn(job))
    except (EOFError, BrokenPipeError):  # the other end closed: the parent exited
        pass
    conn.close()


def run_isolated(
    ctx: Any,
    fn: Callable[[Any], Any],
    jobs: list[Any],
    n: int,
    on_crash: Callable[[Any, int | None], Any],
) -> Generator[Any, None, None]:
    """Yield ``fn(job)`` for every job, in the order they finish, each computed in a fresh process of the
    multiprocessing context ``ctx`` (``fn`` and the jobs must pickle), at most ``n`` at once plus one started ahead
    and idle. A process that exits without a result yields ``on_crash(job, exitcode)``. Closing the generator early
    (or an exception in the caller) terminates the processes still running."""
    pending = list(reversed(jobs))
    busy: dict[Any, tuple[Any, Any]] = {}  # the pipe of a busy process -> (process, job)
    spare: tuple[Any, Connection] | None = None
    procs: list[Any] = []

    def start() -> tuple[Any, Connection]:
        parent, child = ctx.Pipe()
        p = ctx.Process(target=_serve, args=(child, fn), daemon=True)
        p.start()
        child.close()
        procs.append(p)
        return p, parent

    def reap() -> None:  # a finished process's handles (its sentinel, a pipe end) closed now, not at the end
        for q in [q for q in procs if q.exitcode is not None]:
            q.close()
            procs.remove(q)

    try:
        while pending or busy:
            while pending and len(busy) < n:
                p, conn = spare or start()
                spare = None
                with contextlib.suppress(OSError):  # a spare that died: its pipe reads EOF below (on_crash)
                    conn.send(job := pending.pop())
                busy[conn] = (p, job)
            if pending and spare is None:
                spare = start()
            for ready in wait(list(busy)):
                p, job = busy.pop(ready)
                conn = cast(Connection, ready)
                try:
                    result = conn.recv()
                except EOFError:
                    p.join()
                    result = on_crash(job, p.exitcode)
                conn.close()
                yield result
            reap()
    finally:  # normally nothing is busy and no spare is left; after an early close, stop what still runs
        for p, _ in busy.values():
            p.terminate()
        if spare is not None:
            with contextlib.suppress(OSError):
                spare[1].send(None)
        for p in procs:
            p.join()
