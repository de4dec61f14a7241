"""vl-convert in worker processes: PNG and SVG of Vega-Lite specs rendered on every core, the JavaScript engine
warmed up while the caller still queries and builds its charts.

vl-convert holds the GIL while it converts, and its first conversion in a process starts a JavaScript engine
(about 0.5 s of CPU, holding the GIL for much of it: Python imports beside it took 0.35 s instead of 0.07 s,
measured with vl-convert 1.9); the conversions themselves take 0.05-0.3 s. So a thread cannot
overlap conversions with anything, and a report that renders its charts one after another pays every one in
turn; a command drawing one chart warms the engine on a thread (:func:`start_for`) and converts in its own
process. :func:`start` launches ``workers``
processes (``spawn``: a JavaScript engine must not be forked), each warming its engine at once; :func:`submit`
queues one chart (the spec as JSON text, the files to write), :func:`wait` waits for a list of them, raising the first error
(an :class:`rooflake.schema.OutputError` naming the file, as :mod:`rooflake.render.files` raises it).
Without :func:`start`, :func:`submit` renders in the calling process. The processes are spawned: a script that
starts them needs the ``if __name__ == "__main__":`` guard (the ``rl`` command has it), so the library never
starts them on its own.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import Any

from rooflake.render.formats import NOT_XML, char_escape

__all__ = [
    "bundle_cache",
    "javascript_bundle",
    "render_files",
    "start",
    "start_for",
    "start_once",
    "stop",
    "submit",
    "wait",
    "warm_here",
]

_WARM_SPEC = '{"mark": "point", "data": {"values": [{"a": 1}]}, "encoding": {"x": {"field": "a", "type": "quantitative"}}}'

_pool: ProcessPoolExecutor | None = None


def _warm() -> None:
    """Worker initializer: start vl-convert's JavaScript engine now (its first conversion)."""
    import vl_convert as vlc

    vlc.vegalite_to_svg(_WARM_SPEC)


def render_files(spec_json: str, outputs: list[tuple[str, str, float]]) -> None:
    """Render ``spec_json`` (Vega-Lite, JSON text) into each ``(path, format, scale)`` of ``outputs`` (format
    ``png`` or ``svg``), each file written by the rule of :mod:`rooflake.render.files`. Raises
    :class:`rooflake.schema.OutputError` when a file cannot be written."""
    import vl_convert as vlc

    from rooflake.render.files import write_file

    spec_json = xml_safe(spec_json)
    svg = vlc.vegalite_to_svg(spec_json) if any(fmt == "svg" for _, fmt, _ in outputs) else None
    for path, fmt, scale in outputs:
        if fmt == "svg":
            data = (svg or "").encode("utf-8")
        elif svg is not None:  # the PNG of the SVG already laid out: vegalite_to_png lays it out again
            data = vlc.svg_to_png(svg, scale=scale)
        else:
            data = vlc.vegalite_to_png(spec_json, scale=scale)
        write_file(Path(path), data)


# what XML 1.0 cannot hold (C0 controls but TAB, LF and CR; U+FFFE, U+FFFF; lone surrogates) as the spec's JSON text
# holds it: json.dumps escapes every C0 control, and with ensure_ascii every non-ASCII character, as \\uXXXX (a
# pattern starting with a literal: the search skips ahead, 3 ms on a 4 MB spec where an alternation took 48 ms); the
# non-ASCII ones may also come raw
_JSON_NOT_XML = re.compile(
    r"\\u(?:00(?:0[0-8bBcCeEfF]|1[0-9a-fA-F])|[dD][89a-fA-F][0-9a-fA-F]{2}|[fF]{3}[eEfF])"
)
_RAW_NOT_XML = re.compile(r"[\ufffe\uffff\ud800-\udfff]")
_NOT_XML = re.compile(f"[{NOT_XML}]")


def xml_safe(spec_json: str) -> str:
    """``spec_json`` (Vega-Lite, JSON text) with every character XML 1.0 cannot hold, in any of its strings,
    written as its escape (``\\x1b``, ``\\ufffe``) as a terminal shows it (:func:`rooflake.cli.output.printable`):
    kernel names and NVTX text come from the profiled program, and vl-convert's SVG (and the PNG drawn from it)
    cannot carry such a character (vl-convert refuses the PNG, and writes an SVG that is not well-formed XML). A
    spec without one is returned as it is (a regular-expression search or two); astral characters written as
    surrogate pairs are kept."""
    if _JSON_NOT_XML.search(spec_json) is None and (
        spec_json.isascii() or _RAW_NOT_XML.search(spec_json) is None
    ):
        return spec_json
    return json.dumps(_xml_strings(json.loads(spec_json)), allow_nan=False)


