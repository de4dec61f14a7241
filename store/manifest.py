"""``STORE/compacted.json``, the commit of a store's compactions (:mod:`rooflake.store.compact`): its generations
(segments), their files and the runs they hold. Apart from :mod:`~rooflake.store.compact` so that reading a store
(``database.take_sources``) imports only this."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rooflake.schema import DamagedStoreError
from rooflake.store.layout import ALL_TABLES, COMPACTED

MANIFEST = "compacted.json"


@dataclass(frozen=True)
class Segment:
    """One generation of compacted files: ``generation``, ``files`` (table -> paths relative to the store root),
    ``n_runs`` (the runs it holds)."""

    generation: str
    files: dict[str, list[str]]
    n_runs: int


@dataclass(frozen=True)
class Manifest:
    """A committed compaction: ``generation`` (of the last compaction, a sortable text), ``files`` (table -> paths
    relative to the store root, of every segment), ``runs`` (the run ids the files hold), ``segments`` (the
    generations; a manifest written before segments existed is one)."""

    generation: str = ""
    files: dict[str, list[str]] = field(default_factory=dict)
    runs: frozenset[str] = frozenset()
    segments: tuple[Segment, ...] = ()

    def parts(self) -> tuple[Segment, ...]:
        """The segments (one holding every file for a manifest written before segments existed)."""
        if self.segments or not self.files:
            return self.segments
        return (Segment(self.generation, self.files, len(self.runs)),)

    @classmethod
    def of(cls, generation: str, segments: tuple[Segment, ...], runs: frozenset[str]) -> Manifest:
        """The manifest of ``segments`` (``files``: theirs, table by table)."""
        files = {t: [f for s in segments for f in s.files.get(t, [])] for t in ALL_TABLES}
        return cls(generation, {t: fs for t, fs in files.items() if fs}, runs, segments)


#: how to recover a damaged ``compacted.json`` (said by every command that meets one, and by ``rl doctor``)
RECOVER = (
    "rl compact replaces it atomically, so something else changed it: restore it from a backup; or move it aside "
    "and re-ingest the source files of the compacted runs with --force before the next rl compact (without it "
    "the runs it held are not read, and rl compact deletes the compacted files it named)"
)


def damaged(where: str, why: str) -> DamagedStoreError:
    """The error for a ``compacted.json`` at ``where`` that cannot be read (``why``), with :data:`RECOVER`."""
    return DamagedStoreError(f"{where} is damaged ({why}): {RECOVER}")


def _paths(value: object, what: str) -> dict[str, list[str]]:
    """``files`` of a manifest or segment: table -> relative paths ``<table>/compacted/<name>.parquet``. Raises
    ``ValueError`` naming ``what`` when it is anything else (a path out of its table's compacted folder too)."""
    if not isinstance(value, dict):
        raise ValueError(f"{what} is not an object")
    out = {}
    for table, paths in value.items():
        if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
            raise ValueError(f"{what}[{table!r}] is not a list of paths")
        for p in paths:
            parts = p.split("/")
            if len(parts) != 3 or parts[:2] != [table, COMPACTED] or not p.endswith(".parquet") or ".." in p:
                raise ValueError(f"{what}[{table!r}] names {p[:80]!r}, not a file of {table}/{COMPACTED}/")
        out[str(table)] = list(paths)
    return out


def _manifest(raw: object) -> Manifest:
    """:func:`parse_manifest`'s checks and reading. Raises ``ValueError`` saying what is wrong."""
    if not isinstance(raw, dict):
        raise ValueError(f"its JSON is {type(raw).__name__ if raw is not None else 'null'}, not an object")
    for key, kind in (("generation", str), ("files", dict), ("runs", list)):
        if not isinstance(raw.get(key), kind):
            raise ValueError(f"{key!r} is {'missing' if key not in raw else 'not a ' + kind.__name__}")
    runs = raw["runs"]
    if not all(isinstance(r, str) and r and "/" not in r for r in runs):
        raise ValueError("'runs' holds something other than run ids")
    segments = raw.get("segments", [])
    if not isinstance(segments, list):
        raise ValueError("'segments' is not a list")
    parts = []
    for i, seg in enumerate(segments):
        ok = isinstance(seg, dict) and isinstance(seg.get("generation"), str)
        if not ok or not isinstance(seg.get("runs"), int) or isinstance(seg.get("runs"), bool):
            raise ValueError(f"segment {i} is not a generation with its number of runs")
        parts.append(Segment(seg["generation"], _paths(seg.get("files"), f"segment {i} files"), seg["runs"]))
    return Manifest(raw["generation"], _paths(raw["files"], "'files'"), frozenset(runs), tuple(parts))


def parse_manifest(raw: object, where: str = MANIFEST) -> Manifest:
    """A :class:`Manifest` from ``compacted.json``'s text (bytes or str) or parsed JSON (with or without
    ``segments``). Raises :class:`DamagedStoreError` naming ``where`` (the file) when it is not a manifest: not
    JSON, cut, ``null``, a field missing or of another type, a path out of its table's compacted folder."""
    if isinstance(raw, (bytes, str)):
        try:
            raw = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
            raise damaged(where, f"not JSON: {' '.join(str(e).split())}" if raw else "empty") from None
    try:
        return _manifest(raw)
    except ValueError as e:
        raise damaged(where, str(e)) from None


def manifest_body(manifest: Manifest) -> dict[str, Any]:
    """``compacted.json``'s JSON: ``generation``, ``files``, ``runs`` (what readers use: database.take_sources,
    remote.read_compaction) and ``segments`` (each generation's files and number of runs: what compaction plans
    with)."""
    segments = [{"generation": s.generation, "files": s.files, "runs": s.n_runs} for s in manifest.parts()]
    return {
        "generation": manifest.generation,
        "files": manifest.files,
        "runs": sorted(manifest.runs),
        "segments": segments,
    }


#: which ``compacted.json`` a reader read: (inode, mtime in ns, size), None when there is none.
#: :func:`write_manifest` replaces the file by a rename: each commit has a new one
Stamp = tuple[int, int, int] | None


def read_manifest(root: Path) -> Manifest:
    """The store's ``compacted.json`` (an empty :class:`Manifest` when the store was never compacted). Raises
    :class:`DamagedStoreError` naming it when it is damaged (:func:`parse_manifest`)."""
    return read_manifest_stamped(root)[0]


def read_manifest_stamped(root: Path) -> tuple[Manifest, Stamp]:
    """The store's ``compacted.json`` and the :data:`Stamp` of the very file read (:func:`read_manifest`). Raises
    :class:`DamagedStoreError` naming it when it is damaged, ``OSError`` when it cannot be read."""
    try:
        f = open(root / MANIFEST, encoding="utf-8")  # noqa: SIM115 - closed below, stamped while open
    except FileNotFoundError:
        return Manifest(), None
    with f:
        st = os.fstat(f.fileno())
        raw = f.buffer.read()
    return parse_manifest(raw, str(root / MANIFEST)), (st.st_ino, st.st_mtime_ns, st.st_size)


def manifest_stamp(root: Path) -> Stamp:
    """The :data:`Stamp` of the store's ``compacted.json`` now (one ``stat``)."""
    try:
        st = os.stat(root / MANIFEST)
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def compacted_runs(root: Path) -> frozenset[str]:
    """Ids of the runs the last compaction holds (some may since have been re-ingested as partitions). Raises
    :class:`DamagedStoreError` when ``compacted.json`` is damaged."""
    if not (root / MANIFEST).exists():
        return frozenset()
    return read_manifest(root).runs


def write_manifest(root: Path, manifest: Manifest) -> None:
    """Replace ``compacted.json`` atomically (a temporary file, fsync, rename, fsync of the folder)."""
    from rooflake.store.publish import fsync_dir

    tmp = root / f".{MANIFEST}.{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(manifest_body(manifest), f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, root / MANIFEST)
    fsync_dir(root)
