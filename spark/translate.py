"""DuckDB → Spark SQL for the named queries: the shared macros inlined, sqlglot's transpiler, and the few hand
fixes it needs, all in :data:`REWRITES`.

The queries of :mod:`rooflake.queries` are written in DuckDB's dialect and call the scalar and table macros of
``queries/macros/*.sql`` (``nvtx_layer``, ``attainable``, ``roof_bound``, ``precisions()``, ...). Spark has no
macros, so :func:`to_spark` parses a query with sqlglot (``read="duckdb"``), replaces each macro call by the macro's
body with the call's arguments in place of its parameters (recursively), applies :data:`REWRITES` (each one a
DuckDB construct that sqlglot 30 writes in a form Spark refuses or reads differently), and writes Spark SQL
(``write="spark"``). ``$name`` parameters become Spark's named parameter markers ``:name`` (bound with
``spark.sql(text, args=...)``); a parameter's declared default (``-- Parameters: $level = 'L2'``) is written in
when no value is given.
"""

from __future__ import annotations

import functools
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.optimizer.annotate_types import annotate_types
from sqlglot.optimizer.qualify import qualify
from sqlglot.schema import MappingSchema

from rooflake import queries
from rooflake.schema import TABLES, QueryError
from rooflake.spark.tables import spark_schema
from rooflake.store import Store

DUCKDB = "duckdb"
SPARK = "spark"


@dataclass(frozen=True)
class Macro:
    """A DuckDB macro of ``queries/macros/*.sql``: ``params`` (names, in order) and ``body`` (a scalar expression,
    or a ``SELECT`` for a table macro)."""

    name: str
    params: tuple[str, ...]
    body: exp.Expr

    @property
    def is_table(self) -> bool:
        """A table macro (``CREATE MACRO f() AS TABLE SELECT ...``), called in ``FROM``."""
        return isinstance(self.body, exp.Query)


@functools.cache
def macro_table() -> dict[str, Macro]:
    """Every shared macro, by lower-case name, parsed by sqlglot from :func:`rooflake.queries.macros`."""
    out: dict[str, Macro] = {}
    for stmt in sqlglot.parse(queries.macros(), read=DUCKDB):
        if not isinstance(stmt, exp.Create) or str(stmt.args.get("kind", "")).upper() != "MACRO":
            continue
        fn = stmt.this
        name = fn.this.name.lower()
        out[name] = Macro(name, tuple(p.name.lower() for p in fn.expressions), stmt.expression)
    return out


def _bind_macro(macro: Macro, args: list[exp.Expr]) -> exp.Expr:
    """The macro's body with each parameter (an unqualified column of that name) replaced by its argument."""
    if len(args) != len(macro.params):
        raise QueryError(f"macro {macro.name} takes {len(macro.params)} arguments, got {len(args)}")
    values = dict(zip(macro.params, args, strict=True))

    def put(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column) and not node.table and node.name.lower() in values:
            arg = values[node.name.lower()]
            return (
                arg.copy() if isinstance(arg, (exp.Column, exp.Literal, exp.Paren)) else exp.paren(arg.copy())
            )
        return node

    return macro.body.copy().transform(put)


def _call_named_query(name: str, args: list[exp.Expr]) -> exp.Expr | None:
    """The parsed text of parameterized named query ``name`` (a DuckDB table macro: ``whatif`` reads
    ``time_roofline($run_id, ...)``) with its ``$parameters`` replaced by the call's arguments, in the declared
    order (the declared default for one left out); None when ``name`` is no parameterized named query."""
    if name not in queries.names() or not queries.parameters(name):
        return None
    q = queries.query(name)
    if len(args) > len(q.parameters) or any(p not in q.defaults for p in q.parameters[len(args) :]):
        raise QueryError(f"{name}() takes {', '.join(q.parameters)}; called with {len(args)} arguments")
    values = {p: a for p, a in zip(q.parameters, args, strict=False)}
    values |= {p: sqlglot.parse_one(q.defaults[p], read=DUCKDB) for p in q.parameters[len(args) :]}

    def put(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Placeholder) and node.name in values:
            return values[node.name].copy()
        return node

    return _scope_ctes(sqlglot.parse_one(q.text, read=DUCKDB).transform(put), name)


