"""The ceiling sources: every value ``ceilings.source`` takes, and what the views, the SQL and the charts know of
each, in one table of data (``ceiling_sources.csv``, shipped in the package, one row per source):

- ``source``: the ``ceilings.source`` value a reader writes (``ncu-report``, ``measured``, ``ert``, ...).
- ``choice``: the ``--ceilings`` value that picks it (``report``, ``datasheet``, ``ert``, ``measured``); several
  sources may share one (``ert`` and ``ert-spec``). The choices are listed in the order they first appear in the file
  (``rl roofline --help``, error messages).
- ``precedence``: 1, 2, ...: the order sources are listed and drawn in (the SQL's ``ORDER BY``, the legend), and
  the order ``--ceilings default`` tries them in.
- ``default_choice``: ``yes`` when ``--ceilings default`` may fall to this source (the report's own peaks, else
  measured, else datasheet); ``no`` for one drawn only when asked for (ERT).
- ``machine``: ``yes`` for a machine's source (its rows hold for every run of that machine: measured, ERT,
  datasheet), ``no`` for the run's own peaks (the report's: exactly one source).
- ``side_by_side``: the column of step ``ceilings_side_by_side`` (``rl ceilings``) its values go to; empty: none.
- ``color``: the colour of its roofs drawn beside another source's (``--ceilings all``).
- ``hint``: how to add ceilings of its choice when a run has none (once per choice, on the choice's first row).

The helpers read the file once (stdlib only: the CLI builds its ``--ceilings`` menu from it at start-up) and raise
``ValueError`` for a broken file (caught by the tests). :func:`records` gives the rows of the DuckDB table
``ceiling_sources``, which :mod:`rooflake.queries` creates on a cursor whose SQL names it.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

FILE = "ceiling_sources.csv"
COLUMNS = ("source", "choice", "precedence", "default_choice", "machine", "side_by_side", "color", "hint")
#: The DuckDB type of each column of table ``ceiling_sources`` (VARCHAR where not named)
DUCK_TYPES = {"precedence": "BIGINT", "default_choice": "BOOLEAN", "machine": "BOOLEAN"}
_FLAGS = {"yes": True, "no": False}


@dataclass(frozen=True)
class Source:
    """One row of ``ceiling_sources.csv`` (see the module's docstring); ``side_by_side`` and ``hint`` are None
    where the file leaves them empty."""

    source: str
    choice: str
    precedence: int
    default_choice: bool
    machine: bool
    side_by_side: str | None
    color: str
    hint: str | None


def _flag(row: dict[str, str], key: str) -> bool:
    if row[key] not in _FLAGS:
        raise ValueError(f"{FILE}: {row['source']}: {key} must be yes or no, not {row[key]!r}")
    return _FLAGS[row[key]]


@lru_cache(maxsize=1)
def rows() -> tuple[Source, ...]:
    """Every source, in file order. Raises ``ValueError`` for a file whose columns, flags, precedences (1..n,
    each once), sources (each once), report source (exactly one with ``machine = no``) or hints (at most one per
    choice) are broken."""
    text = resources.files(__package__ or "rooflake.schema").joinpath(FILE).read_text(encoding="utf-8")
    reader = csv.DictReader(text.splitlines())
    if tuple(reader.fieldnames or ()) != COLUMNS:
        raise ValueError(f"{FILE}: columns {reader.fieldnames}, expected {list(COLUMNS)}")
    out = tuple(
        Source(
            source=r["source"],
            choice=r["choice"],
            precedence=int(r["precedence"]),
            default_choice=_flag(r, "default_choice"),
            machine=_flag(r, "machine"),
            side_by_side=r["side_by_side"] or None,
            color=r["color"],
            hint=r["hint"] or None,
        )
        for r in reader
    )
    names = [s.source for s in out]
    if len(set(names)) != len(names) or not all(names):
        raise ValueError(f"{FILE}: each source once, by name: {names}")
    if sorted(s.precedence for s in out) != list(range(1, len(out) + 1)):
        raise ValueError(f"{FILE}: precedence must number the sources 1..{len(out)}, each once")
    if len([s for s in out if not s.machine]) != 1:
        raise ValueError(f"{FILE}: exactly one source is the run's own (machine = no)")
    hinted = [s.choice for s in out if s.hint]
    if len(set(hinted)) != len(hinted):
        raise ValueError(f"{FILE}: one hint per choice: {hinted}")
    return out


def by_precedence() -> tuple[Source, ...]:
    """Every source, in ``precedence`` order."""
    return tuple(sorted(rows(), key=lambda s: s.precedence))


def names() -> tuple[str, ...]:
    """Every ``ceilings.source`` value, in ``precedence`` order."""
    return tuple(s.source for s in by_precedence())


def report_source() -> str:
    """The source of a run's own peaks (``ncu-report``: the one with ``machine = no``)."""
    return next(s.source for s in rows() if not s.machine)


def machine_sources() -> tuple[str, ...]:
    """The machine's sources (``machine = yes``), in ``precedence`` order."""
    return tuple(s.source for s in by_precedence() if s.machine)


def default_order() -> tuple[str, ...]:
    """The sources ``--ceilings default`` tries, first one with a ceiling wins (``default_choice = yes``, in
    ``precedence`` order)."""
    return tuple(s.source for s in by_precedence() if s.default_choice)


def choices() -> tuple[str, ...]:
    """The ``--ceilings`` values that name a source, in the order they first appear in the file."""
    return tuple(dict.fromkeys(s.choice for s in rows()))


def choice_of() -> dict[str, str]:
    """``{source: choice}`` of every source."""
    return {s.source: s.choice for s in rows()}


def source_of() -> dict[str, str]:
    """``{choice: source}``: the first source of each choice in ``precedence`` order (``ert`` -> ``ert``, not
    ``ert-spec``), the choices in that order too."""
    out: dict[str, str] = {}
    for s in by_precedence():
        out.setdefault(s.choice, s.source)
    return out


def hints() -> dict[str, str]:
    """``{choice: hint}`` of the choices that have one, in file order."""
    return {s.choice: s.hint for s in rows() if s.hint}


def colors() -> dict[str, str]:
    """``{source: colour}`` of every source, in ``precedence`` order."""
    return {s.source: s.color for s in by_precedence()}


def records() -> list[tuple[Any, ...]]:
    """The registry as the rows of the DuckDB table ``ceiling_sources`` (columns :data:`COLUMNS`, types
    :data:`DUCK_TYPES`), in ``precedence`` order: plain Python values, so that a cursor gets the table without pyarrow
    building Arrow from Python values (which tries to import pandas, +0.25 s of ``rl roofline``)."""
    return [tuple(getattr(s, c) for c in COLUMNS) for s in by_precedence()]
