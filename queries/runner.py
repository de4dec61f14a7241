"""The query runner: loads the named ``.sql`` files, binds their ``$parameters``, and gives them to DuckDB.

The one module whose Python strings may hold SQL text (tests/test_architecture.py): every statement rooflake runs
over a store lives in a ``.sql`` file of this package, and this module only wraps them (a filter on a query's
columns, a view or a table macro around a file's text).

Files (docs/architecture.md §6.5):

- ``queries/<name>.sql``: the named queries, one question each. A header comment says what the query answers
  (``-- <name>: ...``), an optional ``-- Parameters: $a, $b = <default>.`` line names its parameters, and a
  ``-- Columns:`` block gives one comment per output column (``--   <column>  <TYPE>  <unit>  <meaning>``: its
  DuckDB type, its unit or ``-``, what it holds, as Perfetto's stdlib types its columns: :class:`Column`; the type
  and unit may be left out, ``--   <column>  <unit, meaning>``; deeper-indented lines continue the text;
  ``<table>.*`` stands for every column of a store table, in order).
  A parameter-free query is a view of the same name; a parameterized one is a table macro of the same name, its
  parameters in the declared order (``SELECT * FROM time_roofline('RUN_ID', 1000)``).
- ``queries/steps/<name>.sql``: the statements a view of :mod:`rooflake.views` runs besides the named queries
  (the previous run of the same labels, the top kernels of a run, ...), with the same header habit. They are
  neither views nor macros and ``rl sql --list`` does not list them.
- ``queries/macros/*.sql``: the scalar macros the queries share (``nvtx_layer``, ``attainable``, ``roof_bound``,
  ...): one place for each rule.
"""

from __future__ import annotations

import functools
import re
import weakref
from dataclasses import dataclass
from importlib import resources
from typing import Any

from rooflake.schema import BadArgument, QueryError

STEPS = "steps"
MACROS = "macros"
_PARAM = re.compile(r"\$([A-Za-z_]\w*)")
_COMMENT = re.compile(r"--[^\n]*")
_STRING = re.compile(r"'(?:[^']|'')*'")
_COMMENT_MARK = re.compile(r"\n--")
_COLUMN = re.compile(r"^-- {3}(\S+)(?:\s+(.*))?$")
#: the DuckDB types a ``-- Columns:`` line may declare (with ``[]`` for a list of one), as DuckDB names them
#: (``TIMESTAMPTZ``: what DuckDB prints as ``TIMESTAMP WITH TIME ZONE``)
TYPES = frozenset(
    ("VARCHAR", "BOOLEAN", "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UBIGINT", "UINTEGER", "FLOAT",
     "DOUBLE", "DATE", "TIMESTAMP", "TIMESTAMPTZ", "INTERVAL", "BLOB", "JSON")
)  # fmt: skip
_TYPED = re.compile(r"^([A-Z]+(?:\[\])*)\s+(\S+?),?(?:\s+(.*))?$")
# the datasheet catalog's tables (rooflake.schema.datasheets.tables), registered on a cursor whose SQL names them
_DATASHEETS = re.compile(r"\bdatasheet", re.IGNORECASE)
# the ceiling sources registry (rooflake.schema.ceiling_sources.table), likewise
CEILING_SOURCES = "ceiling_sources"
_CEILING_SOURCES = re.compile(rf"\b{CEILING_SOURCES}\b", re.IGNORECASE)


@dataclass(frozen=True)
class Column:
    """One line of a ``-- Columns:`` block: ``--   <name>  <TYPE>  <unit>  <meaning>`` (Perfetto's stdlib style:
    ``--   duration_ns  DOUBLE  ns  ...``). ``type``: a DuckDB type of :data:`TYPES` (``VARCHAR[]`` for a list), None
    on a line that declares none; ``unit``: the unit (``ns``, ``FLOP/s``, ``byte``), None where the line says ``-``
    (a name, a flag, a count of things that has no unit) or declares no type; ``text``: the rest, continuation lines
    joined."""

    name: str
    type: str | None
    unit: str | None
    text: str


