"""Arrow ↔ DuckDB helpers shared by the readers (``rooflake.ingest``) and the store (``rooflake.store``).

- :func:`duck_type`, :func:`arrow_type`: the DuckDB type of an Arrow type of our schemas, and back.
- :func:`conform_select`: a select list giving exactly a schema's columns, in order.
- :class:`DuckTable`: a table of one run that is still a query in a reader's DuckDB connection (streamed to
  Parquet as DuckDB streams its rows, or fetched as Arrow); :func:`duck_row` makes a one-row one from Python values.
- :func:`fetch_arrow`: run SQL with named parameters, get a ``pyarrow.Table``; :func:`fetch_rows`: the same as
  Python values (:class:`Rows`), without importing pyarrow (a terminal table needs none: the import is start-up time);
  :func:`fetch_pylist`: Rows holding the values ``pyarrow.Table.to_pylist`` gives (what JSON needs), or the table
  for the types whose values differ.
- :func:`sql_literal`, :func:`sql_str`: Python values as DuckDB literals (for SQL text that cannot take bound
  parameters: select lists, file lists of views).
- :func:`duck_connect`: a new DuckDB connection that draws no progress bar on stdout.
- :func:`sql_file`, :func:`sql_template`: the text of a ``.sql`` file shipped in one of our packages, with its
  ``{slot}`` placeholders filled.

The SQL these helpers run lives in ``schema/*.sql`` (``one_row``, ``connect``). pyarrow is imported inside
the helpers that need it: importing this module costs nothing.
"""

from __future__ import annotations

import contextlib
import datetime
import functools
from collections.abc import Callable, Generator, Iterator
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    import pyarrow as pa

# DuckTable.write_parquet: rows per Arrow batch fetched from DuckDB, and the most rows and bytes of a Parquet row
# group (memory bounded for rows with long names). Measured at the nsys range-heavy copy x8 (1.2M kernels with
# their names, 5.7M NVTX ranges; 2 cores): pyarrow's writer with these took 2.1 CPU s for the kernels and 3.9 for
# the ranges, where DuckDB's COPY took 3.5 and 6.8 (at 4,096-row groups; bigger ones held more under its memory
# limit and spilled). Whole ingest, paired runs: 0.94-0.96x the wall time and 0.89-0.91x the CPU time of DuckDB's
# COPY, peak 480 against 461 MiB; batches of 8,192 rows and groups of 8 MiB took 0.975x of that at 493 MiB
# (measured on 2 cores). With the next row group computed while the current one is written (prefetched): 0.96x the wall time
# and 0.97x the CPU time again (4 paired runs), peak 489 against 480 MiB
FETCH_ROWS = 4096
ROW_GROUP_ROWS = 65536
ROW_GROUP_BYTES = 4 << 20
# row groups between two calls of a DuckTable's ``tidy``: the nsys reader trims the C heap (glibc keeps what
# DuckDB's threads freed), which kept the x8 copy's ranges write at ~471 MiB where it climbed to ~484 (no time seen;
# measured before the writes were prefetched, when the trim ran while DuckDB was idle)
TIDY_GROUPS = 16


def duck_connect(database: str = ":memory:", config: dict[str, Any] | None = None) -> Any:
    """A new DuckDB connection (``duckdb.DuckDBPyConnection``) to ``database`` with ``config``, and the settings of
    ``connect.sql``: DuckDB's progress bar off. DuckDB draws that bar on the process's standard output (file
    descriptor 1, terminal or not) for any statement that runs over 2 s: into ``rl ingest --json``'s stream of JSON
    objects, where the x8 nsys copy's NVTX load runs for seconds. (A cursor of the connection starts with DuckDB's
    defaults for cursors: the bar off.) Raises ``duckdb.Error`` when DuckDB cannot open ``database`` or refuses
    ``config``."""
    import duckdb

    con = duckdb.connect(database, config=config or {})
    # in Jupyter without ipywidgets DuckDB refuses any change to the bar's setting; there it draws no bar on file
    # descriptor 1 (and none at all without ipywidgets)
    with contextlib.suppress(duckdb.InvalidInputException):
        con.execute(sql_file("rooflake.schema", "connect.sql"))
    return con


