"""A store's DuckDB database: one view per table over its Parquet files, read-only unless asked otherwise.

The statements are the ``store/*.sql`` files: ``empty_table``, ``published``, ``table_view`` (+ ``read_files``,
``read_branch``), ``failing_view``, ``named_view``, ``lock_down``, and for planning ``plan_settings``,
``plan_view``, ``explain_plan``, ``drop_plan_view``.

What a view reads. Each table's view is the union BY NAME of a typed empty stand-in (so an older file's missing
column reads as NULL, a table without files is empty) with the table's files, ``union_by_name = true``: the
partitions of runs published as partitions and the compacted files of runs that live there
(:mod:`rooflake.store.compact`; the ``__published`` table says which, ``read_branch.sql``). Its columns are the
declared ones (``rooflake.schema.COLUMNS``), cast to the declared types.

Pruning. DuckDB binds every file a view names on every query (with ``union_by_name`` it reads every footer), so at
10,000 runs a view over every partition costs seconds per scan. A store with :data:`PRUNE_FROM` partition files or
more in a table is therefore read query by query: before each statement the cursor (:class:`StoreCursor`) plans
it over the empty stand-ins (:func:`plan_runs`: DuckDB pushes ``run_id = 'X'`` and ``run_id IN (...)`` filters
through the named views' joins into the scans), then points each table's view at the files of exactly the runs its
scans are filtered on (all files for a scan without such a filter, none for a table no scan reads). A question
about one run binds that run's files, at 10 runs or 100,000; an answer never changes (the plan is the same over
the files). Smaller stores bind every file once per database.

The seam. Pruning rests on three things DuckDB does not promise: the shape of ``EXPLAIN (FORMAT JSON)`` (nodes with
:data:`PLAN_CHILDREN`, a scan's :data:`PLAN_INFO` holding :data:`PLAN_TABLE` and :data:`PLAN_FILTERS`, a pushed-down
filter written ``run_id = 'X'`` or ``run_id IN ('X', 'Y')``: :func:`scan_runs`), the binder naming a view's base
tables (``get_table_names``: :func:`bound_tables`), and a plan over empty stand-ins being the plan over the files
(``plan_settings.sql``). :meth:`Database.plan_runs` is the one function that uses them; :func:`_check_planner`
plans ``probe_plan.sql`` once per database and, where DuckDB no longer shows what is read, turns pruning off (every
file is read: slow, never wrong); ``tests/test_seams.py`` fails by name when the installed DuckDB changes any of
them. What it saves: one run of ``kernel_roofline`` from a 10,000-run store, 5.7-7.3 s reading every file against
~0.2 s for DuckDB reading that run's files alone (measured before
pruning; CHANGELOG: one-run reads at any store size).

Read-only means two things. The database itself (:func:`build`, ``unsafe=False``) can reach the files of the
store's table folders and nothing else — not ``compacted.json``, no other file, no ``ATTACH``, no
``INSTALL``/``LOAD``, no setting changed after it is built (DuckDB's ``enable_external_access``,
``allowed_directories``, ``lock_configuration``); a store on object storage is read through a read-only view of its
filesystem (:mod:`rooflake.store.readonly_fs`), so nothing there is written whatever the statement. And a user's
SQL (:func:`run_read_only`) may hold only queries, decided on the statement DuckDB executes
(:mod:`rooflake.store.user_sql`: each statement of the text, the one ``EXPLAIN ANALYZE`` runs), so ``CREATE``,
``INSERT``, ``COPY`` (even into the table folders, which the views must be able to read), ``ATTACH``, ``SET`` are
refused before anything runs.
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rooflake.schema import COLUMNS, DamagedStoreError, QueryError
from rooflake.schema.duck import duck_connect, fetch_arrow, sql_file, sql_str, sql_template
from rooflake.store.layout import ALL_TABLES, PART
from rooflake.store.manifest import Stamp, manifest_stamp, read_manifest_stamped
from rooflake.store.user_sql import refuse_writes
from rooflake.store.user_sql import statements as parse_statements

if TYPE_CHECKING:
    import pyarrow as pa

    from rooflake.store.remote import Snapshot

PKG = "rooflake.store"
#: a table with this many partition files (or more) is read query by query, each query binding only its runs' files
PRUNE_FROM = 64
SOURCES = ("partition", "compacted")
#: runs a view reads: None = every run, a set = those runs only (empty: none)
Runs = frozenset[str] | None

#: the keys of DuckDB's ``EXPLAIN (FORMAT JSON)`` that :func:`scan_runs` reads (the module docstring: the seam)
PLAN_CHILDREN, PLAN_INFO, PLAN_TABLE, PLAN_FILTERS = "children", "extra_info", "Table", "Filters"

_QUOTED = r"'((?:[^']|'')*)'"
_EQ = re.compile(rf'^\(?"?run_id"? = {_QUOTED}\)?$')
_IN = re.compile(r'^(?:optional: )?\(?"?run_id"? IN \((.*?)\)\)?$')
_WORD = re.compile(r"\w+")
_CREATED = re.compile(r"\b(?:MACRO|VIEW|TABLE)\s+(?:IF\s+NOT\s+EXISTS\s+)?(?:main\.)?\"?(\w+)", re.I)
#: what a read of an object that is gone raises (s3fs through DuckDB's fsspec filesystem)
_GONE = re.compile(
    r"FileNotFoundError|NoSuchKey|key does not exist|No such file|No files found that match", re.I
)
#: what DuckDB says of a damaged Parquet file (often without naming it): Database.damage then finds which
_DAMAGE = re.compile(
    r"parquet|thrift|TProtocol|don't know what type|Out of buffer|decompress|zstd|snappy|corrupt|checksum|"
    r"unicode|UTF-?8|string encoding|dictionary|page|magic bytes|footer",
    re.I,
)
#: times a statement is run again over a new listing of a store on object storage whose files changed meanwhile
RELIST = 3
_TRACEBACK_LAST = re.compile(r"^\s*(\w+(?:Error|Exception)\b.*)$", re.M)


def gone(error: Exception) -> bool:
    """Whether ``error`` says a file read is gone (deleted since it was listed)."""
    return _GONE.search(str(error)) is not None


def gist(error: Exception) -> str:
    """``error``'s text on one line; where it carries a Python traceback (DuckDB's message of an error raised in
    fsspec, which it reads through), the traceback's last line (``FileNotFoundError: The specified key does not
    exist.``) in its place."""
    text = str(error)
    if "Traceback (most recent call last)" in text:
        found = _TRACEBACK_LAST.findall(text)
        head = text.split("Traceback (most recent call last)")[0]
        text = f"{head.rstrip(' :')}: {found[-1]}" if found else head
    return " ".join(text.split())


_VIEW_DDL = re.compile(r"^\s*(?:CREATE\s+(?:OR\s+REPLACE\s+)?(?:TEMP\w*\s+)?VIEW|DROP\s+VIEW)\b", re.I)


@dataclass(frozen=True)
class Sources:
    """The files a store's database reads, listed once when it is built.

    - ``parts``: table -> run id -> its partition file (path or URL), of every partition folder found (of
      ``keep`` only, when given);
    - ``compacted``: table -> the compacted files of the committed generation (compacted.json);
    - ``held``: the runs the compacted files hold; ``keep``: the runs read (None: every run);
    - ``published`` (computed when first asked: 100,000 runs take 0.05 s): run id -> ``partition`` or
      ``compacted``, each published run once (``__published``): a run with a ``runs`` partition folder is read
      from its partitions, else from the compacted files if they hold it;
    - ``mixed``: whether the compacted files hold a run not published from them (re-ingested as a partition since,
      or not among ``keep``): their rows are then joined with ``__published`` (``read_branch.sql``), else read
      as they are (``read_files.sql``). A partition file holds its own run's rows, and only files of runs published
      as partitions are listed: they are always read as they are."""

    parts: dict[str, Mapping[str, str]]
    compacted: dict[str, list[str]]
    held: frozenset[str]
    keep: frozenset[str] | None
    local: bool
    #: a local store: the compacted.json read (:meth:`Database.moved` compares it with the store's now)
    stamp: Stamp = None

    #: a local store: run id -> whether its ``runs`` partition file was there when first asked (:meth:`placed`)
    seen: dict[str, bool] = field(default_factory=dict, compare=False, repr=False)

    def placed(self, run: str) -> bool:
        """Whether ``run`` is published from its partitions: it has a ``runs`` partition folder and, on a local
        store, its file was there when first asked. Asked once per run, so that every table of the run is read
        from one place even while a compaction removes its partitions (a run whose ``runs`` file went is read
        from the compacted files; :meth:`unplaced` says when a decision no longer holds)."""
        runs = self.parts["runs"]
        if run not in runs:
            return False
        if not self.local:
            return True
        found = self.seen.get(run)
        if found is None:
            found = self.seen[run] = os.path.exists(_runs_file(runs, run))
        return found

    def unplaced(self) -> bool:
        """Whether the ``runs`` file of a run the compacted files hold and that :meth:`placed` found is gone (a
        compaction removing the partitions it folded in: the views' choice of files no longer holds)."""
        runs = self.parts["runs"]
        return any(
            found and r in self.held and not os.path.exists(_runs_file(runs, r))
            for r, found in self.seen.items()
        )

    @functools.cached_property
    def published(self) -> dict[str, str]:
        """Run id -> ``partition`` or ``compacted`` (see the class docstring)."""
        out = {r: "partition" for r in self.parts["runs"] if self.placed(r)}
        for r in self.held if self.keep is None else self.held & self.keep:
            out.setdefault(r, "compacted")
        return out

    @functools.cached_property
    def mixed(self) -> bool:
        """Whether the compacted files hold a run not published from them (see the class docstring)."""
        if not self.held:
            return False
        outside = self.keep is not None and not self.held <= self.keep
        return outside or not self.held.isdisjoint(self.parts["runs"])

    def compacted_run(self, run: str) -> bool:
        """Whether ``run`` is published from the compacted files."""
        return run in self.held and not self.placed(run) and (self.keep is None or run in self.keep)

    def files(self, table: str, source: str, runs: Runs) -> list[str]:
        """The files of ``table`` from ``source`` that hold rows of ``runs`` (None: every run)."""
        if source == "compacted":
            held = self.compacted.get(table, [])
            return held if runs is None or any(self.compacted_run(r) for r in runs) else []
        parts = self.parts.get(table, {})
        ids = sorted(parts) if runs is None else sorted(r for r in runs if r in parts)
        # a run published from its partitions (placed); its file of this table there (a run may have none)
        ids = [r for r in ids if self.placed(r)]
        if self.local and table != "runs":
            ids = [r for r in ids if os.path.exists(parts[r])]
        return [parts[r] for r in ids]

    def partitioned(self, n: int) -> bool:
        """Whether a table has ``n`` partition folders or more (a local table stops listing at the ``n``-th)."""
        return any(p.at_least(n) if isinstance(p, Folder) else len(p) >= n for p in self.parts.values())


def _runs_file(runs: Mapping[str, str], run: str) -> str:
    """The ``runs`` partition file of ``run`` in a local store's ``runs`` :class:`Folder` (or mapping)."""
    return runs.path(run) if isinstance(runs, Folder) else runs[run]


class Folder(Mapping[str, str]):
    """One local table's partitions, run id -> its partition file, listed only when iterated or counted: a
    question about a few runs checks their folders (``run_id in folder``), so a store of 10,000 runs is not
    listed for it (three tables: 0.036 s). ``keep``: only these runs."""

    def __init__(self, root: Path, table: str, keep: frozenset[str] | None = None) -> None:
        self.dir = f"{root}/{table}"
        self.keep = keep
        self._listed: dict[str, str] | None = None

    def path(self, run: str) -> str:
        """The partition file of ``run`` (whether it exists or not)."""
        return f"{self.dir}/run_id={run}/{PART}"

    def listed(self) -> dict[str, str]:
        """Every partition folder found (one ``listdir``, once)."""
        if self._listed is None:
            try:
                names = os.listdir(self.dir)
            except (FileNotFoundError, NotADirectoryError):
                names = []
            runs = [n[7:] for n in names if n.startswith("run_id=")]
            self._listed = {r: self.path(r) for r in runs if self.keep is None or r in self.keep}
        return self._listed

    def at_least(self, n: int) -> bool:
        """Whether the table has ``n`` partition folders or more (stops listing at the ``n``-th)."""
        if self._listed is not None or self.keep is not None or n <= 0:
            return len(self.listed()) >= n
        found = 0
        try:
            with os.scandir(self.dir) as entries:
                for e in entries:
                    found += e.name.startswith("run_id=")
                    if found >= n:
                        return True
        except (FileNotFoundError, NotADirectoryError):
            pass
        return False

    def __contains__(self, run: object) -> bool:
        if self._listed is not None or not isinstance(run, str):
            return run in self.listed()
        return (self.keep is None or run in self.keep) and os.path.exists(f"{self.dir}/run_id={run}")

    def __getitem__(self, run: str) -> str:
        if run not in self:
            raise KeyError(run)
        return self.path(run)

    def __iter__(self) -> Iterator[str]:
        return iter(self.listed())

    def __len__(self) -> int:
        return len(self.listed())


def take_sources(root: Path | Snapshot, only_runs: list[str] | None) -> Sources:
    """The store's files: partition folders (on a local store a :class:`Folder` per table, listed when a query
    needs every run), the compaction manifest, and which published run lives where. ``only_runs``: these runs
    only."""
    keep = frozenset(only_runs) if only_runs is not None else None
    if not isinstance(
        root, Path
    ):  # a Snapshot: the committed generation of each run, and the committed compaction
        parts: dict[str, Mapping[str, str]] = {t: dict(root.files[t]) for t in ALL_TABLES}
        compacted: dict[str, list[str]] = {t: list(fs) for t, fs in root.compacted.items()}
        in_compacted: frozenset[str] = root.compacted_runs
        if keep is not None:
            parts = {t: {r: f for r, f in p.items() if r in keep} for t, p in parts.items()}
    else:  # listed when a query needs every run's files (Folder)
        parts = {t: Folder(root, t, keep) for t in ALL_TABLES}
        manifest, stamp = read_manifest_stamped(root)
        compacted = {t: [str(root / f) for f in fs] for t, fs in manifest.files.items()}
        in_compacted = manifest.runs
        # a runs folder counts as published; whether its file is in place is checked for the files a query binds
        return Sources(parts, compacted, in_compacted, keep, True, stamp)
    return Sources(parts, compacted, in_compacted, keep, False)


def _failing_view(con: Any, table: str, error: str) -> None:
    """View ``table`` with the table's columns whose every read raises ``error`` plus a pointer to ``rl doctor``
    (``failing_view.sql``)."""
    message = sql_str(f"{error} (Store.doctor / `rl doctor` lists every damaged file of the store)")
    cols = ", ".join(f"CAST(error('{message}') AS {f.type}) AS \"{f.name}\"" for f in COLUMNS[table])
    con.execute(sql_template(PKG, "failing_view.sql", table=table, columns=cols, message=f"'{message}'"))


def _columns(table: str) -> str:
    return ", ".join(f'CAST("{f.name}" AS {f.type}) AS "{f.name}"' for f in COLUMNS[table])


def _filter_runs(filters: Any) -> frozenset[str] | None:
    """The runs a scan's pushed-down ``Filters`` (EXPLAIN JSON: a text or a list of texts, ANDed) restrict
    ``run_id`` to, or None when none of them does (``run_id = 'X'``, ``run_id IN ('X', 'Y')``, either optional)."""
    items = [filters] if isinstance(filters, str) else list(filters or [])
    out: frozenset[str] | None = None
    for item in items:
        for text in str(item).split("\n"):
            text = text.strip()
            runs: frozenset[str] | None = None
            if m := _EQ.match(text):
                runs = frozenset([m.group(1).replace("''", "'")])
            elif m := _IN.match(text):
                values = re.findall(_QUOTED, m.group(1))
                if ", ".join(f"'{v}'" for v in values) == m.group(1):
                    runs = frozenset(v.replace("''", "'") for v in values)
            if runs is not None:
                out = runs if out is None else out & runs
    return out


def scan_runs(plan: Any) -> dict[str, Runs] | None:
    """Per store table, the runs its scans in ``plan`` (EXPLAIN JSON over the empty stand-ins) read: a set when
    every scan of it is filtered on run ids, None when one is not, an empty set for a table no scan reads. None
    when the plan holds no scan of a stand-in (the caller then reads every file)."""
    found: dict[str, Runs] = {}
    stack = list(plan) if isinstance(plan, list) else [plan]
    while stack:
        node = stack.pop()
        if not isinstance(node, dict):
            continue
        info = node.get(PLAN_INFO)
        table = info.get(PLAN_TABLE) if isinstance(info, dict) else None
        name = table.rsplit(".", 1)[-1] if isinstance(table, str) else ""
        if name.startswith("__empty_") and name[8:] in ALL_TABLES:
            runs = _filter_runs(info.get(PLAN_FILTERS))  # type: ignore[union-attr]
            prev = found.get(name[8:], frozenset())
            found[name[8:]] = None if runs is None or prev is None else prev | runs
        stack.extend(node.get(PLAN_CHILDREN) or [])
    if not found:
        return None
    return {t: found.get(t, frozenset()) for t in ALL_TABLES}


def _unbound(sql: str) -> str:
    """``sql`` with each parameter (``$name``, ``$1``, ``?``) replaced by ``NULL``, found by DuckDB's tokenizer (so
    a ``$`` in a string, a quoted name or a comment stays; its positions count UTF-8 bytes): DuckDB binds no
    statement with parameters for ``get_table_names``, and which tables a statement reads does not depend on its
    parameters' values."""
    import duckdb

    text = sql.encode()
    kinds = duckdb.token_type
    op, name = kinds.operator, (kinds.identifier, kinds.keyword, kinds.numeric_const)  # $primary: a keyword
    tokens = [*duckdb.tokenize(sql), (len(text), None), (len(text), None)]
    out: list[bytes] = []
    last = 0
    for (pos, kind), (end, nxt), (after, _) in zip(tokens, tokens[1:], tokens[2:], strict=False):
        token = text[pos:end].rstrip()
        if kind == op and token == b"?":
            out += [text[last:pos], b"NULL"]
            last = pos + 1
        elif kind == op and token == b"$" and end == pos + 1 and nxt in name:
            out += [text[last:pos], b"NULL"]
            last = end + len(text[end:after].rstrip())
    return b"".join([*out, text[last:]]).decode()


def bound_tables(con: Any, sql: str) -> set[str] | None:
    """The base tables DuckDB's binder resolves ``sql`` to on ``con`` (views and table macros expanded, the
    caller's temporary views included; a registered Arrow table is none), lower case; None when it cannot say
    (DuckDB's name binder fails on some statements, e.g. ``USING`` joins of base tables). While a statement is
    planned (:meth:`Database.plan_runs`), a store table it reads is named by its stand-in ``__empty_<table>``
    whether or not the optimizer keeps its scan."""
    import duckdb

    try:
        return {n.lower() for n in con.get_table_names(_unbound(sql), qualified=False)}
    except duckdb.Error:
        return None


def read_runs(scanned: dict[str, Runs] | None, named: set[str] | None) -> dict[str, Runs] | None:
    """Per store table, the runs a statement reads: those its scans read (``scanned``: :func:`scan_runs` of its
    plan over the empty stand-ins), every run of a table whose stand-in the binder names (``named``:
    :func:`bound_tables`) but no scan reads (the optimizer dropped the scan: read every file, as the statement
    would over them), none of a table neither names (the statement reads no file of it: a query over the
    caller's given tables only binds no file). ``named`` None (the binder could not say): ``scanned`` as it is,
    which is None (every file) for a plan without a stand-in scan."""
    if named is None:
        return scanned
    out: dict[str, Runs] = {}
    for t in ALL_TABLES:
        runs = scanned.get(t, frozenset()) if scanned is not None else frozenset()
        out[t] = None if f"__empty_{t}" in named and runs == frozenset() else runs
    return out


class Database:
    """One store's DuckDB database and what its table views read now (:func:`build`); :meth:`cursor` gives the
    cursors callers use. ``prune``: views are pointed query by query (see the module docstring)."""

    def __init__(self, con: Any, sources: Sources, prune: bool) -> None:
        self.con = con
        self.sources = sources
        self.prune = prune
        self.pointed: dict[str, tuple[tuple[str, ...], ...]] = {}
        #: (name, CREATE statement) of the macros and named views not created yet, in creation order
        self.pending: list[tuple[str, str]] = []
        #: tables read with union_by_name although their first file has every column (their files disagree)
        self.union: set[str] = set()
        self.guessed: set[str] = set()  # tables read now without union_by_name over several files
        #: a store on object storage: what was listed, and the runs listed (:meth:`refresh` lists again)
        self.snapshot: Snapshot | None = None
        self.only_runs: list[str] | None = None
        #: a local store: its folder (:meth:`refresh` lists it again)
        self.root: Path | None = None
        #: whether this DuckDB's binder names the stand-ins a statement reads through views and macros
        #: (:func:`bound_tables`; checked once by :func:`_check_planner`, None while it checks)
        self.binds: bool | None = False

    def stale(self, error: Exception) -> bool:
        """Whether ``error`` says a file the database listed is gone: a compaction or a ``--force`` re-ingest
        deletes the files it replaced after its commit, so a listing taken before that commit names files that no
        longer exist (list again: :meth:`refresh`)."""
        return (self.snapshot is not None or self.root is not None) and gone(error)

    def moved(self) -> bool:
        """Whether a compaction of this local store committed since its sources were taken (``compacted.json``
        is another file: the partitions it compacted may be gone from a listing made since, their runs not yet
        in the compacted files the database knows), or is removing the partitions of runs the views read from
        them (:meth:`Sources.unplaced`: a table pointed after a run's ``runs`` file went would miss it, its data
        file gone too): :meth:`point` then lists again."""
        if self.root is None:
            return False
        return manifest_stamp(self.root) != self.sources.stamp or self.sources.unplaced()

    def refresh(self, con: Any) -> None:
        """List the store again and read what it holds now (every run whole, before or after any commit): the
        sources, ``__published`` (``published.sql``), and the views on their next query."""
        from rooflake.store.remote import Snapshot

        if self.snapshot is not None:
            self.snapshot = Snapshot.take(self.snapshot.url, self.only_runs)
            self.sources = take_sources(self.snapshot, self.only_runs)
        else:
            assert self.root is not None, "refresh() of a database of no store"
            self.sources = take_sources(self.root, self.only_runs)
        _published(con, self.sources)
        self.pointed = {}
        self.union |= self.guessed
        self.guessed = set()

    def first_complete(self, con: Any, table: str, files: list[str]) -> list[str] | None:
        """``files`` with one holding every declared column of ``table`` first, or None when neither the last nor
        the first does. DuckDB reads a list without ``union_by_name`` by the first file's columns, matching the
        others by name, and fails on a file that lacks one (never silently): :meth:`widen` then reads them by
        name. ``union_by_name`` reads every footer on every bind: 3x the time of a 1,000-run whole-history query."""
        declared = {f.name for f in COLUMNS[table]}
        for first in dict.fromkeys([files[-1], files[0]]):
            names = {r[0] for r in con.execute(sql_file(PKG, "file_columns.sql"), {"path": first}).fetchall()}
            if declared <= names:
                return [first, *(f for f in files if f != first)]
        return None

    def widen(self, error: Exception) -> bool:
        """After DuckDB failed on a file whose columns differ from its table's first file: read the tables read
        without ``union_by_name`` with it from now on. True when there was one to widen (run the query again)."""
        if "schema mismatch" not in str(error) or not self.guessed:
            return False
        self.union |= self.guessed
        for t in self.guessed:
            self.pointed.pop(t, None)
        self.guessed = set()
        return True

    def defer(self, statements: list[tuple[str, str]]) -> None:
        """Create these named objects (macros, views, table macros; dependencies first) when a statement first
        names them (:meth:`create_needed`): a command that runs two queries does not pay for creating thirty."""
        self.pending += statements

    def create_needed(self, con: Any, sql: str | None) -> None:
        """Create the deferred objects ``sql`` names, with those their own text names (every one when ``sql`` is
        None), in their creation order."""
        if not self.pending:
            return
        needed = {n for n, _ in self.pending} if sql is None else _named(self.pending, sql)
        for name, statement in [p for p in self.pending if p[0] in needed]:
            con.execute(statement)
            self.pending.remove((name, statement))

    def cursor(self) -> StoreCursor:
        """A new cursor of this database."""
        return StoreCursor(self, self.con.cursor())

    def reading(self, table: str) -> list[str]:
        """The files ``table``'s view reads now (partitions, then compacted files): after a query, what it bound."""
        return [f for files in self.pointed.get(table, ()) for f in files]

    def point(self, con: Any, runs: dict[str, Runs]) -> None:
        """Make each table's view read the files of ``runs[table]`` (None: all), creating only the views whose
        files change. A table whose files DuckDB cannot bind (a damaged footer, a file gone) gets a view that fails
        when read, naming the file; the other tables still work. On a local store a compaction that committed
        meanwhile (:meth:`moved`) makes it list again (at most :data:`RELIST` times): the partitions it removed are
        in its compacted files, which a listing made before would miss (a run read neither way)."""
        for _ in range(RELIST):
            self._point(con, runs)
            if not self.moved():
                return
            self.refresh(con)
        self._point(con, runs)

    def _point(self, con: Any, runs: dict[str, Runs]) -> None:
        """:meth:`point` over the sources as listed."""
        import duckdb

        for t in ("runs", *[t for t in ALL_TABLES if t != "runs"]):
            lists = tuple(tuple(self.sources.files(t, src, runs.get(t, frozenset()))) for src in SOURCES)
            if self.pointed.get(t) == lists:
                continue
            self.guessed.discard(t)
            try:  # a file gone or with a damaged footer: this table fails when read, the others work
                con.execute(self._view(con, t, lists))
            except (duckdb.Error, UnicodeDecodeError) as e:  # (a column name not UTF-8: decoded in Python)
                found = self.damage(e, [(t, f) for files in lists for f in files])
                why = str(found) if found is not None else " ".join(str(e).split())
                _failing_view(con, t, f"store table {t} cannot be read: {why}")
            self.pointed[t] = lists

    def damage(
        self, error: Exception, files: list[tuple[str, str]] | None = None
    ) -> DamagedStoreError | None:
        """The error naming the damaged store file behind ``error`` (a DuckDB or decoding error that looks like a
        damaged Parquet file, often naming none: ``don't know what type``, a thrift ``TProtocolException``,
        ``Out of buffer``), found by reading ``files`` (``(table, path)``; default: every file the views read
        now) as ``rl doctor`` does (:func:`rooflake.store.doctor.read_error`: pyarrow with the page checksums
        verified, then DuckDB); None when the error is no such thing or every file reads."""
        import duckdb

        if isinstance(error, (duckdb.ParserException, duckdb.BinderException, duckdb.CatalogException)):
            return None  # the statement's own fault (a name, a type): no file read
        if not isinstance(error, UnicodeDecodeError) and not _DAMAGE.search(str(error)):
            return None
        from rooflake.store.doctor import read_error

        con, fs = duck_connect(), None
        if self.snapshot is not None:
            from rooflake.store.remote import filesystem

            fs = filesystem(self.snapshot.url)
            con.register_filesystem(fs)
        every = [(t, f) for t in ALL_TABLES for f in self.reading(t)]
        for table, f in files if files is not None else every:
            found = read_error(con, table, f, fs)
            if found is not None and found[0] == "damaged" and not _GONE.search(found[1]):
                return DamagedStoreError(
                    f"store file {f} is damaged ({found[1][:300]}; the query said: {gist(error)[:200]}): `rl doctor` "
                    "lists every damaged file; re-ingest its run's source file with --force (a compacted file: "
                    "restore it, or re-ingest its runs)"
                )
        return None
        from rooflake.store.doctor import DAMAGE, verify_pages

        fs = None
        if self.snapshot is not None:
            from rooflake.store.remote import filesystem

            fs = filesystem(self.snapshot.url)
        for f in files if files is not None else [f for t in ALL_TABLES for f in self.reading(t)]:
            try:
                verify_pages(f.split("://", 1)[-1] if fs is not None else f, fs)
            except FileNotFoundError:
                continue  # (gone since: a compaction or re-ingest, not damage)
            except DAMAGE as e:
                return DamagedStoreError(
                    f"store file {f} is damaged ({' '.join(str(e).split()) or type(e).__name__}; DuckDB: "
                    f"{gist(error)[:200]}): `rl doctor` lists every damaged file; re-ingest its run's source file "
                    "with --force (a compacted file: restore it, or re-ingest its runs)"
                )
        return None

    def _view(self, con: Any, t: str, lists: tuple[tuple[str, ...], ...]) -> str:
        """The statement (``table_view.sql``) making table ``t``'s view read ``lists`` (the files of each source).
        Raises ``duckdb.Error`` when a file's columns cannot be read (:meth:`first_complete`)."""
        branches = []
        for src, files in zip(SOURCES, lists, strict=True):
            if not files:
                continue
            ordered = (
                self.first_complete(con, t, list(files)) if len(files) > 1 and t not in self.union else None
            )
            if ordered is not None:
                self.guessed.add(t)
            listed = "[" + ", ".join(f"'{sql_str(f)}'" for f in ordered or files) + "]"  # a literal list
            union = "false" if ordered is not None else "true"
            branch = "read_branch.sql" if src == "compacted" and self.sources.mixed else "read_files.sql"
            branches.append(sql_template(PKG, branch, files=listed, source=src, union=union))
        return sql_template(PKG, "table_view.sql", table=t, columns=_columns(t), sources="\n".join(branches))

    def plan(self, con: Any, sql: str, params: Any) -> tuple[Any, set[str] | None] | None:
        """``sql``'s plan on ``con`` over the empty stand-ins (EXPLAIN JSON) and the tables its binder names there
        (:func:`bound_tables`; None when :attr:`binds` is False); None when it cannot be planned; no plan (an empty
        one) when the binder names no stand-in (the statement reads only the caller's tables). A table a
        temporary view of the caller's hides (``queries.fetch``'s ``tables=``) is planned as that view reads it.

        A table whose view reads no file now (:meth:`point`: the first statement of a pruning database, or one
        after a statement that read none of it) is planned through that view, which reads its stand-in alone; only
        the others get a temporary view over their stand-in (``plan_view.sql``), dropped right after. So the first
        one-run question of a process creates no view to plan: 17 statements fewer, ~15 ms."""
        import duckdb

        made: list[str] = []
        try:
            for t in ALL_TABLES:
                if t in self.pointed and not any(self.pointed[t]):
                    continue  # its view reads the stand-in alone
                try:
                    con.execute(sql_template(PKG, "plan_view.sql", table=t))
                except duckdb.CatalogException:
                    continue  # a temporary view of the caller's hides the store's: planned as it reads
                made.append(t)
            named = bound_tables(con, sql) if self.binds is not False else None
            if self.binds and named is not None and not any(n.startswith("__empty_") for n in named):
                return [], named  # it reads no store table: no plan needed
            rows = con.execute(sql_template(PKG, "explain_plan.sql", query=sql), params or None).fetchall()
            return json.loads(rows[0][1]), named
        except (duckdb.Error, IndexError, ValueError):
            return None
        finally:
            for t in made:
                con.execute(sql_template(PKG, "drop_plan_view.sql", table=t))

    def plan_runs(self, con: Any, sql: str, params: Any) -> dict[str, Runs] | None:
        """The runs each table's scans read when ``con`` runs ``sql`` (:func:`read_runs`), from its plan over the
        empty stand-ins and the tables its binder names (when :attr:`binds` says this DuckDB's binder names them:
        :meth:`plan`); None when it cannot be planned (then every file is read)."""
        planned = self.plan(con, sql, params)
        if planned is None:
            return None
        return read_runs(scan_runs(planned[0]), planned[1] if self.binds else None)

    def prepare(self, con: Any, sql: str, params: Any) -> None:
        """Point the views at what statement ``sql`` reads (see the module docstring): a single SELECT its
        planned runs, a view's creation or removal nothing new, anything else every file."""
        import duckdb

        if not isinstance(sql, str):
            return
        try:
            statements = con.extract_statements(sql)
        except duckdb.Error:
            return  # running it raises the same error
        if not statements:
            return
        select = len(statements) == 1 and statements[0].type.name == "SELECT"
        self.create_needed(con, sql if select or _VIEW_DDL.match(statements[0].query) else None)
        if not self.prune:
            if len(self.pointed) < len(ALL_TABLES):  # a view dropped by widen(): every file, by name now
                self.point(con, dict.fromkeys(ALL_TABLES))
            return
        if len(statements) == 1 and _VIEW_DDL.match(statements[0].query):
            return
        runs = self.plan_runs(con, sql, params) if select else None
        self.point(con, runs if runs is not None else dict.fromkeys(ALL_TABLES))


def _named(pending: list[tuple[str, str]], sql: str) -> set[str]:
    """Names of ``pending`` objects that ``sql`` names, directly or through their own statements (whole words, any
    case)."""
    texts = dict(pending)
    lower = {n.lower(): n for n in texts}
    found: set[str] = set()
    todo = [sql]
    while todo:
        for word in _words(todo.pop()):
            name = lower.get(word)
            if name is not None and name not in found:
                found.add(name)
                todo.append(texts[name])
    return found


@functools.lru_cache(maxsize=512)
def _words(sql: str) -> frozenset[str]:
    """The words of ``sql`` outside its comments, lower case (DuckDB's own tokenizer finds the comments). A name
    in a comment names nothing: the header of ``kernel_roofline.sql`` mentions ``run_ceilings``, whose text
    mentions others, and the first ``kernel_roofline`` of a command created 23 objects (0.16 s) where it reads 10."""
    import duckdb

    try:
        raw = sql.encode()  # the tokens' positions count bytes
        tokens = duckdb.tokenize(sql)
    except (UnicodeError, TypeError, duckdb.Error):  # a lone surrogate: every word, comments too, as before
        return frozenset(w.lower() for w in _WORD.findall(sql))
    comment = duckdb.token_type.comment
    ends = [p for p, _ in tokens[1:]] + [len(raw)]
    code = b" ".join(raw[p:end] for (p, kind), end in zip(tokens, ends, strict=True) if kind != comment)
    return frozenset(w.lower() for w in _WORD.findall(code.decode()))


def _statements(con: Any, sql: str) -> list[tuple[str, str]]:
    """``(name, statement)`` of each CREATE statement of ``sql`` (the name: what follows MACRO, VIEW or TABLE)."""
    out: list[tuple[str, str]] = []
    for st in con.extract_statements(sql):
        m = _CREATED.search(st.query)
        out.append((m.group(1) if m else f"#{len(out)}", st.query))
    return out


class StoreCursor:
    """A DuckDB cursor of a store's :class:`Database`: ``execute``, ``sql`` and ``query`` first point the table
    views at the files the statement reads (:meth:`Database.prepare`); everything else is the cursor's own."""

    def __init__(self, db: Database, con: Any) -> None:
        self._db = db
        self._con = con

    def __getattr__(self, name: str) -> Any:
        return getattr(self._con, name)

    def __enter__(self) -> StoreCursor:
        return self

    def __exit__(self, *exc: object) -> None:
        self._con.close()

    def cursor(self) -> StoreCursor:
        """A new cursor of the same database."""
        return self._db.cursor()

    @property
    def database(self) -> Database:
        """The :class:`Database` this cursor belongs to."""
        return self._db

    def _run(self, run: Any) -> Any:
        """``run()`` (which points the views, then runs a statement) through :func:`_again`, reading by name after
        :meth:`Database.widen` too."""
        return _again(self._db, self._con, run, widen=True)

    def execute(self, query: Any, parameters: Any = None, *args: Any, **kwargs: Any) -> Any:
        """DuckDB's ``execute``, after pointing the views (returns the underlying cursor, as DuckDB does); run
        again, reading by name, when a file's columns differ from its table's first file (:meth:`Database.widen`),
        or over a new listing when a file of a store on object storage is gone (:meth:`Database.stale`)."""

        def run() -> Any:
            self._db.prepare(self._con, query, parameters)
            return self._con.execute(query, parameters, *args, **kwargs)

        return self._run(run)

    def sql(self, query: Any, *args: Any, params: Any = None, **kwargs: Any) -> Any:
        """DuckDB's ``sql`` (a relation), after pointing the views. The relation is materialized here, so that a
        file with other columns, or a file deleted since the listing (a compaction removing what it folded in, a
        ``--force`` re-ingest), fails now and the query runs again, reading by name (:meth:`Database.widen`) or
        over a new listing (:meth:`Database.stale`): a relation run later would fail outside that loop. A
        relation whose column names repeat is returned as it is (materializing would rename them)."""

        def run() -> Any:
            self._db.prepare(self._con, query, params)
            rel = self._con.sql(query, *args, params=params, **kwargs)
            materialize = getattr(rel, "materialize", None)
            if rel is None or materialize is None or len(set(rel.columns)) < len(rel.columns):
                return rel  # (materializing renames a repeated column name)
            return materialize()

        return self._run(run)

    query = sql

    def view(self, name: str) -> Any:
        """DuckDB's ``view`` (a relation over a view), after creating it if it was deferred."""
        self._db.create_needed(self._con, name)
        return self._con.view(name)

    def table(self, name: str) -> Any:
        """DuckDB's ``table`` (a relation over a table or view), after creating it if it was deferred."""
        self._db.create_needed(self._con, name)
        return self._con.table(name)


def _published(con: Any, sources: Sources) -> None:
    """Create ``__published`` (``published.sql``: each published run and where its rows live) when the compacted
    files hold a run not published from them (:attr:`Sources.mixed`; else no view reads it). The ids go in as one
    text, split by ``/`` (no run id holds one: it names a folder): a list of 100,000 values binds 10x slower."""
    if not sources.mixed:
        return
    runs = sorted(sources.published)
    con.execute(
        sql_file(PKG, "published.sql"),
        {"runs": "/".join(runs), "sources": "/".join(sources.published[r] for r in runs)},
    )


def lock_down(con: Any, root: Path | Snapshot) -> None:
    """Let ``con``'s database reach the files of ``root``'s table folders only (``STORE/<table>/``: not
    ``compacted.json``, ``.staging`` or the store's folder itself), and change no setting from now on
    (``lock_down.sql``)."""
    base = str(root.resolve()) + "/" if isinstance(root, Path) else root.allowed_directory()
    params = {"dirs": [f"{base}{t}/" for t in ALL_TABLES]}
    for stmt in con.extract_statements(sql_file(PKG, "lock_down.sql")):
        con.execute(stmt.query, {k: params[k] for k in stmt.named_parameters})


def _check_planner(db: Database) -> bool:
    """Whether this DuckDB's plans show the run filters :func:`scan_runs` reads (else every file is read); sets
    :attr:`Database.binds` when its binder names the stand-in a store table's view reads (:func:`bound_tables`:
    DuckDB 2.0 binds views and macros for ``get_table_names``, an older one may only parse). One plan of
    ``probe_plan.sql``."""
    db.binds = None
    planned = db.plan(db.con, sql_file(PKG, "probe_plan.sql"), None)
    db.binds = planned is not None and planned[1] == {"__empty_runs"}
    scanned = scan_runs(planned[0]) if planned is not None else None
    return scanned is not None and scanned.get("runs") == frozenset(["x"])


def _again(db: Database, con: Any, run: Any, *, widen: bool) -> Any:
    """``run()``, run again (at most :data:`RELIST` times) over a new listing when a file of a store on object
    storage is gone (:meth:`Database.stale`, :meth:`Database.refresh`), and with ``widen`` after
    :meth:`Database.widen` (a file whose columns differ from its table's first file: read by name). Raises
    :class:`DamagedStoreError` naming the file when the error comes from a damaged one (:meth:`Database.damage`),
    else what ``run`` raised."""
    import duckdb

    for attempt in range(RELIST + 1):
        try:
            return run()
        except (duckdb.Error, UnicodeDecodeError) as e:
            if isinstance(e, duckdb.Error) and widen and db.widen(e):
                continue
            if attempt < RELIST and isinstance(e, duckdb.Error) and db.stale(e):
                db.refresh(con)
                continue
            if (found := db.damage(e)) is not None:
                raise found from e
            raise
    return run()


def _point_first(db: Database, con: Any) -> None:
    """Point the views of a new database: at no file when it prunes (each statement points them), else at every
    file, over a new listing when a file of a store on object storage is gone (:func:`_again`)."""
    runs = {t: frozenset() for t in ALL_TABLES} if db.prune else dict.fromkeys(ALL_TABLES)
    _again(db, con, lambda: db.point(con, runs), widen=False)


def stand_ins() -> Any:
    """A new in-memory DuckDB connection (``duckdb.DuckDBPyConnection``) holding the typed, empty stand-in
    ``__empty_<table>`` of every store table (``empty_table.sql``; columns :data:`rooflake.schema.COLUMNS`) and
    nothing else, whatever the store: where :func:`build` and compaction start. Raises ``duckdb.Error`` when DuckDB
    cannot start."""

    con = duck_connect()
    for t in ALL_TABLES:
        cols = ", ".join(f'"{f.name}" {f.type}' for f in COLUMNS[t])
        con.execute(sql_template(PKG, "empty_table.sql", table=t, columns=cols))
    return con


def _register(con: Any, root: Snapshot, unsafe: bool) -> None:
    """Let ``con`` read the objects of store ``root`` (on object storage) through its fsspec filesystem; unless
    ``unsafe``, through a read-only view of it (:class:`rooflake.store.readonly_fs.ReadOnly`): a statement of any
    form that writes there is refused by the filesystem itself. Raises :class:`StoreError` without ``s3fs``."""
    if unsafe:
        root.register(con)
        return
    from rooflake.store.readonly_fs import ReadOnly
    from rooflake.store.remote import filesystem

    con.register_filesystem(ReadOnly(filesystem(root.url)))


def build(
    root: Path | Snapshot,
    only_runs: list[str] | None = None,
    extra_views: dict[str, str] | None = None,
    setup: str = "",
    *,
    after: str | tuple[tuple[str, str], ...] = "",
    unsafe: bool = False,
) -> Database:
    """An in-memory DuckDB database with one view per store table (``runs``, ``kernels``, ``metrics``,
    ``ceilings``, ``ranges``, ``memops``, ``coverage``, ``estimates``) over the store's files (or only the files of
    ``only_runs``); see the module docstring for what each view reads. An empty store gives empty views with the
    declared columns. ``setup`` is run first (macros, persistent so that every cursor sees them); ``extra_views``
    maps view names to SQL bodies created after the table views; ``after`` runs once they exist (table macros bind
    to them when created; SQL text, or ``(name, statement)`` pairs, which need no parsing). Unless ``unsafe``, the
    database is then locked down (:func:`lock_down`). ``root`` a :class:`Snapshot`: a store on object storage,
    read through its fsspec filesystem registered with the database. Raises ``duckdb.Error`` when a statement fails."""
    from rooflake.store import early

    con = early.connect()  # stand_ins(), made on a second thread by rl's main() or now
    if not isinstance(root, Path):
        _register(con, root, unsafe)
    sources = take_sources(root, only_runs)
    _published(con, sources)
    db = Database(con, sources, sources.partitioned(PRUNE_FROM))
    if not isinstance(root, Path):
        db.snapshot, db.only_runs = root, only_runs
    else:
        db.root, db.only_runs = root, only_runs
    _point_first(db, con)  # a pruning database: at no file (its plans then need no temporary view)
    if db.prune:
        con.execute(sql_file(PKG, "plan_settings.sql"))
        db.prune = _check_planner(db)
        if not db.prune:  # this DuckDB's plans do not show the run filters: every file
            _point_first(db, con)
    views = [(n, sql_template(PKG, "named_view.sql", name=n, body=b)) for n, b in (extra_views or {}).items()]
    deferred = [
        *(_statements(con, setup) if setup else []),
        *views,
        *(_statements(con, after) if isinstance(after, str) and after else after or ()),
    ]
    for _, statement in [d for d in deferred if d[0].startswith("#")]:  # not a named object: run it now
        con.execute(statement)
    db.defer([d for d in deferred if not d[0].startswith("#")])
    if not unsafe:
        lock_down(con, root)
    return db


def run_read_only(
    con: Any, sql: str, params: dict[str, Any] | None = None, *, unsafe: bool = False
) -> pa.Table:
    """Run a user's ``sql`` with named ``params`` on ``con``; the result as a ``pyarrow.Table``. Unless ``unsafe``,
    statements other than queries are refused first (:func:`refuse_writes`). Raises :class:`QueryError` with
    DuckDB's message on one line (a damaged Parquet file is named in it, as DuckDB reports it), or
    :func:`rooflake.store.user_sql.statements`'s (SQL that is not text, or holds no statement)."""
    import duckdb

    if unsafe:
        parse_statements(con, sql)
    else:
        refuse_writes(con, sql)
    try:
        return fetch_arrow(con, sql, params)
    except duckdb.Error as e:
        raise QueryError(f"SQL failed: {' '.join(str(e).split())}") from e
