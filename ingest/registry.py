"""The readers rl ingest knows, one entry per format, in the order their content is tried.

A :class:`Reader` is a format's ``name`` (what ``runs.source_format`` and :func:`rooflake.ingest.detect_format`
say), ``what`` it reads (the words of ``rl ingest --help`` and of the message about a file no reader takes),
``sniff(path, head)`` (whether the file's first bytes, ``head``, are this format's: by content, never the
suffix; a sniffer may raise :class:`UnsupportedFormatError` for a file that is recognisably this format but
cannot be read, such as a gzip trace cut short) and ``open(path, run_id, fp16, begun)``, a context manager
yielding the reader's tables (``{"kernels": ..., "run": dict}``; a table may be a
:class:`rooflake.schema.duck.DuckTable` valid inside the block). :data:`READERS` is the one list the dispatcher,
the error messages and the CLI's help are built from: a new format is one entry here and its module.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rooflake.ingest.messages import shown
from rooflake.schema import UnsupportedFormatError


@dataclass(frozen=True)
class Reader:
    """One input format: see the module docstring."""

    name: str
    what: str
    sniff: Callable[[Path, bytes], bool]
    open: Callable[[Path, str, str, Any], contextlib.AbstractContextManager[dict[str, Any]]]
    folder: bool = False  # reads a folder (sniffed from its files, ``head`` empty), not a file


def _magic(prefix: bytes) -> Callable[[Path, bytes], bool]:
    return lambda path, head: head.startswith(prefix)


def _sniff_with(module: str, fn: str = "sniff") -> Callable[[Path, bytes], bool]:
    def sniff(path: Path, head: bytes) -> bool:
        import importlib

        return bool(getattr(importlib.import_module(f"rooflake.ingest.{module}"), fn)(head))

    return sniff


def _torch_trace(path: Path, head: bytes) -> bool:
    """A JSON object (or .json.gz) with a ``traceEvents`` key; JSON of no format rooflake reads, and a gzip trace
    cut short, raise :class:`UnsupportedFormatError` naming the file."""
    from rooflake.ingest import torch_trace

    kind = torch_trace.sniff(path)
    if kind == torch_trace.FORMAT:
        return True
    if kind == "gzip-cut":
        raise UnsupportedFormatError(
            f"{shown(path)}: truncated gzip data (the file ends inside its compressed stream); re-export the "
            "torch.profiler trace"
        )
    if kind == "json":
        if not head.startswith(b"\x1f\x8b") and path.stat().st_size <= len(head):  # the whole (plain) file
            _whole_json(path, head)
        raise UnsupportedFormatError(
            f'{shown(path)}: JSON, but neither a torch.profiler trace (no "traceEvents" key) nor an ERT roofline.json '
            '(no "empirical" section)'
        )
    return False


def _whole_json(path: Path, data: bytes) -> None:
    """Raise :class:`UnsupportedFormatError` naming ``path`` and where ``data`` (the whole file, not compressed)
    stops being JSON, if it does (so that ``rl ingest DIR`` passes over it as it passes over other files no reader
    takes). JSON Python cannot check (nested past its recursion limit, an integer of more than 4,300 digits) passes:
    the caller's message (JSON, but neither format) stands."""
    import json

    try:
        json.loads(data.removeprefix(b"\xef\xbb\xbf"))  # a BOM is no error here (the sniffers allow it)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise UnsupportedFormatError(f"{shown(path)}: starts like JSON but is not valid JSON ({e})") from None
    except (ValueError, RecursionError):
        pass


def _ncu_csv(path: Path, head: bytes) -> bool:
    from rooflake.ingest import ncu_csv

    return bool(
        ncu_csv.sniff(path, head)
    )  # raises UnsupportedFormatError for a CSV that is not an ncu export


@contextlib.contextmanager
def _open_torch_trace(path: Path, run_id: str, fp16: str, begun: Any) -> Iterator[dict[str, Any]]:
    from rooflake.ingest import ops, torch_trace

    yield ops.with_ops(torch_trace.read(path, run_id=run_id), run_id)


def _open_simple(module: str) -> Callable[..., Any]:
    @contextlib.contextmanager
    def open_(path: Path, run_id: str, fp16: str, begun: Any) -> Iterator[dict[str, Any]]:
        import importlib

        yield importlib.import_module(f"rooflake.ingest.{module}").read(path, run_id=run_id, fp16=fp16)

    return open_


@contextlib.contextmanager
def _open_parquetdir(path: Path, run_id: str, fp16: str, begun: Any) -> Iterator[dict[str, Any]]:
    from rooflake.ingest import nsys_parquet, op_texts

    with nsys_parquet.open_export(path, run_id=run_id) as out:
        yield op_texts.with_nsys_ops(out, run_id)


def _open_nsys(rep: bool) -> Callable[..., Any]:
    @contextlib.contextmanager
    def open_(path: Path, run_id: str, fp16: str, begun: Any) -> Iterator[dict[str, Any]]:
        from rooflake.ingest import exported, nsys_sqlite, op_texts

        with contextlib.ExitStack() as stack:
            sqlite = stack.enter_context(exported(path)) if rep else path
            out = stack.enter_context(nsys_sqlite.open_export(sqlite, run_id=run_id, begun=begun))
            if rep:
                out["run"]["source_format"] = "nsys-rep"
            yield op_texts.with_nsys_ops(out, run_id)

    return open_


@contextlib.contextmanager
def _open_ncu_rep(path: Path, run_id: str, fp16: str, begun: Any) -> Iterator[dict[str, Any]]:
    from rooflake.ingest import read_ncu_rep

    yield read_ncu_rep(path, run_id, fp16)


def _parquetdir(path: Path, head: bytes) -> bool:
    from rooflake.ingest import nsys_parquet

    return path.is_dir() and nsys_parquet.is_parquetdir(path)


#: every format rl ingest reads, in the order their content is tried (a folder: the folder readers only)
READERS: tuple[Reader, ...] = (
    Reader("ncu-rep", "Nsight Compute reports (.ncu-rep, starting with NVR\\0)", _magic(b"NVR\x00"), _open_ncu_rep),
    Reader("nsys-rep", "Nsight Systems reports (.nsys-rep)", _magic(b"NVIDIA Tegra Profiler Report"),
           _open_nsys(rep=True)),
    Reader("nsys-parquetdir", "their parquetdir exports (a folder)", _parquetdir, _open_parquetdir, folder=True),
    Reader("sqlite", "their SQLite exports", _magic(b"SQLite format 3\x00"), _open_nsys(rep=False)),
    Reader("ert-json", "ERT roofline.json", _sniff_with("ert_json"), _open_simple("ert_json")),
    Reader("measured-json", "rl ceilings measure's JSON", _sniff_with("measured_json"),
           _open_simple("measured_json")),
    Reader("torch-trace", "torch.profiler traces (.json, .json.gz)", _torch_trace, _open_torch_trace),
    Reader("ncu-csv", "Nsight Compute CSV exports", _ncu_csv, _open_simple("ncu_csv")),
)  # fmt: skip
BY_NAME = {r.name: r for r in READERS}
#: what rl ingest reads, for a message about a file it does not
FORMATS_READ = ", ".join(r.what for r in READERS[:-1]) + " and " + READERS[-1].what