@functools.cache  # read once per process: a store planning each statement reads ~18 files per statement
def sql_file(package: str, name: str) -> str:
    """Text of ``name`` (e.g. ``"one_row.sql"``) in package ``package`` (e.g. ``"rooflake.schema"``), without
    a trailing semicolon. Raises ``FileNotFoundError`` when the package holds no such file."""
    return resources.files(package).joinpath(name).read_text(encoding="utf-8").strip().rstrip(";")


def sql_template(package: str, name: str, /, **slots: str) -> str:
    """The statement of ``.sql`` file ``name`` in ``package`` with its ``{slot}`` placeholders filled by ``slots``
    (for what DuckDB cannot bind as a parameter: a view's name, a file list, a nested query). The header comment
    lines are dropped first, so a slot's text never lands inside a comment. Raises ``KeyError`` for a slot the
    file names and ``slots`` lacks."""
    body = "\n".join(line for line in sql_file(package, name).splitlines() if not line.startswith("--"))
    return body.format(**slots)


def duck_type(t: pa.DataType) -> str:
    """DuckDB type of an Arrow type of our schemas (strings, integers, floats, timestamps, lists, maps). Raises
    ``TypeError`` for another type."""
    import pyarrow as pa

    if pa.types.is_string(t):
        return "VARCHAR"
    if pa.types.is_int64(t):
        return "BIGINT"
    if pa.types.is_uint64(t):
        return "UBIGINT"
    if pa.types.is_float64(t):
        return "DOUBLE"
    if pa.types.is_timestamp(t):
        return "TIMESTAMPTZ" if t.tz else "TIMESTAMP"
    if pa.types.is_list(t):
        return f"{duck_type(t.value_type)}[]"
    if pa.types.is_map(t):
        return f"MAP({duck_type(t.key_type)}, {duck_type(t.item_type)})"
    raise TypeError(f"no DuckDB type for {t}")


def arrow_type(t: str) -> pa.DataType:
    """The Arrow type of a DuckDB type as :func:`duck_type` spells it (``VARCHAR``, ``BIGINT``, ``UBIGINT``,
    ``DOUBLE``, ``TIMESTAMPTZ`` (microseconds, UTC), ``TIMESTAMP``, ``X[]``, ``MAP(K, V)``), so that
    ``duck_type(arrow_type(t)) == t``. Raises ``TypeError`` for another type."""
    import pyarrow as pa

    scalars = {
        "VARCHAR": pa.string(),
        "BIGINT": pa.int64(),
        "UBIGINT": pa.uint64(),
        "DOUBLE": pa.float64(),
        "TIMESTAMPTZ": pa.timestamp("us", tz="UTC"),
        "TIMESTAMP": pa.timestamp("us"),
    }
    if t in scalars:
        return scalars[t]
    if t.endswith("[]"):
        return pa.list_(arrow_type(t[:-2]))
    if t.startswith("MAP(") and t.endswith(")") and t.count(", ") == 1:
        key, item = t[4:-1].split(", ")
        return pa.map_(arrow_type(key), arrow_type(item))
    raise TypeError(f"no Arrow type for DuckDB type {t}")


def conform_select(schema: pa.Schema, exprs: dict[str, str]) -> str:
    """A DuckDB select list giving exactly ``schema``'s columns, in order: ``CAST(expr AS type) AS "name"`` for the
    columns in ``exprs`` (SQL expressions), ``NULL::type`` for the others. Raises ``KeyError`` for an expression
    naming no column of ``schema`` (a typo would otherwise drop data silently)."""
    unknown = set(exprs) - set(schema.names)
    if unknown:
        raise KeyError(f"not columns of the schema: {sorted(unknown)}")
    return ", ".join(
        f'CAST({exprs[f.name]} AS {duck_type(f.type)}) AS "{f.name}"'
        if f.name in exprs
        else f'NULL::{duck_type(f.type)} AS "{f.name}"'
        for f in schema
    )