def _xml_strings(v: Any) -> Any:
    """``v`` (decoded JSON) with :data:`_NOT_XML` characters escaped in every string, keys included."""
    if isinstance(v, str):
        return _NOT_XML.sub(char_escape, v)
    if isinstance(v, list):
        return [_xml_strings(x) for x in v]
    if isinstance(v, dict):
        return {_xml_strings(k): _xml_strings(x) for k, x in v.items()}
    return v


def bundle_cache() -> Path:
    """Where :func:`javascript_bundle` keeps the bundle: ``$RL_CACHE_DIR``, else ``$XDG_CACHE_HOME/rooflake``, else
    ``~/.cache/rooflake``."""
    if os.environ.get("RL_CACHE_DIR"):
        return Path(os.environ["RL_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "rooflake"


def javascript_bundle() -> str:
    """Vega, Vega-Lite and vega-embed as one inline script (vl-convert's bundle: no network).

    vl-convert builds the bundle on each first call in a process (1.3 s of CPU): it is kept in
    :func:`bundle_cache` under a name with vl-convert's version (the bundle depends on nothing else), written
    atomically by the rule of :mod:`rooflake.render.files`; a cache that cannot be read or written is skipped."""
    import vl_convert as vlc

    from rooflake.render.files import write_file
    from rooflake.schema import OutputError

    version = getattr(vlc, "__version__", None)
    if not version:  # not in the module of some builds: the installed distribution's
        from importlib.metadata import version as installed

        version = installed("vl-convert-python")
    path = bundle_cache() / f"vl-convert-{version}-javascript-bundle.js"
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        pass
    bundle: str = vlc.javascript_bundle()  # type: ignore[call-arg]  # the stub marks the optional snippet required
    with contextlib.suppress(OutputError):  # no cache: the next report builds it again
        write_file(path, bundle.encode("utf-8"))
    return bundle


def start(workers: int | None = None) -> None:
    """Start ``workers`` renderer processes (default: one per core), each warming its JavaScript engine at once.
    A second call keeps the running ones."""
    global _pool
    if _pool is not None:
        return
    import multiprocessing

    n = max(1, workers or os.cpu_count() or 1)
    _pool = ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("spawn"), initializer=_warm)
    for _ in range(n):  # every process starts (and warms up) now, not at the first chart
        _pool.submit(os.getpid)


def start_for(path: str | os.PathLike[str]) -> None:
    """Warm up vl-convert's JavaScript engine in this process when ``path`` is a PNG or SVG file, on a thread, while
    the caller imports, queries the store and builds the chart (a command drawing one chart calls this first).

    One chart renders here, not in a renderer process: a spawned process costs an interpreter and its imports
    (``rl roofline -o x.png`` took 0.2 s more CPU that way). The warm-up holds the GIL for much of its time, so
    it overlaps only the caller's waits outside Python (DuckDB queries): ``rl roofline --time`` gains from it
    (2.17 vs 2.26 s), the one-chart PNG path of :mod:`rooflake.render.rows` does not and skips it."""
    if Path(path).suffix.lower() in (".png", ".svg"):
        warm_here()


_warming: list[Any] = []


def warm_here() -> None:
    """Start vl-convert's JavaScript engine of this process on a daemon thread: its first conversion (about 0.5 s,
    much of it holding the GIL) overlaps the caller's waits outside Python; a later conversion waits for it inside vl-convert."""
    import threading

    if not _warming:
        thread = threading.Thread(target=_warm, name="rl-vl-convert-warm-up", daemon=True)
        thread.start()
        _warming.append(thread)


def start_once(workers: int | None = None) -> bool:
    """:func:`start` unless renderers run already; True when this call started them (the caller stops them)."""
    if _pool is not None:
        return False
    start(workers)
    return True


def submit(fn: Any, *args: Any) -> Future[Any]:
    """Run ``fn(*args)`` (:func:`render_files`, :func:`javascript_bundle`) in a renderer process when
    :func:`start` was called, else here and now; :func:`wait` or the future gives its result."""
    if _pool is None:
        done: Future[Any] = Future()
        try:
            done.set_result(fn(*args))
        except BaseException as e:  # handed to the caller by result(), as a pool would
            done.set_exception(e)
        return done
    return _pool.submit(fn, *args)


def wait(futures: list[Future[Any]]) -> None:
    """Wait for every one of ``futures`` (from :func:`submit`); then raise the first error, if any."""
    errors = [e for f in futures if (e := f.exception()) is not None]
    if errors:
        raise errors[0]


def stop() -> None:
    """Stop the renderer processes (after :func:`wait`)."""
    global _pool
    if _pool is not None:
        _pool.shutdown(wait=True, cancel_futures=True)
        _pool = None