@dataclass(frozen=True)
class Query:
    """One ``.sql`` file: ``name`` (file stem), ``text`` (without a trailing ``;``), ``parameters`` (names, in
    order), ``defaults`` (parameter -> SQL literal for the optional ones), ``columns`` (the ``-- Columns:`` block's
    names, in order), ``public`` (a named query of ``queries/``, not a step), ``given`` (the tables a step reads
    that its caller provides, ``-- Given: matched, ...``: see :func:`fetch`'s ``tables``)."""

    name: str
    text: str
    parameters: tuple[str, ...]
    defaults: dict[str, str]
    columns: tuple[str, ...]
    public: bool
    given: tuple[str, ...] = ()
    typed: tuple[Column, ...] = ()

    @property
    def header(self) -> str:
        """The first comment line without its ``-- name:`` prefix."""
        first = self.text.splitlines()[0].lstrip("- ").strip()
        return first.split(":", 1)[1].strip() if first.startswith(f"{self.name}:") else first

    @property
    def code(self) -> str:
        """The text without comments and string literals (names there are not references)."""
        return _code(self.text)


def _code(sql: str) -> str:
    return _STRING.sub("''", _COMMENT.sub("", sql))


def _header(text: str) -> dict[str, str]:
    """The header's ``-- Key: value`` entries (Parameters, Given, Columns), a value continued on the comment lines
    that follow until the next key; Columns keeps its lines (one per column)."""
    out: dict[str, str] = {}
    key = None
    for line in text.splitlines():
        if not line.startswith("--"):
            break
        m = re.match(r"^-- (Parameters|Given|Columns):(.*)$", line)
        if m:
            key, out[m.group(1)] = m.group(1), m.group(2)
        elif key is not None:
            out[key] += "\n" + line
    return out


def parse(name: str, text: str, public: bool) -> Query:
    """The :class:`Query` of a file's ``text``: its header entries ``-- Parameters: $a, $b = <default>.`` (may run on
    over the next comment lines), ``-- Given: t1, t2.`` and ``-- Columns:`` (one ``--   <column>  <text>`` line per
    column, deeper-indented lines continue it) read. Raises :class:`QueryError` for a parameter that is not a
    ``$name``."""
    head = _header(text)
    params: list[str] = []
    defaults: dict[str, str] = {}
    for part in _COMMENT_MARK.sub(" ", head.get("Parameters", "")).strip().rstrip(".").split(","):
        if not part.strip():
            continue
        pname, _, default = part.partition("=")
        if not re.fullmatch(r"\$[A-Za-z_]\w*", pname.strip()):
            raise QueryError(f"{name}.sql: -- Parameters: {part.strip()!r} is not a $name")
        params.append(pname.strip()[1:])
        if default.strip():
            defaults[params[-1]] = default.strip()
    given = [g.strip(" .") for g in _COMMENT_MARK.sub(" ", head.get("Given", "")).split(",") if g.strip(" .")]
    typed = _columns(head.get("Columns", ""))
    columns = tuple(c.name for c in typed)
    return Query(name, text, tuple(params), defaults, columns, public, tuple(given), typed)


def _columns(block: str) -> tuple[Column, ...]:
    """The :class:`Column` of each ``--   <name>  [<TYPE>  <unit>]  <text>`` line of a ``-- Columns:`` block
    (deeper-indented lines continue the text)."""
    out: list[Column] = []
    for line in block.splitlines():
        m = _COLUMN.match(line)
        if m is None:
            if out and line.startswith("--    "):
                last = out[-1]
                out[-1] = Column(last.name, last.type, last.unit, f"{last.text} {line[2:].strip()}".strip())
            continue
        name, rest = m.group(1).strip(","), (m.group(2) or "").strip()
        t = _TYPED.match(rest)
        if t is not None and re.sub(r"(\[\])+$", "", t.group(1)) in TYPES:
            unit = None if t.group(2) == "-" else t.group(2)
            out.append(Column(name, t.group(1), unit, (t.group(3) or "").strip()))
        else:
            out.append(Column(name, None, None, rest))
    return tuple(out)