def _scope_ctes(tree: exp.Expr, prefix: str) -> exp.Expr:
    """``tree`` with its CTEs renamed ``<prefix>__<name>`` (each reference keeps the old name as its alias):
    sqlglot writes a nested ``WITH`` at the top level for Spark, where the inlined query's CTEs (time_roofline's
    ``k``) would clash with the caller's (whatif's ``k``)."""
    names = {c.alias: f"{prefix}__{c.alias}" for c in tree.find_all(exp.CTE)}
    for t in tree.find_all(exp.Table):
        if not t.db and t.name in names:
            if not t.alias:
                t.set("alias", exp.TableAlias(this=exp.to_identifier(t.name)))
            t.set("this", exp.to_identifier(names[t.name]))
    for c in tree.find_all(exp.CTE):
        c.args["alias"].set("this", exp.to_identifier(names[c.alias]))
    return tree


def expand_macros(tree: exp.Expr, depth: int = 0) -> exp.Expr:
    """``tree`` with every call of a shared macro replaced by its body (nested calls too): scalar macros in
    expressions, table macros in ``FROM`` (a subquery under the call's alias), and so a parameterized named query
    called in ``FROM`` (:func:`_call_named_query`)."""
    if depth > 20:
        raise QueryError("macros nest more than 20 deep (a macro that calls itself?)")
    macros = macro_table()
    found = False

    def inline(node: exp.Expr) -> exp.Expr:
        nonlocal found
        if isinstance(node, exp.Table) and isinstance(node.this, exp.Anonymous):
            m = macros.get(node.this.name.lower())
            if m is not None and m.is_table:
                found = True
                body = _bind_macro(m, list(node.this.expressions))
                return exp.Subquery(this=body, alias=node.args.get("alias"))
            called = _call_named_query(node.this.name.lower(), list(node.this.expressions))
            if called is not None:
                found = True
                return exp.Subquery(this=called, alias=node.args.get("alias"))
        if isinstance(node, exp.Anonymous):
            m = macros.get(node.name.lower())
            if m is not None and not m.is_table:
                found = True
                return exp.paren(_bind_macro(m, list(node.expressions)))
        return node

    out = tree.transform(inline)
    return expand_macros(out, depth + 1) if found else out


# ---- hand fixes: what sqlglot (30.x) writes that Spark refuses or reads differently --------------------------


@functools.cache
def source_schema() -> dict[str, dict[str, str]]:
    """Spark column types (``{name: {column: type}}``) of every store table (``rooflake.schema.TABLES``) and
    parameter-free named query (its result's Arrow types over an empty store), by pyspark's Arrow mapping: what
    sqlglot's type annotation needs to tell a list from a string (:func:`_length_of_list`)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    out = {t: {f.name: f.dataType.simpleString() for f in spark_schema(t).fields} for t in TABLES}
    with tempfile.TemporaryDirectory() as empty:
        for name in queries.views():
            arrow = queries.run(Store(empty), name).schema
            out[name] = {f.name: f.dataType.simpleString() for f in from_arrow_schema(arrow).fields}
    return out


def _length_of_list(node: exp.Expr) -> exp.Expr:
    """DuckDB ``len(x)`` → Spark ``size(x)`` unless ``x`` is known to be text or bytes: sqlglot writes ``LENGTH``,
    which Spark applies to strings and binaries only, while DuckDB's ``len`` also takes lists (every ``len`` of the
    queries). The type is sqlglot's annotation over :func:`source_schema`; one it cannot tell (a list built in a
    CTE, ``string_split(...)``) is taken for a list."""
    arg = node.this
    text = (*exp.DataType.TEXT_TYPES, exp.DataType.Type.BINARY, exp.DataType.Type.VARBINARY)
    if arg.type is not None and arg.type.is_type(*text):
        return node
    return exp.ArraySize(this=arg.copy())


def _list_slice(node: exp.Expr) -> exp.Expr:
    """DuckDB ``x[a:b]`` (1-based, both ends inclusive) → Spark ``slice(x, a, b - a + 1)``: Spark has no slice
    syntax, and sqlglot writes DuckDB's."""
    if len(node.expressions) != 1 or not isinstance(node.expressions[0], exp.Slice):
        return node
    sl = node.expressions[0]
    start, end = sl.this, sl.expression
    if start is None or end is None:
        return node
    if isinstance(start, exp.Literal) and start.this == "1":
        length = end.copy()
    else:
        length = exp.Add(
            this=exp.Sub(this=exp.paren(end.copy()), expression=exp.paren(start.copy())),
            expression=exp.Literal.number(1),
        )
    return exp.Anonymous(this="SLICE", expressions=[node.this.copy(), start.copy(), length])


