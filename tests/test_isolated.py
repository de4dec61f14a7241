"""rooflake.pipeline.isolated: one fresh process per job, n at once, crashes reported, early close stops the rest."""

from __future__ import annotations

import os
import time

from rooflake.ingest import mp_context
from rooflake.pipeline.isolated import run_isolated


def pid_of(job: int) -> tuple[int, int]:
    """(job, pid of the process that ran it)."""
    return job, os.getpid()


def nap(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def crashed(job: object, exitcode: int | None) -> tuple[str, object, int | None]:
    return "crashed", job, exitcode


def test_every_job_in_its_own_fresh_process() -> None:
    out = list(run_isolated(mp_context(), pid_of, list(range(7)), 2, crashed))
    assert sorted(j for j, _ in out) == list(range(7))
    pids = {p for _, p in out}
    assert len(pids) == 7 and os.getpid() not in pids


def test_a_process_that_dies_gives_the_crash_result() -> None:
    """``os._exit(3)`` as the job's function: the process ends without answering; the batch goes on."""
    out = sorted(run_isolated(mp_context(), os._exit, [3], 1, crashed))
    assert out == [("crashed", 3, 3)]
    out = list(run_isolated(mp_context(), pid_of, [1, 2], 2, crashed))
    assert sorted(j for j, _ in out) == [1, 2]


def test_closing_early_stops_the_running_processes() -> None:
    results = run_isolated(mp_context(), nap, [0.0, 30.0, 30.0], 2, crashed)
    t0 = time.perf_counter()
    assert next(results) == 0.0
    results.close()
    assert time.perf_counter() - t0 < 20


def test_open_files_stay_flat_in_the_number_of_jobs() -> None:
    """A finished process's handles are closed as the batch goes (they were kept until its end: about two file
    descriptors per report, so ~500 reports hit the usual limit of 1,024 open files)."""
    seen = []
    for i, _ in enumerate(run_isolated(mp_context(), pid_of, list(range(60)), 2, crashed)):
        if i in (10, 59):
            time.sleep(0.3)  # the finished processes exit
            seen.append(len(os.listdir("/proc/self/fd")))
    assert seen[1] <= seen[0] + 4, seen


def test_a_worker_whose_parent_is_gone_ends_without_a_word(capsys) -> None:  # type: ignore[no-untyped-def]
    """The parent gone (rl ingest terminated) before a worker's job came, or before its result went: each worker
    printed a traceback (EOFError, BrokenPipeError)."""
    from multiprocessing import Pipe

    from rooflake.pipeline.isolated import _serve

    parent, child = Pipe()
    parent.close()
    _serve(child, pid_of)  # no job will come: returns
    parent, child = Pipe()
    parent.send(5)
    parent.close()
    _serve(child, pid_of)  # its result has nowhere to go: returns
    assert capsys.readouterr() == ("", "")
