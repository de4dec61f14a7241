"""The ceiling sources registry (``schema/ceiling_sources.csv``): every ``ceilings.source`` a reader writes is one of
its rows, and the CLI's ``--ceilings`` menu, the views' choices and precedence, the SQL's order and pivot, and the
charts' colours all come from it, with no copy of its names left elsewhere."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rooflake import ingest, queries
from rooflake.cli import app
from rooflake.render.roofs import SOURCE_COLOR
from rooflake.schema import CEILINGS, datasheets
from rooflake.schema import ceiling_sources as registry
from rooflake.views import ceilings as views

from _support import FIXTURES, GOLDEN, NCU, ROOT

NAMES = set(registry.names())
PACKAGE_DIRS = (
    "schema",
    "ingest",
    "store",
    "queries",
    "render",
    "views",
    "pipeline",
    "instrument",
    "cli",
    "spark",
)


def test_the_registry_reads_and_is_whole() -> None:
    rows = registry.rows()
    assert {s.source for s in rows} == NAMES and len(rows) == len(NAMES)
    assert [s.precedence for s in registry.by_precedence()] == list(range(1, len(rows) + 1))
    assert registry.report_source() not in registry.machine_sources()
    assert set(registry.hints()) == set(registry.choices())  # every choice says how to add its ceilings
    assert all(re.fullmatch(r"#[0-9a-f]{6}", s.color) for s in rows)
    assert registry.default_order()[0] == registry.report_source()  # a run's own peaks win by default


def test_the_views_cli_and_charts_take_it_from_the_registry() -> None:
    r = CliRunner().invoke(app, ["roofline", "--ceilings", "nope", "x"])
    menu = ", ".join(f"'{c}'" for c in (*registry.choices(), "all"))
    assert r.exit_code == 2 and f"'nope' is not one of {menu}." in r.output  # the CLI's enum, in file order
    assert ("default", *registry.choices(), "all") == views.CHOICES
    assert tuple(views.DEFAULT_ORDER) == registry.default_order()
    first = list(dict.fromkeys(registry.choice_of()[s] for s in registry.names()))
    assert set(views.SOURCES.values()) <= NAMES and list(views.SOURCES) == first
    assert registry.colors() == SOURCE_COLOR


def test_the_duckdb_table_is_the_registry(tmp_path: Path) -> None:
    """``ceiling_sources`` is a table of ``rl sql`` (registered when the SQL names it), in precedence order."""
    from rooflake.store import Store

    got = queries.execute(Store(tmp_path / "store"), "SELECT * FROM ceiling_sources").to_pylist()
    assert [r["source"] for r in got] == list(registry.names())
    assert [r["machine"] for r in got] == [s.machine for s in registry.by_precedence()]


def test_every_side_by_side_column_is_a_column_of_the_step() -> None:
    columns = queries.columns("ceilings_side_by_side")
    assert {s.side_by_side for s in registry.rows() if s.side_by_side} <= set(columns)


def test_the_store_schema_names_every_source() -> None:
    description = CEILINGS.field("source").metadata[b"description"].decode()
    assert set(description.replace("|", " ").split()) == NAMES


def _written(tables: dict) -> set[str]:
    return set(tables["ceilings"].column("source").to_pylist()) if "ceilings" in tables else set()


@pytest.mark.parametrize(
    "path",
    [
        *sorted((FIXTURES / "ert").glob("*.json")),
        ROOT / "tests" / "data" / "gpu" / "ceilings_cuda.json",
        GOLDEN / "AveryClapp__ESMM-Research__profile_output.raw.csv",  # NVIDIA's raw CSV export, with peaks
        NCU / "AveryClapp__ESMM-Research__profile_output.ncu-rep",
    ],
    ids=lambda p: p.name[:40],
)
def test_every_source_a_reader_writes_is_registered(path: Path) -> None:
    """The readers of every format that writes ceilings (ERT, measured JSON, ncu CSV, ncu report), on real files."""
    written = _written(ingest.read(path, run_id="r"))
    assert written and written <= NAMES, written - NAMES


def test_the_datasheet_catalog_source_is_registered() -> None:
    assert set(datasheets.ceilings().column("source").to_pylist()) <= NAMES


def _package_files(suffix: str) -> list[Path]:
    return [
        p
        for d in PACKAGE_DIRS
        for p in sorted((ROOT / d).rglob(f"*{suffix}"))
        if "__pycache__" not in p.parts
    ]


def _source_literals(tree: ast.AST) -> set[str]:
    """String constants given as the value of a ``"source"`` key in a dict literal."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values, strict=True):
                if isinstance(k, ast.Constant) and k.value == "source" and isinstance(v, ast.Constant):
                    out.add(v.value)
    return out


def test_every_source_literal_of_the_writers_is_registered() -> None:
    """Static backstop of the readers test: each ``"source": "..."`` of a row the ingest and instrument code builds,
    and each ``'...' AS source`` of their SQL, names a registered source."""
    found: set[str] = set()
    for d in ("ingest", "instrument", "schema"):
        for p in sorted((ROOT / d).rglob("*.py")):
            found |= _source_literals(ast.parse(p.read_text(encoding="utf-8")))
    for p in _package_files(".sql"):
        found |= set(re.findall(r"'([^']*)'\s+AS\s+source\b", p.read_text(encoding="utf-8"), re.IGNORECASE))
    assert found and found <= NAMES, found - NAMES


_LIST = re.compile(r"[\[(]\s*'[^']*'(?:\s*,\s*'[^']*')+\s*[\])]")


def test_no_copy_of_the_registry_in_sql() -> None:
    """No query lists two registered sources itself (an order, a set of machine sources): it reads
    ``ceiling_sources``."""
    bad = []
    for p in _package_files(".sql"):
        code = _without_comments(p)
        for m in _LIST.finditer(code):
            if len(set(re.findall(r"'([^']*)'", m.group(0))) & NAMES) >= 2:
                bad.append(f"{p.relative_to(ROOT)}: {m.group(0)}")
    assert not bad, bad


def _without_comments(p: Path) -> str:
    return re.sub(r"--[^\n]*", "", p.read_text(encoding="utf-8"))


def test_no_copy_of_the_registry_in_python() -> None:
    """No tuple, list, set or dict of the package spells two registered sources (keys or items): the registry's
    helpers give them."""
    bad = []
    for p in _package_files(".py"):
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            items = node.keys if isinstance(node, ast.Dict) else getattr(node, "elts", None)
            if not isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.Dict)) or not items:
                continue
            named = {i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)}
            if len(named & NAMES) >= 2:
                bad.append(f"{p.relative_to(ROOT)}:{node.lineno}")
    assert not bad, bad


def test_the_no_copy_checks_can_fail() -> None:
    assert _LIST.search("ORDER BY list_position(['ncu-report', 'measured'], source)")
    tree = ast.parse('X = {"ncu-report": "#d62728", "datasheet": "#1f77b4"}')
    assert len({k.value for k in tree.body[0].value.keys} & NAMES) == 2  # type: ignore[attr-defined]
