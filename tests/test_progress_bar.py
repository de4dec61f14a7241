"""DuckDB draws its progress bar on file descriptor 1, terminal or not, for a statement that runs longer than
``progress_bar_time`` (2 s by default): rooflake's connections turn it off (``schema/connect.sql``), so that
``rl ingest --json`` writes only JSON and cron logs only rooflake's lines. ``SET progress_bar_time`` turns the bar
on as well: the tests set it to 0 on every new connection (any statement then draws the bar, as one over 2 s would)
and read what reached file descriptor 1 (capfd: DuckDB writes there, not through sys.stdout). Fixture-free."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import duckdb
import pytest

from rooflake.ingest import nsys_sqlite
from rooflake.schema import duck

QUERY = "SELECT count(*) FROM range(2000000) t(i) WHERE i % 7 = 3"
ENABLED = "SELECT current_setting('enable_progress_bar')"
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def eager(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every DuckDB connection made from now on starts with the bar on, drawn for any statement."""
    connect = duckdb.connect

    def made(*args: Any, **kwargs: Any) -> Any:
        con = connect(*args, **kwargs)
        con.execute("SET progress_bar_time = 0")
        return con

    monkeypatch.setattr(duckdb, "connect", made)


@pytest.mark.usefixtures("eager")
def test_duckdb_draws_the_bar_on_stdout_unless_told(capfd: pytest.CaptureFixture[str]) -> None:
    """The premise: with the bar on, a plain connection draws it on file descriptor 1 (else the tests below prove
    nothing)."""
    con = duckdb.connect()
    assert con.execute(QUERY).fetchall() == [(285714,)]
    assert "%" in capfd.readouterr().out


@pytest.mark.usefixtures("eager")
def test_our_connections_draw_no_bar(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """duck_connect's, and the nsys reader's with its cursor (where the biggest source table is loaded)."""
    cons = [duck.duck_connect(), nsys_sqlite.connect(str(tmp_path))]
    cons.append(cons[1].cursor())
    capfd.readouterr()  # (the statement that turns the bar off drew it, with progress_bar_time 0)
    for con in cons:
        assert con.execute(QUERY).fetchall() == [(285714,)]
        assert con.execute(ENABLED).fetchall() == [(False,)]
    assert capfd.readouterr().out == ""


def test_every_connection_is_made_by_duck_connect() -> None:
    """No module of the package calls ``duckdb.connect`` but ``schema/duck.py`` (the store's connections, doctor,
    the remote store's check and the readers go through :func:`duck_connect`)."""
    calls = []
    packages = [
        d for d in sorted(ROOT.iterdir()) if (d / "__init__.py").is_file()
    ]  # cli, ingest, schema, store, ...
    assert {"cli", "ingest", "schema", "store"} <= {d.name for d in packages}
    for path in (p for d in packages for p in sorted(d.rglob("*.py"))):
        rel = path.relative_to(ROOT).as_posix()
        if rel == "schema/duck.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            func = node.func if isinstance(node, ast.Call) else None
            if (
                isinstance(func, ast.Attribute)
                and func.attr == "connect"
                and ast.unparse(func.value) == "duckdb"
            ):
                calls.append(f"{rel}:{node.lineno}")
    assert calls == []
    assert "duckdb.connect(" in (ROOT / "schema" / "duck.py").read_text(encoding="utf-8")
