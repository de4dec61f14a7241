"""``STORE/compacted.json``, the commit of a store's compactions (:mod:`rooflake.store.compact`): its generations
(segments), their files and the runs they hold. Apart from :mod:`~rooflake.store.compact` so that reading a store
(``database.take_sources``) imports only this."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rooflake.store.layout import ALL_TABLES

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


def parse_manifest(raw: dict[str, Any]) -> Manifest:
    """A :class:`Manifest` from ``compacted.json``'s JSON (with or without ``segments``)."""
    files = {t: list(fs) for t, fs in raw["files"].items()}
    segments = tuple(
        Segment(str(s["generation"]), {t: list(fs) for t, fs in s["files"].items()}, int(s["runs"]))
        for s in raw.get("segments", [])
    )
    return Manifest(str(raw["generation"]), files, frozenset(raw["runs"]), segments)


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
    """The store's ``compacted.json`` (an empty :class:`Manifest` when the store was never compacted)."""
    return read_manifest_stamped(root)[0]


def read_manifest_stamped(root: Path) -> tuple[Manifest, Stamp]:
    """The store's ``compacted.json`` and the :data:`Stamp` of the very file read (:func:`read_manifest`)."""
    try:
        f = open(root / MANIFEST, encoding="utf-8")  # noqa: SIM115 - closed below, stamped while open
    except FileNotFoundError:
        return Manifest(), None
    with f:
        st = os.fstat(f.fileno())
        raw = json.load(f)
    return parse_manifest(raw), (st.st_ino, st.st_mtime_ns, st.st_size)


def manifest_stamp(root: Path) -> Stamp:
    """The :data:`Stamp` of the store's ``compacted.json`` now (one ``stat``)."""
    try:
        st = os.stat(root / MANIFEST)
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def compacted_runs(root: Path) -> frozenset[str]:
    """Ids of the runs the last compaction holds (some may since have been re-ingested as partitions)."""
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