def sql_str(s: str) -> str:
    """``s`` for inside an SQL string literal (quotes doubled)."""
    return s.replace("'", "''")


def sql_literal(v: Any, t: pa.DataType) -> str:
    """``v`` as a DuckDB literal (cast to the column's type ``t`` by :func:`conform_select`): None, bool, int,
    float, str, datetime, a dict or list of (key, value) pairs for a map type, a list or tuple for a list type.
    Raises ``TypeError`` for another value type."""
    import pyarrow as pa

    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v)
    if isinstance(v, str):
        return f"'{sql_str(v)}'"
    if isinstance(v, datetime.datetime):
        return f"TIMESTAMPTZ '{v.isoformat()}'" if v.tzinfo else f"TIMESTAMP '{v.isoformat()}'"
    if pa.types.is_map(t):
        pairs = v.items() if isinstance(v, dict) else v
        return (
            "MAP {"
            + ", ".join(f"{sql_literal(k, t.key_type)}: {sql_literal(x, t.item_type)}" for k, x in pairs)
            + "}"
        )
    if isinstance(v, list | tuple):
        return "[" + ", ".join(sql_literal(x, t.value_type) for x in v) + "]"
    raise TypeError(f"no SQL literal for {type(v).__name__}")


class Rows(NamedTuple):
    """A query's result as DuckDB's Python client gives it, without pyarrow: ``names`` (the columns, in order),
    ``types`` (DuckDB's type objects, ``duckdb.sqltypes.DuckDBPyType``: ``str()`` gives ``BIGINT``, ``DOUBLE``,
    ``MAP(VARCHAR, VARCHAR)``, ...; ``.id`` and ``.children`` their structure),
    ``rows`` (tuples of Python values: int, float, str, Decimal, datetime, date, list, dict for a struct or a map,
    None for NULL), ``zone`` (the IANA time zone of the ``TIMESTAMP WITH TIME ZONE`` columns, whose values are
    naive datetimes in that zone; empty when there are none)."""

    names: tuple[str, ...]
    types: tuple[Any, ...]
    rows: list[tuple[Any, ...]]
    zone: str = ""


#: DuckDB's name of TIMESTAMPTZ in a relation's types
TIMESTAMPTZ = "TIMESTAMP WITH TIME ZONE"


def fetch_rows(con: Any, sql: str, params: dict[str, Any] | None = None) -> Rows:
    """Run ``sql`` with named ``params`` on DuckDB connection ``con``; the result as :class:`Rows` (no columns for
    statements without a result). Imports no pyarrow: a terminal table needs none, and importing it is start-up time. DuckDB's client
    needs pytz for time-zone-aware values, so a ``TIMESTAMP WITH TIME ZONE`` column comes as the naive local time
    in the connection's zone (``Rows.zone``, ``time_zone.sql``; ``fold=1`` on the second of a repeated hour, as
    the instant gives it) and any other type holding a time zone as its text. Raises ``duckdb.Error``."""
    rel = con.sql(sql, params=params or None)
    if rel is None:
        return Rows((), (), [])
    names = tuple(rel.columns)
    types = tuple(rel.types)
    if not any("TIME ZONE" in str(t) for t in types):
        return Rows(names, types, rel.fetchall())
    stamps = [i for i, t in enumerate(types, start=1) if str(t) == TIMESTAMPTZ]
    # columns by position (a name may repeat: a self-join), then each time stamp's instant (for its fold)
    columns = [
        f"CAST(#{i} AS {'TIMESTAMP' if str(t) == TIMESTAMPTZ else 'VARCHAR'})"
        if "TIME ZONE" in str(t)
        else f"#{i}"
        for i, t in enumerate(types, start=1)
    ] + [f"epoch_us(#{i})" for i in stamps]
    rows = _over(rel, "local_time_rows.sql", columns).fetchall()
    zone = _zone(con)
    return Rows(names, types, _folded(rows, [i - 1 for i in stamps], len(types), zone), zone)