def _map_extract_value(node: exp.Expr) -> exp.Expr:
    """DuckDB ``map_extract_value(m, k)`` → Spark ``element_at(m, k)`` (NULL for a missing key in both)."""
    if node.name.lower() != "map_extract_value":
        return node
    m, k = node.expressions
    return exp.Anonymous(this="ELEMENT_AT", expressions=[m.copy(), k.copy()])


def _isfinite(node: exp.Expr) -> exp.Expr:
    """DuckDB ``isfinite(x)`` → ``NOT isnan(x) AND abs(x) < double('inf')`` (Spark has no isfinite; NULL stays
    NULL)."""
    if node.name.lower() != "isfinite":
        return node
    x = node.expressions[0]
    inf = exp.cast(exp.Literal.string("Infinity"), exp.DataType.build("double"))
    return exp.paren(
        exp.and_(
            exp.not_(exp.func("isnan", x.copy())), exp.LT(this=exp.func("abs", x.copy()), expression=inf)
        )
    )


def _quantile_cont(node: exp.Expr) -> exp.Expr:
    """DuckDB ``quantile_cont(x, q)`` → Spark ``percentile(x, q)`` (exact, linear interpolation between the two
    nearest values, as DuckDB's): sqlglot writes ``PERCENTILE_CONT(x, q)``, which Spark accepts only in the
    ``WITHIN GROUP (ORDER BY x)`` form."""
    if node.expression is None or isinstance(node.parent, exp.WithinGroup):
        return node
    return exp.Anonymous(this="PERCENTILE", expressions=[node.this.copy(), node.expression.copy()])


_SPEC = re.compile(r"%(?:%|[-+ #0]*\d*(?:\.(\d+))?([a-zA-Z]))")
# Java's %g keeps trailing zeros ("0.1250", "1.500e+12"); C's (DuckDB's printf) drops them and a bare point
_G_ZEROS = (r"(\.\d*?)0+(e|$)", "$1$2")
_G_POINT = (r"\.(e|$)", "$1")


def _printf_g(node: exp.Expr) -> exp.Expr:
    """DuckDB ``printf('%.4g', x)`` → Spark ``printf('%s', <Java's %.4g of x without trailing zeros>)``: both
    choose fixed or scientific notation by the same rule, but Java's ``%g`` (Spark's ``printf``) keeps trailing
    zeros (``0.1250``) where C's (DuckDB's) drops them (``0.125``). Each ``%g`` field becomes ``%s`` of
    ``regexp_replace`` over its own ``format_string`` (Spark's other name of ``printf``); other fields are left as they are."""
    if node.name.lower() != "printf" or not node.expressions or not node.expressions[0].is_string:
        return node
    fmt, args = node.expressions[0].this, [a.copy() for a in node.expressions[1:]]
    out, i, changed = [], 0, False
    for m in _SPEC.finditer(fmt):
        if m.group(0) == "%%":
            continue
        if m.group(2) in ("g", "G") and i < len(args):
            g: exp.Expr = exp.Anonymous(
                this="FORMAT_STRING", expressions=[exp.Literal.string(m.group(0)), args[i]]
            )
            for pattern, repl in (_G_ZEROS, _G_POINT):
                g = exp.RegexpReplace(
                    this=g, expression=exp.Literal.string(pattern), replacement=exp.Literal.string(repl)
                )
            args[i] = g
            out.append((m.start(), m.end()))
            changed = True
        i += 1
    if not changed:
        return node
    for start, end in reversed(out):
        fmt = fmt[:start] + "%s" + fmt[end:]
    return exp.Anonymous(this="PRINTF", expressions=[exp.Literal.string(fmt), *args])


