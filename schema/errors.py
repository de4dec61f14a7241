"""The one error hierarchy of rooflake.

Every expected failure raises a subclass of :class:`RooflakeError` whose message names the input and, where there
is one, the fix. The CLI catches ``RooflakeError`` in one place, prints ``Error: <message>`` to stderr and exits 1.
"""

from __future__ import annotations


class RooflakeError(Exception):
    """Base class of every expected rooflake error (exit code 1 in the CLI)."""


class InputError(RooflakeError):
    """An input file is missing, empty, truncated, of an unknown format or otherwise unreadable."""


class UnsupportedFormatError(InputError):
    """The file's first bytes match no reader (or a reader whose vendor tool is missing)."""


class ToolMissingError(RooflakeError):
    """A vendor tool (``nsys``) or optional package needed for this input is not installed."""


class StoreError(RooflakeError):
    """The store directory cannot be created, written or read."""


class RunNotFoundError(RooflakeError):
    """A run id (or prefix) names no run in the store, or names more than one."""


class QueryError(RooflakeError):
    """An SQL query failed (syntax, unknown column, unknown named query)."""


class RooflineDataError(RooflakeError):
    """A run lacks the counters a roofline needs; the message names the missing metrics and how to collect them."""


class UsageError(RooflakeError):
    """The user asked for something that cannot be done as asked (a bad option value, a conflicting label, a model
    that cannot be traced); the message says what to change."""


class BadArgument(UsageError):
    """An option or argument value that cannot be used as given (``--since 24x``, ``--scale dram=0``): the CLI says
    ``Error: ...`` and exits 2, as click does for the values it checks itself; the message names the option."""


class OutputError(RooflakeError):
    """An output file or directory the user named (``--out``) cannot be written: its directory cannot be created, is
    read-only, or the disk is full; the message names the path and the reason."""


class WorkerError(RooflakeError):
    """Worker processes (the readers of an ingest, the chart renderers of a report) could not start, or stopped
    without an answer: a limit on processes or memory, or a broken temporary folder; the message says what failed."""


class DamagedStoreError(StoreError, QueryError):
    """A file of the store cannot be read as what it should be: a Parquet partition or compacted file (torn, a
    page whose checksum fails, a footer that does not parse) or ``compacted.json``; the message names the file and
    how to recover (``rl doctor`` lists every damaged file). A query that meets one fails with it: it is a
    :class:`QueryError` too."""