def _over(rel: Any, name: str, columns: list[str]) -> Any:
    """The relation of our ``.sql`` file ``name`` (``SELECT {columns} FROM {rows}``) over the query's relation
    ``rel``, with the select list ``columns``; lazy, as ``rel`` is, and leaving nothing on the connection."""
    return rel.query("rows", sql_template("rooflake.schema", name, rows="rows", columns=", ".join(columns)))


def _folded(rows: list[tuple[Any, ...]], stamps: list[int], n: int, zone: str) -> list[tuple[Any, ...]]:
    """``rows`` without their last columns (the microseconds since the epoch of columns ``stamps``), each local
    time of those columns with ``fold=1`` where it is the second of a repeated hour in ``zone`` (as the instant
    gives it: 01:30 EST after 01:30 EDT), so that it shows its own zone abbreviation."""
    from zoneinfo import ZoneInfo

    try:
        tz = None if zone in ("UTC", "GMT") or zone.startswith("Etc/") else ZoneInfo(zone)
    except (KeyError, ValueError):  # a zone Python does not know: no fold to give
        tz = None
    if tz is None:
        return [r[:n] for r in rows]
    utc = _EPOCH.replace(tzinfo=datetime.timezone.utc)
    out = []
    for r in rows:
        row = list(r[:n])
        for k, i in enumerate(stamps):
            us = r[n + k]
            if row[i] is not None and us is not None and _fold(utc, us, tz):
                row[i] = row[i].replace(fold=1)
        out.append(tuple(row))
    return out


def _fold(utc: datetime.datetime, us: int, tz: Any) -> int:
    """The fold of the instant ``us`` microseconds after ``utc`` in zone ``tz``; 0 for an instant whose local
    time Python's datetime cannot hold (year 1 west of Greenwich, year 9999 east: never a repeated hour)."""
    try:
        return (utc + datetime.timedelta(microseconds=us)).astimezone(tz).fold
    except OverflowError:
        return 0


def _zone(con: Any) -> str:
    """The connection's time zone (``time_zone.sql``), asked once a statement's rows are fetched: a store's
    connection aims its views at each statement's files when the statement is made, and a relation binds its views
    only when it runs, so no other statement may come between the two (found in review: an empty table)."""
    return str(con.sql(sql_file("rooflake.schema", "time_zone.sql")).fetchall()[0][0])


#: DuckDB type ids whose Python values from DuckDB's client equal what pyarrow's ``Table.to_pylist`` gives for the
#: same column of :func:`fetch_arrow`'s table (tests/test_output_rows.py compares the two). Left out, for example:
#: HUGEINT (Arrow: a Decimal), ARRAY and unnamed STRUCT (DuckDB: a tuple), DATE, TIME, TIMESTAMP_NS, INTERVAL,
#: UUID, BIT (each converted differently, or failing, on one side).
PYLIST_SCALARS = frozenset(
    [
        "boolean",
        "tinyint",
        "smallint",
        "integer",
        "bigint",
        "utinyint",
        "usmallint",
        "uinteger",
        "ubigint",
        "float",
        "double",
        "decimal",
        "varchar",
        "blob",
        "enum",
        "null",
    ]
)
#: TIMESTAMP and TIMESTAMPTZ, as columns of the result (not nested): fetched as microseconds since the epoch and
#: made into datetimes as pyarrow makes them (a TIMESTAMPTZ in the connection's zone, with the right fold in a
#: repeated hour); an infinite one fails, as it does in pyarrow (no datetime holds it)
PYLIST_EPOCH = frozenset({"timestamp", TIMESTAMPTZ.lower()})
_EPOCH = datetime.datetime(1970, 1, 1)
_INFINITE = "a {t} value is infinite: JSON has no text for it (CAST it AS VARCHAR)"
_OUT_OF_RANGE = (
    "a time stamp is out of the range of Python's datetime in time zone {zone} (before year 1 or after year 9999 "
    "there): JSON has no text for it (CAST it AS VARCHAR)"
)


