"""Readers beside `rl compact` on a local store see the store before or after each compaction, never between:
every run published before a query began is in its answer, with all its rows.

A compaction commits ``compacted.json``, then removes the partitions it folded in, ``runs`` files first. A reader
that had read the new manifest and listed a run's ``runs`` folder before its removal, then pointed a table's view
after it, read the run neither from its partitions (gone) nor from the compacted files (the listing said
"partition"): whole runs missing from about 1 answer in 100, or ``No files found that match the pattern``
from a relation run after the removal.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from pathlib import Path
from typing import Any

from rooflake.store import compact

from _support import tiny_run

#: runs published before the first compaction, and between two compactions
FIRST, MORE = 40, 4
COMPACTIONS = 14
QUERIES = (
    "SELECT r.run_id, (SELECT count(*) FROM kernels AS k WHERE k.run_id = r.run_id) AS n FROM runs AS r",
    "SELECT run_id, count(*) AS n FROM kernels GROUP BY run_id",
)


def _rid(i: int) -> str:
    return f"{i:016x}"


def _kernels(i: int) -> int:
    """How many kernel rows run ``i`` holds (1-3: a run read twice or in part shows)."""
    return i % 3 + 1


def _publish(root: Path, start: int, n: int) -> None:
    for i in range(start, start + n):
        kernels = [{"kernel_id": k, "name": f"k{k}"} for k in range(_kernels(i))]
        tiny_run(root, _rid(i), kernels, [{"ceiling": "DRAM", "value": 1e12}])
    (root / "published.tmp").write_text(str(start + n))
    os.replace(root / "published.tmp", root / "published")  # how many runs a reader must see


def _check(answer: dict[str, int], before: int) -> str | None:
    """What is wrong with an answer given after ``before`` runs were published (None: nothing)."""
    wrong = [_rid(i) for i in range(before) if answer.get(_rid(i)) != _kernels(i)]
    if wrong:
        return f"{len(wrong)} of {before} runs missing or with other rows: {wrong[:3]}"
    return None


def _reader(root: str, prune_from: int, stop: Any, out: Any) -> None:
    """Ask :data:`QUERIES` and a one-run question until ``stop``; put (answers, problems) on ``out``."""
    from rooflake.schema import RooflakeError
    from rooflake.store import Store, database

    database.PRUNE_FROM = prune_from
    answers, problems = 0, []
    while not stop.is_set():
        before = int((Path(root) / "published").read_text())
        try:
            for sql in QUERIES:
                t = Store(root).query(sql)
                answers += 1
                if (bad := _check(dict(zip(*t.to_pydict().values(), strict=True)), before)) is not None:
                    problems.append(f"{sql[:30]}: {bad}")
            one = before - 1
            t = Store(root).query("SELECT count(*) AS n FROM kernels WHERE run_id = $r", {"r": _rid(one)})
            answers += 1
            if t.column(0).to_pylist() != [_kernels(one)]:
                problems.append(f"run {_rid(one)}: {t.column(0).to_pylist()} kernel rows")
        except RooflakeError as e:
            problems.append(str(e)[:300])
    out.put((answers, problems))


def test_readers_beside_many_compactions_see_every_run_whole(tmp_path: Path) -> None:
    root = tmp_path / "store"
    _publish(root, 0, FIRST)
    ctx = multiprocessing.get_context("fork")
    stop, out = ctx.Event(), ctx.Queue()
    # one reader binding every file once per database, one pointing the views query by query
    readers = [ctx.Process(target=_reader, args=(str(root), p, stop, out)) for p in (10**9, 0)]
    for r in readers:
        r.start()
    try:
        time.sleep(0.5)
        total = FIRST
        for _ in range(COMPACTIONS):  # the first compaction, then incremental ones (merging generations)
            compact.compact(root)
            _publish(root, total, MORE)
            total += MORE
        compact.compact(root)
    finally:
        stop.set()
        results = [out.get(timeout=60) for _ in readers]
        for r in readers:
            r.join(timeout=30)
    answers = sum(a for a, _ in results)
    problems = [p for _, ps in results for p in ps]
    assert answers >= 20, f"the readers gave only {answers} answers beside the compactions"
    assert not problems, f"{len(problems)} of {answers} answers wrong: {problems[:5]}"
