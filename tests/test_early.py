"""The store's DuckDB database started on a second thread while ``rl`` parses arguments (rooflake.store.early,
issue 14): what it hands out is what a new database would hold, it is handed out once, an error there is raised on
the caller's thread, and ``rl`` starts it for the commands that read the store only."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from rooflake.cli import COMMANDS, QUERYING
from rooflake.store import database, early
from rooflake.store.layout import ALL_TABLES


def tables(con) -> list[tuple[str, int]]:
    """(table, columns) of every table and view ``con`` holds."""
    rows = con.execute(
        "SELECT table_name, count(*) FROM information_schema.columns GROUP BY ALL ORDER BY ALL"
    ).fetchall()
    return [(r[0], r[1]) for r in rows]


def test_started_connection_is_handed_out_once(monkeypatch: pytest.MonkeyPatch) -> None:
    made_on: list[str] = []
    real = database.stand_ins

    def recorded():
        made_on.append(threading.current_thread().name)
        return real()

    monkeypatch.setattr(database, "stand_ins", recorded)
    early.start()
    first = early.connect()
    second = early.connect()
    assert made_on == ["rooflake-duckdb-start", threading.current_thread().name]
    assert first is not second
    expected = sorted((f"__empty_{t}", len(database.COLUMNS[t])) for t in ALL_TABLES)
    assert tables(first) == tables(second) == expected  # the stand-ins and nothing else
    first.execute("CREATE TABLE mine AS SELECT 1")  # one caller's objects are not another's
    assert "mine" not in dict(tables(second))


def test_error_on_the_thread_is_raised_on_the_callers(monkeypatch: pytest.MonkeyPatch) -> None:
    import duckdb

    threads: list[str] = []

    def failing():
        threads.append(threading.current_thread().name)
        raise duckdb.IOException("no room for DuckDB")

    monkeypatch.setattr(database, "stand_ins", failing)
    early.start()
    with pytest.raises(duckdb.IOException, match="no room for DuckDB"):
        early.connect()
    assert threads == ["rooflake-duckdb-start", threading.current_thread().name]
    assert not early._pending


RECORD = """
import atexit, sys, threading
import rooflake.store.database as d
real, names = d.stand_ins, []
def recorded():
    names.append(threading.current_thread().name)
    return real()
d.stand_ins = recorded
atexit.register(lambda: print("made on:", names, file=sys.stderr))
from rooflake.cli import main
sys.argv[0] = "rl"
main()
"""


@pytest.mark.parametrize(
    ("args", "made_on"),
    [
        (["sql", "select 42"], ["rooflake-duckdb-start"]),
        (["runs"], ["rooflake-duckdb-start"]),
        (["--help"], []),
    ],
    ids=" ".join,
)
def test_rl_starts_duckdb_early_for_store_commands(tmp_path, args: list[str], made_on: list[str]) -> None:
    (tmp_path / "store").mkdir()  # an empty store (a folder that does not exist is refused)
    store = ["--store", str(tmp_path / "store")] if args[0] != "--help" else []
    p = subprocess.run(
        [sys.executable, "-c", RECORD, *args, *store], capture_output=True, text=True, timeout=120
    )
    assert p.returncode == 0, p.stderr
    assert f"made on: {made_on!r}" in p.stderr  # the build took the connection the thread made
    if args[0] == "sql":
        assert "42" in p.stdout


def test_querying_commands_are_commands() -> None:
    assert COMMANDS.keys() >= QUERYING


SLOW = """
import sys, time
import rooflake.store.database as d
real = d.stand_ins
def slow():
    time.sleep(0.5)  # still starting when typer prints the help and exits
    con = real()
    print("started", file=sys.stderr)
    return con
d.stand_ins = slow
from rooflake.cli import main
sys.argv[0] = "rl"
main()
"""


def test_exit_before_the_database_is_taken() -> None:
    """``rl sql --help`` exits while the thread is still inside DuckDB: the process waits for it and exits 0 (a
    daemon thread there aborted the interpreter's exit, SIGABRT)."""
    p = subprocess.run(
        [sys.executable, "-c", SLOW, "sql", "--help"], capture_output=True, text=True, timeout=120
    )
    assert p.returncode == 0, p.stderr
    assert "Usage: rl sql" in p.stdout
    assert p.stderr == "started\n"