def _pylist_type(t: Any, top: bool = False) -> bool:
    """Whether values of DuckDB type ``t`` come from :func:`fetch_pylist` as ``to_pylist`` gives them."""
    if t.id in PYLIST_SCALARS or (top and t.id in PYLIST_EPOCH):
        return True
    if t.id == "map":
        return t.children[0][1].id in PYLIST_SCALARS and _pylist_type(t.children[1][1])
    if t.id in ("list", "struct"):
        return bool(t.children) and all(_pylist_type(c) for _, c in t.children)
    return False


def _arrow_maps(v: Any, t: Any) -> Any:
    """Value ``v`` of DuckDB type ``t`` with every map (a dict from DuckDB) as Arrow gives it: (key, value) pairs."""
    if v is None or "MAP(" not in str(t):
        return v
    if t.id == "map":
        return [(k, _arrow_maps(x, t.children[1][1])) for k, x in v.items()]
    if t.id == "list":
        return [_arrow_maps(x, t.children[0][1]) for x in v]
    fields = dict(t.children)  # a struct
    return {k: _arrow_maps(x, fields[k]) for k, x in v.items()}


def _converter(t: Any, zone: str) -> Callable[[Any], Any]:
    """The function making a value of column type ``t`` as :func:`fetch_pylist` fetches it what pyarrow gives:
    microseconds since the epoch as a datetime (naive, or in ``zone``: raises ``KeyError`` for a zone Python's
    ``zoneinfo`` does not know), maps as (key, value) pairs."""
    if t.id not in PYLIST_EPOCH:
        return lambda v: _arrow_maps(v, t)
    if t.id == "timestamp":
        return lambda v: None if v is None else _EPOCH + datetime.timedelta(microseconds=v)
    from zoneinfo import ZoneInfo

    tz, utc = ZoneInfo(zone), _EPOCH.replace(tzinfo=datetime.timezone.utc)
    return lambda v: None if v is None else (utc + datetime.timedelta(microseconds=v)).astimezone(tz)


