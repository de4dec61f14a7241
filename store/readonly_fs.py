"""A read-only view of an fsspec filesystem: what a locked-down DuckDB database of a store on object storage reads
through (:func:`rooflake.store.database.build`), so that no statement it runs, of any form, writes or deletes an
object there."""

from __future__ import annotations

from typing import Any

import fsspec

#: the methods DuckDB (and fsspec's own helpers) call to change a filesystem: refused
_WRITES = (
    "mv",
    "rm",
    "rm_file",
    "rmdir",
    "mkdir",
    "makedirs",
    "touch",
    "pipe",
    "pipe_file",
    "put",
    "put_file",
    "cp_file",
    "copy",
)


def _refused(*args: Any, **kwargs: Any) -> Any:
    raise PermissionError("the store is opened read-only: nothing is written through this connection")


class ReadOnly(fsspec.AbstractFileSystem):  # type: ignore[misc]
    """``fs``'s files for reading only (same protocol): ``open`` in a writing mode, moving, removing, making
    folders and copying raise ``PermissionError``; listing, ``info`` and reading are ``fs``'s own."""

    cachable = False

    def __init__(self, fs: Any) -> None:
        super().__init__()
        self.fs = fs
        self.protocol = fs.protocol
        for name in _WRITES:
            setattr(self, name, _refused)

    def open(self, path: str, mode: str = "rb", *args: Any, **kwargs: Any) -> Any:
        """``fs.open`` for reading; a writing ``mode`` raises ``PermissionError``."""
        if set(mode) & set("wax+"):
            _refused()
        return self.fs.open(path, mode, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.fs, name)

    def ls(self, path: str, detail: bool = True, **kwargs: Any) -> Any:
        return self.fs.ls(path, detail=detail, **kwargs)

    def info(self, path: str, **kwargs: Any) -> Any:
        return self.fs.info(path, **kwargs)

    def exists(self, path: str, **kwargs: Any) -> Any:
        return self.fs.exists(path, **kwargs)

    def isdir(self, path: str) -> Any:
        return self.fs.isdir(path)

    def isfile(self, path: str) -> Any:
        return self.fs.isfile(path)

    def glob(self, path: str, **kwargs: Any) -> Any:
        return self.fs.glob(path, **kwargs)

    def size(self, path: str) -> Any:
        return self.fs.size(path)

    def modified(self, path: str) -> Any:
        return self.fs.modified(path)

    def cat_file(self, path: str, start: int | None = None, end: int | None = None, **kwargs: Any) -> Any:
        return self.fs.cat_file(path, start=start, end=end, **kwargs)
