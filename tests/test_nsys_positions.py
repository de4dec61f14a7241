"""The NVTX stack sweep's depth and parent reach each range by its row's position in the NVTX source (a positional
join, nsys/ranges.sql), not by its id: on exports built in code whose NVTX rows are scanned in another order than
their range ids, every range keeps the depth and parent its nesting gives."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rooflake.ingest import nsys_sweep, read
from rooflake.ingest.nsys_parquet import write_parquetdir
from rooflake.pipeline import ingest_file
from rooflake.schema import duck

PID = 7 << 24
THREADS = (PID + 1, PID + 2)
# (offset in a block, length, depth, parent's offset or None); a block is 100 ns, thread B's start 5 ns later
NEST = [(0, 90, 0, None), (10, 30, 1, 0), (20, 10, 2, 10), (50, 30, 1, 0)]


def build(path: Path, blocks: int) -> dict[int, tuple[int | None, int | None]]:
    """An export of ``blocks`` blocks of NEST per thread, interleaved by start, with rows the sweep leaves out in each
    block (a mark, a domain-create event: no range at all, a push/pop range without a thread, one ending before it
    starts) and a mark after all the others (no push/pop range at the last positions: the positional join pads them
    with NULLs). Returns range id (rowid) -> (depth, parent's range id) as the nesting gives them (None, None for
    the ranges left out; the domain-create events are no ranges)."""
    rows = []  # (start, end, eventType, thread, depth, parent's (thread, start) or None)
    for b in range(blocks):
        for k, thread in enumerate(THREADS):
            t0 = 100 * b + 5 * k
            for off, length, depth, up in NEST:
                parent = None if up is None else (thread, t0 + up)
                rows.append((t0 + off, t0 + off + length, 59, thread, depth, parent))
            rows.append((t0 + 60, None, 34, thread, None, None))
            rows.append((t0 + 1, None, 75, thread, None, None))
            rows.append((t0 + 65, t0 + 70, 59, None, None, None))
            rows.append((t0 + 75, t0 + 72, 59, thread, None, None))
    rows.sort(key=lambda r: (r[0], r[3] or 0))
    rows.append((100 * blocks + 50, None, 34, THREADS[0], None, None))
    ids = {(r[3], r[0]): i for i, r in enumerate(rows, 1) if r[2] == 59}
    db = sqlite3.connect(path)
    db.executescript(
        """
        CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, text TEXT,
            globalTid INTEGER, endGlobalTid INTEGER, domainId INTEGER, textId INTEGER);
        INSERT INTO StringIds VALUES (1, 'unused');
        """
    )
    db.executemany("INSERT INTO NVTX_EVENTS VALUES (?, ?, ?, 'r', ?, NULL, 0, NULL)", [r[:4] for r in rows])
    db.commit()
    db.close()
    return {i: (r[4], None if r[5] is None else ids[r[5]]) for i, r in enumerate(rows, 1) if r[2] != 75}


def _got(ranges: pa.Table) -> dict[int, tuple[int | None, int | None]]:
    """range id -> (depth, parent's range id) of a ranges table."""
    return {
        r["range_id"]: (r["depth"], r["parent_id"])
        for r in ranges.select(["range_id", "depth", "parent_id"]).to_pylist()
    }


def test_positions_other_than_range_ids(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A parquetdir export whose NVTX file holds its rows shuffled, each with its own rowid column (the range id):
    the sweep's positions are the file's, every range still gets its own depth and parent."""
    want = build(tmp_path / "x.sqlite", 300)
    folder = tmp_path / "x.parquetdir"
    write_parquetdir(tmp_path / "x.sqlite", folder)
    nvtx = pq.read_table(folder / "NVTX_EVENTS.parquet")
    nvtx = nvtx.append_column("rowid", pa.array(range(1, nvtx.num_rows + 1), pa.int64()))
    order = sorted(range(nvtx.num_rows), key=lambda i: (i * 7919) % nvtx.num_rows)  # a fixed shuffle
    pq.write_table(
        nvtx.take(order), folder / "NVTX_EVENTS.parquet", row_group_size=100
    )  # read on all threads
    seen = _spy_positions(monkeypatch)
    assert _got(read(folder, run_id="r")["ranges"]) == want
    assert any(pos != rid - 1 for pos, rid in seen)  # positions really differ from ids


def test_sqlite_export_loaded_out_of_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An SQLite export big enough that DuckDB loads its NVTX rows on several threads (several 64k-row batches):
    the loaded table's order is not the rowids', and every range gets its own depth and parent. Its ranges are
    stored in row groups bigger than the store's default (the reader's RANGES_GROUP)."""
    want = build(tmp_path / "big.sqlite", 30_000)  # 480k rows
    seen = _spy_positions(monkeypatch)
    res = ingest_file(tmp_path / "big.sqlite", tmp_path / "store")
    (part,) = (tmp_path / "store").glob(f"ranges/run_id={res.run_id}/*.parquet")
    assert _got(pq.read_table(part)) == want
    # the ranges in row groups of the reader's RANGES_GROUP
    assert pq.ParquetFile(part).metadata.row_group(0).num_rows > duck.ROW_GROUP_ROWS
    if all(pos == rid - 1 for pos, rid in seen):
        pytest.skip(
            "DuckDB loaded the rows in rowid order here (one thread?): the check above ran without a shuffle"
        )


def _spy_positions(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """(position, range id) of every push/pop range the sweep reads, filled as it reads them."""
    seen: list[tuple[int, int]] = []
    ranges = nsys_sweep._ranges

    def spy(*args, **kwargs):
        out = ranges(*args, **kwargs)
        seen.extend(zip(out[5].tolist(), out[1].tolist(), strict=True))
        return out

    monkeypatch.setattr(nsys_sweep, "_ranges", spy)
    return seen