@functools.cache
def _files() -> dict[str, tuple[Any, bool]]:
    """Every query file of the package by name (named queries and steps share one namespace): its path and whether
    it is a named query. Listed, not read: a command reads only the files it names, so start-up does not grow with the package's queries."""
    root = resources.files(__package__)
    out: dict[str, tuple[Any, bool]] = {}
    for folder, public in ((root, True), (root.joinpath(STEPS), False)):
        for p in sorted(folder.iterdir(), key=lambda p: p.name):
            if p.name.endswith(".sql") and p.is_file():
                name = p.name[:-4]
                if name in out:
                    raise QueryError(f"two query files named {name!r}")
                out[name] = (p, public)
    return out


@functools.cache
def _parsed(name: str) -> Query:
    path, public = _files()[name]
    return parse(name, path.read_text(encoding="utf-8").strip().rstrip(";"), public)


def query(name: str) -> Query:
    """The :class:`Query` of file ``name`` (a named query or a step). Raises :class:`QueryError` if unknown."""
    if name not in _files():
        raise QueryError(f"no query named {name!r} (known: {', '.join(names())})")
    return _parsed(name)


def names() -> list[str]:
    """Names of the named queries (``queries/*.sql`` stems, not steps), sorted."""
    return sorted(n for n, (_, public) in _files().items() if public)


def all_names() -> list[str]:
    """Names of every query file, named queries and steps, sorted."""
    return sorted(_files())


def load(name: str) -> str:
    """SQL text of query ``name`` (without a trailing semicolon). Raises :class:`QueryError` if unknown."""
    return query(name).text


def parameters(name: str) -> list[str]:
    """Named parameters a query declares in its header (``-- Parameters: $a, $b.``), in order."""
    return list(query(name).parameters)


def header(name: str) -> str:
    """The first comment line of a query, without its ``-- name:`` prefix."""
    return query(name).header


def columns(name: str) -> list[str]:
    """The output columns a query's ``-- Columns:`` block documents, in order (``<table>.*`` entries as written)."""
    return list(query(name).columns)


def column_types(name: str) -> dict[str, str]:
    """``{column: DuckDB type}`` of the columns query ``name``'s ``-- Columns:`` block types (:class:`Column`), in
    order; a column whose line declares no type is left out."""
    return {c.name: c.type for c in query(name).typed if c.type is not None}


def column_units(name: str) -> dict[str, str | None]:
    """``{column: unit}`` of the typed columns of query ``name`` (None: the line says ``-``, no unit)."""
    return {c.name: c.unit for c in query(name).typed if c.type is not None}


@functools.cache
def macros() -> str:
    """SQL creating the scalar macros the queries share (``macros/*.sql``, and ``datasheet_name``, made from the
    Python rule it follows: :func:`rooflake.schema.gpu_names.datasheet_name_macro`)."""
    from rooflake.schema.gpu_names import datasheet_name_macro

    folder = resources.files(__package__).joinpath(MACROS)
    files = sorted((p for p in folder.iterdir() if p.name.endswith(".sql")), key=lambda p: p.name)
    return "\n".join([*(p.read_text(encoding="utf-8") for p in files), datasheet_name_macro()])


def _macro_sql(q: Query) -> str:
    """``CREATE MACRO name("$a", "$b" := default) AS TABLE <text>``: ``$a`` becomes the quoted macro parameter
    ``"$a"``, which no column name can shadow (an unquoted ``run_id`` parameter would hide the column)."""
    args = ", ".join(f'"${p}"' + (f" := {q.defaults[p]}" if p in q.defaults else "") for p in q.parameters)
    body = _PARAM.sub(r'"$\1"', q.text)
    return f"CREATE OR REPLACE MACRO {q.name}({args}) AS TABLE\n{body}"


@functools.lru_cache(maxsize=256)
def _dependencies(sql: str) -> tuple[str, ...]:
    return tuple(dependencies(sql))