def fetch_pylist(con: Any, sql: str, params: dict[str, Any] | None = None) -> Rows | pa.Table:
    """Run ``sql`` with named ``params`` on DuckDB connection ``con``. When every column's type is one whose values
    come from DuckDB's client as pyarrow gives them (:data:`PYLIST_SCALARS`, lists, maps and structs of them,
    TIMESTAMP and TIMESTAMPTZ columns: :data:`PYLIST_EPOCH`), the result is :class:`Rows` (``zone`` empty) whose
    ``rows`` equal the values of ``fetch_arrow(con, sql, params).to_pylist()`` (maps as lists of (key, value)
    pairs, TIMESTAMPTZ as aware datetimes in the connection's zone), without importing pyarrow (``rl sql -f
    json`` starts without it); else the same statement's result as a ``pyarrow.Table`` (:func:`fetch_arrow`). Raises
    ``duckdb.Error`` (for an infinite TIMESTAMP[TZ] value too: pyarrow fails on it with ``OverflowError``), and
    :class:`~rooflake.schema.QueryError` for a time stamp whose local time Python's datetime cannot hold."""
    rel = con.sql(sql, params=params or None)
    if rel is None:
        return Rows((), (), [])
    names, types = tuple(rel.columns), tuple(rel.types)
    if not all(_pylist_type(t, top=True) for t in types):
        fn = getattr(rel, "to_arrow_table", None) or rel.arrow
        return fn()
    if any(t.id in PYLIST_EPOCH for t in types):  # columns by position: a name may repeat (a self-join)
        columns = [
            f"CASE WHEN isinf(#{i}) THEN error('{sql_str(_INFINITE.format(t=t))}') ELSE epoch_us(#{i}) END"
            if t.id in PYLIST_EPOCH
            else f"#{i}"
            for i, t in enumerate(types, start=1)
        ]
        rel = _over(rel, "epoch_rows.sql", columns)
    rows = rel.fetchall()
    zone = _zone(con) if any(t.id == TIMESTAMPTZ.lower() for t in types) else ""  # after the rows: see _zone
    try:
        convert = {
            i: _converter(t, zone) for i, t in enumerate(types) if t.id in PYLIST_EPOCH or "MAP(" in str(t)
        }
    except KeyError:
        # a zone Python's zoneinfo lacks (pyarrow has its own): the statement again, through Arrow
        return fetch_arrow(con, sql, params)
    if convert:
        try:
            rows = [tuple(convert[i](v) if i in convert else v for i, v in enumerate(r)) for r in rows]
        except OverflowError:
            from rooflake.schema.errors import QueryError

            raise QueryError(_OUT_OF_RANGE.format(zone=zone or "UTC")) from None
    return Rows(names, types, rows)


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def fetch_arrow(con: Any, sql: str, params: dict[str, Any] | None = None) -> pa.Table:
    """Run ``sql`` with named ``params`` on DuckDB connection ``con``; the result as a ``pyarrow.Table``
    (empty for statements without a result). Raises ``duckdb.Error``."""
    import pyarrow as pa

    rel = con.sql(sql, params=params or None)
    if rel is None:
        return pa.table({})
    fn = getattr(rel, "to_arrow_table", None) or rel.arrow
    return fn()


@contextlib.contextmanager
def prefetched(
    items: Generator[Any, None, None], cancel: Callable[[], None] | None = None
) -> Iterator[Iterator[Any]]:
    """The items of ``items`` (a generator), each next one computed on a worker thread while the caller uses the
    current one: the caller's work overlaps the producer's. An exception of the producer is raised where the caller
    takes that item, with its own class.

    On leaving the ``with`` block, by the end or by an exception, the worker's pending step is waited for and
    ``items`` is closed, on the caller's thread. Leaving by an exception (Ctrl-C, SIGTERM's ``SystemExit``, a
    failed write) first calls ``cancel`` (DuckDB's ``interrupt``: the step then ends at once instead of finishing
    its row group); a second one while waiting calls it again, and the first one is raised after."""
    from concurrent.futures import Future, ThreadPoolExecutor

    done = object()
    pool = ThreadPoolExecutor(1, thread_name_prefix="rooflake-prefetch")
    ahead: Future[Any] = pool.submit(next, items, done)

    def taken() -> Iterator[Any]:
        nonlocal ahead
        while (item := ahead.result()) is not done:
            ahead = pool.submit(next, items, done)
            yield item

    late: BaseException | None = None
    try:
        yield taken()
    except BaseException:
        if cancel is not None:
            cancel()
        raise
    finally:
        while True:  # the worker must be out of ``items`` before they are closed
            try:
                pool.shutdown(wait=True)  # (waits for the pending step; again after an interruption)
                break
            except BaseException as e:  # noqa: BLE001 - a second signal: cancel again, keep waiting
                late = late or e
                if cancel is not None:
                    cancel()
        items.close()
    if late is not None:
        raise late


