"""Whether a local store changed since its cached database was built (:meth:`rooflake.store.Store.connect`).

What a database reads is decided when it is built: the partition folders of every table (``STORE/<table>``), the
published runs (``STORE/runs``) and the compaction (``STORE/compacted.json``). A change to any of them adds,
removes or renames an entry of one of these folders, or replaces the manifest, and so changes the ``stat`` of that
folder or file: its modification and change times (ns), link count (2 + its folders where the file system counts
them), size, inode. (A ``--force`` re-ingest that replaces a run's files inside their folders changes no path a
database names, and its views read files afresh on every query: nothing to rebuild.) A :class:`Seen` holds those
stamps, one ``stat`` per path (9 in all), instead of a listing of 10,000 run folders per table.

A stamp cannot show a second change within the same tick of the file system's clock when the link count and size
come out as before (a run folder removed and another added; btrfs, and ext4 past 65,000 folders, keep the count
at 1). So a path whose modification or change time lies less than :data:`RACY_NS` before the moment it is looked at
(or after it: a file server's clock ahead of this machine's; one lagging it by more than that is not
caught) is *racy* (git's racily-clean rule): its contents are kept beside the stamp
(:func:`contents`: a folder's entries with their inode numbers, the manifest's SHA-256), and checked again, instead
of the stamp, on each later look. Only a change rebuilds the database; a look that finds the contents as they were
and the path no longer racy drops them, so from then on one ``stat`` per path decides again.
"""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

from rooflake.store.layout import ALL_TABLES, has_files
from rooflake.store.manifest import MANIFEST

#: a path changed less than this long ago (ns) may change again within the same tick of its file system's clock
#: (a jiffy on ext4 and tmpfs; 2 s on FAT; NFS and SMB servers stamp with their own clock)
RACY_NS = 2_000_000_000
#: the paths a database depends on, relative to the store's root: each table's folder, then the manifest
WATCHED = (*ALL_TABLES, MANIFEST)

#: one ``stat`` of a path: (device, inode, mtime ns, ctime ns, link count, size); () when the path does not exist
Stamp = tuple[int, ...]


def stamp(path: str) -> Stamp:
    """One ``stat`` of ``path`` (a :data:`Stamp`; ``()`` when it does not exist)."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return ()
    return (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_nlink, st.st_size)


def racy(st: Stamp, now_ns: int) -> bool:
    """Whether a path with stamp ``st`` may still change without its stamp changing: modified or changed less than
    :data:`RACY_NS` before ``now_ns`` (``time.time_ns()``), or after it. A path that does not exist is not racy
    (creating it changes its stamp)."""
    return bool(st) and now_ns - max(st[2], st[3]) < RACY_NS


def contents(path: str) -> frozenset[tuple[str, int]] | bytes | None:
    """What ``path`` holds, to compare while its stamp cannot be trusted (:func:`racy`): a folder's entries as
    (name, inode number) pairs (read from the listing itself: no ``stat`` per entry, so a run folder replaced under
    the same name differs; 10,000 entries in ~4 ms), a file's SHA-256 digest; None when it does not exist."""
    try:
        with os.scandir(path) as entries:
            return frozenset((e.name, e.inode()) for e in entries)
    except NotADirectoryError:
        pass
    except FileNotFoundError:
        return None
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).digest()
    except (FileNotFoundError, IsADirectoryError):
        return None


@dataclass(frozen=True)
class Seen:
    """What a look at a local store found (:func:`look`): ``stamps``, one :data:`Stamp` per :data:`WATCHED` path;
    ``filled``, per table whether a partition holds its file (:func:`rooflake.store.layout.has_files`); ``held``,
    the :func:`contents` of each path that was racy, by its index in :data:`WATCHED`."""

    stamps: tuple[Stamp, ...]
    filled: tuple[bool, ...]
    held: dict[int, object]


def _paths(root: Path) -> list[str]:
    return [os.path.join(root, p) for p in WATCHED]


def look(root: Path) -> Seen:
    """The store at ``root`` as it is now: one ``stat`` per :data:`WATCHED` path, and the contents of the racy ones.
    Take it before building the database (a change while it is built then shows on the next look)."""
    paths = _paths(root)
    stamps = tuple(stamp(p) for p in paths)
    filled = tuple(has_files(root, t) for t in ALL_TABLES)
    now = time.time_ns()  # after the stamps: a change after them shows in the contents, or in a later stamp
    return Seen(stamps, filled, {i: contents(p) for i, p in enumerate(paths) if racy(stamps[i], now)})


def unchanged(seen: Seen, root: Path) -> Seen | None:
    """``seen`` (a :func:`look` taken when a database was built), updated, when the store at ``root`` holds what it
    held then; None when it changed (build again). Unchanged: the same stamps, and each path racy then holds the
    same contents now; a path no longer racy is then dropped from ``held`` (a later change moves its stamp). One
    ``stat`` per path while none is racy."""
    paths = _paths(root)
    stamps = tuple(stamp(p) for p in paths)
    if stamps != seen.stamps or tuple(has_files(root, t) for t in ALL_TABLES) != seen.filled:
        return None
    if not seen.held:
        return seen
    now = time.time_ns()
    for i, held in seen.held.items():
        if contents(paths[i]) != held:
            return None
    return Seen(stamps, seen.filled, {i: h for i, h in seen.held.items() if racy(stamps[i], now)})