def _union_branch_aliases(node: exp.Expr) -> exp.Expr:
    """The column aliases of a set operation's later branches dropped (``SELECT a ... UNION ALL SELECT b``):
    sqlglot's ``qualify`` names every projection (``l.layer AS layer, l.layer AS layer``, ``NULL AS _col_2``),
    and Spark 4's optimizer rule ``RemoveRedundantAliases`` then fails on the union ("[PLAN_VALIDATION_FAILED_RULE_IN_BATCH]
    ... The plan was previously resolved and now became unresolved", time_roofline). A set operation takes its
    column names from its first branch, so the later ones' aliases change nothing."""
    right = node.expression
    if not isinstance(right, exp.Select) or not any(isinstance(e, exp.Alias) for e in right.expressions):
        return node
    new = node.copy()
    right = new.expression
    right.set("expressions", [e.unalias() if isinstance(e, exp.Alias) else e for e in right.expressions])
    return new


@dataclass(frozen=True)
class Rewrite:
    """One hand fix: on each node of type ``node`` (before sqlglot writes Spark SQL), ``fix`` returns the
    replacement (or the node unchanged); ``why`` says what sqlglot writes and why Spark needs otherwise."""

    name: str
    node: type[exp.Expr]
    fix: Callable[[exp.Expr], exp.Expr]

    @property
    def why(self) -> str:
        """The fix's docstring: what it rewrites and why."""
        return " ".join((self.fix.__doc__ or "").split())


REWRITES: tuple[Rewrite, ...] = (
    Rewrite("len-of-list", exp.Length, _length_of_list),
    Rewrite("list-slice", exp.Bracket, _list_slice),
    Rewrite("map_extract_value", exp.Anonymous, _map_extract_value),
    Rewrite("isfinite", exp.Anonymous, _isfinite),
    Rewrite("quantile_cont", exp.PercentileCont, _quantile_cont),
    Rewrite("printf-%g", exp.Anonymous, _printf_g),
    Rewrite("union-branch-aliases", exp.SetOperation, _union_branch_aliases),
)


def apply_rewrites(tree: exp.Expr) -> exp.Expr:
    """``tree`` with every :data:`REWRITES` fix applied."""

    def fix(node: exp.Expr) -> exp.Expr:
        for rw in REWRITES:
            if isinstance(node, rw.node):
                new = rw.fix(node)
                if new is not node:  # sqlglot does not visit a replacement's children: fix them here
                    return apply_rewrites(new)
        return node

    return tree.transform(fix)


def _defaults(tree: exp.Expr, defaults: dict[str, str]) -> exp.Expr:
    """``tree`` with the ``$name`` placeholders in ``defaults`` replaced by the default's SQL literal."""
    parsed = {k: sqlglot.parse_one(v, read=DUCKDB) for k, v in defaults.items()}

    def put(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Placeholder) and node.name in parsed:
            return parsed[node.name].copy()
        return node

    return tree.transform(put)


def to_spark(sql: str, defaults: dict[str, str] | None = None) -> str:
    """Spark SQL for DuckDB-dialect ``sql`` over the store's tables and named queries: macros inlined
    (:func:`expand_macros`), columns qualified and typed by sqlglot's optimizer (``qualify``, ``annotate_types``
    over :func:`source_schema`: ``SELECT *`` spelled out, each column under its table), :data:`REWRITES`
    applied, written by sqlglot without comments; ``$name`` → ``:name``, except those in ``defaults`` (parameter → DuckDB SQL literal),
    written in. Raises :class:`QueryError` when sqlglot cannot parse or write it."""
    try:
        tree = expand_macros(_defaults(sqlglot.parse_one(sql, read=DUCKDB), defaults or {}))
        tables: dict[str, object] = dict(source_schema())
        schema = MappingSchema(tables, dialect=SPARK)
        tree = annotate_types(
            qualify(
                tree, schema=schema, dialect=DUCKDB, quote_identifiers=False, validate_qualify_columns=False
            ),
            schema=schema,
        )
        tree = apply_rewrites(tree)
        return tree.sql(dialect=SPARK, comments=False, unsupported_level=sqlglot.ErrorLevel.RAISE)
    except sqlglot.errors.SqlglotError as e:
        raise QueryError(f"cannot translate to Spark SQL: {' '.join(str(e).split())}") from e


def query_sql(name: str, given: set[str] | frozenset[str] = frozenset()) -> str:
    """Spark SQL of named query ``name``; the defaults of its parameters not in ``given`` written in."""
    q = queries.query(name)
    defaults = {k: v for k, v in q.defaults.items() if k not in given}
    try:
        return to_spark(q.text, defaults)
    except QueryError as e:
        raise QueryError(f"{name}: {e}") from e