@functools.cache
def _public_names() -> tuple[list[str], re.Pattern[str]]:
    """The named queries' names in catalog order, and one pattern finding any of them as a word."""
    public = [n for n, (_, pub) in _files().items() if pub]
    return public, re.compile(r"\b(" + "|".join(map(re.escape, public)) + r")\b")


def dependencies(sql: str) -> list[str]:
    """The named queries ``sql`` refers to by name (outside comments), with those they refer to, dependencies
    first: what a connection for ``sql`` must create, in order."""
    public, named = _public_names()
    order: list[str] = []
    seen: set[str] = set()

    def visit(code: str) -> None:
        found = set(named.findall(code))
        for name in public:
            if name not in seen and name in found:
                seen.add(name)
                visit(query(name).code)
                order.append(name)

    visit(_code(sql))
    return order


def views() -> dict[str, str]:
    """``{name: sql}`` of every parameter-free named query, each after the query views it reads (DuckDB binds a
    view when it is created)."""
    return {n: load(n) for n in dependencies(" ".join(names())) if not query(n).parameters}


def connect(store: Any, sql: str | None = None, *, unsafe: bool = False):  # -> duckdb.DuckDBPyConnection
    """A DuckDB cursor over ``store`` (a :class:`rooflake.store.Store`) with the shared macros, every parameter-free
    named query as a view and every parameterized one as a table macro; with ``sql``, only the named queries that
    SQL names (and those they read), which keeps a cold ``rl sql`` fast. When ``sql`` names them, the datasheet
    catalog's ``datasheets`` and ``datasheet_gpus`` are there too (:func:`rooflake.schema.datasheets.tables`).
    ``unsafe``: see :meth:`rooflake.store.Store.connect`."""
    needed = _dependencies(" ".join(names()) if sql is None else sql)
    views_sql, macros_sql = _objects(needed)
    con = store.connect(extra_views=views_sql, setup=macros(), after=macros_sql, unsafe=unsafe)
    # only when the SQL names them: building the tables imports pandas (tests/test_startup.py)
    if sql is not None and (_DATASHEETS.search(sql) or any(_reads_datasheets(n) for n in needed)):
        register_datasheets(con)
    if sql is not None and _CEILING_SOURCES.search(sql):
        register_ceiling_sources(con)
    return con


def register_datasheets(con: Any) -> None:
    """Register the datasheet catalog's tables (:func:`rooflake.schema.datasheets.tables`: ``datasheets``,
    ``datasheet_gpus``) on cursor ``con``: the package's catalog, not the store's files. :func:`connect` does it for
    SQL that names them or a named query that reads them, :func:`fetch` for a query that reads them."""
    from rooflake.schema import datasheets

    for name, table in datasheets.tables().items():
        con.register(name, con.from_arrow(table))


@functools.cache
def _reads_datasheets(name: str) -> bool:
    return bool(_DATASHEETS.search(query(name).code))


def register_ceiling_sources(con: Any) -> None:
    """Create view ``ceiling_sources`` (the ceiling sources registry, :mod:`rooflake.schema.ceiling_sources`: the
    package's data, never the store's) on cursor ``con``, once per cursor. :func:`fetch` does it for a query that
    reads it, :func:`connect` for SQL that names it."""
    if con not in _HAS_CEILING_SOURCES:
        con.execute(_ceiling_sources_view())
        _HAS_CEILING_SOURCES.add(con)


@functools.cache
def _ceiling_sources_view() -> str:
    """``CREATE OR REPLACE TEMP VIEW ceiling_sources AS SELECT * FROM (VALUES ...)``: the registry's values as
    typed literals (a view's DDL, which a store's cursor runs without pointing its views at any file; no Arrow,
    whose building from Python values tries to import pandas)."""
    from rooflake.schema import ceiling_sources as registry

    def literal(v: Any, column: str) -> str:
        text = "NULL" if v is None else str(v).upper() if isinstance(v, bool) else str(v)
        if isinstance(v, str):
            text = "'" + v.replace("'", "''") + "'"
        return f"{text}::{registry.DUCK_TYPES.get(column, 'VARCHAR')}"

    rows = [
        f"({', '.join(literal(v, c) for v, c in zip(r, registry.COLUMNS, strict=True))})"
        for r in registry.records()
    ]
    return (
        f"CREATE OR REPLACE TEMP VIEW {CEILING_SOURCES} AS SELECT * FROM (VALUES {', '.join(rows)}) "
        f"AS t({', '.join(registry.COLUMNS)})"
    )


