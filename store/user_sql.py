"""Which of a user's SQL statements a read-only store database runs: the statements DuckDB would execute, decided
one by one.

DuckDB's parser (``extract_statements``) splits the text into statements and names each one's kind. A query
(``SELECT``: with ``WITH``, ``FROM``, ``DESCRIBE``, ``SHOW``, ``SUMMARIZE``, ``VALUES``, a ``PIVOT`` whose values
are listed) runs. ``EXPLAIN`` wraps a statement, and ``EXPLAIN ANALYZE`` (or ``EXPLAIN (ANALYZE)``) executes it:
the statement it wraps is decided in its place, whatever the options before it. A ``PIVOT`` that finds its values
first is a ``MULTI`` statement to DuckDB: it runs when its text is a query (it parses as a subquery,
``as_subquery.sql``), so ``CREATE TABLE t AS PIVOT …`` is still refused. Everything else (``COPY``, ``CREATE``,
``INSERT``, ``ATTACH``, ``SET``, ``PRAGMA``, ``CALL``, ``LOAD``, …) is refused before anything runs. Text that holds
no statement at all (blank, only ``;`` or comments) is refused too.

This is the first of two locks: the database itself cannot write anywhere but its table folders, nor change a
setting (:func:`rooflake.store.database.lock_down`).
"""

from __future__ import annotations

from typing import Any

from rooflake.schema import QueryError
from rooflake.schema.duck import sql_template

PKG = "rooflake.store"
#: the statement kinds that run as they are
QUERIES = ("SELECT",)
#: the keywords that may follow EXPLAIN before the statement it wraps
_EXPLAIN_WORDS = ("ANALYZE", "ANALYSE", "VERBOSE")


def check_text(sql: str) -> None:
    """Raise :class:`QueryError` when a user's ``sql`` is not text DuckDB can take: a byte of the command line
    that is not UTF-8 comes to Python as a lone surrogate, which DuckDB's functions refuse with a ``TypeError``."""
    if sql.isascii():
        return
    try:
        sql.encode()
    except UnicodeEncodeError as e:
        code = ord(sql[e.start])  # bytes 0x80-0xff not decoded come as U+DC80-U+DCFF (surrogateescape)
        what = (
            f"the byte 0x{code - 0xDC00:02x}"
            if 0xDC80 <= code <= 0xDCFF
            else f"a lone surrogate ({code:#06x})"
        )
        raise QueryError(f"SQL is not UTF-8 text: character {e.start + 1} is {what}") from None


def statements(con: Any, sql: str) -> list[Any]:
    """The statements of ``sql`` as DuckDB's parser splits them (``duckdb.Statement``: ``type``, ``query``).
    Raises :class:`QueryError` for SQL DuckDB cannot parse (with its message), for text that is not UTF-8
    (:func:`check_text`) and for text that holds no statement (blank, only ``;`` or comments)."""
    import duckdb

    check_text(sql)
    try:
        found = con.extract_statements(sql)
    except duckdb.Error as e:
        raise QueryError(f"SQL failed: {' '.join(str(e).split())}") from e
    if not found:
        raise QueryError("no SQL statement: the text is blank or only comments and semicolons; give a query")
    return list(found)


def refuse_writes(con: Any, sql: str) -> None:
    """Raise :class:`QueryError` unless every statement of ``sql`` is a query, deciding on the statement DuckDB
    executes (see the module docstring). Raises :class:`QueryError` as :func:`statements` does, too."""
    for s in statements(con, sql):
        _decide(con, s, s.query)


def _decide(con: Any, statement: Any, shown: str) -> None:
    """Raise :class:`QueryError` unless ``statement`` is a query; ``shown``: the user's statement it came from."""
    kind = statement.type.name
    if kind in QUERIES or (kind == "MULTI" and _is_query(con, statement.query)):
        return
    if kind == "EXPLAIN":
        wrapped = _explained(con, statement.query)
        if wrapped is not None:
            return _decide(con, wrapped, shown)
        kind = "EXPLAIN"
    first = " ".join(shown.split())[:40]
    raise QueryError(
        f"the store is opened read-only: a {kind} statement ({first!r}) is refused; queries "
        f"(SELECT, EXPLAIN of a SELECT) only, unless unsafe (rl sql --unsafe)"
    )


def _is_query(con: Any, text: str) -> bool:
    """Whether ``text`` (one statement) is a query: it parses as a subquery (``as_subquery.sql``), as one
    statement."""
    import duckdb

    body = text.strip().rstrip(";").rstrip()
    try:
        wrapped = con.extract_statements(sql_template(PKG, "as_subquery.sql", query=body))
    except duckdb.Error:
        return False
    return len(wrapped) == 1 and wrapped[0].type.name in (*QUERIES, "MULTI")


def _explained(con: Any, text: str) -> Any:
    """The statement that ``EXPLAIN`` statement ``text`` wraps (past ``ANALYZE`` or a parenthesized option list;
    comments skipped), as DuckDB parses it; None when there is not exactly one (the EXPLAIN is then refused)."""
    import duckdb

    raw = text.encode()  # the tokens' positions count bytes
    tokens = duckdb.tokenize(text)
    ends = [p for p, _ in tokens[1:]] + [len(raw)]
    words = [
        (raw[p:end].decode().strip().upper(), k, p)
        for (p, k), end in zip(tokens, ends, strict=True)
        if k != duckdb.token_type.comment
    ]
    if not words or words[0][0] != "EXPLAIN":
        return None
    i, depth = 1, 0
    while i < len(words):
        word, kind, _ = words[i]
        if kind == duckdb.token_type.operator and ("(" in word or ")" in word):
            depth += word.count("(") - word.count(")")
        elif depth == 0 and word not in _EXPLAIN_WORDS:
            break
        i += 1
    if i >= len(words) or depth != 0:
        return None
    try:
        inner = con.extract_statements(raw[words[i][2] :].decode())
    except duckdb.Error:
        return None
    return inner[0] if len(inner) == 1 else None
