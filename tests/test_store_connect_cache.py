"""Store.connect rebuilds its cached database when the store changed, and only then (rooflake.store.freshness).

Before: the cache was keyed on one stat of STORE/runs (mtime, link count), and for 2 s after any change to it
(git's racily-clean rule) on a key that matched nothing, so every connect of those 2 s rebuilt the database (a
connect and a one-run query: 39 ms instead of 6 at 10 runs); and a change outside STORE/runs (a ``--force``
re-ingest bringing a table its run lacked into a table that had files) was never seen by that Store object. Builds
are counted through ``database.build``; "now" is pinned through ``time.time_ns`` (no test here depends on how fast
it runs).
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from rooflake.pipeline import ingest_file
from rooflake.store import Store, database, freshness
from rooflake.store.layout import ALL_TABLES, part_file

from _support import fixture

SMALL = (
    "NVIDIA__nsight-training__cuda__nsight_compute__sample_reports__CuVectorAddDrv",
    "Bias92__flashattn-cuda__docs__profiling__ncu__fa3_before",
    "Bias92__flashattn-cuda__docs__profiling__ncu__db_full_after",
)


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The roots of the databases built from now on."""
    made: list[object] = []
    build = database.build

    def counting(root: object, *args: object, **kwargs: object) -> object:
        made.append(root)
        return build(root, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(database, "build", counting)
    return made


def _ingest(name: str, root: Path) -> str:
    """Ingest the fixture report ``name`` into the store at ``root``; its run id."""
    return str(ingest_file(fixture(name), root).run_id)


def _run_ids(store: Store) -> list[str]:
    return sorted(r for (r,) in store.connect().execute("SELECT run_id FROM runs").fetchall())


def _changed_at(root: Path) -> int:
    """The latest modification or change time (ns) of the store's table folders."""
    stats = [os.stat(root / t) for t in ALL_TABLES if (root / t).exists()]
    return max(max(st.st_mtime_ns, st.st_ctime_ns) for st in stats)


def _at(monkeypatch: pytest.MonkeyPatch, ns: int) -> None:
    """From now on ``time.time_ns()`` says ``ns``."""
    monkeypatch.setattr(time, "time_ns", lambda: ns)


def test_a_store_changed_just_now_is_built_once(tmp_path: Path, builds, monkeypatch) -> None:
    """Right after an ingest (every connect within a millisecond of it) the database is built once, not on every
    connect: the racy folder's contents are checked instead (failed before: one build per connect)."""
    run = _ingest(SMALL[0], tmp_path)
    _at(monkeypatch, _changed_at(tmp_path) + 1_000_000)
    store = Store(tmp_path)
    for _ in range(3):
        assert _run_ids(store) == [run]
    assert len(builds) == 1


def test_runs_published_in_one_clock_tick_are_all_seen(tmp_path: Path, builds, monkeypatch) -> None:
    """As on a file system whose clock does not tick between two publishes and whose link count stays (btrfs):
    every stamp stays as it was at the first connect, and each run published, or swapped for another, is seen
    all the same; a connect with no change in between builds nothing."""
    a = _ingest(SMALL[0], tmp_path)
    _at(monkeypatch, _changed_at(tmp_path) + 1_000_000)
    store = Store(tmp_path)
    assert _run_ids(store) == [a]
    frozen = {p: freshness.stamp(p) for p in (str(tmp_path / w) for w in freshness.WATCHED)}
    monkeypatch.setattr(freshness, "stamp", lambda p: frozen[p])  # the same stamps from now on
    b = _ingest(SMALL[1], tmp_path)
    assert _run_ids(store) == sorted([a, b]) and len(builds) == 2
    assert _run_ids(store) == sorted([a, b]) and len(builds) == 2
    other = tmp_path.parent / f"{tmp_path.name}-other"
    c = _ingest(SMALL[2], other)
    for table in ALL_TABLES:  # run a out, run c in, in the same tick: the same names count, other ones
        shutil.rmtree(tmp_path / table / f"run_id={a}", ignore_errors=True)
        if (other / table / f"run_id={c}").is_dir():
            shutil.copytree(other / table / f"run_id={c}", tmp_path / table / f"run_id={c}")
    assert _run_ids(store) == sorted([b, c]) and len(builds) == 3


def test_a_force_reingest_that_brings_a_new_table_is_read(tmp_path: Path, builds) -> None:
    """A run re-ingested with --force that now has a table it lacked (a newer reader) adds a partition folder to
    that table's folder and leaves STORE/runs as it was (the runs file is replaced inside its run's folder): the
    Store object reads the new partition (failed before: the database was kept, its metrics view without it)."""
    src = tmp_path / "src"
    run = _ingest(SMALL[0], src)
    tables = {t: pq.read_table(part_file(src, t, run)) for t in ALL_TABLES if part_file(src, t, run).exists()}
    root = tmp_path / "store"
    _ingest(SMALL[1], root)  # another run: the metrics table has files already
    store = Store(root)
    store.publish(run, {t: v for t, v in tables.items() if t != "metrics"})
    old = time.time_ns() - 10 * 10**9
    os.utime(root / "runs", ns=(old, old))  # STORE/runs last changed 10 s ago
    sql = f"SELECT count(*) FROM metrics WHERE run_id = '{run}'"
    assert store.connect().execute(sql).fetchall() == [(0,)]
    store.publish(run, tables, force=True)
    assert store.connect().execute(sql).fetchall() == [(tables["metrics"].num_rows,)]
    assert tables["metrics"].num_rows > 0 and len(builds) == 2


def test_an_unchanged_store_costs_one_stat_per_folder(tmp_path: Path, builds, monkeypatch) -> None:
    """A racy folder's contents are listed until a look finds it no longer racy; from then on a connect lists
    nothing and builds nothing."""
    run = _ingest(SMALL[0], tmp_path)
    listed: list[str] = []
    contents = freshness.contents

    def listing(path: str) -> object:
        listed.append(path)
        return contents(path)

    monkeypatch.setattr(freshness, "contents", listing)
    changed = _changed_at(tmp_path)
    _at(monkeypatch, changed + 1_000_000)
    store = Store(tmp_path)
    assert _run_ids(store) == [run] and listed  # racy: listed when built
    _at(monkeypatch, changed + freshness.RACY_NS + 1)
    listed.clear()
    assert _run_ids(store) == [run] and listed  # checked once more, now settled
    listed.clear()
    for _ in range(2):
        assert _run_ids(store) == [run]
    assert listed == [] and len(builds) == 1