_HAS_CEILING_SOURCES: weakref.WeakSet[Any] = weakref.WeakSet()


@functools.cache
def _reads_ceiling_sources(name: str) -> bool:
    return bool(_CEILING_SOURCES.search(query(name).code))


@functools.lru_cache(maxsize=256)
def _objects(needed: tuple[str, ...]) -> tuple[dict[str, str], tuple[tuple[str, str], ...]]:
    """The views (``{name: sql}``) and the table macros (``(name, statement)``) that create ``needed``, in order:
    named, so that the store's database need not parse their text to learn the names (14 ms for all of them)."""
    views_sql = {n: load(n) for n in needed if not query(n).parameters}
    macros_sql = tuple((n, _macro_sql(query(n))) for n in needed if query(n).parameters)
    return views_sql, macros_sql


def _bind(sql: str, params: dict[str, Any] | None) -> dict[str, Any]:
    """The ``params`` that ``sql`` uses (DuckDB refuses unused named parameters); a missing one is an error."""
    used = set(_PARAM.findall(_COMMENT.sub("", sql)))
    missing = used - set(params or {})
    if missing:
        raise QueryError(f"no value for parameter(s) {', '.join(f'${m}' for m in sorted(missing))}")
    return {k: v for k, v in (params or {}).items() if k in used}


def _fetch(
    con: Any,
    sql: str,
    params: dict[str, Any] | None,
    what: str,
    as_rows: bool = False,
    as_pylist: bool = False,
) -> Any:
    import duckdb

    from rooflake.schema.duck import fetch_arrow, fetch_pylist, fetch_rows

    try:
        return (fetch_rows if as_rows else fetch_pylist if as_pylist else fetch_arrow)(
            con, sql, _bind(sql, params)
        )
    except duckdb.Error as e:
        raise QueryError(f"{what}: {' '.join(str(e).split())}") from e


def check_regex(con: Any, pattern: str | None, option: str) -> None:
    """Raise :class:`BadArgument` (a usage error: the CLI exits 2) naming ``option`` when DuckDB does not accept
    ``pattern`` as a regular expression (RE2 syntax: step ``regex_check``), before a query that matches with it
    fails halfway; None passes."""
    if pattern is None:
        return
    try:
        fetch(con, "regex_check", {"pattern": pattern}, as_rows=True)
    except QueryError as e:
        why = (
            str(e.__cause__ or e).split("\n")[0].removeprefix("Invalid Input Error: ")
        )  # (a CR is the pattern's)
        shown = (
            f"'{pattern}'" if pattern.isprintable() else repr(pattern)
        )  # as typed (the CLI escapes the rest)
        raise BadArgument(f"{option} {shown}: not a regular expression ({why})") from None


