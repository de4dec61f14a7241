"""Hostile and broken Nsight Systems exports (issue 10), each built in code from the tiny export of
test_attribution: the file opened is exactly the one named, whatever its characters; invalid UTF-8 is decoded with
replacement, its raw bytes kept as hex, and the store stays queryable; errors are one line; suspicious timestamps
and duplicate correlation ids are flagged and counted; a range with a negative start and no end is handled. No
fixture needed."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from test_attribution import KERNELS, PID, A, build_export

from rooflake import queries
from rooflake.ingest import read
from rooflake.ingest.nsys_export import sqlite_uri
from rooflake.pipeline import ingest_file
from rooflake.schema import InputError
from rooflake.store import Store

from _support import snapshot


def _export(path: Path, *sql: str, params: list[tuple] | None = None) -> Path:
    """The tiny export of test_attribution at ``path``, then ``sql`` run on it."""
    build_export(path)
    db = sqlite3.connect(path)
    for i, stmt in enumerate(sql):
        db.execute(stmt, (params or [()] * len(sql))[i])
    db.commit()
    db.close()
    return path


def test_sqlite_uri_percent_encodes_the_path() -> None:
    assert sqlite_uri("/d/run#2 %41?.sqlite") == "file:///d/run%232%20%2541%3F.sqlite?mode=ro&immutable=1"
    assert sqlite_uri("//srv/x.sqlite") == "file:////srv/x.sqlite?mode=ro&immutable=1"
    assert sqlite_uri("/d/caf\xe9").endswith("/d/caf%C3%A9?mode=ro&immutable=1")


@pytest.mark.parametrize(
    "name", ["run#2.sqlite", "run?mode=rw.sqlite", "%41.sqlite", "a b.sqlite", "r%23.sqlite"]
)
def test_the_file_named_is_the_file_read(tmp_path: Path, name: str) -> None:
    """Beside the export lies a decoy named like what an unescaped URI would open (`run`, `A.sqlite`, `r#`): an
    SQLite file that is no export. The export is read, the decoy untouched, nothing created."""
    for decoy in ("run", "A.sqlite", "a", "r#.sqlite"):
        sqlite3.connect(tmp_path / decoy).execute("CREATE TABLE x (y)").connection.close()
    path = _export(tmp_path / name)
    before = sorted(p.name for p in tmp_path.iterdir())
    out = read(path, run_id="r")
    assert out["kernels"].num_rows == len(KERNELS)
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_invalid_utf8_is_replaced_and_kept_as_hex(tmp_path: Path) -> None:
    """A kernel name (StringIds), an NVTX text (inline) and a domain name holding bytes that are not UTF-8: the
    store holds them decoded with U+FFFD, the raw bytes in hex in invalid_utf8_hex, and every query of kernels and
    ranges works for every run (DuckDB refused the file or the query before)."""
    bad = _export(
        tmp_path / "bad.sqlite",
        "UPDATE NVTX_EVENTS SET text = CAST(X'6f75746572ff' AS TEXT) WHERE text = 'outer'",
        "UPDATE NVTX_EVENTS SET text = CAST(X'64c3' AS TEXT) WHERE text = 'dom'",
        "UPDATE StringIds SET value = CAST(X'6b31c328' AS TEXT) WHERE value = 'k1'",
    )
    good = _export(tmp_path / "good.sqlite")
    store = tmp_path / "store"
    for path in (bad, good):
        assert ingest_file(path, store).status == "ingested"
    con = queries.connect(Store(store))
    assert con.execute("SELECT count(*) FROM kernels").fetchone() == (2 * len(KERNELS),)
    k1 = con.execute(
        "SELECT k.name, k.short_name, k.nvtx_path, k.invalid_utf8_hex FROM kernels AS k JOIN runs AS r USING (run_id) "
        "WHERE r.source_path LIKE '%bad.sqlite' AND k.correlation_id = 1000"
    ).fetchone()
    assert k1 == (
        "k1\ufffd(",
        "k1\ufffd(",
        "<default domain>:outer\ufffd/inner",
        {"name": "6b31c328", "short_name": "6b31c328", "mangled_name": "6b31c328"},
    )
    rows = con.execute(
        "SELECT r.text, r.name, r.domain, r.invalid_utf8_hex FROM ranges AS r JOIN runs USING (run_id) "
        "WHERE runs.source_path LIKE '%bad.sqlite' AND (r.text LIKE 'outer%' OR r.name = 'd_range')"
    ).fetchall()
    assert sorted(rows, key=str) == sorted(
        [
            ("outer\ufffd", "outer\ufffd", "<default domain>", {"text": "6f75746572ff"}),
            ("d_range", "d_range", "d\ufffd", {"domain": "64c3"}),
        ],
        key=str,
    )
    assert con.execute("SELECT count(*) FROM ranges WHERE invalid_utf8_hex IS NULL").fetchone() == (
        2 * 9 - 2,
    )


def test_an_export_without_rowids_is_one_line(tmp_path: Path) -> None:
    path = _export(
        tmp_path / "norowid.sqlite",
        "ALTER TABLE NVTX_EVENTS RENAME TO n2",
        "CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, text TEXT, "
        "globalTid INTEGER, endGlobalTid INTEGER, domainId INTEGER, textId INTEGER, id INTEGER PRIMARY KEY) "
        "WITHOUT ROWID",
    )
    with pytest.raises(InputError) as e:
        read(path, run_id="r")
    assert "\n" not in str(e.value) and "NVTX_EVENTS" in str(e.value) and "rowid" in str(e.value)


@pytest.mark.parametrize("cut", ["one byte", "one page"])
def test_an_export_cut_short_is_refused(tmp_path: Path, cut: str) -> None:
    """An export missing its last page read as whole before, that page's rows gone (SQLite, opened immutable, reads
    pages past the end as empty): the file's size against its header's page count and size says it is cut."""
    whole = _export(tmp_path / "whole.sqlite").read_bytes()
    page = int.from_bytes(whole[16:18], "big")
    assert len(whole) >= 2 * page  # the cut leaves a database SQLite opens
    path = tmp_path / "cut.sqlite"
    path.write_bytes(whole[: len(whole) - (1 if cut == "one byte" else page)])
    store = Store(tmp_path / "store")
    with pytest.raises(InputError) as e:
        ingest_file(path, store.root)
    assert "\n" not in str(e.value) and "cut.sqlite" in str(e.value) and "cut short" in str(e.value)
    assert not store.root.exists() or not any(store.root.rglob("*.parquet"))
    assert ingest_file(_export(tmp_path / "again.sqlite"), store.root).status == "ingested"


def test_a_file_name_with_a_newline_stays_on_one_line(tmp_path: Path) -> None:
    path = tmp_path / "run\n2.sqlite"
    sqlite3.connect(path).execute("CREATE TABLE x (y)").connection.close()
    with pytest.raises(InputError) as e:
        read(path, run_id="r")
    assert (
        "\n" not in str(e.value)
        and "run\\n2.sqlite" in str(e.value)
        and "not an Nsight Systems export" in str(e.value)
    )


def test_a_range_with_a_negative_start_and_no_end(tmp_path: Path) -> None:
    """Open on thread A from t = -5 on, never closed: the outermost range of every launch on A (an overflow
    before), flagged negative_time."""
    path = _export(
        tmp_path / "neg.sqlite",
        "INSERT INTO NVTX_EVENTS VALUES (-5, NULL, 59, 'neg', ?, NULL, 0, NULL)",
        params=[(A,)],
    )
    out = read(path, run_id="r")
    k = out["kernels"]
    paths = dict(zip(k["correlation_id"].to_pylist(), k["nvtx_path"].to_pylist(), strict=True))
    assert paths[1000] == "<default domain>:neg/outer/inner"
    ranges = {r["name"]: r for r in out["ranges"].to_pylist()}
    assert (ranges["neg"]["depth"], ranges["neg"]["flags"]) == (0, ["negative_time"])
    assert ranges["outer"]["depth"] == 1 and ranges["outer"]["flags"] == []
    assert out["run"]["flag_counts"] == {"ranges": {"negative_time": 1}}


def test_suspicious_rows_are_flagged_and_counted(tmp_path: Path) -> None:
    """k2 ends before it starts, k3 has no start, k5 and k6 share a correlation id, two runtime calls claim k7's,
    the NVTX range b_inner ends before it starts (and so is left out of the nesting), the memcpy starts before 0."""
    path = _export(
        tmp_path / "odd.sqlite",
        "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = start - 5 WHERE correlationId = 1001",
        "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = NULL WHERE correlationId = 1002",
        "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET correlationId = 1004 WHERE correlationId = 1005",
        "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (31, 32, 0, ?, 1006, 1, 0)",
        "UPDATE NVTX_EVENTS SET end = 1 WHERE text = 'b_inner'",
        "UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET start = -3000",
        params=[(), (), (), (PID + 3,), (), ()],
    )
    out = read(path, run_id="r")
    flags = {r["name"]: r["flags"] for r in out["kernels"].to_pylist()}
    assert flags["k2"] == ["reversed_time"]
    assert flags["k3"] == ["null_start"]
    assert flags["k5"] == flags["k6"] == ["duplicate_correlation_id"]
    assert flags["k7"] == ["duplicate_launch_call"]
    assert flags["k1"] == [] and flags["k4"] == []
    ranges = {r["name"]: r for r in out["ranges"].to_pylist()}
    assert ranges["b_inner"]["flags"] == ["reversed_time"] and ranges["b_inner"]["depth"] is None
    assert ranges["b_outer"]["flags"] == [] and ranges["b_outer"]["depth"] == 0
    assert out["memops"]["flags"].to_pylist() == [["negative_time"]]
    assert out["run"]["flag_counts"] == {
        "kernels": {
            "reversed_time": 1,
            "null_start": 1,
            "duplicate_correlation_id": 2,
            "duplicate_launch_call": 1,
        },
        "memops": {"negative_time": 1},
        "ranges": {"reversed_time": 1},
    }
    assert out["run"]["warnings"] == [
        "1 kernel: no start time (flag null_start)",
        "1 kernel: end before start (flag reversed_time)",
        "2 kernels: correlation id shared with another GPU operation of the process (flag duplicate_correlation_id)",
        "1 kernel: several launch calls with that correlation id (the first one is used) (flag duplicate_launch_call)",
        "1 memcpy/memset: negative timestamp (flag negative_time)",
        "1 NVTX range: end before start, left out of the nesting (push/pop ranges: no depth, no parent) "
        "(flag reversed_time)",
    ]


def test_rl_ingest_says_what_it_flagged(tmp_path: Path) -> None:
    """The summary is not only in the library: `rl ingest` prints one warning line per kind of flagged row."""
    from typer.testing import CliRunner

    from rooflake.cli import app

    path = _export(
        tmp_path / "odd.sqlite",
        "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = start - 5 WHERE correlationId = 1001",
    )
    res = CliRunner().invoke(app, ["ingest", str(path), "--store", str(tmp_path / "s")])
    assert res.exit_code == 0, res.output
    warnings = [line for line in res.stderr.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 1 and warnings[0].endswith("1 kernel: end before start (flag reversed_time)")


@pytest.mark.parametrize(
    ("stmt", "table", "column", "kind"),
    [
        (
            "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 'abc' WHERE correlationId = 1001",
            "KERNEL",
            "start",
            "text",
        ),
        ("UPDATE NVTX_EVENTS SET end = end + 0.5 WHERE text = 'outer'", "NVTX_EVENTS", "end", "real"),
        (
            "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET demangledName = X'00ff' WHERE correlationId = 1000",
            "KERNEL",
            "demangledName",
            "blob",
        ),
    ],
)
def test_a_value_of_another_type_in_an_integer_column_is_refused(
    tmp_path: Path, stmt: str, table: str, column: str, kind: str
) -> None:
    """SQLite keeps text, a real or a blob in an INTEGER column where nothing converts it; SQLite's CAST made
    `'abc'` a start of 0 ns and a real end a rounded one, numbers the export never held. Now: one Error line naming
    the file, the table and the column, exit 1, the store as before."""
    from typer.testing import CliRunner

    from rooflake.cli import app

    store = tmp_path / "store"
    assert ingest_file(_export(tmp_path / "good.sqlite"), store).status == "ingested"
    before = sorted(p.relative_to(store) for p in store.rglob("*"))
    path = _export(tmp_path / "odd.sqlite", stmt)
    res = CliRunner().invoke(app, ["ingest", str(path), "--store", str(store)])
    assert res.exit_code == 1, res.output
    (line,) = res.stderr.splitlines()
    assert line.startswith("Error: ") and "odd.sqlite" in line
    assert f"column {column} of " in line and table in line and f"holds {kind} values" in line
    assert sorted(p.relative_to(store) for p in store.rglob("*")) == before


def test_a_value_of_another_type_after_the_first_batch_is_refused(tmp_path: Path) -> None:
    """ADBC types a column from its first rows (a batch of 64k here): text in an integer column after them fails
    the read, and the error names the column (the driver gives only its position)."""
    path = _export(
        tmp_path / "late.sqlite",
        "WITH RECURSIVE n(value) AS (SELECT 1 UNION ALL SELECT value + 1 FROM n WHERE value < 70000) "
        "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, globalTid, correlationId, nameId) "
        "SELECT value, value + 1, 1, 900000 + value, 1 FROM n",
        "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET correlationId = 'x' WHERE correlationId = 970000",
    )
    with pytest.raises(InputError) as e:
        read(path, run_id="r")
    assert str(e.value) == (
        f"{path}: column correlationId of CUPTI_ACTIVITY_KIND_RUNTIME holds text or blob values where Nsight Systems "
        "writes integers"
    )  # the column by name, not ADBC's position in the result ("column 3")


# NVTX_EVENTS rebuilt with integer columns declared REAL and TEXT, same rows and row ids: SQLite then stores
# end/textId as reals (100.0) and domainId as text ('1')
REAL_AND_TEXT = (
    "ALTER TABLE NVTX_EVENTS RENAME TO n0",
    "CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end REAL, eventType INTEGER NOT NULL, text TEXT, "
    "globalTid INTEGER, endGlobalTid INTEGER, domainId TEXT, textId REAL)",
    "INSERT INTO NVTX_EVENTS SELECT * FROM n0 ORDER BY rowid",
    "DROP TABLE n0",
)


def test_whole_numbers_stored_as_real_or_text_read_exactly(tmp_path: Path) -> None:
    """An export rewritten by a tool (pandas' to_sql writes a nullable integer column as REAL) holds `100.0` where
    nsys wrote 100, and a column declared TEXT holds `'1'`: SQLite's CAST read both exactly, and so must the uncast
    read (a whole number within int64 is that integer); every table equals the plain export's."""
    plain = _export(tmp_path / "plain.sqlite")
    odd = _export(
        tmp_path / "odd.sqlite",
        *REAL_AND_TEXT,
    )
    db = sqlite3.connect(odd)
    assert db.execute(
        "SELECT DISTINCT typeof(end), typeof(domainId) FROM NVTX_EVENTS WHERE end IS NOT NULL"
    ).fetchall() == [("real", "text")]
    db.close()
    a, b = read(plain, run_id="r"), read(odd, run_id="r")
    for table in ("kernels", "ranges", "memops"):
        assert b[table].to_pylist() == a[table].to_pylist(), table


@pytest.mark.parametrize(
    ("stmt", "column", "kind"),
    [("UPDATE NVTX_EVENTS SET end = 1e300 WHERE text = 'outer'", "end", "real"),  # past int64
     ("UPDATE NVTX_EVENTS SET domainId = '1.0' WHERE text = 'dom'", "domainId", "text")],
)  # fmt: skip
def test_a_real_or_text_that_is_no_int64_is_refused(
    tmp_path: Path, stmt: str, column: str, kind: str
) -> None:
    path = _export(
        tmp_path / "odd.sqlite",
        *REAL_AND_TEXT,
        stmt,
    )
    with pytest.raises(InputError) as e:
        read(path, run_id="r")
    assert "\n" not in str(e.value) and f"column {column} of NVTX_EVENTS holds {kind} values" in str(e.value)


# StringIds rebuilt without its primary key (an export's id is one), every row then held twice
_STRINGS_TWICE = (
    "CREATE TABLE s2 AS SELECT * FROM StringIds",
    "DROP TABLE StringIds",
    "ALTER TABLE s2 RENAME TO StringIds",
    "INSERT INTO StringIds SELECT * FROM StringIds",
)


def test_exact_copies_in_stringids_are_kept_once(tmp_path: Path) -> None:
    """Every StringIds row held twice: each kernel, range and launch call joined its text once per row (4 kernels
    stored for 2); the copies are now one row, and every table equals the clean export's."""
    store = tmp_path / "store"
    for name, sql in (("clean", ()), ("twice", _STRINGS_TWICE)):
        assert ingest_file(_export(tmp_path / f"{name}.sqlite", *sql), store).status == "ingested"
    con = queries.connect(Store(store))
    for table in ("kernels", "ranges", "memops", "coverage"):
        counts = con.execute(f"SELECT count(*) FROM {table} GROUP BY run_id").fetchall()
        assert len(counts) == 2 and counts[0] == counts[1], table
        cols = [c for c in con.table(table).columns if c != "run_id"]
        sel = ", ".join(f't."{c}"' for c in cols)
        one, two = (
            f"SELECT {sel} FROM {table} AS t JOIN runs AS r USING (run_id) WHERE r.source_path LIKE '%{n}.sqlite'"
            for n in ("clean", "twice")
        )
        assert con.execute(f"SELECT count(*) FROM ({one} EXCEPT ALL {two})").fetchone() == (0,), table
        assert con.execute(f"SELECT count(*) FROM ({two} EXCEPT ALL {one})").fetchone() == (0,), table
    assert con.execute("SELECT count(*) FROM kernels").fetchone() == (2 * len(KERNELS),)


def test_an_id_with_two_texts_is_refused(tmp_path: Path) -> None:
    """A StringIds id holding two different texts: which one a kernel's name is cannot be told. One line naming
    the file, the table and the id; the store unchanged."""
    store = tmp_path / "store"
    ingest_file(_export(tmp_path / "clean.sqlite"), store)
    before = snapshot(store)
    bad = _export(
        tmp_path / "two.sqlite",
        *_STRINGS_TWICE[:3],
        "INSERT INTO StringIds SELECT id, value || '_other' FROM StringIds WHERE value = 'k1'",
    )
    with pytest.raises(InputError) as e:
        ingest_file(bad, store)
    (msg,) = str(e.value).splitlines()
    assert msg.startswith(f"{bad}: StringIds holds id 100 in 2 rows with 2 different values")
    assert snapshot(store) == before


def test_a_gpu_row_held_twice(tmp_path: Path) -> None:
    """TARGET_INFO_GPU has no primary key: a device's row held twice doubled every kernel joined to it (the mock
    export's 2 kernels were stored as 4, their time doubled in `rl layers`); exact copies now count once, and two
    different rows for one device are refused."""
    gpu = (
        "CREATE TABLE TARGET_INFO_GPU (id INTEGER, name TEXT, computeMajor INTEGER, computeMinor INTEGER)",
        "INSERT INTO TARGET_INFO_GPU VALUES (0, 'NVIDIA H100', 9, 0), (0, 'NVIDIA H100', 9, 0)",
    )
    store = tmp_path / "store"
    res = ingest_file(_export(tmp_path / "twice.sqlite", *gpu), store)
    assert (res.status, res.kernels, res.gpu_name) == ("ingested", len(KERNELS), "NVIDIA H100")
    con = queries.connect(Store(store))
    assert con.execute("SELECT count(*), count(DISTINCT kernel_id) FROM kernels").fetchone() == (
        len(KERNELS),
        len(KERNELS),
    )
    before = snapshot(store)
    other = _export(tmp_path / "other.sqlite", *gpu, "UPDATE TARGET_INFO_GPU SET name = 'B' WHERE rowid = 2")
    with pytest.raises(
        InputError, match=r"other\.sqlite: TARGET_INFO_GPU holds id 0 in 2 rows with 2 different"
    ):
        ingest_file(other, store)
    assert snapshot(store) == before


def test_operations_without_an_end(tmp_path: Path) -> None:
    """Every kernel and memcpy with a start and no end: ingest flags them null_end and says so; their GPU time is
    unknown, which `rl layers` printed through a TypeError traceback (None / 1e6)."""
    from typer.testing import CliRunner

    from rooflake.cli import app

    path = _export(
        tmp_path / "noend.sqlite",
        "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = NULL",
        "UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET end = NULL",
    )
    store = tmp_path / "store"
    res = ingest_file(path, store)
    assert f"{len(KERNELS)} kernels: no end time (duration unknown) (flag null_end)" in res.warnings
    assert "1 memcpy/memset: no end time (duration unknown) (flag null_end)" in res.warnings
    con = queries.connect(Store(store))
    assert con.execute("SELECT count(*) FROM kernels WHERE list_contains(flags, 'null_end')").fetchone() == (
        len(KERNELS),
    )
    r = CliRunner().invoke(app, ["layers", "--store", str(store)])
    assert r.exit_code == 0, r.output
    assert "unknown GPU time (-)" in r.stdout


@pytest.mark.parametrize("rows", [0, 2])
def test_an_sqlite_file_with_only_stringids_is_refused(tmp_path: Path, rows: int) -> None:
    """A StringIds table alone (no export metadata, no table an export's GPU operations or NVTX events come from) is
    no export: one error, nothing stored. It used to be ingested as a run of 0 kernels and 0 ranges."""
    path = tmp_path / "strings.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL)")
        db.executemany("INSERT INTO StringIds VALUES (?, ?)", [(i, f"s{i}") for i in range(rows)])
    db.close()
    store = Store(tmp_path / "store")
    before = snapshot(store.root)
    with pytest.raises(InputError) as e:
        ingest_file(path, store.root)
    assert str(e.value).startswith(f"{path}: ") and "not an Nsight Systems export" in str(e.value)
    assert "\n" not in str(e.value)
    assert snapshot(store.root) == before
    # the same file with export metadata is a real (empty) export: a run of 0 kernels
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT)")
        db.execute("INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_SCHEMA_VERSION', '3.11.1')")
    db.close()
    res = ingest_file(path, store.root)
    assert (res.status, res.kernels) == ("ingested", 0)