class DuckTable:
    """A table of one run that is still a query in a reader's DuckDB connection: written to Parquet a few row groups
    at a time as DuckDB streams them (no whole table in Python memory), or fetched as Arrow.

    ``select`` is a full SELECT statement whose columns are exactly ``schema``'s (see :func:`conform_select`);
    ``num_rows`` is its row count, known beforehand (publish writes no file for an empty table); ``settings``: DuckDB
    settings in force while it runs (reset after); ``tidy``: called after every :data:`TIDY_GROUPS` row groups
    written (a reader giving freed memory back to the system), or None; it runs while the worker thread of
    :meth:`write_parquet` uses the connection, so it must not touch the connection; ``group``: the most rows and
    bytes of a row group written, None for :data:`ROW_GROUP_ROWS` and :data:`ROW_GROUP_BYTES` (a reader whose query
    needs little of DuckDB's memory can afford bigger ones, which pyarrow writes with less CPU). The connection must
    stay open until the table is written.
    """

    def __init__(
        self,
        con: Any,
        select: str,
        schema: pa.Schema,
        num_rows: int,
        settings: dict[str, str] | None = None,
        tidy: Callable[[], None] | None = None,
        group: tuple[int, int] | None = None,
    ) -> None:
        self.con = con
        self.select = select
        self.schema = schema
        self.num_rows = num_rows
        self.settings = settings or {}
        self.tidy = tidy
        self.group = group

    @contextlib.contextmanager
    def _settings(self) -> Iterator[None]:
        for k, v in self.settings.items():
            self.con.execute(f"SET {k} = '{sql_str(v)}'")
        try:
            yield
        finally:
            for k in self.settings:
                self.con.execute(f"RESET {k}")

    def to_arrow(self) -> pa.Table:
        """The rows as a ``pyarrow.Table`` with ``schema`` (field metadata included). Raises ``duckdb.Error``."""
        with self._settings():
            return fetch_arrow(self.con, self.select).cast(self.schema)

    def write_parquet(
        self, path: Path, metadata: dict[bytes, bytes], *, write_statistics: bool | list[str]
    ) -> None:
        """Write the rows to ``path`` with pyarrow's Parquet writer, as the store's other files are written (zstd,
        pyarrow's default level; ``write_statistics`` as :func:`pyarrow.parquet.write_table` takes it: the store
        gives :func:`rooflake.store.publish.stat_columns`), with ``schema`` (every column OPTIONAL: the store's
        schemas declare every field nullable) and key-value ``metadata`` beside the Arrow schema pyarrow stores
        (``ARROW:schema``: units and descriptions). Text columns are dictionary-encoded (:func:`_texts`), integer
        columns ``DELTA_BINARY_PACKED`` (:func:`_deltas`).

        The rows come from DuckDB as a stream of :data:`FETCH_ROWS`-row Arrow batches, gathered into row groups
        that end once they reach :data:`ROW_GROUP_ROWS` rows or :data:`ROW_GROUP_BYTES` bytes (or ``group``'s):
        memory stays bounded, outside DuckDB's limit. DuckDB computes the next row group (:func:`prefetched`: driven
        from a worker thread) while pyarrow encodes and compresses the current one. Raises ``OSError`` when the file
        cannot be written or DuckDB cannot read or spill (its ``IOException``: a full or read-only disk, reported by
        publish as a store error), ``duckdb.Error`` when the query fails otherwise."""
        import duckdb
        import pyarrow as pa
        import pyarrow.parquet as pq

        schema = self.schema.with_metadata(metadata)
        try:
            with (
                self._settings(),
                pq.ParquetWriter(
                    path,
                    schema,
                    compression="zstd",
                    use_dictionary=_texts(schema),
                    column_encoding=_deltas(schema),
                    write_statistics=write_statistics,
                    write_page_checksum=True,  # a page's CRC: damage is found, not read as other values
                    memory_pool=pa.system_memory_pool(),  # given back when freed (pyarrow's default pool keeps it)
                ) as writer,
                prefetched(self._row_groups(), cancel=self.con.interrupt) as groups,
            ):
                for i, group in enumerate(groups, 1):
                    writer.write_table(group, row_group_size=group.num_rows)
                    if self.tidy is not None and i % TIDY_GROUPS == 0:
                        self.tidy()
        except duckdb.IOException as e:
            raise OSError(str(e).splitlines()[0]) from e

    def _row_groups(self) -> Generator[pa.Table, None, None]:
        """The rows as tables of ``schema``, each of whole batches until it holds :data:`ROW_GROUP_ROWS` rows or
        :data:`ROW_GROUP_BYTES` bytes (or ``group``). Raises ``duckdb.Error`` when the query fails."""
        import pyarrow as pa

        most_rows, most_bytes = self.group or (ROW_GROUP_ROWS, ROW_GROUP_BYTES)

        reader = self.con.sql(self.select).to_arrow_reader(FETCH_ROWS)
        batches: list[pa.RecordBatch] = []
        rows = size = 0
        while True:
            try:
                batch = reader.read_next_batch()
            except StopIteration:
                break
            except OSError as e:  # how DuckDB's Arrow stream reports a failed query
                raise _stream_error(e) from e
            batches.append(batch)
            rows, size = rows + batch.num_rows, size + batch.nbytes
            if rows >= most_rows or size >= most_bytes:
                yield pa.Table.from_batches(batches).cast(self.schema)
                batches, rows, size = [], 0, 0
        if batches:
            yield pa.Table.from_batches(batches).cast(self.schema)