def fetch(
    con: Any,
    name: str,
    params: dict[str, Any] | None = None,
    *,
    filters: dict[str, Any] | None = None,
    tables: dict[str, Any] | None = None,
    what: str | None = None,
    as_rows: bool = False,
    as_pylist: bool = False,
) -> Any:
    """Run query file ``name`` (a named query or a step) on cursor ``con``; a ``pyarrow.Table`` with the columns its
    ``-- Columns:`` block documents (``as_rows``: :class:`rooflake.schema.duck.Rows`, DuckDB's Python values,
    without importing pyarrow; ``as_pylist``: :func:`rooflake.schema.duck.fetch_pylist`'s Rows, whose values are
    those ``to_pylist`` gives, or the table for types without such values).

    ``params`` bind the query's ``$parameters`` (an optional one left out takes its declared default). ``filters`` keep the rows whose column equals the value (a list:
    is one of the values). ``tables`` shadow store tables on this cursor for the duration of the call (``{"kernels":
    arrow_table}``: every query that reads ``kernels`` then reads these rows; a temp view named ``kernels``
    precedes the store's view). Raises :class:`QueryError` with DuckDB's message, after ``what`` (what was being
    asked, e.g. ``"layers of run X"``; default: the query's name).
    """
    q = query(name)
    missing = set(q.given) - set(tables or {})
    if missing:
        raise QueryError(f"{name} reads table(s) the caller gives: {', '.join(sorted(missing))}")
    if _reads_ceiling_sources(name):
        register_ceiling_sources(con)
    if _reads_datasheets(name) or any(_reads_datasheets(n) for n in dependencies(q.code)):
        register_datasheets(con)
    bound = dict(params or {})
    sql = q.text
    for p, literal in q.defaults.items():  # an optional parameter not given: its declared default
        if p not in bound:
            sql = re.sub(rf"\${p}\b", f"({literal})", sql)
    if filters:
        conds = []
        for i, (col, value) in enumerate(filters.items()):
            bound[f"_f{i}"] = value
            op = f"list_contains($_f{i}, {col})" if isinstance(value, list) else f"{col} = $_f{i}"
            conds.append(op)
        sql = f"SELECT * FROM (\n{sql}\n) WHERE {' AND '.join(conds)}"
    for table, rows in (tables or {}).items():
        # an Arrow table as a DuckDB relation: DuckDB's register() of the table itself imports pandas (+0.25 s of
        # CPU per command), from_arrow does not
        arrow = type(rows).__module__.startswith("pyarrow")
        con.register(f"_shadow_{table}", con.from_arrow(rows) if arrow else rows)
        con.execute(f"CREATE OR REPLACE TEMP VIEW {table} AS SELECT * FROM _shadow_{table}")
    try:
        return _fetch(con, sql, bound, what or name, as_rows, as_pylist)
    finally:
        for table in tables or {}:
            con.execute(f"DROP VIEW IF EXISTS temp.{table}")
            con.unregister(f"_shadow_{table}")


def run(
    store: Any, name: str, params: dict[str, Any] | None = None, *, filters: dict[str, Any] | None = None
) -> Any:
    """Run named query or step ``name`` over ``store`` (see :func:`fetch`); returns a ``pyarrow.Table``.
    Raises :class:`QueryError` for an unknown query or a failing SQL statement."""
    query(name)
    return fetch(connect(store), name, params, filters=filters)


def execute(
    store: Any,
    sql: str,
    params: dict[str, Any] | None = None,
    *,
    unsafe: bool = False,
    as_rows: bool = False,
    as_pylist: bool = False,
) -> Any:
    """Run a user's SQL over the store's tables, every named query (views and table macros) and the shared macros;
    returns a ``pyarrow.Table`` (``as_rows``: :class:`rooflake.schema.duck.Rows`, DuckDB's Python values, without
    importing pyarrow: what a terminal table needs; ``as_pylist``: :func:`rooflake.schema.duck.fetch_pylist`'s
    Rows holding the values ``to_pylist`` would give, or the table where a column's type has no such values: what
    JSON needs). Unless ``unsafe``, only queries run (:func:`rooflake.store.database.run_read_only`). Raises
    :class:`QueryError` with DuckDB's message (syntax errors, unknown columns or tables, a missing parameter value,
    a refused statement, SQL that is not text or holds no statement: :func:`rooflake.store.user_sql.statements`)."""
    import duckdb

    from rooflake.schema.duck import fetch_pylist, fetch_rows
    from rooflake.store.database import run_read_only
    from rooflake.store.user_sql import check_text, refuse_writes, statements

    check_text(sql)
    con = connect(store, sql, unsafe=unsafe)
    if not (as_rows or as_pylist):
        return run_read_only(con, sql, params or {}, unsafe=unsafe)
    if unsafe:  # as run_read_only does
        statements(con, sql)
    else:
        refuse_writes(con, sql)
    try:
        return (fetch_rows if as_rows else fetch_pylist)(con, sql, params or {})
    except duckdb.Error as e:
        raise QueryError(f"SQL failed: {' '.join(str(e).split())}") from e