def _stream_error(e: OSError) -> Exception:
    """The ``duckdb.Error`` that DuckDB's Arrow stream reported as ``e``, an ``OSError`` holding its message, of the
    class the message names ("Invalid Input Error: …" -> ``duckdb.InvalidInputException``, "IO Error: …" ->
    ``duckdb.IOException``; ``duckdb.Error`` for a name of no class)."""
    import duckdb

    name = str(e).split(":", 1)[0].removesuffix(" Error").replace(" ", "").lower() + "exception"
    classes = {c.__name__.lower(): c for c in vars(duckdb).values() if isinstance(c, type)}
    cls = classes.get(name)
    return (cls if cls is not None and issubclass(cls, duckdb.Error) else duckdb.Error)(str(e))


def _texts(schema: pa.Schema) -> list[str]:
    """The string columns of ``schema``: the ones :meth:`DuckTable.write_parquet` dictionary-encodes (repeated
    names; on every column, the dictionaries cost the x8 copy's ranges 1.2 CPU s more)."""
    import pyarrow as pa

    return [f.name for f in schema if pa.types.is_string(f.type)]


def _deltas(schema: pa.Schema) -> dict[str, str]:
    """The integer columns of ``schema``, each with the Parquet encoding :meth:`DuckTable.write_parquet` gives it:
    ``DELTA_BINARY_PACKED`` (ids, sizes and the integer ``*_ns`` times: the differences pack into a few bits
    before zstd; TIMESTAMP columns are not integers here and keep pyarrow's default). At the x8 copy, pyarrow's
    writing of the kernels took 1.1 CPU s instead of 1.4 and of the ranges 2.2 instead of 2.5 (3 runs each, the
    same rows written from Arrow files), the store 95 MB instead of 108, and DuckDB and polars read the kernels'
    integer columns as fast or faster; whole ingest, 6 paired runs: 0.99x the wall time."""
    import pyarrow as pa

    return {f.name: "DELTA_BINARY_PACKED" for f in schema if pa.types.is_integer(f.type)}


def duck_row(con: Any, schema: pa.Schema, values: dict[str, Any]) -> DuckTable:
    """A one-row :class:`DuckTable` of ``schema`` holding ``values`` (str, int, float, bool, tz-aware datetime,
    list, or a dict or list of (key, value) pairs for a map column; absent or None: NULL), written as SQL literals.
    For a reader that already has a DuckDB connection: ``pa.table`` of Python values makes pyarrow import pandas when
    it is installed (+0.2 s, +33 MB resident for the rest of the ingest). Raises ``TypeError`` for another value
    type."""
    exprs = {f.name: sql_literal(values[f.name], f.type) for f in schema if values.get(f.name) is not None}
    select = sql_template("rooflake.schema", "one_row.sql", columns=conform_select(schema, exprs))
    return DuckTable(con, select, schema, 1)
